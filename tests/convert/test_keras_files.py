"""Keras-made .tflite files (fixtures/keras, make_keras_fixtures.py): a 1-D convolution
classifier (Conv1D, MaxPooling1D, GlobalAveragePooling1D, Dense) as float32, dynamic-range
and full int8, and an int8 Conv1D -> Flatten -> Dense; MEAN over any axes.
"""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.convert import tflite_tree
from microtrain.nn import image as _image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

pytest.importorskip("tflite")
pytest.importorskip("ai_edge_litert")

KERAS = os.path.join(peers.FIXTURES, "keras")


def keras_file(name):
    return os.path.join(KERAS, name)


def rows(n, seed):
    return np.random.default_rng(seed).uniform(-2, 2, (n, 32, 3)).astype(np.float32)


def labels(n):
    return np.eye(4, dtype=np.float32)[np.arange(n) % 4]


def test_a_conv1d_model_with_global_average_pooling_1d_imports_trains_and_exports(tmp_path):
    """GlobalAveragePooling1D is a MEAN over the time axis of [T, C] (refused: 'the core's
    spatial ops take [H, W, C]'); the layers keep Keras's names; the two Conv1D's zero biases
    are one tensor in the file, trained apart ('tensors share buffer ... trained to
    different values' at export before): each gets a tensor of its own."""
    path = keras_file("har_conv1d.tflite")
    model = microtrain.convert(path)
    x = rows(8, 0)
    np.testing.assert_allclose(peers.microtrain_infer(model, x), peers.run_litert(path, x),
                               rtol=peers.RTOL, atol=peers.ATOL)
    tree = tflite_tree.read(open(path, "rb").read())
    biases = [int(op["Inputs"][2]) for op in tree["Subgraphs"][0]["Operators"]
              if len(op["Inputs"]) > 2 and op["Inputs"][2] >= 0]
    assert len(biases) == 2 and biases[0] == biases[1]  # one zero bias for both Conv1D
    with microtrain.TrainSession(path) as session:
        assert [(layer.name, layer.type) for layer in session.layers[:6]] == [
            ("conv1d", "CONV_2D"), ("max_pooling1d", "MAX_POOL_2D"), ("conv1d_1", "CONV_2D"),
            ("global_average_pooling1d", "MEAN"), ("dense", "FULLY_CONNECTED"),
            ("dense_1", "FULLY_CONNECTED")]
        assert "conv1d_1_2" in session.layers[2].aliases  # Keras 3's scope in the file
        session.compile(microtrain.optimizers.SGD(0.05), "categorical_crossentropy",
                        batch_size=8, trainable=["conv1d", "conv1d_1", "dense_1"])
        assert session.trainable_description().endswith(
            "layers with weights 0 (conv1d), 2 (conv1d_1), 5 (dense_1)")
        for _ in range(3):
            session.train_step(x, labels(8))
        weights = session.get_weights()
        assert not np.array_equal(weights[1], weights[3])  # the two biases, trained apart
        ours = session.infer(x)[0]
        session.export_model_for_inference(str(tmp_path / "trained.tflite"))
    np.testing.assert_allclose(peers.run_litert(str(tmp_path / "trained.tflite"), x), ours,
                               rtol=peers.RTOL, atol=peers.ATOL)


def test_a_keras_dynamic_range_file_imports_as_float():
    path = keras_file("har_conv1d_hybrid.tflite")
    model = microtrain.convert(path)
    assert "dynamic-range quantized" in model.source.notes[0]
    parsed = _image.read_image(model.to_bytes())
    assert not any(op.op_type in _ops.INFERENCE_ONLY for op in parsed.ops)
    x = rows(8, 1)
    ours = peers.microtrain_infer(model, x)
    assert float(np.max(np.abs(ours - peers.run_litert(path, x)))) < 0.01  # hybrid kernels


