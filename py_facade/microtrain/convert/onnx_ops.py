"""The ONNX ops that compute: activations, Softmax, Gemm/MatMul, arithmetic,
BatchNormalization (folded), Conv and pooling. A mixin of ``onnx_reader._Reader``."""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from .graph import ConversionError, Origin, Value, count


class ComputeOps:
    def _unary(self, op_type, inputs, label, params=()):
        return [self.builder.activation(op_type, self.activation(inputs[0], label), label,
                                        params)]

    def op_Relu(self, node, inputs, label):
        self.attributes(node, label, set())
        return self._unary(_ops.RELU, inputs, label)

    def op_Sigmoid(self, node, inputs, label):
        self.attributes(node, label, set())
        return self._unary(_ops.SIGMOID, inputs, label)

    def op_Tanh(self, node, inputs, label):
        self.attributes(node, label, set())
        return self._unary(_ops.TANH, inputs, label)

    def op_LeakyRelu(self, node, inputs, label):
        alpha = self.attributes(node, label, {"alpha"}).get("alpha", 0.01)
        if alpha < 0:
            raise ConversionError("alpha %g is not supported" % alpha, op=label,
                                  attribute="alpha", supported="alpha >= 0")
        return self._unary(_ops.LEAKY_RELU, inputs, label, (_image.f32_bits(alpha),))

    def op_Clip(self, node, inputs, label):
        attrs = self.attributes(node, label, {"min", "max"})
        low, high = attrs.get("min"), attrs.get("max")
        for position, which in ((1, "min"), (2, "max")):
            if len(inputs) > position and inputs[position] is not None:
                if not inputs[position].is_const:
                    raise ConversionError("%s is computed at run time" % which, op=label)
                bound = float(np.asarray(inputs[position].const).ravel()[0])
                low, high = (bound, high) if which == "min" else (low, bound)
        if low == 0.0 and high == 6.0:
            return self._unary(_ops.RELU6, inputs, label)
        if low == 0.0 and (high is None or high == float("inf")):
            return self._unary(_ops.RELU, inputs, label)
        raise ConversionError("Clip to [%s, %s] is not supported" % (low, high), op=label,
                              attribute="min/max", supported="[0, 6] (ReLU6), [0, inf) (ReLU)")

    def op_Softmax(self, node, inputs, label):
        """SOFTMAX over a contiguous trailing block of the sample. Before opset 13 ONNX
        normalises over the dims from ``axis`` on, flattened (its 2-D coercion: for
        [N, C, 1, 1] at axis 1, the channels); from 13 over ``axis`` alone, which is such a
        block when every dim after it is 1. The core normalises over its tensor's last
        dimension: an image's channels are that (a TRANSPOSE to [H, W, C] where the image
        is not held so already); a block of the whole sample is normalised as one vector
        in whatever order the core holds it (a RESHAPE, no TRANSPOSE); a block of the last
        dims is one in the source's order."""
        x = self.activation(inputs[0], label)
        axis = self.attributes(node, label, {"axis"}).get("axis", -1 if self.opset >= 13
                                                          else 1)
        rank = len(x.shape) + 1
        supported = ("the last axis; before opset 13 any axis but the batch (the dims from "
                     "it on, flattened); from 13 an axis all of whose following dims are 1, "
                     "or the channels of an image")
        if not -rank <= axis < rank or axis % rank == 0:
            raise ConversionError("softmax over axis %d of a %d-D tensor normalises across "
                                  "the batch or names no axis" % (axis, rank), op=label,
                                  attribute="axis", supported=supported)
        axis %= rank
        trailing = x.shape[axis:]  # the sample dims after the axis
        if self.opset >= 13 and any(d != 1 for d in trailing):
            if rank == 4 and axis == 1 and (x.nchw or x.perm is None):
                # the channels of an image, held as [H, W, C]
                return self._unary(_ops.SOFTMAX, [self.spatial(x, label)], label)
            raise ConversionError("softmax over axis %d of a %d-D tensor of shape %r (opset "
                                  "%d): its elements are not contiguous" % (
                                      axis, rank, ["N"] + list(x.shape), self.opset),
                                  op=label, attribute="axis", supported=supported)
        block = count(x.shape[axis - 1:])
        if axis == 1:  # the whole sample: one vector, in the order the core holds it
            if x.core_shape[-1] == block:
                return self._unary(_ops.SOFTMAX, [x], label)
            flat = self.builder.reshape_core(x, (block,), label)
            y = self.builder.op(_ops.SOFTMAX, [flat], (block,), label)
            index = self.builder.reshape_core(Value((block,), index=y), x.core_shape, label)
            return [Value(x.shape, index=index, core_shape=x.core_shape, perm=x.perm,
                          chw=x.chw)]
        x = self.in_shape(x, label)
        if x.shape[-1] == block:  # the last dim already
            return self._unary(_ops.SOFTMAX, [x], label)
        rows = count(x.shape[:axis - 1])
        matrix = self.builder.reshape_core(x, (rows, block), label)
        y = self.builder.op(_ops.SOFTMAX, [matrix], (rows, block), label)
        index = self.builder.reshape_core(Value((rows, block), index=y), x.shape, label)
        return [Value(x.shape, index=index, core_shape=x.shape)]

    def _dense(self, x, weight_value, steps, bias_value, bias_steps, label):
        """A DENSE op: ``steps`` take the source weight to [units, in_features] (columns
        in the source's logical order); a permuted input permutes the columns too."""
        from .graph import apply_steps
        if len(x.shape) != 1:
            raise ConversionError("input sample has shape %r; the core's Dense takes one "
                                  "vector per sample" % (x.shape,), op=label)
        steps = list(steps)
        units, in_features = apply_steps(weight_value.const, steps).shape
        if in_features != x.shape[0]:
            raise ConversionError("input has %d features, the weight %d" % (x.shape[0],
                                                                             in_features),
                                  op=label)
        if x.perm is not None:
            steps.append(("columns", x.perm))
        weight = self.add_weight(weight_value, steps)
        bias = None
        if bias_value is not None:
            bias = self.add_weight(bias_value, bias_steps)
            if self.builder.weight(bias).shape != (units,):
                raise ConversionError("bias has %d elements, %d units"
                                      % (self.builder.weight(bias).size, units), op=label)
        index = self.builder.op(_ops.DENSE, [x.index, weight, bias], (units,), label)
        return Value((units,), index=index, producer=len(self.builder.ops) - 1)

    def op_Gemm(self, node, inputs, label):
        attrs = self.attributes(node, label, {"alpha", "beta", "transA", "transB"})
        x = self.activation(inputs[0], label)
        if attrs.get("transA", 0):
            raise ConversionError("transA=1 transposes the batch", op=label,
                                  attribute="transA", supported="0")
        w = self.weight_const(inputs[1], label, "B")
        steps = [] if attrs.get("transB", 0) else [("transpose", (1, 0))]
        alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
        if alpha != 1.0:
            steps.append(("scale", alpha))
        bias_value, bias_steps = None, []
        if len(inputs) > 2 and inputs[2] is not None:
            bias_value = self.weight_const(inputs[2], label, "C")
            shape = bias_value.const.shape
            if len(shape) == 2 and shape[0] == 1:
                bias_steps.append(("reshape", shape, (shape[1],)))
            elif len(shape) != 1:
                raise ConversionError("C has shape %r" % (list(shape),), op=label,
                                      supported="[units] or [1, units]")
            if beta != 1.0:
                bias_steps.append(("scale", beta))
        return [self._dense(x, w, steps, bias_value, bias_steps, label)]

    def op_MatMul(self, node, inputs, label):
        self.attributes(node, label, set())
        x = self.activation(inputs[0], label)
        w = self.weight_const(inputs[1], label, "B")
        if w.const.ndim != 2:
            raise ConversionError("B has %d dimensions" % w.const.ndim, op=label,
                                  supported="a 2-D constant [in_features, units]")
        return [self._dense(x, w, [("transpose", (1, 0))], None, [], label)]

    def _affine(self, node, x, scale, shift, keys, kind, label, shift_value=None):
        """Fold ``x * scale + shift`` into x's producer, or refuse."""
        folded = self._fold(node, x, scale, shift, keys, kind, label, shift_value)
        if folded is None:
            raise ConversionError(
                "%s folds only into the Conv, Gemm or MatMul right before it whose output "
                "feeds nothing else (no activation in between), per output channel"
                % node.op_type, op=label, supported="per-channel or scalar constants after "
                "a Conv/Gemm/MatMul")
        return folded

    def _fold(self, node, x, scale, shift, keys, kind, label, shift_value=None, name=None):
        if not self.foldable(node, name):
            return None
        return self.builder.fold_affine(x, scale, shift, label, keys, kind, shift_value)

    def _channel_operand(self, x, const, label):
        """(x as the core will hold it, the constant as a 1-D vector of 1 or C values)
        for a constant that broadcasts per channel of an image, over the last axis, or
        everywhere (a scalar); an image the core holds in NCHW order is transposed."""
        array = np.asarray(const, np.float32)
        shape = tuple(array.shape)
        if array.size == 1:
            return x, array.reshape(1)
        if len(x.shape) == 3 and shape in ((x.shape[0], 1, 1), (1, x.shape[0], 1, 1)):
            return self.spatial(x, label), array.reshape(-1)
        last = x.shape[-1]
        if len(shape) <= len(x.shape) + 1 and shape[-1] == last and \
                all(d == 1 for d in shape[:-1]):
            return self.in_shape(x, label), array.reshape(-1)
        raise ConversionError("the constant has shape %r; broadcasting other than per "
                              "channel or over the last axis is not supported"
                              % (list(shape),), op=label)

    def _binary(self, node, inputs, label):
        """Add, Sub, Mul, Div: of two activations of one shape (ADD, SUB, MUL), or with a
        constant: folded into the Conv/Gemm/MatMul right before it where it can be, else
        a SUB or MUL op with a frozen constant (x + c = x − (−c) exactly; x / c runs as
        x · (1/c), within one rounding of the quotient)."""
        self.attributes(node, label, set())
        a, b = inputs
        op = node.op_type
        if not a.is_const and not b.is_const:
            return [self._elementwise(op, [a, b], label)]
        constant_first = a.is_const
        x, c = (b, a) if constant_first else (a, b)
        if c.const.dtype != np.float32:
            raise ConversionError("the constant has dtype %s" % c.const.dtype, op=label)
        if constant_first and op == "Div":
            raise ConversionError("a constant divided by an activation is not supported",
                                  op=label, supported="an activation divided by a constant")
        x, vector = self._channel_operand(self.activation(x, label), c.const, label)
        one, zero = np.float32(1), np.float32(0)
        keys, name = [c.const_key], node.input[1 if constant_first else 0]
        if op == "Add":
            folded = self._fold(node, x, one, vector, keys, "add", label,
                                shift_value=c if vector.size > 1 else None, name=name)
        elif op == "Mul":
            folded = self._fold(node, x, vector, zero, keys, "mul", label, name=name)
        elif constant_first:
            folded = None
        elif op == "Sub":
            folded = self._fold(node, x, one, -vector, keys, "sub", label)
        else:
            folded = self._fold(node, x, one / vector, zero, keys, "div", label)
        if folded is not None:
            return [folded]
        op_type, operand = {"Add": (_ops.SUB, -vector), "Sub": (_ops.SUB, vector),
                            "Mul": (_ops.MUL, vector),
                            "Div": (_ops.MUL, one / vector)}[op]
        constant = self.builder.add_constant(operand, Origin(c.const_key, c.const.shape))
        operands = [constant, x.index] if constant_first and op == "Sub" else \
            [x.index, constant]
        index = self.builder.op(op_type, operands, x.core_shape, label)
        return [Value(x.shape, index=index, core_shape=x.core_shape, perm=x.perm, chw=x.chw,
                      producer=len(self.builder.ops) - 1)]

    op_Add = op_Sub = op_Mul = op_Div = _binary

    def _elementwise(self, op, xs, label):
        """ADD/SUB/MUL of activations of one shape, held alike (transposed if need be)."""
        if op not in ("Add", "Sub", "Mul"):
            raise ConversionError("%s of two activations is not supported" % op, op=label,
                                  supported="Add, Sub, Mul of two activations of the same "
                                  "shape")
        xs = [self.activation(x, label, "operand") for x in xs]
        if any(x.shape != xs[0].shape for x in xs):
            raise ConversionError("operands of shapes %s: broadcasting is not supported"
                                  % " and ".join(repr(x.shape) for x in xs), op=label,
                                  supported="activations of the same shape")
        first = xs[0]
        alike = all(x.core_shape == first.core_shape and (
            (x.perm is None and first.perm is None) or
            (x.perm is not None and first.perm is not None and
             np.array_equal(x.perm, first.perm))) for x in xs)
        if not alike:
            if len(first.shape) == 3 and any(x.nchw for x in xs):
                xs = [self.spatial(x, label) for x in xs]
            else:
                xs = [self.in_shape(x, label) for x in xs]
        first = xs[0]
        op_type = {"Add": _ops.ADD, "Sub": _ops.SUB, "Mul": _ops.MUL}[op]
        result = first
        for other in xs[1:]:
            index = self.builder.op(op_type, [result.index, other.index], first.core_shape,
                                    label)
            result = Value(first.shape, index=index, core_shape=first.core_shape,
                           perm=first.perm, chw=first.chw)
        return result

    def op_Sum(self, node, inputs, label):
        self.attributes(node, label, set())
        if len(inputs) == 1:
            return [inputs[0]]
        return [self._elementwise("Add", inputs, label)]

    def op_BatchNormalization(self, node, inputs, label):
        attrs = self.attributes(node, label, {"epsilon", "momentum", "spatial",
                                              "training_mode", "is_test",
                                              "consumed_inputs"})
        if attrs.get("training_mode", 0):
            raise ConversionError("training_mode=1 normalises with batch statistics",
                                  op=label, attribute="training_mode",
                                  supported="0 (inference: folded into the weights)")
        if attrs.get("spatial", 1) != 1:
            raise ConversionError("spatial=0 is not supported", op=label, attribute="spatial")
        x = self.activation(inputs[0], label)
        consts = [self.weight_const(v, label, what) for v, what in
                  zip(inputs[1:5], ("scale", "B", "mean", "var"))]
        gamma, beta, mean, var = [np.asarray(c.const, np.float64) for c in consts]
        epsilon = attrs.get("epsilon", 1e-5)
        scale = gamma / np.sqrt(var + epsilon)
        shift = beta - mean * scale
        return [self._affine(node, x, scale.astype(np.float32), shift.astype(np.float32),
                             [c.const_key for c in consts], "batchnorm", label)]

    def _conv_attrs(self, node, label):
        attrs = self.attributes(node, label, {"auto_pad", "dilations", "group",
                                              "kernel_shape", "pads", "strides"})
        if any(d != 1 for d in attrs.get("dilations", (1, 1))):
            raise ConversionError("dilations %r are not supported"
                                  % list(attrs["dilations"]), op=label,
                                  attribute="dilations", supported="1")
        return attrs

    def op_Conv(self, node, inputs, label):
        attrs = self._conv_attrs(node, label)
        x = self.spatial(inputs[0], label)
        w = self.weight_const(inputs[1], label, "W")
        if w.const.ndim != 4:
            raise ConversionError("W has %d dimensions" % w.const.ndim, op=label,
                                  supported="2-D convolution")
        out_channels, group_in, kh, kw = w.const.shape
        channels = x.shape[0]
        group = attrs.get("group", 1)
        if group == 1 and group_in != channels:
            raise ConversionError("W takes %d input channels, the input has %d"
                                  % (group_in, channels), op=label,
                                  supported="W of [M, C, KH, KW] for an input of C channels")
        strides, padding, pads = self.padding(attrs, x, (kh, kw), label)
        if padding is None:  # zeros by a PAD op, then the windows of VALID
            x, padding = self.explicit_pads(x, pads, label), _image.PADDING_VALID
        bias_value = None
        if len(inputs) > 2 and inputs[2] is not None:
            bias_value = self.weight_const(inputs[2], label, "B")
            if bias_value.const.shape != (out_channels,):
                raise ConversionError("B has shape %r, W %d output channels"
                                      % (list(bias_value.const.shape), out_channels), op=label,
                                      supported="B of [M] for W of [M, C, KH, KW]")
        if group == 1:
            op_type, steps = _ops.CONV2D, [("transpose", (0, 2, 3, 1))]
        elif group == channels and out_channels == channels and group_in == 1:
            op_type, steps = _ops.DEPTHWISE_CONV2D, [("transpose", (1, 2, 3, 0))]
        else:
            raise ConversionError(
                "group=%d with %d input and %d output channels is not supported" % (
                    group, channels, out_channels), op=label, attribute="group",
                supported="1, or depthwise (group = input channels = output channels)")
        weight = self.add_weight(w, steps)
        bias = None if bias_value is None else self.add_weight(bias_value, [])
        params = _image.spatial_params(None, strides, padding)
        out_hw = self.out_spatial(x, (kh, kw), strides, padding)
        index = self.builder.op(op_type, [x.index, weight, bias],
                                tuple(out_hw) + (out_channels,), label, params)
        return [self.image_value(index, out_channels, out_hw)]

    def _pool(self, node, inputs, label, op_type):
        known = {"auto_pad", "kernel_shape", "pads", "strides", "ceil_mode", "dilations",
                 "storage_order", "count_include_pad"}
        attrs = self.attributes(node, label, known)
        x = self.spatial(inputs[0], label)
        if any(d != 1 for d in attrs.get("dilations", (1, 1))):
            raise ConversionError("dilations are not supported", op=label,
                                  attribute="dilations", supported="1")
        if attrs.get("storage_order", 0):
            raise ConversionError("storage_order=1", op=label, attribute="storage_order",
                                  supported="0")
        kernel = tuple(int(k) for k in attrs.get("kernel_shape", ()))
        if len(kernel) != 2:
            raise ConversionError("kernel_shape %r is not a 2-D window" % (list(kernel),),
                                  op=label, attribute="kernel_shape",
                                  supported="[KH, KW] over an NCHW image")
        ceil_mode = bool(attrs.get("ceil_mode", 0))
        strides, _, pads = self.padding(attrs, x, kernel, label, ceil_mode)
        # padded positions never win a maximum nor count in an average (the core's pools
        # skip them), except where count_include_pad=1 counts the zeros: a PAD op then
        count_pads = op_type == _ops.AVERAGE_POOL2D and bool(attrs.get("count_include_pad", 0))
        x, padding, out_hw = self.pool_windows(x, kernel, strides, pads, ceil_mode,
                                               count_pads, label)
        params = _image.spatial_params(kernel, strides, padding)
        index = self.builder.op(op_type, [x.index], tuple(out_hw) + (x.shape[0],), label,
                                params)
        return [self.image_value(index, x.shape[0], out_hw)]

    def op_MaxPool(self, node, inputs, label):
        if len(node.output) > 1 and node.output[1]:
            raise ConversionError("the Indices output is not supported", op=label)
        return self._pool(node, inputs, label, _ops.MAX_POOL2D)

    def op_AveragePool(self, node, inputs, label):
        return self._pool(node, inputs, label, _ops.AVERAGE_POOL2D)

    def _global_average(self, x, keep, label):
        """GLOBAL_AVERAGE_POOL of an image the core holds as [H, W, C]; the result is
        [C, 1, 1] (``keep``) or [C] in NCHW terms."""
        channels = x.core_shape[2]
        index = self.builder.op(_ops.GLOBAL_AVERAGE_POOL, [x.index], (channels,), label)
        shape = (channels, 1, 1) if keep else (channels,)
        return Value(shape, index=index, core_shape=(channels,))

    def op_GlobalAveragePool(self, node, inputs, label):
        self.attributes(node, label, set())
        return [self._global_average(self.spatial(inputs[0], label), True, label)]

    def op_ReduceMean(self, node, inputs, label):
        """The mean over H and W: GLOBAL_AVERAGE_POOL (axes [2, 3] of an NCHW image, or
        [1, 2] of an NHWC one, as TensorFlow-exported graphs have it)."""
        attrs = self.attributes(node, label, {"axes", "keepdims",
                                              "noop_with_empty_axes"})
        x = self.activation(inputs[0], label)
        axes = attrs.get("axes")
        if axes is None and len(inputs) > 1 and inputs[1] is not None:
            axes = list(np.asarray(self.constant_operand(inputs[1], label, "axes")).ravel())
        axes = None if axes is None or len(x.shape) != 3 else sorted(int(a) % 4 for a in axes)
        keep = bool(attrs.get("keepdims", 1))
        if axes == [2, 3]:
            return [self._global_average(self.spatial(x, label), keep, label)]
        if axes == [1, 2] and x.perm is None:
            x = self.in_shape(x, label)
            result = self._global_average(x, False, label)
            if keep:
                result = Value((1, 1, x.shape[2]), index=result.index, core_shape=result.core_shape)
            return [result]
        raise ConversionError("mean over axes %r is not supported" % (axes,), op=label,
                              attribute="axes", supported="[2, 3] (H and W of NCHW), [1, 2] "
                              "(H and W of NHWC)")
