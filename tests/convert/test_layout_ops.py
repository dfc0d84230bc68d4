"""Models that need the core's PAD, MUL, SUB and TRANSPOSE ops, checked against the runtime
they come from: PyTorch graphs exported to ONNX (TorchScript and torch.export exporters)
against ONNX Runtime, and .tflite files holding those ops against LiteRT. Forward within
rtol 1e-5 (absolute floor 1e-6); the ops' gradients are checked against finite differences
and PyTorch (tests/ops/test_pad.c, test_pad.py, ...: one C and one Python file per op).
"""

import os
import sys
import warnings

import numpy as np
import pytest

import microtrain
from microtrain import layers
from microtrain.convert import ConversionError, exporter
from microtrain.nn import image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")
torch = pytest.importorskip("torch")
import torch_models  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


def op_types(model):
    return [op.op_type for op in image.read_image(model.to_bytes()).ops]


def sample(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("name", sorted(torch_models.layout_models()))
def test_layout_graphs_match_onnxruntime(name, dynamo, tmp_path):
    if dynamo:
        pytest.importorskip("onnxscript", reason="the torch.export-based exporter needs "
                                                 "onnxscript")
    module, example = torch_models.layout_models()[name]
    path = str(tmp_path / (name + ".onnx"))
    torch_models.export_onnx(module, example, path, dynamo=dynamo)
    model = microtrain.convert(path)
    x = sample((4,) + tuple(example.shape[1:]), 3)
    expected = peers.run_onnxruntime(path, x)
    actual = peers.microtrain_infer(model, x)
    assert actual.shape == expected.shape  # NCHW in, NCHW (or flat) out, as ONNX Runtime
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)
    with torch.no_grad():
        np.testing.assert_allclose(actual, module(torch.from_numpy(x)).numpy(),
                                   rtol=peers.RTOL, atol=peers.ATOL)
    kinds = op_types(model)
    assert kinds[0] == microtrain.ops.TRANSPOSE  # the NCHW input, once
    if name == "normalised_silu":
        assert kinds.count(microtrain.ops.PAD) == 1 and microtrain.ops.MUL in kinds
        assert kinds[-2] == microtrain.ops.SUB and kinds[-1] == microtrain.ops.TRANSPOSE
    # it trains, and the trained weights write back into a file ONNX Runtime runs alike
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile("sgd", "mse", batch_size=4)
        before = session.infer(x)[0].copy()
        for _ in range(3):
            session.train_step(x, np.zeros_like(expected))
        after = session.infer(x)[0].copy()
        weights = session.get_weights()
    assert not np.allclose(before, after)
    for source in (model.source, None):  # written back; a new file
        data = exporter.export_bytes(model.to_bytes(), weights, "onnx", source)
        np.testing.assert_allclose(peers.run_onnxruntime(data, x), after, rtol=peers.RTOL,
                                   atol=peers.ATOL)


def layout_model():
    """A microtrain model with every new op: ZeroPadding2D, Subtract/Multiply by constants
    and of two tensors, Permute."""
    x = microtrain.Input((6, 5, 3))
    h = layers.Subtract(constant=[0.1, -0.2, 0.3])(x)
    h = layers.Multiply(constant=1.5)(h)
    h = layers.ZeroPadding2D(((1, 0), (0, 2)))(h)
    a = layers.Conv2D(4, 3, strides=2, activation="relu")(h)
    b = layers.DepthwiseConv2D(3, padding="same")(a)
    h = layers.Subtract()([layers.Multiply()([a, b]), a])
    h = layers.Permute((3, 1, 2))(h)
    h = layers.Permute((2, 3, 1))(h)
    out = layers.Dense(3)(layers.Flatten()(h))
    return microtrain.Model(x, out, seed=4)


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_new_ops_in_written_files_match_the_peers(fmt):
    """The writers emit the new ops, LiteRT and ONNX Runtime compute what the core does,
    and the readers import them back."""
    model = layout_model()
    x = sample((5, 6, 5, 3), 8)
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "mse", batch_size=5)
        expected = session.infer(x)[0].copy()
    data = exporter.export_bytes(model.to_bytes(), model.get_weights(), fmt)
    run = peers.run_litert if fmt == "tflite" else peers.run_onnxruntime
    np.testing.assert_allclose(run(data, x), expected, rtol=peers.RTOL, atol=peers.ATOL)
    again = microtrain.convert(data, format=fmt)
    # (the ONNX reader sees the two Permutes and its own layout changes as relabellings
    # and keeps no TRANSPOSE: the core holds every tensor in the order its ops need)
    wanted = {microtrain.ops.PAD, microtrain.ops.MUL, microtrain.ops.SUB}
    if fmt == "tflite":
        wanted.add(microtrain.ops.TRANSPOSE)
    assert wanted <= set(op_types(again))
    np.testing.assert_allclose(peers.microtrain_infer(again, x), expected, rtol=peers.RTOL,
                               atol=peers.ATOL)


