"""Import .tflite/.onnx (and PyTorch through ONNX), check inference against LiteRT and
ONNX Runtime, fine-tune, export back and run the exported files in the peers.

Fixtures come from the real converters (make_fixtures.py): TFLiteConverter from Keras,
torch.onnx.export (TorchScript and torch.export-based). Tolerance: rtol 1e-5 with an
absolute floor of 1e-6, as the repository's PyTorch parity tests.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import microtrain
from microtrain.convert import ConversionError, exporter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")

warnings.filterwarnings("ignore", category=DeprecationWarning)


def batch_for(model, n, seed):
    """A batch in the source's layout (NCHW for ONNX images)."""
    rng = np.random.default_rng(seed)
    shape = model.input_layouts[0]["shape"]
    return rng.standard_normal((n,) + tuple(shape)).astype(np.float32)


@pytest.mark.parametrize("name", peers.fixtures(".tflite"))
@pytest.mark.parametrize("reference", [False, True], ids=["litert", "litert_ref"])
def test_tflite_inference_matches_litert(name, reference):
    model = microtrain.convert(peers.fixture(name))
    x = batch_for(model, 5, 0)
    expected = peers.run_litert(peers.fixture(name), x, reference=reference)
    actual = peers.microtrain_infer(model, x)
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)


@pytest.mark.parametrize("name", peers.fixtures(".onnx"))
def test_onnx_inference_matches_onnxruntime(name):
    model = microtrain.convert(peers.fixture(name))
    x = batch_for(model, 5, 0)
    expected = peers.run_onnxruntime(peers.fixture(name), x)
    actual = peers.microtrain_infer(model, x)
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)


def test_layouts_and_names():
    """An ONNX image takes NCHW as ONNX Runtime does: a TRANSPOSE op inside moves it to
    the core's NHWC."""
    model = microtrain.convert(peers.fixture("torch_cnn_bn.onnx"))
    assert model.input_names == ["input"] and model.output_names == ["output"]
    assert model.input_layouts[0]["shape"] == (3, 8, 8)
    assert model.input_shapes == [(3, 8, 8)]                  # the image takes NCHW
    assert model.input_layouts[0]["transpose"] is None
    from microtrain.nn import image
    first = image.read_image(model.to_bytes()).ops[0]
    assert first.op_type == microtrain.ops.TRANSPOSE and first.params[0] == 1 | 2 << 4
    tflite = microtrain.convert(peers.fixture("tf_cnn_bn.tflite"))
    assert tflite.input_shapes == [(8, 8, 3)] and tflite.input_layouts[0]["transpose"] is None
    assert tflite.input_names == ["serving_default_image:0"]


def fine_tune(model, steps=3, batch=4, seed=1):
    """A few SGD steps on device-sized batches; returns the trained weights."""
    rng = np.random.default_rng(seed)
    xs = batch_for(model, steps * batch, seed)
    ys = rng.uniform(0, 1, (steps * batch,) + tuple(model.output_shapes[0])).astype("f4")
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile(microtrain.optimizers.SGD(learning_rate=0.1), "mse",
                        batch_size=batch)
        for k in range(steps):
            session.train_step(xs[k * batch:(k + 1) * batch], ys[k * batch:(k + 1) * batch])
        return session.get_weights()


ROUND_TRIPS = [(n, f) for n in peers.fixtures(".tflite") for f in ("tflite*", "tflite",
                                                                     "onnx")] + \
              [(n, f) for n in peers.fixtures(".onnx") for f in ("onnx*", "onnx", "tflite")]


@pytest.mark.parametrize("name,target", ROUND_TRIPS)
def test_round_trip(name, target):
    """import -> fine-tune -> export (``*``: written back into the original file; else
    a new file from the image) -> the peer's output equals the trained session's."""
    model = microtrain.convert(peers.fixture(name))
    weights = fine_tune(model)
    assert any(not np.array_equal(a, b) for a, b in zip(weights, model.get_weights()))
    write_back = target.endswith("*")
    fmt = target.rstrip("*")
    data = exporter.export_bytes(model.to_bytes(), weights, fmt,
                                 model.source if write_back else None)
    x = batch_for(model, 6, 7)
    expected = peers.microtrain_infer(model, x, weights)
    # a written-back file and a new one both take the image's inputs: the source's layout
    run = peers.run_onnxruntime if fmt == "onnx" else peers.run_litert
    actual = run(data, x)
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)
    again = microtrain.convert(data, format=fmt)
    np.testing.assert_allclose(peers.microtrain_infer(again, x), actual, rtol=peers.RTOL,
                               atol=peers.ATOL)


def test_export_writes_files(tmp_path):
    model = microtrain.convert(peers.fixture("tf_mlp.tflite"))
    weights = fine_tune(model)
    for suffix in ("tflite", "circle", "onnx"):
        path = str(tmp_path / ("trained." + suffix))
        assert model.export(path, weights) == suffix
        again = microtrain.convert(path)
        for a, b in zip(again.get_weights(), weights):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="format"):
        model.export(str(tmp_path / "trained.bin"), weights)


# ---------------------------------------------------------------- real-world-style graphs


def _real_world():
    torch = pytest.importorskip("torch")  # noqa: F841
    import torch_models
    return torch_models


@pytest.mark.parametrize("name", ["squeezenet_style", "resnet_style_9x9", "resnet_style_8x8",
                                  "vgg_style"])
