"""ONNX pools with explicit pads and Softmax over its axis forms, against ONNX Runtime.

Pools: pads that are neither SAME nor VALID (ResNet's stem MaxPool 3x3, stride 2, pads 1 on
an even size), pads larger on one side, ceil_mode's last window, AveragePool with
count_include_pad 0 and 1: the core's pools take explicit pads (padded positions never win a
maximum nor count in an average), and an average that counts the zeros reads them from a
PAD op. Softmax: before opset 13 over the dims from ``axis`` on, flattened ([N, C, 1, 1] at
axis 1: the channels), from 13 over ``axis`` alone where the dims after it are 1. Each graph
is small and runs forward within rtol 1e-5 of ONNX Runtime (one also trains); what
the core cannot run is a ConversionError naming the op, its index, the attribute and what
is supported.
"""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain.convert import ConversionError
from microtrain.nn import image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402


def model(nodes, input_shape, opset, initializers=()):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                   ["N"] + list(input_shape))],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]) \
        .SerializeToString()


def pool(kind, kernel, strides, pads, **attrs):
    return helper.make_node(kind, ["x"], ["y"], name="p", kernel_shape=kernel,
                            strides=strides, pads=pads, **attrs)


def sample(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def core_ops(converted):
    return image.read_image(converted.to_bytes()).ops


def check_against_onnxruntime(data, input_shape, seed=1):
    """Convert, and compare with ONNX Runtime on a batch of 3; returns the converted
    model."""
    converted = microtrain.convert(data)
    x = sample((3,) + tuple(input_shape), seed)
    expected = peers.run_onnxruntime(data, x)
    actual = peers.microtrain_infer(converted, x)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)
    return converted


# ---------------------------------------------------------------- pools

POOL_CASES = {
    # name: (kind, input [C, H, W], kernel, strides, pads [top, left, bottom, right], attrs)
    "resnet_stem_max": ("MaxPool", (2, 8, 8), [3, 3], [2, 2], [1, 1, 1, 1], {}),
    "max_more_before": ("MaxPool", (2, 7, 6), [3, 3], [2, 2], [2, 1, 0, 1], {}),
    "max_ceil_mode_pads": ("MaxPool", (3, 8, 8), [3, 3], [2, 2], [1, 1, 1, 1],
                           {"ceil_mode": 1}),
    "average_exclusive": ("AveragePool", (2, 8, 8), [3, 3], [2, 2], [1, 1, 1, 1], {}),
    "average_skewed_stride1": ("AveragePool", (2, 5, 6), [3, 3], [1, 1], [2, 0, 0, 2],
                               {"count_include_pad": 0}),
    "average_inclusive_ceil": ("AveragePool", (2, 6, 6), [3, 3], [2, 2], [1, 1, 1, 1],
                               {"ceil_mode": 1, "count_include_pad": 1}),
    "average_inclusive_ceil_unpadded": ("AveragePool", (2, 6, 6), [3, 3], [2, 2],
                                        [0, 0, 0, 0], {"ceil_mode": 1,
                                                       "count_include_pad": 1}),
    "average_7x7_googlenet": ("AveragePool", (4, 7, 7), [7, 7], [1, 1], [0, 0, 1, 1], {}),
}


@pytest.mark.parametrize("name", sorted(POOL_CASES))
def test_pools_with_explicit_pads_match_onnxruntime(name):
    kind, shape, kernel, strides, pads, attrs = POOL_CASES[name]
    data = model([pool(kind, kernel, strides, pads, **attrs)], shape, 17)
    converted = check_against_onnxruntime(data, shape)
    ops = core_ops(converted)
    pools = [op for op in ops if op.op_type in (microtrain.ops.MAX_POOL2D,
                                                microtrain.ops.AVERAGE_POOL2D)]
    assert len(pools) == 1
    counted = attrs.get("count_include_pad", 0) and any(pads)
    assert (microtrain.ops.PAD in [op.op_type for op in ops]) == bool(counted)
    if name in ("resnet_stem_max", "average_exclusive"):  # neither SAME nor VALID:
        # windows start one row and column before the input; the pads after are never read
        assert pools[0].params[2:] == (image.PADDING_EXPLICIT, 1 | 1 << 16)