# ---------------------------------------------------------------- what is still refused


def onnx_model(nodes, input_shape, initializers=()):
    import onnx
    from onnx import helper
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        list(initializers))
    # opset 19: AveragePool's dilations (refused by name below) are valid ONNX from 19 on
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]) \
        .SerializeToString()


def const(name, array):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(array), name)


@pytest.mark.parametrize("nodes,initializers,words,attribute", [
    ([("MaxPool", ["x"], {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 2, 0, 0]})],
     [], "the first window lies in the padding before the input", "pads"),
    ([("AveragePool", ["x"], {"kernel_shape": [3, 3], "dilations": [2, 2]})],
     [], "dilations are not supported", "dilations"),
    ([("Pad", ["x", "p"], {"mode": "reflect"})], [("p", np.array([0, 0, 1, 1, 0, 0, 1, 1]))],
     "mode reflect", "mode"),
    ([("Pad", ["x", "p"], {})], [("p", np.array([0, 1, 0, 0, 0, 1, 0, 0]))],
     "pads [0, 1, 0, 0, 0, 1, 0, 0] are not supported", "pads"),
    ([("Div", ["c", "x"], {})], [("c", np.float32([2.0]))], "constant divided by", None),
    ([("Transpose", ["x"], {"perm": [1, 0, 2, 3]})], [], "moves the batch", "perm"),
    ([("Mul", ["x", "c"], {})], [("c", np.ones((8, 1), np.float32))],
     "broadcasting other than per channel", None),
])
def test_refusals_name_what_is_supported(nodes, initializers, words, attribute):
    from onnx import helper
    made = [helper.make_node(kind, ins, ["y"], name="n", **attrs) for kind, ins, attrs in nodes]
    data = onnx_model(made, ["N", 2, 8, 8], [const(n, a) for n, a in initializers])
    with pytest.raises(ConversionError) as caught:
        microtrain.convert(data)
    text = str(caught.value)
    assert text.startswith("onnx node 0 (%s 'n'):" % nodes[0][0]) and words in text, text
    assert caught.value.attribute == attribute


# ---------------------------------------------------------------- external data


def test_onnx_external_data_is_read_beside_the_file(tmp_path):
    import onnx
    proto = onnx.load(peers.fixture("torch_cnn_bn.onnx"))
    path = str(tmp_path / "model.onnx")
    onnx.save_model(proto, path, save_as_external_data=True, location="model.onnx.data",
                    size_threshold=0)
    assert os.path.getsize(path + ".data") > 1000  # the weights are outside the .onnx
    x = sample((3, 3, 8, 8), 1)
    with microtrain.TrainSession(path) as session:  # a session opens it by its path
        session.compile("sgd", "mse", batch_size=3)
        np.testing.assert_allclose(session.infer(x)[0], peers.run_onnxruntime(path, x),
                                   rtol=peers.RTOL, atol=peers.ATOL)
        exported = str(tmp_path / "trained.onnx")  # one self-contained file
        session.export_model_for_inference(exported)
    assert not os.path.exists(exported + ".data")
    np.testing.assert_allclose(peers.run_onnxruntime(exported, x),
                               peers.run_onnxruntime(path, x), rtol=peers.RTOL,
                               atol=peers.ATOL)
    with open(path, "rb") as handle:
        data = handle.read()
    with pytest.raises(ConversionError, match="external data files; give the path"):
        microtrain.convert(data)
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return  # onnx's C++ reader aborts on the missing file under a preloaded ASan runtime
    os.rename(path + ".data", str(tmp_path / "elsewhere.data"))
    with pytest.raises(ConversionError, match="cannot read the external data"):
        microtrain.TrainSession(path)