def test_real_world_style_cnn(name, tmp_path):
    torch_models = _real_world()
    module, example = torch_models.real_world_models()[name]
    path = str(tmp_path / (name + ".onnx"))
    torch_models.export_onnx(module, example, path)
    model = microtrain.convert(path)
    if name == "resnet_style_8x8":
        # stride-2 3x3 convs with pads=1 on an even size start their windows one
        # element before TFLite's SAME: a PAD op, then the convolution with VALID
        kinds = [op.op_type for op in microtrain.nn.image.read_image(model.to_bytes()).ops]
        assert kinds.count(microtrain.ops.PAD) == 1
    x = batch_for(model, 4, 3)
    np.testing.assert_allclose(peers.microtrain_infer(model, x),
                               peers.run_onnxruntime(path, x), rtol=peers.RTOL,
                               atol=peers.ATOL)


def test_from_torch_matches_torch():
    torch = pytest.importorskip("torch")
    import torch_models
    torch_models.skip_torch_export_under_asan()
    module, _ = torch_models.fixture_models()["torch_depthwise_residual"]
    module.train()
    model = microtrain.from_torch(module, torch.zeros(1, 4, 8, 8))
    assert module.training  # put back in the mode it was in
    x = batch_for(model, 3, 5)
    module.eval()
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(peers.microtrain_infer(model, x), expected, rtol=peers.RTOL,
                               atol=peers.ATOL)


# ---------------------------------------------------------------- refusals


def _onnx_model(node, input_shape, output_shape, initializers=()):
    import onnx
    from onnx import helper
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, output_shape)],
        list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]) \
        .SerializeToString()


def _conv_weight(shape):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.ones(shape, np.float32), "w")


@pytest.mark.parametrize("attrs,weight,attribute,words", [
    ({"dilations": [2, 2]}, (4, 2, 3, 3), "dilations", "dilations [2, 2]"),
    ({"group": 2}, (4, 1, 3, 3), "group", "group=2"),
    ({"pads": [1, -1, 1, 1]}, (4, 2, 3, 3), "pads", "negative pads [1, -1, 1, 1]"),
])
def test_onnx_conv_refusals_name_op_index_attribute(attrs, weight, attribute, words):
    from onnx import helper
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c1", **attrs)
    data = _onnx_model(node, ["N", 2, 8, 8], None, [_conv_weight(weight)])
    with pytest.raises(ConversionError) as caught:
        microtrain.convert(data)
    text = str(caught.value)
    assert text.startswith("onnx node 0 (Conv 'c1'):")
    assert words in text and "supported:" in text
    assert caught.value.attribute == attribute


def test_unsupported_op_and_dtype_are_refused():
    from onnx import helper
    import onnx
    with pytest.raises(ConversionError, match=r"onnx node 0 \(Erf\): op Erf is not supported; "
                                              r"supported: Gemm"):
        microtrain.convert(_onnx_model(helper.make_node("Erf", ["x"], ["y"]), ["N", 4], None))
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE,
                                                             ["N", 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE,
                                                             None)])
    with pytest.raises(ConversionError, match="supported: float32 inputs"):
        microtrain.convert(helper.make_model(graph).SerializeToString())
    with pytest.raises(ConversionError, match="not a .tflite, .circle or .onnx"):
        microtrain.convert(b"MTM1" + bytes(60))


def test_tflite_refusal_names_op_index_and_attribute():
    """A TFLite FULLY_CONNECTED with fused TANH: patched into the fixture's options."""
    import tflite
    data = bytearray(open(peers.fixture("tf_mlp.tflite"), "rb").read())
    model = tflite.Model.GetRootAsModel(data, 0)
    op = model.Subgraphs(0).Operators(0)
    table = op.BuiltinOptions()
    options = tflite.FullyConnectedOptions()
    options.Init(table.Bytes, table.Pos)
    slot = options._tab.Offset(4)  # fused_activation_function
    assert slot, "the fixture's first FC stores its activation (RELU)"
    data[options._tab.Pos + slot] = 4  # TANH
    with pytest.raises(ConversionError) as caught:
        microtrain.convert(bytes(data))
    assert str(caught.value).startswith("tflite op 0 (FULLY_CONNECTED): fused activation TANH")
    assert caught.value.attribute == "fused_activation_function"


# ---------------------------------------------------------------- API surface


def test_import_is_lazy():
    code = ("import sys, microtrain, microtrain.convert as c; "
            "assert callable(microtrain.convert) and microtrain.convert is c; "
            "bad = [m for m in ('onnx', 'flatbuffers', 'tflite', 'torch') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


def test_load_model_bytes_opens_a_train_session():
    from microtrain.convert import load_model_bytes
    image, source = load_model_bytes(peers.fixture("tf_cnn_bn.tflite"))
    assert source.format == "tflite" and len(source.origins) == 6
    with microtrain.TrainSession(image) as session:
        session.compile("adam", "categorical_crossentropy", batch_size=2)
        x = np.zeros((2, 8, 8, 3), np.float32)
        y = np.eye(5, dtype=np.float32)[[0, 1]]
        assert np.isfinite(session.train_step(x, y)["loss"][0])


def test_cli_convert_and_info(tmp_path):
    from microtrain.tools import cli
    out = str(tmp_path / "m.mtm")
    assert cli.main(["convert", peers.fixture("torch_cnn_bn.onnx"), "-o", out]) == 0
    assert open(out, "rb").read() == microtrain.convert(peers.fixture("torch_cnn_bn.onnx")) \
        .to_bytes()
    assert cli.main(["info", peers.fixture("tf_mlp.tflite")]) == 0
    assert cli.main(["convert", str(tmp_path / "missing.onnx"), "-o", out]) == 1
