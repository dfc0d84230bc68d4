"""Import a float32 ONNX model into a ``.mtm`` image (parsed with the ``onnx`` package).

Layout: ONNX images are NCHW with OIHW filters; the core is NHWC with OHWI filters.
Filters are transposed once here. The image takes its inputs and gives its outputs as
ONNX Runtime does (NCHW images included): TRANSPOSE ops inside move images between the
two layouts only where an op needs it (onnx_layout explains how tensors are held).

The reader is split by responsibility: this module walks the graph (inputs, nodes,
outputs, shared checks), ``onnx_constants`` evaluates constant subgraphs,
``onnx_layout`` holds tensors and converts the ops that only move elements,
``onnx_ops`` the ops that compute.
"""

from ..errors import install_hint
from .budget import MAX_NODES, FoldBudget
from .graph import (CONTRADICTION_ERRORS, Builder, ConversionError, Origin, Value,
                    activation_value, float32_const)
from .onnx_constants import ConstantFolding
from .onnx_layout import LayoutOps
from .onnx_ops import ComputeOps

SUPPORTED_OPS = ("Gemm, MatMul (+ Add of a bias), Conv (group 1 or depthwise; any pads), "
                 "BatchNormalization (folded into the Conv/Gemm before it), Relu, Clip "
                 "(ReLU, ReLU6), LeakyRelu, Sigmoid, Tanh, Softmax (over a trailing block "
                 "of dims, or the channels), MaxPool, AveragePool (any pads, ceil_mode), "
                 "GlobalAveragePool, ReduceMean over H and W, Pad "
                 "(zeros around H and W), Transpose (the batch first), Flatten, Reshape, "
                 "Squeeze, Unsqueeze, Add, Sum, Sub, Mul (activations of one shape), "
                 "Add/Sub/Mul/Div by a per-channel, last-axis or scalar constant, Concat "
                 "(channels or last axis), Dropout and Identity (removed), and constant "
                 "subgraphs")

_FLOAT = 1


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401
    except ImportError as error:
        raise ImportError("reading .onnx needs the 'onnx' package: %s"
                          % install_hint("convert")) from error
    return onnx


class _Reader(ConstantFolding, LayoutOps, ComputeOps):
    def __init__(self, model, file_bytes):
        self.onnx = _onnx()
        from onnx import numpy_helper
        self.numpy_helper = numpy_helper
        self.model = model
        self.graph = model.graph
        self.budget = FoldBudget(file_bytes)
        self.opset = 1
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                self.opset = entry.version
        self.builder = Builder("onnx")
        self.values = {}
        self.initializers = set()
        for tensor in self.graph.initializer:
            value = Value(tuple(tensor.dims), const=self.tensor_array(
                tensor, "initializer %r" % tensor.name, folded=False))
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
            try:
                self.node(index, node)
            except ConversionError:
                raise
            except CONTRADICTION_ERRORS as error:
                raise ConversionError("the node contradicts its inputs or attributes (%s: %s)"
                                      % (type(error).__name__, error),
                                      op=self.label(index, node)) from None
        for graph_output in self.graph.output:
            value = self.values.get(graph_output.name)
            if value is None:
                raise ConversionError("output %r is never written" % graph_output.name)
            label = "output %r" % graph_output.name
            if not value.is_const and value.index not in self.builder.inputs:
                value = self.in_shape(value, label)  # as ONNX Runtime gives it
            self.builder.mark_output(value)
            self.output_layouts.append({"shape": value.shape, "core_shape": value.core_shape,
                                        "transpose": None})
        return self.builder

    def add_input(self, graph_input):
        """A model input, held as ONNX Runtime takes it ([C, H, W] images too: the first
        spatial op that reads one transposes it, see onnx_layout)."""
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
        self.values[graph_input.name] = self.builder.add_input(sample, sample,
                                                                   name=graph_input.name)
        self.input_layouts.append({"shape": sample, "core_shape": sample, "transpose": None})

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

    @staticmethod
    def label(index, node):
        name = " %r" % node.name if node.name else ""
        return "onnx node %d (%s%s)" % (index, node.op_type, name)

    def node(self, index, node):
        self.builder.source_node = index
        label = self.label(index, node)
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
            if output_name and value is not None:
                self.values[output_name] = value
        for extra in node.output[len(outputs):]:
            if extra and self.consumers.get(extra) or extra in self.graph_outputs:
                raise ConversionError("output %r is used; the core computes only the first "
                                      "output" % extra, op=label)

    activation = staticmethod(activation_value)
    weight_const = staticmethod(float32_const)

    def add_weight(self, value, steps, node_index=None):
        array = value.const
        from .graph import apply_steps
        core = apply_steps(array, steps)
        return self.builder.add_weight(core, Origin(value.const_key, array.shape, steps))

    def constant_operand(self, value, label, what):
        """The array of an optional constant operand (None when absent)."""
        if value is None:
            return None
        if not value.is_const:
            raise ConversionError("the %s are computed at run time" % what, op=label)
        return value.const

    def foldable(self, node, name=None):
        """The activation ``name`` (default: the node's first input) feeds only this node,
        so the node may fold into its producer."""
        name = node.input[0] if name is None else name
        return self.consumers.get(name, 0) == 1 and name not in self.graph_outputs

