"""A convolutional model fine-tunes on every Cortex-M and RISC-V board with the host's exact bits.

The digits example of test_board_firmware.py is an MLP; this one runs the convolution,
pooling and global-average kernels on the device: Conv 3x3x4 same relu -> MaxPool 2 ->
Conv 3x3x8 relu -> GlobalAveragePool -> Dense 10 -> Softmax on 8x8 digits, every op trained,
through `microtrain firmware --run` (build for the board, run under QEMU, replay on the host
through ctypes, compare per-epoch losses and the weight CRC). The firmware's core has the
kernels of the model's ops and no others.
"""

import os
import re

import pytest

import microtrain
from microtrain import layers

from board_setup import BARE_METAL_BOARDS, digits_folder, fine_tune_three_epochs, save_digits_rows


@pytest.fixture(scope="module")
def cnn_inputs():
    folder, x, y = digits_folder("cnn", 120)
    model = microtrain.Sequential(
        [layers.Conv2D(4, 3, padding="same", activation="relu"), layers.MaxPool2D(2),
         layers.Conv2D(8, 3, activation="relu"), layers.GlobalAveragePool(),
         layers.Dense(10), layers.Softmax()], input_shape=(8, 8, 1), seed=0)
    model.save(os.path.join(folder, "cnn.mtm"))
    save_digits_rows(folder, x, y)
    return folder


@pytest.mark.parametrize("board", BARE_METAL_BOARDS)
def test_cnn_fine_tunes_bit_identical_to_host(board, cnn_inputs):
    fine_tune_three_epochs(board, cnn_inputs, "cnn.mtm", "adam", "0.02")
    header = os.path.join(cnn_inputs, board, "build", "micro_core", "ops_config", "microtrain_core",
                          "mt_ops_config.h")
    with open(header) as handle:
        built = {name.lower() for name, flag in re.findall(r"MT_OP_BUILT_(\w+) ([01])", handle.read())
                 if flag == "1"}
    assert built == {"conv2d", "max_pool2d", "global_average_pool", "dense", "softmax"}, built