def test_explicit_max_pool_trains_and_routes_no_gradient_to_padding():
    """Conv (trained) -> MaxPool 3x3 stride 2 pads 1 -> Flatten -> Gemm: a step moves the
    Conv's weights, and training the whole graph matches ONNX Runtime again after export
    (the gradient reached the Conv through the padded windows)."""
    from microtrain.convert import exporter
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32) * 0.3,
                                "w")
    g = numpy_helper.from_array(rng.standard_normal((5, 3 * 4 * 4)).astype(np.float32) * 0.2,
                                "g")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Flatten", ["m"], ["f"]),
             helper.make_node("Gemm", ["f", "g"], ["y"], transB=1)]
    data = model(nodes, (2, 8, 8), 17, [w, g])
    converted = check_against_onnxruntime(data, (2, 8, 8))
    x = sample((4, 2, 8, 8), 3)
    with microtrain.TrainSession(converted.to_bytes()) as session:
        session.compile("sgd", "mse", batch_size=4)
        before = [a.copy() for a in session.get_weights()]
        session.train_step(x, sample((4, 5), 4))
        after = session.get_weights()
        trained = session.infer(x)[0].copy()
    assert not np.array_equal(before[0], after[0])  # the Conv's weights moved
    exported = exporter.export_bytes(converted.to_bytes(), after, "onnx", converted.source)
    np.testing.assert_allclose(peers.run_onnxruntime(exported, x), trained, rtol=peers.RTOL,
                               atol=peers.ATOL)


@pytest.mark.parametrize("kind,shape,kernel,strides,pads,words", [
    ("MaxPool", (2, 4, 4), [2, 2], [2, 2], [2, 0, 0, 0],
     "rows the first window lies in the padding before the input"),
    ("MaxPool", (2, 4, 4), [1, 1], [2, 2], [0, 0, 2, 0],
     "rows the last window starts in the padding after the input"),
    ("AveragePool", (1, 4, 50), [1, 300], [1, 1], [0, 256, 0, 0],
     "the core's pools take pads of at most 255"),
    ("MaxPool", (2, 4, 4), [2, 2], [2, 2], [1, 1], "pads [1, 1] are not [top, left, bottom, "
                                                  "right]"),
])
def test_pool_pads_the_core_cannot_run_are_refused(kind, shape, kernel, strides, pads,
                                                   words):
    data = model([pool(kind, kernel, strides, pads)], shape, 17)
    with pytest.raises(ConversionError) as caught:
        microtrain.convert(data)
    text = str(caught.value)
    assert text.startswith("onnx node 0 (%s 'p'):" % kind) and words in text, text
    assert caught.value.attribute == "pads" and "supported:" in text


@pytest.mark.parametrize("attrs,attribute,words", [
    ({"strides": [2]}, "strides", "strides [2] are not two positive integers"),
    ({"strides": [2, 0]}, "strides", "strides [2, 0] are not two positive integers"),
    ({"kernel_shape": [3]}, "kernel_shape", "kernel_shape [3] is not a 2-D window"),
])
def test_malformed_pool_attributes_are_refused_by_name(attrs, attribute, words):
    settings = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]}
    settings.update(attrs)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="p", **settings)
    with pytest.raises(ConversionError) as caught:
        microtrain.convert(model([node], (2, 4, 4), 17))
    assert str(caught.value).startswith("onnx node 0 (MaxPool 'p'): " + words)
    assert caught.value.attribute == attribute


# ---------------------------------------------------------------- softmax

SOFTMAX_CASES = {
    # name: (opset, ops before the softmax, input [C, H, W], axis)
    "classic_nc11_opset9": (9, ["GlobalAveragePool"], (6, 3, 3), 1),
    "classic_nc11_opset11": (11, ["GlobalAveragePool"], (6, 3, 3), 1),
    "classic_nc11_opset13": (13, ["GlobalAveragePool"], (6, 3, 3), 1),
    "image_whole_sample_opset11": (11, [], (3, 4, 5), 1),
    "image_last_two_dims_opset11": (11, [], (3, 4, 5), 2),
    "image_last_dim_opset9": (9, [], (3, 4, 5), 3),
    "image_channels_opset13": (13, [], (3, 4, 5), 1),
    "trailing_ones_opset13": (13, ["GlobalAveragePool"], (6, 3, 3), -3),
    "negative_axis_opset11": (11, [], (3, 4, 5), -2),
}