def check_graph(model):
    """Refuse a graph that is not valid ONNX, which would otherwise become some other model:
    a name written twice (not SSA, told by node), then whatever onnx.checker refuses
    (nodes out of order, attributes of the wrong type, unknown ops, ...)."""
    from onnx import checker
    graph = model.graph
    if len(graph.node) > MAX_NODES:
        raise ConversionError("the graph has %d nodes; at most %d are read (the core runs 256 "
                              "ops)" % (len(graph.node), MAX_NODES))
    writers = {}
    for tensor in graph.initializer:
        writers.setdefault(tensor.name, "initializer %r" % tensor.name)
    for graph_input in graph.input:
        writers.setdefault(graph_input.name, "input %r" % graph_input.name)
    for index, node in enumerate(graph.node):
        for name in node.output:
            if not name:
                continue
            if name in writers:
                raise ConversionError("%r is written twice, by %s and by this node: the graph "
                                      "is not in SSA form, so it is not a valid ONNX model"
                                      % (name, writers[name]), op=_Reader.label(index, node))
            writers[name] = _Reader.label(index, node)
    # the checker wants the main graph's inputs and outputs shaped; ONNX Runtime does not
    # (exporters leave output shapes out): they get an empty shape field while it checks
    unshaped = [v for v in list(graph.input) + list(graph.output)
                if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    for value_info in unshaped:
        value_info.type.tensor_type.shape.SetInParent()
    try:
        checker.check_model(model)
    except Exception as error:  # noqa: BLE001 - ValidationError, or too large to check
        text = " ".join(str(error).split())
        raise ConversionError("not a valid ONNX model (onnx.checker: %s)"
                              % (text[:400] + ("..." if len(text) > 400 else "")),
                              op=_checked_node(graph, text)) from None
    finally:
        for value_info in unshaped:
            value_info.type.tensor_type.ClearField("shape")


def _checked_node(graph, text):
    """The label of the node onnx.checker's message names ("Name: n OpType: Conv"), if any."""
    import re
    found = re.search(r"Name: (.*?) OpType: (\S+)", text)
    if found is None:
        return None
    for index, node in enumerate(graph.node):
        if node.name == found.group(1) and node.op_type == found.group(2):
            return _Reader.label(index, node)
    return None


def read(model, file_bytes=None):
    """(Builder, input names, output names, input layouts, output layouts) of an ONNX
    ModelProto (``file_bytes``: its file's size, which sets the folding budget; default
    the model's serialized size)."""
    check_graph(model)
    reader = _Reader(model, model.ByteSize() if file_bytes is None else file_bytes)
    builder = reader.run()
    inputs = [i.name for i in model.graph.input if i.name not in reader.initializers]
    outputs = [o.name for o in model.graph.output]
    return builder, inputs, outputs, reader.input_layouts, reader.output_layouts
