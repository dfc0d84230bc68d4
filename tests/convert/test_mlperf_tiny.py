"""MLPerf Tiny's reference .tflite files (examples/models/mlperf_tiny, SOURCE.md) as a user takes
them: every full-int8 classifier fine-tunes from a layer before its Flatten, the model's
own head trains by default, and what trains is what the file's layer names say.
"""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.nn import image as _image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int8_compare  # noqa: E402
import peers  # noqa: E402

pytest.importorskip("tflite")

MLPERF = peers.MLPERF_TINY

# (file, the last convolution before the Flatten, its operator index, classes)
INT8_CLASSIFIERS = [
    ("kws_ref_model.tflite", "conv2d_4", 8, 12),
    ("pretrainedResnet_quant.tflite", "conv2d_7", 9, 10),
    ("vww_96_int8.tflite", "conv2d_13", 26, 2),
    ("str_ww_ref_model.tflite", "conv2d_3", 7, 3),
]


def mlperf(name):
    return os.path.join(MLPERF, name)


def int8_rows(shape, n, seed):
    return np.random.default_rng(seed).integers(-128, 128, (n,) + tuple(shape)).astype(np.int8)


@pytest.mark.parametrize("name,layer,index,classes", INT8_CLASSIFIERS,
                         ids=[c[0].split(".")[0] for c in INT8_CLASSIFIERS])
def test_int8_classifiers_train_from_a_layer_before_their_flatten(name, layer, index,
                                                                  classes):
    """The Flatten's int32 shape constant stays a shape in the float part (it was taken
    for a weight to dequantize: 'tensor .../flatten/Const has no quantization
    parameters'), and train_from="conv2d_4" starts at that layer's CONV_2D, not at the
    first operator whose fused name mentions it."""
    model = microtrain.convert(mlperf(name), train_from=layer)
    assert microtrain.convert(mlperf(name), train_from=index).to_bytes() == model.to_bytes()
    parsed = _image.read_image(model.to_bytes())
    kinds = [op.op_type for op in parsed.ops]
    first_float = kinds.index(_ops.DEQUANTIZE)
    assert all(kind in _ops.INFERENCE_ONLY for kind in kinds[:first_float])
    assert kinds[first_float + 1] == _ops.CONV2D and _ops.RESHAPE in kinds[first_float:]
    assert sum(kind in (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8)
               for kind in kinds[:first_float]) == sum(
        op["type"] in ("CONV_2D", "DEPTHWISE_CONV_2D")
        for op in model.source.operators[:index])
    x = int8_rows(model.input_shapes[0], 4, 0)
    y = np.eye(classes, dtype=np.float32)[np.arange(4) % classes]
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.001), "categorical_crossentropy",
                        batch_size=4)
        weighted = [op for op in model.source.operators[index:]
                    if op["type"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")]
        assert session.memory_plan()["num_trained_params"] == 2 * len(weighted)  # W, b
        losses = [session.train_step(x, y)["loss"][0] for _ in range(4)]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


INT8_EXPORTS = [("kws_ref_model.tflite", {}), ("str_ww_ref_model.tflite", {}),
                ("ad01_int8.tflite", {}),
                ("pretrainedResnet_quant.tflite", {"train_from": "conv2d_7"}),
                ("vww_96_int8.tflite", {"new_head": 3})]


@pytest.mark.parametrize("name,options", INT8_EXPORTS,
                         ids=["%s%s" % (n.split(".")[0], "".join("-%s" % k for k in o))
                              for n, o in INT8_EXPORTS])
def test_a_fine_tuned_int8_model_exports_to_a_tflite_litert_runs(name, options, tmp_path):
    """export_model_for_inference("x.tflite") of an imported int8 model (a bare KeyError
    before): the file's frozen int8 operators as they were, the trained float part after a
    DEQUANTIZE; LiteRT's reference kernels give the session's outputs (float head: within
    1e-6 relative)."""
    pytest.importorskip("ai_edge_litert")
    model = microtrain.convert(mlperf(name), **options)
    classes = model.output_shapes[0][0]
    x = int8_rows(model.input_shapes[0], 4, 1)
    if name.startswith("ad01"):  # an autoencoder: its output is its input's reconstruction
        loss, y = "mse", np.random.default_rng(2).standard_normal((4, classes)).astype(np.float32)
    else:
        loss, y = "categorical_crossentropy", np.eye(classes, dtype=np.float32)[np.arange(4) % classes]
    path = str(tmp_path / "trained.tflite")
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.01), loss, batch_size=4)
        before = session.infer(x)[0].copy()
        for _ in range(2):
            session.train_step(x, y)
        ours = session.infer(x)[0]
        assert not np.array_equal(ours, before)
        session.export_model_for_inference(path)
    theirs = peers.run_litert(path, x, reference=True).reshape(ours.shape)
    # the float head's sums in LiteRT's order: within 1e-6 of the outputs' scale (the
    # autoencoder's reconstructions reach 60, where one float32 ulp is 3.8e-6)
    assert float(np.max(np.abs(theirs - ours))) <= 1e-6 * max(1.0, float(np.max(np.abs(ours))))
    assert int8_compare.kept_operators_equal(mlperf(name), path,
                                             model.source.int8["kept_ops"])


