"""The TFLite/circle operators the core runs, converted one by one: a mixin of
``tflite_reader._Reader`` (which supplies ``builder``, ``options``, ``fused``,
``activation_input``, ``weight``, ``sample_shape`` and ``consumers``)."""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from .graph import ConversionError, Origin, Value, count, sample_of_target


class TfliteOps:

    # ------------------------------------------------------------ ops

    def op_FULLY_CONNECTED(self, op, values, inputs, outputs, label):
        x = self.activation_input(values[0], label)
        options = self.options(op, "FullyConnectedOptions")
        if options.WeightsFormat() != 0:
            raise ConversionError("weights_format %d is not supported" % options.WeightsFormat(),
                                  op=label, attribute="weights_format", supported="DEFAULT")
        out_shape = self.sample_shape(outputs[0], label)
        if len(out_shape) != 1:
            raise ConversionError("keep_num_dims gives a %d-D sample; the core's Dense "
                                  "flattens each sample" % len(out_shape), op=label,
                                  attribute="keep_num_dims", supported="false, or a 2-D input")
        w_value = values[1]
        if w_value is None or not w_value.is_const:
            raise ConversionError("the weight is computed at run time", op=label)
        units, in_features = w_value.const.shape
        if count(x.core_shape) != in_features:
            raise ConversionError("input has %d features per sample, the weight %d"
                                  % (count(x.core_shape), in_features), op=label)
        weight = self.weight(w_value, label, "weight")
        bias = self.weight(values[2], label, "bias", (units,)) \
            if len(values) > 2 and values[2] is not None else None
        index = self.builder.op(_ops.DENSE, [x.index, weight, bias], (units,), label)
        result = Value((units,), index=index, producer=len(self.builder.ops) - 1)
        return self.fused(result, options.FusedActivationFunction(), label)[0]

    def _conv_common(self, options, label, dilations=True):
        if dilations and (options.DilationHFactor() != 1 or options.DilationWFactor() != 1):
            raise ConversionError("dilation %dx%d is not supported" % (
                options.DilationHFactor(), options.DilationWFactor()), op=label,
                attribute="dilation_h_factor/dilation_w_factor", supported="1")
        strides = (options.StrideH(), options.StrideW())
        if not all(1 <= s <= 0xFFFF for s in strides):
            raise ConversionError("strides %r" % (list(strides),), op=label,
                                  attribute="stride_h/stride_w", supported="1..65535")
        if options.Padding() not in (0, 1):
            raise ConversionError("padding %d" % options.Padding(), op=label,
                                  attribute="padding", supported="SAME (0), VALID (1)")
        padding = _image.PADDING_SAME if options.Padding() == 0 else _image.PADDING_VALID
        return strides, padding

    def spatial_shape(self, x, kernel, strides, padding, channels, out_index, label):
        """The [H, W, C] a window op computes from ``x``; the file's declared output shape
        must be it (the core plans with its own, so a file that says otherwise is refused
        here, by name)."""
        if not all(1 <= k <= 0xFFFF for k in kernel):
            raise ConversionError("a %r window" % (list(kernel),), op=label,
                                  supported="1..65535 on each axis")
        height, width = x.core_shape[0], x.core_shape[1]
        expected = (_image.spatial_output_size(height, kernel[0], strides[0], padding),
                    _image.spatial_output_size(width, kernel[1], strides[1], padding),
                    int(channels))
        declared = tuple(self.sample_shape(out_index, label))
        if declared != expected:
            raise ConversionError("the file declares an output of shape %r; a %dx%d window "
                                  "with strides %r and %s padding over %dx%d gives %r"
                                  % (list(declared), kernel[0], kernel[1], list(strides),
                                     "SAME" if padding == _image.PADDING_SAME else "VALID",
                                     height, width, list(expected)), op=label)
        return expected

    def _spatial_input(self, value, label):
        x = self.activation_input(value, label)
        if len(x.core_shape) != 3:
            raise ConversionError("input sample has shape %r; the core's spatial ops take "
                                  "[H, W, C]" % (x.shape,), op=label)
        return x

    def _spatial_output(self, op_type, x, weights, params, label, out_shape):
        index = self.builder.op(op_type, [x.index] + weights, out_shape, label, params)
        return Value(out_shape, index=index, producer=len(self.builder.ops) - 1)

    def op_CONV_2D(self, op, values, inputs, outputs, label):
        x = self._spatial_input(values[0], label)
        options = self.options(op, "Conv2DOptions")
        strides, padding = self._conv_common(options, label)
        w = values[1]
        if w is None or not w.is_const or w.const.ndim != 4:
            raise ConversionError("the filter must be a constant [OC, KH, KW, C]", op=label)
        if w.const.shape[3] != x.core_shape[2]:
            raise ConversionError("filter has %d input channels, the input %d: grouped "
                                  "convolution is not supported" % (w.const.shape[3],
                                                                    x.core_shape[2]),
                                  op=label, supported="groups 1 (or DEPTHWISE_CONV_2D)")
        weight = self.weight(w, label, "filter")
        bias = self.weight(values[2], label, "bias", (w.const.shape[0],)) \
            if len(values) > 2 and values[2] is not None else None
        _, fused = self.fused(None, options.FusedActivationFunction(), label, conv=True)
        params = _image.spatial_params(None, strides, padding, fused)
        shape = self.spatial_shape(x, w.const.shape[1:3], strides, padding, w.const.shape[0],
                                   outputs[0], label)
        return self._spatial_output(_ops.CONV2D, x, [weight, bias], params, label, shape)

    def op_DEPTHWISE_CONV_2D(self, op, values, inputs, outputs, label):
        x = self._spatial_input(values[0], label)
        options = self.options(op, "DepthwiseConv2DOptions")
        strides, padding = self._conv_common(options, label)
        w = values[1]
        channels = x.core_shape[2]
        if w is None or not w.is_const or w.const.ndim != 4 or w.const.shape[0] != 1:
            raise ConversionError("the filter must be a constant [1, KH, KW, C]", op=label)
        if channels == 1 and w.const.shape[3] > 1:
            # one input channel times a depth multiplier M: a CONV_2D of M filters
            # [M, KH, KW, 1] (MobileNetV1's first layer on a grey image)
            weight = self.weight(w, label, "filter", steps=[("transpose", (3, 1, 2, 0))])
            bias = self.weight(values[2], label, "bias", (w.const.shape[3],)) \
                if len(values) > 2 and values[2] is not None else None
            _, fused = self.fused(None, options.FusedActivationFunction(), label, conv=True)
            params = _image.spatial_params(None, strides, padding, fused)
            shape = self.spatial_shape(x, w.const.shape[1:3], strides, padding,
                                       w.const.shape[3], outputs[0], label)
            return self._spatial_output(_ops.CONV2D, x, [weight, bias], params, label, shape)
        if w.const.shape[3] != channels or options.DepthMultiplier() not in (0, 1):
            raise ConversionError("depth multiplier %d (filter %r, %d input channels) is not "
                                  "supported" % (options.DepthMultiplier(),
                                                 list(w.const.shape), channels), op=label,
                                  attribute="depth_multiplier", supported="1, or any "
                                  "with one input channel")
        weight = self.weight(w, label, "filter")
        bias = self.weight(values[2], label, "bias", (channels,)) \
            if len(values) > 2 and values[2] is not None else None
        _, fused = self.fused(None, options.FusedActivationFunction(), label, conv=True)
        params = _image.spatial_params(None, strides, padding, fused)
        shape = self.spatial_shape(x, w.const.shape[1:3], strides, padding, channels,
                                   outputs[0], label)
        return self._spatial_output(_ops.DEPTHWISE_CONV2D, x, [weight, bias], params, label,
                                    shape)

    def _pool(self, op_type, op, values, outputs, label):
        x = self._spatial_input(values[0], label)
        options = self.options(op, "Pool2DOptions")
        strides, padding = self._conv_common(options, label, dilations=False)
        kernel = (options.FilterHeight(), options.FilterWidth())
        shape = self.spatial_shape(x, kernel, strides, padding, x.core_shape[2], outputs[0],
                                   label)
        params = _image.spatial_params(kernel, strides, padding)
        result = self._spatial_output(op_type, x, [], params, label, shape)
        return self.fused(result, options.FusedActivationFunction(), label)[0]

    def op_MAX_POOL_2D(self, op, values, inputs, outputs, label):
        return self._pool(_ops.MAX_POOL2D, op, values, outputs, label)

    def op_AVERAGE_POOL_2D(self, op, values, inputs, outputs, label):
        return self._pool(_ops.AVERAGE_POOL2D, op, values, outputs, label)

    def op_MEAN(self, op, values, inputs, outputs, label):
        """Mean over any of the sample's axes (GlobalAveragePooling2D's H and W,
        GlobalAveragePooling1D's time axis of [T, C], ...): the core's GLOBAL_AVERAGE_POOL
        averages [R, 1, K] over R, so the reduced axes are moved first (a TRANSPOSE, none
        when they lead already) and the kept ones flattened last."""
        x = self.activation_input(values[0], label)
        axes = values[1]
        if axes is None or not axes.is_const:
            raise ConversionError("the axes are computed at run time", op=label)
        rank = len(x.core_shape) + 1
        raw = [int(a) for a in np.asarray(axes.const).ravel()]
        if any(not -rank <= a < rank for a in raw):
            raise ConversionError("axes %r are outside a rank-%d tensor" % (raw, rank),
                                  op=label, attribute="axes")
        reduced = sorted(set(a % rank for a in raw))
        if 0 in reduced:
            raise ConversionError("mean over the batch axis", op=label, attribute="axes",
                                  supported="axes of one sample (1..%d)" % (rank - 1))
        reduced = [a - 1 for a in reduced]
        kept = [a for a in range(rank - 1) if a not in reduced]
        out_shape = self.sample_shape(outputs[0], label)
        if not reduced:
            index = self.builder.reshape_core(x, out_shape, label)
            return Value(out_shape, index=index)
        index, core = x.index, x.core_shape
        perm = reduced + kept
        if perm != list(range(rank - 1)):
            index, core = self.builder.transpose(index, core, perm, label)
        rows = count(core[:len(reduced)])
        columns = count(core[len(reduced):])
        pooled_in = Value(core, index=index, core_shape=core)
        index = self.builder.reshape_core(pooled_in, (rows, 1, columns), label)
        index = self.builder.op(_ops.GLOBAL_AVERAGE_POOL, [index], (columns,), label)
        result = Value((columns,), index=index)
        if tuple(out_shape) != (columns,):  # keep_dims, or several kept axes
            index = self.builder.reshape_core(result, out_shape, label)
            result = Value(out_shape, index=index)
        return result

    def _reshape(self, values, outputs, label):
        x = self.activation_input(values[0], label)
        declared = self.sample_shape(outputs[0], label)
        if len(values) > 1 and values[1] is not None:
            target = values[1]
            if not target.is_const:
                raise ConversionError("the new shape is computed from run-time data", op=label)
            target = [int(d) for d in np.asarray(target.const).ravel()]
            sample = sample_of_target(target, x.core_shape, label)
            if sample != tuple(declared):
                raise ConversionError("new shape %r gives samples of %r, the file declares %r"
                                      % (target, sample, declared), op=label)
        if not 1 <= len(declared) <= 4:
            raise ConversionError("the result has %d dimensions besides the batch; the core "
                                  "holds 1 to 4" % len(declared), op=label)
        if count(declared) != count(x.core_shape):
            raise ConversionError("the file declares a result of shape %r: %d elements a "
                                  "sample, the input has %d" % (list(declared),
                                                                count(declared),
                                                                count(x.core_shape)), op=label)
        index = self.builder.reshape_core(x, declared, label)
        return Value(declared, index=index)

    def op_RESHAPE(self, op, values, inputs, outputs, label):
        return self._reshape(values, outputs, label)

    def op_SQUEEZE(self, op, values, inputs, outputs, label):
        return self._reshape(values[:1], outputs, label)

    def op_EXPAND_DIMS(self, op, values, inputs, outputs, label):
        return self._reshape(values[:1], outputs, label)

    def op_SOFTMAX(self, op, values, inputs, outputs, label):
        x = self.activation_input(values[0], label)
        beta = self.options(op, "SoftmaxOptions").Beta()
        if beta != 1.0:
            raise ConversionError("beta %g is not supported" % beta, op=label,
                                  attribute="beta", supported="1.0")
        return self.builder.activation(_ops.SOFTMAX, x, label)

    def _unary(self, op_type, values, label, params=()):
        return self.builder.activation(op_type, self.activation_input(values[0], label),
                                       label, params)

    def op_RELU(self, op, values, inputs, outputs, label):
        return self._unary(_ops.RELU, values, label)

    def op_RELU6(self, op, values, inputs, outputs, label):
        return self._unary(_ops.RELU6, values, label)

    def op_LOGISTIC(self, op, values, inputs, outputs, label):
        return self._unary(_ops.SIGMOID, values, label)

    def op_TANH(self, op, values, inputs, outputs, label):
        return self._unary(_ops.TANH, values, label)

    def op_LEAKY_RELU(self, op, values, inputs, outputs, label):
        alpha = self.options(op, "LeakyReluOptions").Alpha()
        if alpha < 0:
            raise ConversionError("alpha %g is not supported" % alpha, op=label,
                                  attribute="alpha", supported="alpha >= 0")
        return self._unary(_ops.LEAKY_RELU, values, label, (_image.f32_bits(alpha),))

    def _foldable(self, inputs, label):
        t = inputs[0]
        return self.consumers.get(t, 0) == 1 and t not in self.graph_outputs

    def _binary(self, kind, op, values, inputs, outputs, label, options_name):
        """ADD/SUB/MUL of two activations of one shape, or with a constant: folded into
        the Dense or convolution right before it where it can be, else a SUB or MUL op
        with a frozen constant (x + c runs as x − (−c), which is exact)."""
        act = self.options(op, options_name).FusedActivationFunction() \
            if op.BuiltinOptions() is not None else 0
        a, b = values
        if not a.is_const and not b.is_const:
            if a.core_shape != b.core_shape:
                raise ConversionError("operands have shapes %r and %r: broadcasting is not "
                                      "supported" % (a.shape, b.shape), op=label,
                                      supported="two activations of the same shape")
            op_type = {"add": _ops.ADD, "sub": _ops.SUB, "mul": _ops.MUL}[kind]
            index = self.builder.op(op_type, [a.index, b.index], a.core_shape, label)
            result = Value(a.shape, index=index, core_shape=a.core_shape)
            return self.fused(result, act, label)[0]
        constant_first = a.is_const
        if constant_first:
            a, b = b, a
            inputs = inputs[::-1]
        constant = np.asarray(b.const, np.float32)
        if kind == "mul":
            scale, shift = constant, np.float32(0)
        else:
            scale, shift = np.float32(1), (constant if kind == "add" else -constant)
        folded = None
        if constant.ndim <= 1 and self._foldable(inputs, label) and \
                not (constant_first and kind == "sub"):
            folded = self.builder.fold_affine(a, scale, shift, label, [b.const_key], kind,
                                              b if kind == "add" else None)
        if folded is None:
            folded = self._with_constant(kind, a, b, constant, constant_first, label)
        return self.fused(folded, act, label)[0]

    def _with_constant(self, kind, x, c, constant, constant_first, label):
        channels = x.core_shape[-1]
        if constant.size != 1 and (constant.ndim > len(x.core_shape) + 1 or
                                   constant.shape[-1] != channels or
                                   any(d != 1 for d in constant.shape[:-1])):
            raise ConversionError("the constant has shape %r; broadcasting other than over "
                                  "the last axis (channels) is not supported"
                                  % (list(constant.shape),), op=label)
        vector = constant.reshape(-1)
        op_type, operand = {"add": (_ops.SUB, -vector), "sub": (_ops.SUB, vector),
                            "mul": (_ops.MUL, vector)}[kind]
        index = self.builder.add_constant(operand, Origin(c.const_key, c.const.shape))
        operands = [index, x.index] if constant_first and kind == "sub" else [x.index, index]
        index = self.builder.op(op_type, operands, x.core_shape, label)
        return Value(x.shape, index=index, core_shape=x.core_shape,
                     producer=len(self.builder.ops) - 1)

    def op_ADD(self, op, values, inputs, outputs, label):
        return self._binary("add", op, values, inputs, outputs, label, "AddOptions")

    def op_SUB(self, op, values, inputs, outputs, label):
        return self._binary("sub", op, values, inputs, outputs, label, "SubOptions")

    def op_MUL(self, op, values, inputs, outputs, label):
        return self._binary("mul", op, values, inputs, outputs, label, "MulOptions")

    def op_CONCATENATION(self, op, values, inputs, outputs, label):
        options = self.options(op, "ConcatenationOptions")
        xs = [self.activation_input(v, label, "operand") for v in values]
        rank = len(xs[0].core_shape) + 1
        if options.Axis() % rank != rank - 1:
            raise ConversionError("concatenation along axis %d is not supported"
                                  % options.Axis(), op=label, attribute="axis",
                                  supported="the last axis")
        if not 2 <= len(xs) <= 4:
            raise ConversionError("%d operands; the core joins 2 to 4" % len(xs), op=label)
        out_shape = self.sample_shape(outputs[0], label)
        index = self.builder.op(_ops.CONCATENATION, [x.index for x in xs], out_shape, label)
        result = Value(out_shape, index=index)
        return self.fused(result, options.FusedActivationFunction(), label)[0]

    def op_PAD(self, op, values, inputs, outputs, label):
        """Zeros around H and W: a PAD op (PADV2 with a constant value of 0 too)."""
        x = self._spatial_input(values[0], label)
        paddings = values[1] if len(values) > 1 else None
        if paddings is None or not paddings.is_const:
            raise ConversionError("the paddings are computed at run time", op=label)
        pads = np.asarray(paddings.const).reshape(-1, 2).tolist()
        if len(values) > 2 and values[2] is not None:
            fill = values[2]
            if not fill.is_const or np.any(np.asarray(fill.const) != 0):
                raise ConversionError("padding with a value other than 0", op=label,
                                      supported="zeros")
        if len(pads) != 4 or pads[0] != [0, 0] or pads[3] != [0, 0] or \
                min(min(pair) for pair in pads) < 0:
            raise ConversionError("paddings %r are not supported" % (pads,), op=label,
                                  supported="zeros around H and W of an NHWC image")
        index, core = self.builder.pad(x, (tuple(pads[1]), tuple(pads[2])), label)
        return Value(core, index=index, producer=len(self.builder.ops) - 1)

    op_PADV2 = op_PAD

    def op_TRANSPOSE(self, op, values, inputs, outputs, label):
        """The sample's axes permuted (the batch stays first): a TRANSPOSE op."""
        x = self.activation_input(values[0], label)
        if len(values) < 2 or values[1] is None or not values[1].is_const:
            raise ConversionError("the permutation is computed at run time", op=label)
        perm = [int(p) for p in np.asarray(values[1].const).ravel()]
        rank = len(x.core_shape) + 1
        if sorted(perm) != list(range(rank)) or perm[0] != 0:
            raise ConversionError("perm %r moves the batch dimension" % (perm,), op=label,
                                  supported="perm[0] = 0: the batch stays first")
        index, core = self.builder.transpose(x.index, x.core_shape, [p - 1 for p in perm[1:]],
                                             label)
        return Value(core, index=index, producer=len(self.builder.ops) - 1)
