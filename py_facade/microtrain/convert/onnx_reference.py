"""An ONNX op on constants that numpy code here does not cover, evaluated by
``onnx.reference`` after ONNX's own shape inference has said how large its results are
(``onnx.shape_inference`` with data propagation: a Range's or an Expand's size follows
from its constant inputs), so that the import's ``FoldBudget`` refuses it before anything
is allocated. An op whose result size cannot be known first is refused, except the few
whose results are bounded by their input (NonZero, Unique, Compress).

Work is what the op reads and writes, except for the ops onnx.reference runs as a product
(MatMul, Gemm: multiply-adds) and those it does not vectorize (Conv, pools, recurrent and
signal ops, ...), charged every output element times every input element: a bound, since
no output element reads more than every input.
"""

import numpy as np

from .budget import REFERENCE_WORK, elements
from .graph import ConversionError

# ops whose work is linear in what they read and write (numpy-vectorized in onnx.reference)
_LINEAR = frozenset((
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan",
    "Atanh", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast",
    "CastLike", "Ceil", "Celu", "Clip", "Compress", "Concat", "ConstantOfShape", "Cos",
    "Cosh", "CumSum", "DepthToSpace", "DequantizeLinear", "Div", "Elu", "Equal", "Erf",
    "Exp", "Expand", "EyeLike", "Flatten", "Floor", "Gather", "GatherElements", "GatherND",
    "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Hardmax", "Identity",
    "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "Max", "Mean",
    "Min", "Mish", "Mod", "Mul", "Neg", "NonZero", "Not", "OneHot", "Or", "Pad", "Pow",
    "PRelu", "QuantizeLinear", "Range", "Reciprocal", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Round",
    "ScatterElements", "ScatterND", "Selu", "Shape", "Shrink", "Sigmoid", "Sign", "Sin",
    "Sinh", "Size", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split",
    "Sqrt", "Squeeze", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Tile", "TopK",
    "Transpose", "Trilu", "Unique", "Unsqueeze", "Where", "Xor"))
_PRODUCTS = frozenset(("MatMul", "Gemm", "MatMulInteger", "QLinearMatMul"))
# an output of unknown size (data-dependent) bounded by the first input: elements per element
_BOUNDED = {"NonZero": lambda x: max(x.ndim, 1) * x.size, "Unique": lambda x: x.size,
            "Compress": lambda x: x.size}
# inputs up to this many elements are given to shape inference as values (a shape, a
# Range's bounds), larger ones by shape and type alone
_VALUE_LIMIT = 4096


def _model(node, arrays, opset, with_values):
    """A one-node model of ``node`` reading ``arrays``: as inputs (to run it), or with the
    small ones as initializers (so shape inference sees their values)."""
    import onnx
    from onnx import helper, numpy_helper
    names = ["in%d" % i if a is not None else "" for i, a in enumerate(arrays)]
    copy = helper.make_node(node.op_type, names, list(node.output), domain=node.domain)
    copy.attribute.extend(node.attribute)
    inputs, initializers = [], []
    for name, array in zip(names, arrays):
        if not name:
            continue
        if with_values and array.size <= _VALUE_LIMIT:
            initializers.append(numpy_helper.from_array(np.asarray(array), name))
        else:
            inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
    outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
               for o in node.output if o]
    graph = helper.make_graph([copy], "fold", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _inferred_sizes(node, arrays, opset, label):
    """[(elements, itemsize)] of the node's outputs as shape inference gives them."""
    from onnx import helper, shape_inference
    try:
        inferred = shape_inference.infer_shapes(_model(node, arrays, opset, True),
                                                check_type=True, strict_mode=True,
                                                data_prop=True)
    except Exception as error:  # noqa: BLE001 - onnx's InferenceError says what is wrong
        raise ConversionError("could not evaluate this node on constants (shape inference: "
                              "%s)" % " ".join(str(error).split()), op=label) from None
    first = next((a for a in arrays if a is not None), None)
    sizes = []
    for output in inferred.graph.output:
        if not output.type.HasField("tensor_type"):
            raise ConversionError("this node does not evaluate to a tensor", op=label)
        tensor_type = output.type.tensor_type
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)).itemsize
        except (KeyError, TypeError, ValueError):
            itemsize = 8
        dims = tensor_type.shape.dim if tensor_type.HasField("shape") else None
        if dims is not None and all(d.HasField("dim_value") for d in dims):
            sizes.append((elements(d.dim_value for d in dims), max(itemsize, 1)))
        elif node.op_type in _BOUNDED and first is not None:
            sizes.append((_BOUNDED[node.op_type](first), max(itemsize, 1)))
        else:
            raise ConversionError("the size of this node's result cannot be known before "
                                  "evaluating it, so it is not evaluated on constants",
                                  op=label, supported="ops whose result size follows from "
                                  "their inputs' shapes and values")
    return sizes


def _work(op_type, arrays, output_elements, attributes):
    read = sum(a.size for a in arrays if a is not None)
    if op_type in _LINEAR:
        return read + output_elements
    if op_type in _PRODUCTS and arrays and arrays[0] is not None and arrays[0].ndim:
        transposed = op_type == "Gemm" and any(a.name == "transA" and a.i for a in attributes)
        inner = arrays[0].shape[0 if transposed else -1]
        return read + output_elements * max(int(inner), 1)
    return read + output_elements * max(read, 1)


def evaluate(node, arrays, label, budget, opset):
    """The outputs of ``node`` on constant ``arrays`` by onnx.reference, sized first: one
    array per output of the node, None where its name is empty (not asked for)."""
    from onnx.reference import ReferenceEvaluator
    arrays = [None if a is None else np.asarray(a) for a in arrays]
    sizes = _inferred_sizes(node, arrays, opset, label)
    output_elements = sum(count for count, _ in sizes)
    predicted = sum(count * itemsize for count, itemsize in sizes)
    budget.allow(label, predicted, _work(node.op_type, arrays, output_elements,
                                         node.attribute), overhead=REFERENCE_WORK)
    names = ["in%d" % i for i, a in enumerate(arrays) if a is not None]
    feeds = dict(zip(names, [a for a in arrays if a is not None]))
    try:
        results = ReferenceEvaluator(_model(node, arrays, opset, False)).run(None, feeds)
    except Exception as error:  # noqa: BLE001 - reported as what it is
        raise ConversionError("could not evaluate this node on constants (%s: %s)"
                              % (type(error).__name__, error), op=label) from None
    results = [np.asarray(r) for r in results]
    if sum(r.nbytes for r in results) > predicted:
        raise ConversionError("evaluated to %d bytes, more than shape inference said (%d)"
                              % (sum(r.nbytes for r in results), predicted), op=label)
    given = iter(results)
    return [next(given) if name else None for name in node.output]  # one per output slot
