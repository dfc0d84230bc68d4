"""Hostile and careless model files for the importers (issue 45): each case is a small
file that once cost gigabytes, hung, became a different model, leaked an internal error
or wrote an image the core refused. ``CASES`` maps a name to (file name, maker); a maker
returns the file's bytes. Built with onnx.helper and tflite_int8_builder, so nothing
here is a binary fixture.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_int8_builder import FLOAT32, INT8, INT32, Graph  # noqa: E402

OPSET = 17


def _onnx_model(nodes, inputs, outputs, initializers=(), opset=OPSET):
    from onnx import helper
    graph = helper.make_graph(nodes, "hostile", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def _float_info(name, shape):
    from onnx import TensorProto, helper
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _relu_graph(extra_nodes, extra_initializers=()):
    """x [N, 4] -> Relu -> y, beside constant nodes that nothing reads."""
    from onnx import helper
    nodes = list(extra_nodes) + [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _onnx_model(nodes, [_float_info("x", ["N", 4])], [_float_info("y", ["N", 4])],
                       extra_initializers)


def _int64(name, values):
    from onnx import helper
    return helper.make_node("Constant", [], [name], name=name + "_node",
                            value=helper.make_tensor(name + "_value", 7, [len(values)],
                                                     list(values)))


def onnx_constant_of_shape():
    """A 255-byte file whose ConstantOfShape would fill 20000 x 20000 floats (1.6 GB)."""
    from onnx import helper
    return _relu_graph([_int64("shape", [20000, 20000]),
                        helper.make_node("ConstantOfShape", ["shape"], ["big"], name="fill")])


def onnx_constant_of_shape_used():
    """The same fill, summed and added to the activation: the constant is used."""
    from onnx import helper
    nodes = [_int64("shape", [20000, 20000]),
             helper.make_node("ConstantOfShape", ["shape"], ["big"], name="fill"),
             helper.make_node("ReduceSum", ["big"], ["total"], name="sum", keepdims=0),
             helper.make_node("Add", ["x", "total"], ["y"], name="add")]
    return _onnx_model(nodes, [_float_info("x", ["N", 4])], [_float_info("y", ["N", 4])])


def onnx_range():
    """Range(0, 3e8, 1): 2.4 GB of int64."""
    from onnx import helper
    nodes = [helper.make_node("Constant", [], [n], name=n + "_node",
                              value=helper.make_tensor(n + "_value", 7, [], [v]))
             for n, v in (("start", 0), ("limit", 300000000), ("delta", 1))]
    nodes.append(helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"))
    return _relu_graph(nodes)


def onnx_expand():
    """Expand of a scalar to [30000, 30000]."""
    from onnx import helper
    nodes = [_int64("shape", [30000, 30000]),
             helper.make_node("Constant", [], ["one"], name="one_node",
                              value=helper.make_tensor("one_value", 1, [1], [1.0])),
             helper.make_node("Expand", ["one", "shape"], ["big"], name="expand")]
    return _relu_graph(nodes)


def onnx_tile():
    from onnx import helper
    nodes = [_int64("repeats", [40000, 40000]),
             helper.make_node("Constant", [], ["one"], name="one_node",
                              value=helper.make_tensor("one_value", 1, [1, 1], [1.0])),
             helper.make_node("Tile", ["one", "repeats"], ["big"], name="tile")]
    return _relu_graph(nodes)


def onnx_add_broadcast():
    """[20000, 1] + [1, 20000] of two initializers (160 KB of file): 1.6 GB."""
    from onnx import numpy_helper
    a = numpy_helper.from_array(np.ones((20000, 1), np.float32), "a")
    b = numpy_helper.from_array(np.ones((1, 20000), np.float32), "b")
    from onnx import helper
    return _relu_graph([helper.make_node("Add", ["a", "b"], ["big"], name="outer")], [a, b])


def onnx_loop():
    """A Loop of 10^12 iterations on constants (counts up a carried value)."""
    from onnx import TensorProto, helper
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["v_in", "step"], ["v_out"], name="count")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.INT64, [1])],
        [helper.make_tensor("step", TensorProto.INT64, [1], [1])])
    nodes = [helper.make_node("Constant", [], ["trips"], name="trips_node",
                              value=helper.make_tensor("t", TensorProto.INT64, [], [10 ** 12])),
             helper.make_node("Constant", [], ["go"], name="go_node",
                              value=helper.make_tensor("g", TensorProto.BOOL, [], [True])),
             _int64("v0", [0]),
             helper.make_node("Loop", ["trips", "go", "v0"], ["v_final"], name="forever",
                              body=body)]
    return _relu_graph(nodes)


def onnx_if_fill():
    """If(true) whose branch fills 20000 x 20000 floats."""
    from onnx import TensorProto, helper
    branch = helper.make_graph(
        [_int64("shape", [20000, 20000]),
         helper.make_node("ConstantOfShape", ["shape"], ["big"], name="branch_fill")],
        "then", [], [helper.make_tensor_value_info("big", TensorProto.FLOAT, None)])
    other = helper.make_graph(
        [_int64("small", [1])], "else", [],
        [helper.make_tensor_value_info("small", TensorProto.INT64, None)])
    nodes = [helper.make_node("Constant", [], ["yes"], name="yes_node",
                              value=helper.make_tensor("y", TensorProto.BOOL, [], [True])),
             helper.make_node("If", ["yes"], ["chosen"], name="choose", then_branch=branch,
                              else_branch=other)]
    return _relu_graph(nodes)


def onnx_loop_body_fill():
    """A Loop of 3 iterations whose body fills 20000 x 20000 floats each time."""
    from onnx import TensorProto, helper
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         _int64("shape", [20000, 20000]),
         helper.make_node("ConstantOfShape", ["shape"], ["v_out"], name="body_fill")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Constant", [], ["trips"], name="trips_node",
                              value=helper.make_tensor("t", TensorProto.INT64, [], [3])),
             helper.make_node("Constant", [], ["v0"], name="v0_node",
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("Loop", ["trips", "", "v0"], ["v_final"], name="three",
                              body=body)]
    return _relu_graph(nodes)


def onnx_gather():
    """Gather of 50000 indices along a [1, 20000] constant: 4 GB."""
    from onnx import helper
    nodes = [_int64("row_shape", [1, 20000]), _int64("index_shape", [50000]),
             helper.make_node("ConstantOfShape", ["row_shape"], ["row"], name="row_fill"),
             helper.make_node("ConstantOfShape", ["index_shape"], ["indices"],
                              name="index_fill",
                              value=helper.make_tensor("zero", 7, [1], [0])),
             helper.make_node("Gather", ["row", "indices"], ["big"], name="gather")]
    return _relu_graph(nodes)


def onnx_sparse_constant():
    """A Constant whose sparse_value is 10^9 x 10^9 with one value."""
    from onnx import TensorProto, helper
    values = helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
    indices = helper.make_tensor("i", TensorProto.INT64, [1], [0])
    sparse = helper.make_sparse_tensor(values, indices, [10 ** 9, 10 ** 9])
    return _relu_graph([helper.make_node("Constant", [], ["big"], name="sparse",
                                         sparse_value=sparse)])


def onnx_two_writers():
    """Two nodes write ``y`` (not SSA): onnx.checker refuses it."""
    from onnx import helper
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="first"),
             helper.make_node("Sigmoid", ["x"], ["y"], name="second")]
    return _onnx_model(nodes, [_float_info("x", ["N", 4])], [_float_info("y", ["N", 4])])


def onnx_conv_strides_zero():
    from onnx import helper, numpy_helper
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[0, 0])]
    return _onnx_model(nodes, [_float_info("x", ["N", 1, 8, 8])],
                       [_float_info("y", ["N", 2, 6, 6])], [w])


def onnx_output_twice():
    """A graph output listed twice (ONNX Runtime runs it: two equal outputs)."""
    from onnx import helper
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _onnx_model(nodes, [_float_info("x", ["N", 4])],
                       [_float_info("y", ["N", 4]), _float_info("y", ["N", 4])])


def onnx_relu_huge():
    """Relu on [N, 2^31 - 1]: 8 GB a sample."""
    from onnx import helper
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _onnx_model(nodes, [_float_info("x", ["N", 2 ** 31 - 1])],
                       [_float_info("y", ["N", 2 ** 31 - 1])])


# ------------------------------------------------------------------ .tflite


def tflite_add_broadcast():
    """A 160 KB file: a constant ADD [20000, 1] + [1, 20000] (1.6 GB) beside a RELU."""
    g = Graph()
    x = g.tensor((1, 4), FLOAT32)
    y = g.tensor((1, 4), FLOAT32)
    a = g.tensor((20000, 1), FLOAT32, data=np.ones((20000, 1)))
    b = g.tensor((1, 20000), FLOAT32, data=np.ones((1, 20000)))
    big = g.tensor((20000, 20000), FLOAT32)
    g.op("ADD", [a, b], [big], ("AddOptions", {}))
    g.op("RELU", [x], [y])
    return g.finish([x], [y])


def _dense_graph(options=True):
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.tensor((1, 4), FLOAT32)
    w = g.tensor((3, 4), FLOAT32, data=rng.standard_normal((3, 4)))
    b = g.tensor((3,), FLOAT32, data=rng.standard_normal(3))
    y = g.tensor((1, 3), FLOAT32)
    g.op("FULLY_CONNECTED", [x, w, b], [y],
         ("FullyConnectedOptions", {}) if options else None)
    return g, x, y


def tflite_dense_without_options():
    """FULLY_CONNECTED without builtin options: valid, LiteRT applies the defaults."""
    g, x, y = _dense_graph(options=False)
    return g.finish([x], [y])


def tflite_input_index_minus_five():
    """An operator whose input list names tensor -5."""
    g = Graph()
    x = g.tensor((1, 4), FLOAT32)
    y = g.tensor((1, 4), FLOAT32)
    g.op("ADD", [x, -5], [y], ("AddOptions", {}))
    return g.finish([x], [y])


def conv_3x3(height, width, output_shape, options):
    """x [1, height, width, 1] -> CONV_2D of two 3x3 filters of ones, no bias -> y of the
    declared ``output_shape``, the operator's builtin ``options`` as given"""
    g = Graph()
    x = g.tensor((1, height, width, 1), FLOAT32)
    w = g.tensor((2, 3, 3, 1), FLOAT32, data=np.ones((2, 3, 3, 1)))
    y = g.tensor(output_shape, FLOAT32)
    g.op("CONV_2D", [x, w, -1], [y], options)
    return g.finish([x], [y])


