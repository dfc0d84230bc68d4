"""Layers of an imported .tflite keep the file's names and types (TensorFlow's fused names
read back to the Keras layer): ``Session.layers``, ``compile(trainable=[name])``,
``trainable=N`` as the last N layers with weights, ``train_from`` by index or name, and the
operator table of ``microtrain info``."""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain.convert import ConversionError, tflite_layers
from microtrain.tools import cli

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

pytest.importorskip("tflite")


def mlperf(name):
    return os.path.join(peers.MLPERF_TINY, name)


def test_fused_tensorflow_names_read_back_to_the_layer():
    kws = microtrain.convert(mlperf("kws_ref_model.tflite")).source.operators
    assert [op["name"] for op in kws] == [
        "conv2d", "depthwise_conv2d", "conv2d_1", "depthwise_conv2d_1", "conv2d_2",
        "depthwise_conv2d_2", "conv2d_3", "depthwise_conv2d_3", "conv2d_4",
        "average_pooling2d", "flatten", "dense", "Identity"]
    # 'model/conv2d_5/Conv2D' is fused into conv2d_3's and conv2d_4's names too
    resnet = microtrain.convert(mlperf("pretrainedResnet.tflite")).source.operators
    assert [op["name"] for op in resnet[4:8]] == ["conv2d_3", "conv2d_4", "conv2d_5", "add_1"]
    # an output named 'Identity' takes its weights' layer
    ad01 = microtrain.convert(mlperf("ad01_fp32.tflite")).source.operators
    assert ad01[9]["name"] == "dense_9" and ad01[9]["type"] == "FULLY_CONNECTED"
    # one piece per fused op, Keras 3's scopes: the layer, not 'batchnorm' or 'Conv1D'
    assert tflite_layers.layer_name(
        ["sequential/conv1d/Relu;sequential/conv1d/BiasAdd;sequential/conv1d/Conv1D/Squeeze"],
        [], "CONV_2D")[0] == "conv1d"
    assert tflite_layers.layer_name(
        ["m/re_lu/Relu;m/batch_normalization/batchnorm/add_1;m/dw/depthwise"], [],
        "DEPTHWISE_CONV_2D")[0] == "dw"


def test_numbered_keras_2_layers_keep_their_numbers():
    """MLPerf Tiny's larger ResNet is a Keras 2 model whose layers all carry numbers
    (model_4/conv2d_36 ... conv2d_44, dense_4): taken for Keras 3's scopes, the nine
    convolutions all became 'conv2d' and the session merged them into three layers of three
    operators each."""
    table = microtrain.convert(mlperf("pretrainedResnet_large_float.tflite")).source.operators
    assert [op["name"] for op in table if op["type"] == "CONV_2D"] == \
        ["conv2d_%d" % n for n in range(36, 45)]
    assert table[3]["name"] == "add_12" and table[14]["name"] == "dense_4"
    with microtrain.TrainSession(mlperf("pretrainedResnet_large_int8.tflite")) as session:
        assert [layer.source_op for layer in session.layers] == list(range(16))
        assert session.layers[8].name == "conv2d_42"
    assert microtrain.convert(mlperf("pretrainedResnet_large_int8.tflite"),
                              train_from="conv2d_42").source.int8["float_start"] == 8


def test_session_layers_carry_names_and_types_and_trainable_takes_names():
    with microtrain.TrainSession(mlperf("ad01_fp32.tflite")) as session:
        layers = session.layers
        assert [layer.name for layer in layers] == ["dense"] + ["dense_%d" % i
                                                                for i in range(1, 10)]
        assert layers[1] == [2, 3] and layers[1].type == "FULLY_CONNECTED"  # Dense + ReLU
        assert layers[9].source_op == 9
        params = [index for index, _ in session.model_description()["params"]]
        session.compile("sgd", "mse", batch_size=2, trainable=["dense_1", "functional_1/dense_3"])
        assert session.trained_tensors() == [params[2], params[3], params[6], params[7]]
        assert session.trainable_description() == \
            "ops [2, 3, 6, 7]: layers with weights 1 (dense_1), 3 (dense_3)"
        session.compile("sgd", "mse", batch_size=2, trainable=2)  # the last two layers
        assert session.trained_tensors() == params[-4:]
        assert "layers with weights 8 (dense_8), 9 (dense_9)" in \
            session.trainable_description()
        session.compile("sgd", "mse", batch_size=2, num_trainable_ops=2)  # onert's: ops
        assert session.trained_tensors() == params[-2:]
        with pytest.raises(ValueError, match="does not have; its layers are 'dense', "
                                             "'dense_1'"):
            session.compile("sgd", "mse", batch_size=2, trainable=["dense_10"])


def test_train_from_takes_an_operator_index_or_a_name_and_says_which_are_ambiguous():
    table = [{"index": 0, "type": "CONV_2D", "name": "conv", "aliases": ["m/conv"]},
             {"index": 1, "type": "CONV_2D", "name": "block_1_expand", "aliases": []},
             {"index": 2, "type": "ADD", "name": "shared", "aliases": []},
             {"index": 3, "type": "FULLY_CONNECTED", "name": "shared", "aliases": []}]
    assert tflite_layers.resolve_start(table, 3) == 3
    assert tflite_layers.resolve_start(table, np.int64(2)) == 2
    assert tflite_layers.resolve_start(table, "m/conv") == 0
    assert tflite_layers.resolve_start(table, "block_1") == 1  # a Keras block's first layer
    table[2]["name"] = "other"
    table.insert(3, {"index": 3, "type": "MUL", "name": "x", "aliases": []})
    table[4]["index"] = 4
    table[2]["name"] = "shared"
    with pytest.raises(ConversionError, match=r"names 2 operators: op 2 \(ADD shared\), "
                                              r"op 4 \(FULLY_CONNECTED shared\)"):
        tflite_layers.resolve_start(table, "shared")
    with pytest.raises(ConversionError, match=r"train_from=7 is not an operator .*\(0..4\)"):
        tflite_layers.resolve_start(table, 7)
    with pytest.raises(ConversionError, match="no operator is named 'dense'"):
        tflite_layers.resolve_start(table, "dense")
    with pytest.raises(ConversionError, match="operator index or a layer name"):
        tflite_layers.resolve_start(table, 1.5)


def test_info_lists_the_operators_train_from_accepts(capsys):
    assert cli.main(["info", mlperf("kws_ref_model.tflite"), "--trainable", "1"]) == 0
    out = capsys.readouterr().out
    assert "convert(..., train_from=...) takes an operator's index or name" in out
    lines = out.splitlines()
    assert any(line.split() == ["8", "conv2d_4", "CONV_2D", "8", "int8,", "frozen"]
               for line in lines), out
    assert any(line.split() == ["11", "dense", "FULLY_CONNECTED", "11", "float,", "trained"]
               for line in lines), out
    assert "trainable: all: layers with weights 11 (dense)" in out


def test_the_command_line_takes_layer_names(capsys):
    path = os.path.join(peers.FIXTURES, "keras", "har_conv1d.tflite")
    assert cli.main(["info", path, "--trainable", "conv1d_1,dense_1"]) == 0
    assert "layers with weights 2 (conv1d_1), 5 (dense_1))" in capsys.readouterr().out
    assert cli.main(["info", path, "--trainable", "dense_7"]) == 1
    assert "--trainable names layer 'dense_7', which the model does not have" in \
        capsys.readouterr().err