def test_a_dynamic_range_model_imports_as_float_and_exports_float32_weights(tmp_path):
    """MLPerf Tiny's only 'float' KWS file is dynamic-range quantized (int8 weights, float
    activations): it was refused as 'not an int8 activation'. It imports as a float model
    with its weights dequantized, says so, computes what LiteRT computes from those floats,
    and exports float32 weights. LiteRT's own hybrid kernels quantize every activation on
    the fly: on inputs over the int8 model's input range its softmax outputs stay within
    0.05 of the float import's (measured 0.040 with LiteRT's default kernels) with the same
    top class."""
    pytest.importorskip("ai_edge_litert")
    path = mlperf("kws_ref_model_float32.tflite")
    model = microtrain.convert(path)
    assert model.format == "tflite"
    assert "dynamic-range quantized" in " ".join(model.source.notes)
    kinds = [op.op_type for op in _image.read_image(model.to_bytes()).ops]
    assert not any(kind in _ops.INFERENCE_ONLY for kind in kinds)
    rng = np.random.default_rng(3)
    x = ((rng.integers(-128, 128, (16, 49, 10, 1)) - 83) * 0.5847029).astype(np.float32)
    hybrid = peers.run_litert(path, x)
    dequantized = str(tmp_path / "dequantized.tflite")
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.01), "categorical_crossentropy",
                        batch_size=16)
        ours = session.infer(x)[0].copy()
        session.export_model_for_inference(dequantized)  # nothing trained yet
        assert float(np.max(np.abs(ours - hybrid))) < 0.05
        assert np.array_equal(ours.argmax(1), hybrid.argmax(1))
        np.testing.assert_allclose(peers.run_litert(dequantized, x), ours, rtol=peers.RTOL,
                                   atol=peers.ATOL)
        y = np.eye(12, dtype=np.float32)[np.arange(16) % 12]
        for _ in range(2):
            session.train_step(x, y)
        trained = session.infer(x)[0]
        session.export_model_for_inference(str(tmp_path / "trained.tflite"))
    from microtrain.convert.tflite_reader import model_kind
    exported = open(str(tmp_path / "trained.tflite"), "rb").read()
    assert model_kind(exported) == "float"
    np.testing.assert_allclose(peers.run_litert(str(tmp_path / "trained.tflite"), x), trained,
                               rtol=peers.RTOL, atol=peers.ATOL)


@pytest.mark.parametrize("name,options,trained", [
    ("vww_96_float.tflite", {"train_from": "conv2d_13"}, ["conv2d_13", "dense"]),
    ("kws_ref_model_float32.tflite", {"train_from": 8, "new_head": 5},
     ["conv2d_4", "new_head"]),
    ("kws_ref_model_float32.tflite", {"train_from": "dense"}, ["dense"]),
])
def test_float_files_take_train_from_and_new_head(name, options, trained, tmp_path):
    """A float (or dynamic-range) file: the weights before train_from stay constants in the
    image (never trained, no gradient bytes), new_head cuts as for an int8 model; export
    writes a .tflite LiteRT runs with the session's outputs (refused before: 'train_from,
    new_head and int8_input apply to int8 .tflite models'). A dynamic-range file's frozen
    int8 weights are written as float32 too (left int8, LiteRT ran them with its hybrid
    kernels: 0.02 from the session's outputs)."""
    pytest.importorskip("ai_edge_litert")
    model = microtrain.convert(mlperf(name), **options)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4,) + model.input_shapes[0]).astype(np.float32)
    y = rng.uniform(0, 1, (4,) + model.output_shapes[0]).astype(np.float32)
    path = str(tmp_path / "trained.tflite")
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(1e-3), "mse", batch_size=4)  # "all"
        named = [session.layers[i].name for i in range(len(session.layers))
                 if any(session.model_description()["ops"][op]["weights"]
                        for op in session.layers[i])]
        assert named == trained
        for _ in range(2):
            session.train_step(x, y)
        ours = session.infer(x)[0]
        session.export_model_for_inference(path)
    np.testing.assert_allclose(peers.run_litert(path, x), ours, rtol=peers.RTOL,
                               atol=peers.ATOL)