@pytest.mark.parametrize("name,options,first_float", [
    ("har_conv1d_int8.tflite", {}, "global_average_pooling1d"),
    ("har_flatten_int8.tflite", {"train_from": "conv1d"}, "conv1d"),
    ("har_flatten_int8.tflite", {}, "dense_1"),
])
def test_keras_int8_files_fine_tune_and_export(name, options, first_float, tmp_path):
    """An int8 MEAN over the time axis has no int8 kernel in the core (LiteRT's rounds
    otherwise than its 4-D H, W one): the float part then begins there, and the notes say
    so. A Flatten inside the float part trains through. Export runs in LiteRT with the
    session's outputs."""
    path = keras_file(name)
    model = microtrain.convert(path, **options)
    with microtrain.TrainSession(model) as session:
        layers = session.layers
        first = next(layer for layer in layers
                     if any(session.model_description()["ops"][op]["type"] not in
                            _ops.INFERENCE_ONLY for op in layer) or
                     _ops.DEQUANTIZE in [session.model_description()["ops"][op]["type"]
                                         for op in layer])
        assert first.name == first_float
        if name == "har_conv1d_int8.tflite":
            assert "the float part begins earlier" in model.source.notes[-1]
        session.compile(microtrain.optimizers.SGD(0.05), "categorical_crossentropy",
                        batch_size=8)
        x = rows(8, 2)
        for _ in range(3):
            session.train_step(x, labels(8))
        ours = session.infer(x)[0]
        path_out = str(tmp_path / "trained.tflite")
        session.export_model_for_inference(path_out)
    assert float(np.max(np.abs(peers.run_litert(path_out, x, reference=True) - ours))) <= 1e-6


def mean_model(shape, axes, keep_dims):
    """A .tflite of one MEAN over ``axes`` of an input of sample ``shape``."""
    from microtrain.convert import tflite_writer
    tree = tflite_writer.empty_model("tflite")
    writer = tflite_writer.OpWriter(tree, None, {})
    x = writer.add_tensor((1,) + shape, (-1,) + shape, 0, None, "x")
    reduced = set(a % (len(shape) + 1) for a in axes)
    if keep_dims:
        out = [1] + [1 if a in reduced else d for a, d in enumerate(shape, 1)]
    else:
        out = [1] + [d for a, d in enumerate(shape, 1) if a not in reduced]
    y = writer.add_tensor(out, [-1] + out[1:], 0, None, "y")
    a = writer.int_const(axes, "axes")
    writer._append(writer.tflite.BuiltinOperator.MEAN, [x, a], [y],
                   ("ReducerOptions", {"KeepDims": bool(keep_dims)}))
    graph = tree["Subgraphs"][0]
    graph["Inputs"], graph["Outputs"] = np.array([x], np.int32), np.array([y], np.int32)
    return tflite_tree.write(tree, b"TFL3")


@pytest.mark.parametrize("shape,axes,keep_dims", [
    ((6, 5), [1], False), ((6, 5), [-1], True), ((4, 3, 5), [1, 2], False),
    ((4, 3, 5), [3], False), ((4, 3, 5), [1, 3], True), ((2, 3, 4, 5), [2, 4], False),
])
def test_mean_over_any_axes_of_a_sample(shape, axes, keep_dims):
    """MEAN runs as the core's GLOBAL_AVERAGE_POOL over [R, 1, K] (the reduced axes moved
    first by a TRANSPOSE where they do not lead); gradients flow through it."""
    data = mean_model(shape, axes, keep_dims)
    model = microtrain.convert(data)
    x = np.random.default_rng(4).standard_normal((3,) + shape).astype(np.float32)
    expected = peers.run_litert(data, x)
    np.testing.assert_allclose(peers.microtrain_infer(model, x).reshape(expected.shape),
                               expected, rtol=peers.RTOL, atol=peers.ATOL)
    with pytest.raises(microtrain.convert.ConversionError, match="mean over the batch axis"):
        microtrain.convert(mean_model(shape, [0], False))