def tflite_wrong_options():
    """A CONV_2D whose builtin options are AddOptions."""
    return conv_3x3(4, 4, (1, 2, 2, 2), ("AddOptions", {"FusedActivationFunction": 3}))


def tflite_stride_past_16_bits():
    """A MAX_POOL_2D of stride 65537, which 16 bits of a param cannot hold."""
    g = Graph()
    x = g.tensor((1, 4, 4, 1), FLOAT32)
    y = g.tensor((1, 1, 1, 1), FLOAT32)
    g.op("MAX_POOL_2D", [x], [y], ("Pool2DOptions", {"Padding": 1, "StrideW": 65537,
                                                     "StrideH": 1, "FilterWidth": 2,
                                                     "FilterHeight": 2}))
    return g.finish([x], [y])


def tflite_conv_output_lies():
    """A CONV_2D whose declared output shape is not what its window computes."""
    return conv_3x3(8, 8, (1, 3, 5, 2), ("Conv2DOptions", {"Padding": 1, "StrideW": 1,
                                                           "StrideH": 1}))


def tflite_hybrid_scale_nan():
    """A float model whose int8 weight (dynamic range) has a NaN scale."""
    g = Graph()
    x = g.tensor((1, 4), FLOAT32)
    w = g.tensor((3, 4), INT8, data=np.ones((3, 4)), scale=float("nan"))
    y = g.tensor((1, 3), FLOAT32)
    g.op("FULLY_CONNECTED", [x, w, -1], [y], ("FullyConnectedOptions", {}))
    return g.finish([x], [y])