@pytest.mark.parametrize("name", sorted(SOFTMAX_CASES))
def test_softmax_axis_forms_match_onnxruntime(name):
    opset, before, shape, axis = SOFTMAX_CASES[name]
    nodes, source = [], "x"
    for index, kind in enumerate(before):
        nodes.append(helper.make_node(kind, [source], ["h%d" % index]))
        source = "h%d" % index
    nodes.append(helper.make_node("Softmax", [source], ["y"], name="s", axis=axis))
    data = model(nodes, shape, opset)
    converted = check_against_onnxruntime(data, shape)
    ops = [op.op_type for op in core_ops(converted)]
    assert ops.count(microtrain.ops.SOFTMAX) == 1
    if name.startswith("classic") or name == "image_whole_sample_opset11":
        assert microtrain.ops.TRANSPOSE not in ops[1:-1]  # one vector: no element moves


@pytest.mark.parametrize("opset,shape,axis,words", [
    (13, (3, 4, 5), 2, "softmax over axis 2 of a 4-D tensor of shape ['N', 3, 4, 5] "
                       "(opset 13): its elements are not contiguous"),
    (11, (3, 4, 5), 0, "softmax over axis 0 of a 4-D tensor normalises across the batch"),
    (11, (3, 4, 5), 4, "names no axis"),
])
def test_softmax_axes_the_core_cannot_run_are_refused(opset, shape, axis, words):
    data = model([helper.make_node("Softmax", ["x"], ["y"], name="s", axis=axis)], shape,
                 opset)
    with pytest.raises(ConversionError) as caught:
        microtrain.convert(data)
    text = str(caught.value)
    assert text.startswith("onnx node 0 (Softmax 's'):") and words in text, text
    assert caught.value.attribute == "axis" and "supported:" in text


def test_written_onnx_keeps_a_models_explicit_pool_pads():
    """A microtrain model with explicit-pad pools writes ONNX pads that ONNX Runtime runs as
    the core does, and reads back as the same pools; TFLite, whose pools are SAME or VALID
    only, refuses them by name."""
    from microtrain import layers
    from microtrain.convert import exporter
    x = microtrain.Input((8, 7, 3))
    h = layers.Conv2D(4, 3, padding="same", activation="relu")(x)
    h = layers.MaxPool2D(3, 2, padding=1)(h)
    h = layers.AveragePool2D(3, 2, padding=((0, 1), (2, 0)))(h)
    built = microtrain.Model(x, layers.Dense(3)(layers.Flatten()(h)), seed=9)
    rows = sample((2, 8, 7, 3), 10)
    with microtrain.TrainSession(built) as session:
        session.compile("sgd", "mse", batch_size=2)
        expected = session.infer(rows)[0].copy()
    data = exporter.export_bytes(built.to_bytes(), built.get_weights(), "onnx")
    np.testing.assert_allclose(peers.run_onnxruntime(data, rows), expected, rtol=peers.RTOL,
                               atol=peers.ATOL)
    again = microtrain.convert(data)
    pools = [op.params[2:] for op in core_ops(again)
             if op.op_type in (microtrain.ops.MAX_POOL2D, microtrain.ops.AVERAGE_POOL2D)]
    # (the reader keeps the pads after that a last window reaches: none below the 8 rows)
    assert pools == [(image.PADDING_EXPLICIT, 1 | 1 << 16 | 1 << 24),
                     (image.PADDING_EXPLICIT, 1 << 8 | 2 << 16)]
    np.testing.assert_allclose(peers.microtrain_infer(again, rows), expected,
                               rtol=peers.RTOL, atol=peers.ATOL)
    with pytest.raises(ConversionError, match=r"op 1 \(max_pool2d\) has explicit pads"):
        exporter.export_bytes(built.to_bytes(), built.get_weights(), "tflite")