def test_a_depth_multiplier_on_one_input_channel_runs_as_a_convolution():
    """DEPTHWISE_CONV_2D of one input channel times a multiplier M (MobileNetV1's first
    layer on a grey image; TFLite Micro's person detection) is a CONV_2D of M filters: the
    same sums, the same per-channel requantization, so int8 tensors are LiteRT's bit for
    bit (refused before: 'depth multiplier other than 1'), and the float model computes
    LiteRT's outputs and trains."""
    import int8_compare
    data = open(keras_file("grey_multiplier_int8.tflite"), "rb").read()
    x = np.random.default_rng(6).uniform(-2, 2, (4, 16, 16, 1)).astype(np.float32)
    output_equal, report = int8_compare.compare(data, x)
    assert output_equal and [r for r in report if not r[1]] == []
    assert {label.split("(")[-1].rstrip(")") for label, _, _, _ in report} >= {
        "DEPTHWISE_CONV_2D", "CONV_2D", "MEAN"}
    path = keras_file("grey_multiplier.tflite")
    model = microtrain.convert(path)
    kinds = [op.op_type for op in _image.read_image(model.to_bytes()).ops]
    assert kinds[0] == _ops.CONV2D and _ops.DEPTHWISE_CONV2D not in kinds
    np.testing.assert_allclose(peers.microtrain_infer(model, x), peers.run_litert(path, x),
                               rtol=peers.RTOL, atol=peers.ATOL)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.1), "categorical_crossentropy",
                        batch_size=4)
        y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]
        losses = [session.train_step(x, y)["loss"][0] for _ in range(5)]
        assert losses[-1] < losses[0]
        weights = session.get_weights()
    from microtrain.convert import exporter  # the filter written back as [1, KH, KW, M]
    back = exporter.export_bytes(model.to_bytes(), weights, "tflite", model.source)
    np.testing.assert_allclose(peers.run_litert(back, x),
                               peers.microtrain_infer(model, x, weights), rtol=peers.RTOL,
                               atol=peers.ATOL)


def test_tensors_sharing_one_buffer_get_buffers_of_their_own_when_they_part(tmp_path):
    """Two bias tensors over one buffer (what the converter writes for equal constants
    in separate tensors): trained apart, each gets its own buffer; the file otherwise keeps
    its operators, and LiteRT runs it to the session's outputs."""
    path = keras_file("har_conv1d.tflite")
    tree = tflite_tree.read(open(path, "rb").read())
    graph = tree["Subgraphs"][0]
    convs = [op for op in graph["Operators"] if len(op["Inputs"]) > 2 and op["Inputs"][2] >= 0]
    shared = int(convs[1]["Inputs"][2])
    graph["Tensors"].append(graph["Tensors"][shared].copy())  # same buffer, another tensor
    inputs = convs[1]["Inputs"].copy()
    inputs[2] = len(graph["Tensors"]) - 1
    convs[1]["Inputs"] = inputs
    data = tflite_tree.write(tree, b"TFL3")
    x = rows(8, 3)
    with microtrain.TrainSession(data) as session:
        session.compile(microtrain.optimizers.SGD(0.05), "categorical_crossentropy",
                        batch_size=8)
        for _ in range(2):
            session.train_step(x, labels(8))
        ours = session.infer(x)[0]
        exported = str(tmp_path / "trained.tflite")
        session.export_model_for_inference(exported)
    back = tflite_tree.read(open(exported, "rb").read())
    tensors = back["Subgraphs"][0]["Tensors"]
    biases = [tensors[int(op["Inputs"][2])]["Buffer"] for op in back["Subgraphs"][0]["Operators"]
              if len(op["Inputs"]) > 2 and op["Inputs"][2] >= 0]
    assert len(biases) == 2 and biases[0] != biases[1]
    assert len(back["Subgraphs"][0]["Operators"]) == len(graph["Operators"])
    np.testing.assert_allclose(peers.run_litert(exported, x), ours, rtol=peers.RTOL,
                               atol=peers.ATOL)
