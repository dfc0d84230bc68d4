"""Import a float32 ONNX model into a ``.mtm`` image (parsed with the ``onnx`` package).

Layout: ONNX images are NCHW with OIHW filters; the core is NHWC with OHWI filters.
Filters are transposed once here. Activations keep the source's *logical* shape next to
the core's (see graph.Value): a [C, H, W] sample is held as [H, W, C]. A Flatten of such
a sample feeds a Gemm/MatMul whose weight columns are permuted to the core's order, so no
transpose op is needed. Model inputs of 3 dimensions per sample are fed in the core's
layout (NHWC): ``ConvertedModel.input_layouts`` says so and ``prepare_inputs`` does it.

Constant subgraphs (``Constant``, ``ConstantOfShape``, ``Shape`` of an activation with the
batch as a stand-in, ``Gather``, ``Concat``, ``Slice``, arithmetic, ...) are evaluated
here: with numpy for the usual shape arithmetic, with ``onnx.reference`` for the rest.
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from .graph import (BATCH, Builder, ConversionError, Origin, Value, count, nchw_perm,
                    same_or_valid)

SUPPORTED_OPS = ("Gemm, MatMul (+ Add of a bias), Conv (group 1 or depthwise), "
                 "BatchNormalization (folded into the Conv/Gemm before it), Relu, Clip "
                 "(ReLU, ReLU6), LeakyRelu, Sigmoid, Tanh, Softmax (last axis), MaxPool, "
                 "AveragePool, GlobalAveragePool, ReduceMean over H and W, Flatten, Reshape, "
                 "Squeeze, Unsqueeze, Add, Sum, Concat (channels), Mul/Add/Sub/Div by a "
                 "per-channel constant after a Conv/Gemm (folded), Dropout and Identity "
                 "(removed), and constant subgraphs")

_FLOAT = 1


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401
    except ImportError as error:
        raise ImportError("reading .onnx needs the 'onnx' package: pip install "
                          "'microtrain[convert]'") from error
    return onnx


def _sample_of_target(target, logical, label):
    """The sample shape an ONNX Reshape target gives (entry 0 is the batch; 0 copies)."""
    rest = list(target[1:])
    for i, d in enumerate(rest):
        if d == 0:
            if i >= len(logical):
                raise ConversionError("new shape %r copies a dimension the input lacks"
                                      % (target,), op=label)
            rest[i] = logical[i]
    from .tflite_reader import _sample_of_target as sample
    return sample([target[0]] + rest, logical, label)


class _Reader:
    def __init__(self, model):
        self.onnx = _onnx()
        from onnx import numpy_helper
        self.numpy_helper = numpy_helper
        self.model = model
        self.graph = model.graph
        self.opset = 1
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                self.opset = entry.version
        self.builder = Builder("onnx")
        self.values = {}
        self.initializers = set()
        for tensor in self.graph.initializer:
            value = Value(tuple(tensor.dims), const=numpy_helper.to_array(tensor))
            value.const_key = tensor.name
            self.values[tensor.name] = value
            self.initializers.add(tensor.name)
        self.consumers = {}
        for node in self.graph.node:
            for name in node.input:
                self.consumers[name] = self.consumers.get(name, 0) + 1
        self.graph_outputs = set(o.name for o in self.graph.output)
        self.input_layouts = []
        self.output_layouts = []

    def run(self):
        for graph_input in self.graph.input:
            if graph_input.name in self.initializers:
                continue
            self.add_input(graph_input)
        for index, node in enumerate(self.graph.node):
            self.node(index, node)
        for graph_output in self.graph.output:
            value = self.values.get(graph_output.name)
            if value is None:
                raise ConversionError("output %r is never written" % graph_output.name)
            if value.perm is not None and not value.nchw:
                raise ConversionError("output %r is a flattened channel-first tensor; the "
                                      "core would hold its elements in another order (a "
                                      "Transpose op is not in the core yet)"
                                      % graph_output.name)
            self.builder.mark_output(value)
            self.output_layouts.append({
                "shape": value.shape, "core_shape": value.core_shape,
                "transpose": (0, 3, 1, 2) if value.nchw and value.perm is not None else None})
        return self.builder

    def add_input(self, graph_input):
        tensor_type = graph_input.type.tensor_type
        if tensor_type.elem_type != _FLOAT:
            raise ConversionError("input %r has element type %d" % (graph_input.name,
                                                                     tensor_type.elem_type),
                                  supported="float32 inputs")
        dims = []
        for position, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                dims.append(int(dim.dim_value))
            elif position == 0:
                dims.append(-1)
            else:
                raise ConversionError("input %r: dimension %d is %r; only the batch (the "
                                      "first) may be dynamic" % (graph_input.name, position,
                                                                 dim.dim_param or "unknown"))
        sample = tuple(dims[1:])
        if not 1 <= len(sample) <= 4:
            raise ConversionError("input %r has %d dimensions besides the batch; the core "
                                  "takes 1 to 4" % (graph_input.name, len(sample)))
        if len(sample) == 3:
            core = (sample[1], sample[2], sample[0])
            value = self.builder.add_input(sample, core, nchw_perm(sample))
            self.input_layouts.append({"shape": sample, "core_shape": core,
                                       "transpose": (0, 2, 3, 1)
                                       if value.perm is not None else None})
        else:
            value = self.builder.add_input(sample, sample)
            self.input_layouts.append({"shape": sample, "core_shape": sample,
                                       "transpose": None})
        self.values[graph_input.name] = value

    # ------------------------------------------------------------ nodes

    def attributes(self, node, label, known):
        from onnx import helper
        attrs = {}
        for attribute in node.attribute:
            if attribute.name not in known:
                raise ConversionError("attribute %s is not supported" % attribute.name,
                                      op=label, attribute=attribute.name,
                                      supported=", ".join(sorted(known)) or "none")
            attrs[attribute.name] = helper.get_attribute_value(attribute)
        return attrs

    def node(self, index, node):
        name = " %r" % node.name if node.name else ""
        self.builder.source_node = index
        label = "onnx node %d (%s%s)" % (index, node.op_type, name)
        if node.domain not in ("", "ai.onnx"):
            raise ConversionError("domain %r is not supported" % node.domain, op=label,
                                  supported="the default ONNX domain")
        inputs = []
        for input_name in node.input:
            if not input_name:
                inputs.append(None)
                continue
            if input_name not in self.values:
                raise ConversionError("input %r is read before any node writes it"
                                      % input_name, op=label)
            inputs.append(self.values[input_name])
        present = [v for v in inputs if v is not None]
        if node.op_type == "Shape":
            outputs = [self.fold_shape(node, inputs[0], label)]
        elif all(v.is_const for v in present) and node.op_type not in ("Dropout",):
            outputs = self.fold(node, inputs, label)
        else:
            handler = getattr(self, "op_" + node.op_type, None)
            if handler is None:
                raise ConversionError("op %s is not supported" % node.op_type, op=label,
                                      supported=SUPPORTED_OPS)
            outputs = handler(node, inputs, label)
        for output_name, value in zip(node.output, outputs):
            if output_name:
                self.values[output_name] = value
        for extra in node.output[len(outputs):]:
            if extra and self.consumers.get(extra) or extra in self.graph_outputs:
                raise ConversionError("output %r is used; the core computes only the first "
                                      "output" % extra, op=label)

    # ------------------------------------------------------------ constant folding

    def fold_shape(self, node, value, label):
        attrs = self.attributes(node, label, {"start", "end"})
        if value.is_const:
            shape = list(value.const.shape)
        else:
            shape = [BATCH] + list(value.shape)
        start, end = attrs.get("start", 0), attrs.get("end", None)
        result = np.array(shape[start:end], np.int64)
        return Value(result.shape, const=result)

    def fold(self, node, inputs, label):
        """Evaluate a node on constants: numpy for shape arithmetic, onnx.reference else."""
        arrays = [None if v is None else v.const for v in inputs]
        from onnx import helper
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        op = node.op_type
        result = None
        if op == "Constant":
            if "value" in attrs:
                result = self.numpy_helper.to_array(attrs["value"])
            elif "value_float" in attrs:
                result = np.array(attrs["value_float"], np.float32)
            elif "value_floats" in attrs:
                result = np.array(attrs["value_floats"], np.float32)
            elif "value_int" in attrs:
                result = np.array(attrs["value_int"], np.int64)
            elif "value_ints" in attrs:
                result = np.array(attrs["value_ints"], np.int64)
        elif op in ("Identity", "Dropout"):
            return [inputs[0]]
        elif op == "Cast":
            from onnx import helper as h
            result = arrays[0].astype(h.tensor_dtype_to_np_dtype(attrs["to"]))
        elif op == "Gather":
            result = np.take(arrays[0], arrays[1], axis=attrs.get("axis", 0))
        elif op == "Unsqueeze":
            axes = attrs.get("axes") if "axes" in attrs else list(arrays[1])
            result = arrays[0]
            rank = result.ndim + len(axes)
            for axis in sorted(int(a) % rank for a in axes):
                result = np.expand_dims(result, axis)
        elif op == "Squeeze":
            axes = attrs.get("axes") if "axes" in attrs else (
                list(arrays[1]) if len(arrays) > 1 and arrays[1] is not None else None)
            result = np.squeeze(arrays[0], axis=None if axes is None else
                                tuple(int(a) for a in axes))
        elif op == "Concat":
            result = np.concatenate([np.atleast_1d(a) for a in arrays], axis=attrs["axis"])
        elif op in ("Add", "Sub", "Mul", "Div"):
            function = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}.get(op)
            if op == "Div":
                function = np.floor_divide if arrays[0].dtype.kind in "iu" else np.divide
            result = function(arrays[0], arrays[1]).astype(np.result_type(arrays[0],
                                                                          arrays[1]))
        elif op == "Reshape" and all(d != BATCH for d in arrays[1]):
            target = [int(d) for d in arrays[1]]
            target = [arrays[0].shape[i] if d == 0 else d for i, d in enumerate(target)]
            result = arrays[0].reshape(target)
        elif op == "ConstantOfShape":
            value = attrs.get("value")
            fill = self.numpy_helper.to_array(value).ravel() if value is not None else \
                np.zeros(1, np.float32)
            shape = [int(d) for d in arrays[0]]
            if BATCH in shape:
                raise ConversionError("ConstantOfShape of the batch size", op=label)
            result = np.full(shape, fill[0], dtype=fill.dtype)
        if result is None:
            result = self.reference(node, arrays, label)
        result = np.asarray(result)
        value = Value(result.shape, const=result)
        if op == "Constant":
            value.const_key = node.output[0]  # write-back replaces the node's value
        return [value]

    def reference(self, node, arrays, label):
        onnx = self.onnx
        from onnx import helper
        from onnx.reference import ReferenceEvaluator
        names = ["in%d" % i if a is not None else "" for i, a in enumerate(arrays)]
        copy = helper.make_node(node.op_type, names, list(node.output), domain=node.domain)
        copy.attribute.extend(node.attribute)
        graph = helper.make_graph(
            [copy], "fold",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                           a.shape) for n, a in zip(names, arrays) if n],
            [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
             for o in node.output if o])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            return ReferenceEvaluator(model).run(
                None, {n: a for n, a in zip(names, arrays) if n})[0]
        except Exception as error:  # noqa: BLE001 - reported as what it is
            raise ConversionError("could not evaluate this node on constants (%s)" % error,
                                  op=label) from None

    # ------------------------------------------------------------ helpers

    def activation(self, value, label, what="input"):
        if value is None or value.is_const:
            raise ConversionError("the %s is a constant; the core runs ops on activations"
                                  % what, op=label)
        return value

    def weight_const(self, value, label, what):
        if value is None or not value.is_const:
            raise ConversionError("the %s is computed at run time; the core takes weights "
                                  "as constants" % what, op=label)
        if value.const.dtype != np.float32:
            raise ConversionError("the %s has dtype %s" % (what, value.const.dtype), op=label,
                                  supported="float32")
        return value

    def add_weight(self, value, steps, node_index=None):
        array = value.const
        from .graph import apply_steps
        core = apply_steps(array, steps)
        return self.builder.add_weight(core, Origin(value.const_key, array.shape, steps))

    def foldable(self, node):
        name = node.input[0]
        return self.consumers.get(name, 0) == 1 and name not in self.graph_outputs

    def spatial(self, value, label):
        x = self.activation(value, label)
        if not x.nchw:
            raise ConversionError("input sample has shape %r; the core's spatial ops take "
                                  "[C, H, W] images (NCHW)" % (x.shape,), op=label)
        return x

    def padding(self, attrs, x, kernel, label, ceil_mode=False):
        """The core's padding code equal to this node's auto_pad/pads/strides."""
        strides = tuple(attrs.get("strides", (1, 1)))
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        sizes = x.shape[1:]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            pads = []
            for size, k, s in zip(sizes, kernel, strides):
                out = -(-size // s)
                total = max((out - 1) * s + k - size, 0)
                before = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
                pads.append((before, total - before))
        elif auto_pad == "VALID":
            pads = [(0, 0), (0, 0)]
        elif auto_pad == "NOTSET":
            flat = list(attrs.get("pads", (0, 0, 0, 0)))
            pads = [(flat[0], flat[2]), (flat[1], flat[3])]
        else:
            raise ConversionError("auto_pad %s is not supported" % auto_pad, op=label,
                                  attribute="auto_pad")
        codes = set(same_or_valid(size, k, s, before, after, ceil_mode)
                    for size, k, s, (before, after) in zip(sizes, kernel, strides, pads))
        if len(codes) != 1 or None in codes:
            raise ConversionError(
                "pads %r with strides %r, kernel %r%s on a %dx%d input place windows "
                "unlike TFLite's SAME or VALID padding (a Pad op is not in the core yet)"
                % ([p for pair in zip(*pads) for p in pair], list(strides), list(kernel),
                   ", ceil_mode" if ceil_mode else "", sizes[0], sizes[1]), op=label,
                attribute="pads", supported="pads equal to SAME (odd element after) or "
                "VALID for this input size")
        return strides, codes.pop(), pads

    def out_spatial(self, x, kernel, strides, padding):
        return tuple(_image.spatial_output_size(size, k, s, padding)
                     for size, k, s in zip(x.shape[1:], kernel, strides))

    def image_value(self, index, channels, out_hw):
        shape = (channels,) + tuple(out_hw)
        core = tuple(out_hw) + (channels,)
        return Value(shape, index=index, core_shape=core, perm=nchw_perm(shape),
                     producer=len(self.builder.ops) - 1)

    # ------------------------------------------------------------ ops

    def op_Identity(self, node, inputs, label):
        return [inputs[0]]

    def op_Dropout(self, node, inputs, label):
        self.attributes(node, label, {"ratio", "seed", "is_test"})
        if len(inputs) > 2 and inputs[2] is not None:
            mode = inputs[2]
            if not mode.is_const or bool(np.asarray(mode.const).ravel()[0]):
                raise ConversionError("training_mode is true or computed", op=label,
                                      attribute="training_mode", supported="inference")
        return [inputs[0]]

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
        x = self.activation(inputs[0], label)
        axis = self.attributes(node, label, {"axis"}).get("axis", -1 if self.opset >= 13
                                                          else 1)
        rank = len(x.shape) + 1
        axis %= rank
        if x.nchw and axis == 1 and (self.opset >= 13 or x.shape[1:] == (1, 1)):
            return self._unary(_ops.SOFTMAX, inputs, label)
        if x.perm is None and axis == rank - 1 and (self.opset >= 13 or rank == 2):
            return self._unary(_ops.SOFTMAX, inputs, label)
        raise ConversionError("softmax over axis %d of a %d-D tensor (opset %d) is not "
                              "supported" % (axis, rank, self.opset), op=label,
                              attribute="axis", supported="the last axis, or the channels "
                              "of an image")

    def _reshaped(self, x, sample, label):
        """``x`` as logical sample shape ``sample`` (same elements, logical order)."""
        sample = tuple(int(d) for d in sample)
        if not 1 <= len(sample) <= 4:
            raise ConversionError("the result has %d dimensions besides the batch; the core "
                                  "holds 1 to 4" % len(sample), op=label)
        if sample == x.shape:
            return x
        if x.perm is None:
            index = self.builder.reshape_core(x, sample, label)
            return Value(sample, index=index, core_shape=sample)
        if len(sample) == 1:
            index = self.builder.reshape_core(x, sample, label)
            return Value(sample, index=index, core_shape=sample, perm=x.perm)
        raise ConversionError("reshaping a channel-first [C, H, W] sample to %r needs a "
                              "transpose in the core's NHWC layout (not in the core yet)"
                              % (sample,), op=label,
                              supported="flattening it to [N, -1]")

    def op_Flatten(self, node, inputs, label):
        x = self.activation(inputs[0], label)
        axis = self.attributes(node, label, {"axis"}).get("axis", 1)
        if axis % (len(x.shape) + 1) != 1:
            raise ConversionError("flatten at axis %d mixes the batch with features" % axis,
                                  op=label, attribute="axis", supported="1")
        return [self._reshaped(x, (count(x.shape),), label)]

    def op_Reshape(self, node, inputs, label):
        self.attributes(node, label, {"allowzero"})
        x = self.activation(inputs[0], label)
        if not inputs[1].is_const:
            raise ConversionError("the new shape is computed from run-time data", op=label)
        target = [int(d) for d in np.asarray(inputs[1].const).ravel()]
        return [self._reshaped(x, _sample_of_target(target, x.shape, label), label)]

    def _axes(self, node, inputs, label):
        attrs = self.attributes(node, label, {"axes"})
        if "axes" in attrs:
            return [int(a) for a in attrs["axes"]]
        if len(inputs) > 1 and inputs[1] is not None:
            if not inputs[1].is_const:
                raise ConversionError("the axes are computed at run time", op=label)
            return [int(a) for a in np.asarray(inputs[1].const).ravel()]
        return None

    def op_Squeeze(self, node, inputs, label):
        x = self.activation(inputs[0], label)
        axes = self._axes(node, inputs, label)
        rank = len(x.shape) + 1
        if axes is None:
            axes = [i + 1 for i, d in enumerate(x.shape) if d == 1]
        axes = [a % rank for a in axes]
        if 0 in axes:
            raise ConversionError("squeezing the batch dimension", op=label, attribute="axes")
        sample = tuple(d for i, d in enumerate(x.shape) if i + 1 not in axes)
        return [self._reshaped(x, sample, label)]

    def op_Unsqueeze(self, node, inputs, label):
        x = self.activation(inputs[0], label)
        axes = self._axes(node, inputs, label)
        rank = len(x.shape) + 1 + len(axes)
        shape = [BATCH] + list(x.shape)
        for axis in sorted(a % rank for a in axes):
            if axis == 0:
                raise ConversionError("a new first dimension moves the batch", op=label,
                                      attribute="axes")
            shape.insert(axis, 1)
        return [self._reshaped(x, shape[1:], label)]

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
        if not self.foldable(node):
            folded = None
        else:
            folded = self.builder.fold_affine(x, scale, shift, label, keys, kind,
                                              shift_value)
        if folded is None:
            raise ConversionError(
                "%s folds only into the Conv, Gemm or MatMul right before it whose output "
                "feeds nothing else (no activation in between), per output channel"
                % node.op_type, op=label, supported="per-channel or scalar constants after "
                "a Conv/Gemm/MatMul")
        return folded

    def _channel_vector(self, x, const, label):
        """A per-channel (or scalar) constant for x's channel axis, as a 1-D array."""
        array = np.asarray(const, np.float32)
        channels = x.shape[0] if x.nchw else x.shape[-1]
        if array.size == 1:
            return array.reshape(1)
        shape = tuple(d for d in array.shape)
        if x.nchw and shape in ((channels, 1, 1), (1, channels, 1, 1)):
            return array.reshape(-1)
        if not x.nchw and x.perm is None and shape in ((channels,), (1, channels)):
            return array.reshape(-1)
        raise ConversionError("the constant has shape %r; broadcasting other than per "
                              "channel is not supported" % (list(shape),), op=label)

    def _binary(self, node, inputs, label):
        self.attributes(node, label, set())
        a, b = inputs
        op = node.op_type
        if not a.is_const and not b.is_const:
            if op != "Add":
                raise ConversionError("%s of two activations is not supported" % op,
                                      op=label, supported="Add of two activations of the "
                                      "same shape")
            return [self._add([a, b], label)]
        if a.is_const:
            if op in ("Sub", "Div"):
                raise ConversionError("constant %s activation is not supported"
                                      % {"Sub": "minus", "Div": "divided by"}[op], op=label)
            a, b = b, a
        if b.const.dtype != np.float32:
            raise ConversionError("the constant has dtype %s" % b.const.dtype, op=label)
        vector = self._channel_vector(a, b.const, label)
        one, zero = np.float32(1), np.float32(0)
        if op == "Add":
            return [self._affine(node, a, one, vector, [b.const_key], "add", label,
                                 shift_value=b if vector.size > 1 else None)]
        if op == "Sub":
            return [self._affine(node, a, one, -vector, [b.const_key], "sub", label)]
        if op == "Mul":
            return [self._affine(node, a, vector, zero, [b.const_key], "mul", label)]
        return [self._affine(node, a, one / vector, zero, [b.const_key], "div", label)]

    op_Add = op_Sub = op_Mul = op_Div = _binary

    def _add(self, xs, label):
        first = xs[0]
        for other in xs[1:]:
            if other.is_const or other.shape != first.shape or \
                    other.core_shape != first.core_shape or \
                    (other.perm is None) != (first.perm is None) or \
                    (other.perm is not None and not np.array_equal(other.perm, first.perm)):
                raise ConversionError("operands of shapes %r and %r: broadcasting is not "
                                      "supported" % (first.shape, other.shape), op=label,
                                      supported="activations of the same shape")
        result = first
        for other in xs[1:]:
            index = self.builder.op(_ops.ADD, [result.index, other.index], first.core_shape,
                                    label)
            result = Value(first.shape, index=index, core_shape=first.core_shape,
                           perm=first.perm)
        return result

    def op_Sum(self, node, inputs, label):
        self.attributes(node, label, set())
        if len(inputs) == 1:
            return [inputs[0]]
        return [self._add(inputs, label)]

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

    def op_Concat(self, node, inputs, label):
        axis = self.attributes(node, label, {"axis"})["axis"]
        xs = [self.activation(v, label, "operand") for v in inputs]
        if not 2 <= len(xs) <= 4:
            raise ConversionError("%d operands; the core joins 2 to 4" % len(xs), op=label)
        rank = len(xs[0].shape) + 1
        axis %= rank
        if all(x.nchw for x in xs) and axis == 1:
            hw = xs[0].shape[1:]
            if any(x.shape[1:] != hw for x in xs):
                raise ConversionError("operands differ in H, W", op=label)
            channels = sum(x.shape[0] for x in xs)
            index = self.builder.op(_ops.CONCATENATION, [x.index for x in xs],
                                    tuple(hw) + (channels,), label)
            return [self.image_value(index, channels, hw)]
        if all(x.perm is None for x in xs) and axis == rank - 1:
            rest = xs[0].shape[:-1]
            if any(x.shape[:-1] != rest for x in xs):
                raise ConversionError("operands differ outside the joined axis", op=label)
            shape = tuple(rest) + (sum(x.shape[-1] for x in xs),)
            index = self.builder.op(_ops.CONCATENATION, [x.index for x in xs], shape, label)
            return [Value(shape, index=index)]
        raise ConversionError("concatenation along axis %d is not supported" % axis,
                              op=label, attribute="axis", supported="the channels of "
                              "images (1), or the last axis")

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
        strides, padding, _ = self.padding(attrs, x, (kh, kw), label)
        bias_value = None
        if len(inputs) > 2 and inputs[2] is not None:
            bias_value = self.weight_const(inputs[2], label, "B")
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
        kernel = tuple(attrs["kernel_shape"])
        ceil_mode = bool(attrs.get("ceil_mode", 0))
        strides, padding, pads = self.padding(attrs, x, kernel, label, ceil_mode)
        if op_type == _ops.AVERAGE_POOL2D and attrs.get("count_include_pad", 0) and \
                any(p for pair in pads for p in pair):
            raise ConversionError("count_include_pad=1 with padding divides by the whole "
                                  "window; the core averages over in-bounds elements",
                                  op=label, attribute="count_include_pad",
                                  supported="0, or no padding")
        params = _image.spatial_params(kernel, strides, padding)
        out_hw = self.out_spatial(x, kernel, strides, padding)
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
        channels = x.shape[0]
        index = self.builder.op(_ops.GLOBAL_AVERAGE_POOL, [x.index], (channels,), label)
        shape = (channels, 1, 1) if keep else (channels,)
        return Value(shape, index=index, core_shape=(channels,))

    def op_GlobalAveragePool(self, node, inputs, label):
        self.attributes(node, label, set())
        return [self._global_average(self.spatial(inputs[0], label), True, label)]

    def op_ReduceMean(self, node, inputs, label):
        attrs = self.attributes(node, label, {"axes", "keepdims",
                                              "noop_with_empty_axes"})
        x = self.spatial(inputs[0], label)
        axes = attrs.get("axes")
        if axes is None and len(inputs) > 1 and inputs[1] is not None:
            axes = list(np.asarray(inputs[1].const).ravel())
        if axes is None or sorted(int(a) % 4 for a in axes) != [2, 3]:
            raise ConversionError("mean over axes %r is not supported" % (axes,), op=label,
                                  attribute="axes", supported="[2, 3] (H and W)")
        return [self._global_average(x, bool(attrs.get("keepdims", 1)), label)]


def read(model):
    """(Builder, input names, output names, input layouts, output layouts) of an ONNX
    ModelProto."""
    reader = _Reader(model)
    builder = reader.run()
    inputs = [i.name for i in model.graph.input if i.name not in reader.initializers]
    outputs = [o.name for o in model.graph.output]
    return builder, inputs, outputs, reader.input_layouts, reader.output_layouts
