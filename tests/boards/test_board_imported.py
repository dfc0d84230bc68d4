"""An imported model fine-tunes on a Cortex-M board with the host's exact bits.

`microtrain firmware --model model.tflite` takes the file as TrainSession does (converted
to .mtm, which the generated C sources hold), builds the example firmware for the
Cortex-M4F board (mps2-an386), runs it under QEMU and replays the same calls on the host
through ctypes: per-epoch losses and the weight CRC must be identical. Two files: the
TFLiteConverter fixture tf_cnn_bn.tflite (Conv with a folded BatchNorm, MaxPool, Dense,
Softmax), and a .tflite holding PAD, MUL, SUB and TRANSPOSE, so the device runs the
newest kernels forward and backward.
"""

import os
import re
import shutil

import numpy as np
import pytest

import microtrain
from microtrain import layers
from microtrain.convert import exporter

from board_setup import BUILD_ROOT, REPO_ROOT, run_cli_firmware

pytest.importorskip("tflite", reason="converting .tflite needs microtrain[convert]")

BOARD = "mps2-an386"


def layout_tflite(path):
    x = microtrain.Input((6, 5, 3))
    h = layers.Subtract(constant=[0.1, -0.2, 0.3])(x)
    h = layers.Multiply(constant=1.5)(h)
    h = layers.ZeroPadding2D(((1, 0), (0, 2)))(h)
    a = layers.Conv2D(4, 3, strides=2, activation="relu")(h)
    h = layers.Subtract()([layers.Multiply()([a, a]), a])
    h = layers.Permute((3, 1, 2))(h)
    out = layers.Softmax()(layers.Dense(3)(layers.Flatten()(h)))
    model = microtrain.Model(x, out, seed=5)
    exporter.export(model.to_bytes(), model.get_weights(), path)


@pytest.mark.parametrize("name", ["tf_cnn_bn", "layout_ops"])
def test_imported_tflite_fine_tunes_bit_identical_to_host(name):
    if shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.fail("not installed: qemu-system-arm / arm-none-eabi-gcc; run "
                    "`bash tools/setup_arm.sh`", pytrace=False)
    folder = os.path.join(BUILD_ROOT, "imported", name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".tflite")
    if name == "tf_cnn_bn":
        shutil.copyfile(os.path.join(REPO_ROOT, "tests", "convert", "fixtures", name + ".tflite"),
                        path)
    else:
        layout_tflite(path)
    model = microtrain.convert(path)
    rng = np.random.default_rng(11)
    rows = 40  # 2 batches of 16 and a partial one of 8
    x = rng.standard_normal((rows,) + model.input_shapes[0]).astype(np.float32)
    classes = model.output_shapes[0][0]
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, rows)]
    np.savez(os.path.join(folder, "data.npz"), x=x, y=y)
    losses, stdout = run_cli_firmware(
        BOARD, path, os.path.join(folder, "data.npz"), os.path.join(folder, "fw"),
        "--epochs", "2", "--batch-size", "16", "--optimizer", "adam", "--learning-rate", "0.01",
        "--loss", "categorical_crossentropy")
    assert len(losses) == 2, stdout
    # the C sources hold the converted image, byte for byte
    with open(os.path.join(folder, "fw", "data", "mt_firmware_data.c")) as handle:
        source = handle.read()
    body = source.split("mt_fw_model[MT_FW_MODEL_BYTES] __attribute__((aligned(16))) = {")[1]
    written = bytes(int(b, 16) for b in re.findall(r"0x([0-9a-f]{2}),", body.split("};")[0]))
    assert written == model.to_bytes()