def tflite_shared_shape_bomb():
    """A 250 KB file whose 20000 tensors all name one shape vector of 16000 entries: read
    once per tensor, 1.3 GB."""
    import flatbuffers
    import tflite as t
    b = flatbuffers.Builder(1 << 20)
    b.StartVector(4, 16000, 4)
    for _ in range(16000):
        b.PrependInt32(1)
    shape = b.EndVector()
    tensors = []
    for _ in range(20000):
        t.TensorStart(b)
        t.TensorAddShape(b, shape)
        tensors.append(t.TensorEnd(b))
    b.StartVector(4, len(tensors), 4)
    for offset in reversed(tensors):
        b.PrependUOffsetTRelative(offset)
    tensor_vector = b.EndVector()
    t.SubGraphStart(b)
    t.SubGraphAddTensors(b, tensor_vector)
    graph = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(graph)
    graphs = b.EndVector()
    t.ModelStart(b)
    t.ModelAddVersion(b, 3)
    t.ModelAddSubgraphs(b, graphs)
    b.Finish(t.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def tflite_output_twice():
    """A subgraph output listed twice (LiteRT gives it twice)."""
    g = Graph()
    x = g.tensor((1, 4), FLOAT32)
    y = g.tensor((1, 4), FLOAT32)
    g.op("RELU", [x], [y])
    return g.finish([x], [y, y])


def tflite_relu_huge():
    g = Graph()
    x = g.tensor((1, 2 ** 31 - 1), FLOAT32)
    y = g.tensor((1, 2 ** 31 - 1), FLOAT32)
    g.op("RELU", [x], [y])
    return g.finish([x], [y])


def _int8_dense(input_scale=0.05, input_zero_point=0, weight_scale=0.02, output_scale=0.1,
                output_zero_point=0):
    """float x -> QUANTIZE -> int8 FULLY_CONNECTED -> int8 FULLY_CONNECTED -> DEQUANTIZE."""
    rng = np.random.default_rng(4)
    g = Graph()
    x = g.tensor((1, 4), FLOAT32)
    q = g.tensor((1, 4), INT8, scale=input_scale, zero_point=input_zero_point)
    w1 = g.tensor((3, 4), INT8, data=rng.integers(-100, 100, (3, 4)), scale=weight_scale)
    h = g.tensor((1, 3), INT8, scale=output_scale, zero_point=output_zero_point)
    w2 = g.tensor((2, 3), INT8, data=rng.integers(-100, 100, (2, 3)), scale=0.02)
    b2 = g.tensor((2,), INT32, data=[3, -4], scale=0.02 * output_scale)
    z = g.tensor((1, 2), INT8, scale=0.1)
    y = g.tensor((1, 2), FLOAT32)
    g.op("QUANTIZE", [x], [q])
    g.op("FULLY_CONNECTED", [q, w1, -1], [h], ("FullyConnectedOptions", {}))
    g.op("FULLY_CONNECTED", [h, w2, b2], [z], ("FullyConnectedOptions", {}))
    g.op("DEQUANTIZE", [z], [y])
    return g.finish([x], [y])


def tflite_int8_scale_zero():
    return _int8_dense(output_scale=0.0)


def tflite_int8_scale_nan():
    return _int8_dense(output_scale=float("nan"))


def tflite_int8_negative_weight_scale():
    return _int8_dense(weight_scale=-0.02)


def tflite_int8_zero_point_300():
    return _int8_dense(output_zero_point=300)


def tflite_int8_truncated():
    """A valid int8 file cut short (its buffers, at the end, lost)."""
    data = _int8_dense()
    return data[:len(data) * 2 // 3]


# name: (file name, maker, what the ConversionError must say: a regular expression)
CASES = {
    "onnx_constant_of_shape": ("fill.onnx", onnx_constant_of_shape,
                               r"onnx node 1 \(ConstantOfShape 'fill'\):.*budget"),
    "onnx_constant_of_shape_used": ("fill_used.onnx", onnx_constant_of_shape_used,
                                    r"\(ConstantOfShape 'fill'\):.*budget"),
    "onnx_range": ("range.onnx", onnx_range, r"\(Range 'range'\):.*budget"),
    "onnx_expand": ("expand.onnx", onnx_expand, r"\(Expand 'expand'\):.*budget"),
    "onnx_tile": ("tile.onnx", onnx_tile, r"\(Tile 'tile'\):.*budget"),
    "onnx_add_broadcast": ("outer.onnx", onnx_add_broadcast, r"\(Add 'outer'\):.*budget"),
    "onnx_gather": ("gather.onnx", onnx_gather, r"\(Gather 'gather'\):.*budget"),
    "onnx_loop": ("loop.onnx", onnx_loop,
                  r"\(Loop 'forever'\), iteration \d+.*element operations.*budget"),
    "onnx_loop_body_fill": ("loop_fill.onnx", onnx_loop_body_fill,
                            r"\(Loop 'three'\), iteration 0, node 2 \(ConstantOfShape "
                            r"'body_fill'\):.*budget"),
    "onnx_if_fill": ("if_fill.onnx", onnx_if_fill,
                     r"\(If 'choose'\), then_branch, node 1 \(ConstantOfShape "
                     r"'branch_fill'\):.*budget"),
    "onnx_sparse_constant": ("sparse.onnx", onnx_sparse_constant,
                             r"\(Constant 'sparse'\): a sparse_value Constant"),
    "onnx_two_writers": ("ssa.onnx", onnx_two_writers,
                         r"onnx node 1 \(Sigmoid 'second'\): 'y' is written twice.*SSA"),
    "onnx_conv_strides_zero": ("strides0.onnx", onnx_conv_strides_zero,
                               r"\(Conv 'conv'\): strides \[0, 0\].*1\.\.65535"),
    "onnx_relu_huge": ("huge.onnx", onnx_relu_huge, r"input 'x'.*MT_MAX_ELEMENTS"),
    "tflite_add_broadcast": ("outer.tflite", tflite_add_broadcast,
                             r"tflite op 0 \(ADD\):.*budget"),
    "tflite_input_index_minus_five": ("minus5.tflite", tflite_input_index_minus_five,
                                      r"operator 0 \(ADD\): input 1 is tensor -5"),
    "tflite_relu_huge": ("huge.tflite", tflite_relu_huge, r"input 't0'.*MT_MAX_ELEMENTS"),
    "tflite_wrong_options": ("options.tflite", tflite_wrong_options,
                             r"\(CONV_2D\): its builtin options are AddOptions"),
    "tflite_stride_past_16_bits": ("stride.tflite", tflite_stride_past_16_bits,
                                   r"\(MAX_POOL_2D\): strides \[1, 65537\]"),
    "tflite_conv_output_lies": ("lies.tflite", tflite_conv_output_lies,
                                r"\(CONV_2D\): the file declares an output of shape "
                                r"\[3, 5, 2\].* gives \[6, 6, 2\]"),
    "tflite_hybrid_scale_nan": ("hybrid_nan.tflite", tflite_hybrid_scale_nan,
                                r"int8 constant 't1' has quantization scale nan"),
    "tflite_shared_shape_bomb": ("bomb.tflite", tflite_shared_shape_bomb,
                                 r"name the same data over and over"),
    "tflite_int8_scale_zero": ("scale0.tflite", tflite_int8_scale_zero,
                               r"tensor 't3' has quantization scale 0"),
    "tflite_int8_scale_nan": ("scale_nan.tflite", tflite_int8_scale_nan,
                              r"tensor 't3' has quantization scale nan"),
    "tflite_int8_negative_weight_scale": ("negative_scale.tflite",
                                          tflite_int8_negative_weight_scale,
                                          r"tensor 't2' has quantization scale -0\.02"),
    "tflite_int8_zero_point_300": ("zp300.tflite", tflite_int8_zero_point_300,
                                   r"tensor 't3' has zero point 300"),
    "tflite_int8_truncated": ("truncated.tflite", tflite_int8_truncated,
                              r"truncated or corrupt: Model\.\w+"),
}
# Valid files the importers must convert to what the source runtime computes.
VALID = {
    "onnx_output_twice": ("twice.onnx", onnx_output_twice),
    "tflite_output_twice": ("twice.tflite", tflite_output_twice),
    "tflite_dense_without_options": ("no_options.tflite", tflite_dense_without_options),
}
