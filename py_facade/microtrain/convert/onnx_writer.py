"""Write ``.onnx`` files: trained weights back into the original graph, or a new graph from
any ``.mtm`` image (built with ``onnx.helper``, opset 17).

Write-back replaces the initializers (or ``Constant`` node values) the weights came
from, in the source's layout (OIHW filters, Gemm's own orientation). A BatchNorm or a
constant Mul/Add/Sub/Div that was folded into a weight is removed from the graph (its
producer writes the removed node's output name), and a bias the fold created becomes a
new initializer of its Conv/Gemm.

A new graph takes the image's NHWC inputs and gives its outputs in the image's layout;
inside, convolutions and pools run in ONNX's NCHW with Transpose nodes where the layout
changes, and SAME padding becomes TFLite's explicit pads (the odd element after).
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from .graph import ConversionError

OPSET = 17


def _onnx():
    from .onnx_reader import _onnx as load
    return load()


def write_back(source, weights):
    onnx = _onnx()
    from onnx import numpy_helper, helper
    model = onnx.load_model_from_string(source.data)
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    constants = {n.output[0]: n for n in graph.node if n.op_type == "Constant"}
    nodes = list(graph.node)
    written = {}

    def put(key, array):
        tensor = numpy_helper.from_array(np.ascontiguousarray(array, np.float32), key)
        if key in written and not np.array_equal(written[key], array):
            raise ConversionError("initializer %r feeds two weights that trained to different "
                                  "values; export a new file instead (source=None)" % key)
        written[key] = array
        if key in initializers:
            initializers[key].CopyFrom(tensor)
        elif key in constants:
            node = constants[key]
            del node.attribute[:]
            node.attribute.extend([helper.make_attribute("value", tensor)])
        else:
            raise ConversionError("weight source %r is neither an initializer nor a "
                                  "Constant node" % key)

    for position, (origin, weight) in enumerate(zip(source.origins, weights)):
        if origin.frozen:
            continue  # a Mul/Sub constant: never trained, the file holds it as it was
        array = origin.to_source(weight)
        if origin.key is not None:
            put(origin.key, array)
            continue
        node = nodes[origin.node]
        if node.op_type not in ("Conv", "Gemm"):
            raise ConversionError("weight %d is a bias the conversion created for %s node %d, "
                                  "which takes none; export a new file instead (source=None)"
                                  % (position, node.op_type, origin.node))
        name = "%s_microtrain_bias" % (node.output[0],)
        graph.initializer.append(numpy_helper.from_array(array, name))
        while len(node.input) < 2:
            node.input.append("")
        if len(node.input) == 2:
            node.input.append(name)
        else:
            node.input[2] = name
    removed = set()
    for fold in source.folds:
        node = nodes[fold["node"]]
        folded_input, folded_output = node.input[0], node.output[0]
        for producer in nodes:
            for slot, name in enumerate(producer.output):
                if name == folded_input:
                    producer.output[slot] = folded_output
        removed.add(fold["node"])
    kept = [n for i, n in enumerate(nodes) if i not in removed]
    del graph.node[:]
    graph.node.extend(kept)
    used = set(name for n in kept for name in n.input)
    stale = [t for t in graph.initializer if t.name not in used and
             t.name not in set(i.name for i in graph.input)]
    for tensor in stale:
        graph.initializer.remove(tensor)
    return model.SerializeToString()


class _Graph:
    def __init__(self, parsed, weights):
        self.onnx = _onnx()
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.parsed = parsed
        self.weights = weights
        self.nodes = []
        self.initializers = []
        self.names = {}      # core tensor index -> (onnx name, "nhwc" | "nchw")
        self.views = {}      # (onnx name, wanted layout) -> transposed name
        self.counter = 0

    def fresh(self, stem):
        self.counter += 1
        return "%s_%d" % (stem, self.counter)

    def const(self, array, stem):
        name = self.fresh(stem)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op_type, inputs, stem, **attrs):
        output = self.fresh(stem)
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], **attrs))
        return output

    def get(self, index, layout):
        """The ONNX name of core tensor ``index`` in ``layout`` (3-D samples only differ)."""
        name, held = self.names[index]
        if held == layout or len(self.parsed.tensors[index].dims) != 3:
            return name
        key = (name, layout)
        if key not in self.views:
            perm = [0, 3, 1, 2] if layout == "nchw" else [0, 2, 3, 1]
            self.views[key] = self.node("Transpose", [name], "transpose", perm=perm)
        return self.views[key]

    def pads(self, dims, kernel, strides, padding, packed=0):
        """ONNX's pads [top, left, bottom, right] of the core's padding (``packed``: a
        pool's params[3], the explicit pads of PADDING_EXPLICIT)."""
        if padding == _image.PADDING_VALID:
            return [0, 0, 0, 0]
        if padding == _image.PADDING_EXPLICIT:  # top | bottom << 8 | left << 16 | right << 24
            return [packed & 0xFF, packed >> 16 & 0xFF, packed >> 8 & 0xFF, packed >> 24]
        before, after = [], []
        for size, k, s in zip(dims[:2], kernel, strides):
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            before.append(total // 2)
            after.append(total - total // 2)
        return before + after

    def fused(self, name, code):
        if code == _image.FUSED_RELU:
            return self.node("Relu", [name], "relu")
        if code == _image.FUSED_RELU6:
            return self.node("Clip", [name, self.const(np.float32(0), "zero"),
                                      self.const(np.float32(6), "six")], "relu6")
        return name

    def build(self):
        tensors = self.parsed.tensors
        for i in self.parsed.inputs:
            self.names[i] = ("input_%d" % i, "nhwc")
        for index, op in enumerate(self.parsed.ops):
            kind = op.op_type
            x = op.inputs[0]
            out = op.outputs[0]
            dims = tensors[x].dims
            if kind == _ops.DENSE:
                flat = self.node("Reshape", [self.get(x, "nhwc"), self.const(
                    np.array([-1, int(np.prod(dims))], np.int64), "shape")], "flat")
                ins = [flat, self.const(self.weights[op.inputs[1]], "W")]
                if len(op.inputs) > 2 and op.inputs[2] is not None:
                    ins.append(self.const(self.weights[op.inputs[2]], "b"))
                self.names[out] = (self.node("Gemm", ins, "dense", transB=1), "nhwc")
            elif kind in (_ops.CONV2D, _ops.DEPTHWISE_CONV2D):
                weight = self.weights[op.inputs[1]]
                strides = (op.params[1] & 0xFFFF, op.params[1] >> 16)
                kernel = weight.shape[1:3]
                if kind == _ops.CONV2D:
                    w, group = weight.transpose(0, 3, 1, 2), 1
                else:
                    w, group = weight.transpose(3, 0, 1, 2), dims[2]
                ins = [self.get(x, "nchw"), self.const(np.ascontiguousarray(w), "W")]
                if len(op.inputs) > 2 and op.inputs[2] is not None:
                    ins.append(self.const(self.weights[op.inputs[2]], "b"))
                y = self.node("Conv", ins, "conv", strides=list(strides), group=group,
                              kernel_shape=list(kernel),
                              pads=self.pads(dims, kernel, strides, op.params[2]))
                self.names[out] = (self.fused(y, op.params[3]), "nchw")
            elif kind in (_ops.MAX_POOL2D, _ops.AVERAGE_POOL2D):
                kernel = (op.params[0] & 0xFFFF, op.params[0] >> 16)
                strides = (op.params[1] & 0xFFFF, op.params[1] >> 16)
                attrs = {"kernel_shape": list(kernel), "strides": list(strides),
                         "pads": self.pads(dims, kernel, strides, op.params[2], op.params[3])}
                if kind == _ops.AVERAGE_POOL2D:
                    attrs["count_include_pad"] = 0
                op_type = "MaxPool" if kind == _ops.MAX_POOL2D else "AveragePool"
                self.names[out] = (self.node(op_type, [self.get(x, "nchw")], "pool",
                                             **attrs), "nchw")
            elif kind == _ops.GLOBAL_AVERAGE_POOL:
                y = self.node("GlobalAveragePool", [self.get(x, "nchw")], "gap")
                self.names[out] = (self.node("Flatten", [y], "flat", axis=1), "nhwc")
            elif kind == _ops.RESHAPE:
                shape = np.array([-1] + list(tensors[out].dims), np.int64)
                self.names[out] = (self.node("Reshape", [self.get(x, "nhwc"),
                                                         self.const(shape, "shape")],
                                             "reshape"), "nhwc")
            elif kind in (_ops.ADD, _ops.CONCATENATION):
                layouts = [self.names[i][1] for i in op.inputs]
                layout = "nchw" if "nchw" in layouts else "nhwc"
                ins = [self.get(i, layout) for i in op.inputs]
                if kind == _ops.ADD:
                    self.names[out] = (self.node("Add", ins, "add"), layout)
                else:
                    axis = 1 if layout == "nchw" and len(dims) == 3 else -1
                    self.names[out] = (self.node("Concat", ins, "concat", axis=axis), layout)
            elif kind == _ops.PAD:
                top, bottom = op.params[0] & 0xFFFF, op.params[0] >> 16
                left, right = op.params[1] & 0xFFFF, op.params[1] >> 16
                pads = [0, 0, top, left, 0, 0, bottom, right]  # NCHW, as readers expect
                self.names[out] = (self.node("Pad", [self.get(x, "nchw"), self.const(
                    np.array(pads, np.int64), "pads")], "pad"), "nchw")
            elif kind in (_ops.MUL, _ops.SUB):
                ins = []
                for i in op.inputs:
                    if tensors[i].flags & _image.FLAG_CONST:  # broadcasts over the last axis
                        ins.append(self.const(self.weights[i], "c"))
                    else:
                        ins.append(self.get(i, "nhwc"))
                self.names[out] = (self.node("Mul" if kind == _ops.MUL else "Sub", ins,
                                             "arith"), "nhwc")
            elif kind == _ops.TRANSPOSE:
                sample_perm = [(op.params[0] >> (4 * k)) & 0xF for k in range(len(dims))]
                self.names[out] = (self.node("Transpose", [self.get(x, "nhwc")], "transpose",
                                             perm=[0] + [p + 1 for p in sample_perm]), "nhwc")
            elif kind == _ops.SOFTMAX:
                name, layout = self.names[x]
                axis = 1 if layout == "nchw" and len(dims) == 3 else -1
                self.names[out] = (self.node("Softmax", [name], "softmax", axis=axis), layout)
            elif kind in (_ops.RELU, _ops.RELU6, _ops.SIGMOID, _ops.TANH, _ops.LEAKY_RELU):
                name, layout = self.names[x]
                if kind == _ops.RELU6:
                    y = self.fused(name, _image.FUSED_RELU6)
                elif kind == _ops.LEAKY_RELU:
                    y = self.node("LeakyRelu", [name], "leaky",
                                  alpha=_image.f32_from_bits(op.params[0]))
                else:
                    y = self.node({_ops.RELU: "Relu", _ops.SIGMOID: "Sigmoid",
                                   _ops.TANH: "Tanh"}[kind], [name], "act")
                self.names[out] = (y, layout)
            else:
                raise ConversionError("op %d (%s) has no ONNX writer" % (index,
                                                                         _ops.name(kind)))
        helper = self.helper
        float_type = self.onnx.TensorProto.FLOAT
        inputs = [helper.make_tensor_value_info("input_%d" % i, float_type,
                                                ["N"] + list(tensors[i].dims))
                  for i in self.parsed.inputs]
        outputs = []
        for position, i in enumerate(self.parsed.outputs):
            name = "output_%d" % position
            self.nodes.append(helper.make_node("Identity", [self.get(i, "nhwc")], [name]))
            outputs.append(helper.make_tensor_value_info(name, float_type,
                                                         ["N"] + list(tensors[i].dims)))
        graph = helper.make_graph(self.nodes, "microtrain", inputs, outputs,
                                  self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="microtrain")
        model.ir_version = 8
        return model.SerializeToString()


def write_new(image, weights):
    parsed = _image.read_image(image)
    by_tensor = dict(zip(parsed.const_f32_tensors(), weights))
    return _Graph(parsed, by_tensor).build()
