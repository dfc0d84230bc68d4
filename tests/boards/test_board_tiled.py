"""Updates in tiles on the device: a Conv2D and a Dense larger than the planner's tiles
fine-tune on the Cortex-M3 (soft float), M7 (FPv5) and M55 (Helium) with the host's exact bits.

Digits 8x8x1 -> Conv 3x3x16 same relu -> MaxPool 2 -> Conv 3x3x32 same relu (W [32, 3, 3, 16],
18,432 bytes: tiles of 3 output channels, 3,264 bytes) -> Flatten -> Dense 20 relu (W [20, 512],
40,960 bytes: tiles of 1 unit, 2,080 bytes) -> Dense 10 -> Softmax, every op trained, Adam,
batch 8 (44 rows: 5 batches of 8 and a partial one of 4), two epochs. Each tiled weight's
gradient is one tile in the arena (session.c update_in_tiles), so the device runs the tiled
path through its own convolution, Dense and optimizer kernels. `microtrain firmware --run`
builds, runs under QEMU and replays on the host through ctypes: per-epoch losses and the
weight CRC must match.

A sparse update on the same boards, in the same build folders (only the data source is
rebuilt): the second Conv2D's first quarter of its channels (8 of 32, tiles of 3),
the Dense 20's first 5 units (tiles of 1), the last Dense whole, the first Conv2D's bias
(--trainable-scheme, the op mask and channel counts in the generated configuration). The
arena holds only the trained rows of the Conv2D and the Dense 20; the firmware reads their
other rows from the model image in flash.
"""

import os

import numpy as np
import pytest

import microtrain
from microtrain import layers

from board_setup import BARE_METAL_BOARDS, digits_folder, run_cli_firmware

BOARDS = [b for b in ("mps2-an385", "mps2-an500", "mps3-an547") if b in BARE_METAL_BOARDS]


@pytest.fixture(scope="module")
def tiled_inputs():
    folder, x, y = digits_folder("tiled", 54)
    model = microtrain.Sequential(
        [layers.Conv2D(16, 3, padding="same", activation="relu"), layers.MaxPool2D(2),
         layers.Conv2D(32, 3, padding="same", activation="relu"), layers.Flatten(),
         layers.Dense(20, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(8, 8, 1), seed=0)
    path = os.path.join(folder, "tiled.mtm")
    model.save(path)
    with microtrain.TrainSession(path) as session:
        session.compile("adam", "categorical_crossentropy", batch_size=8)
        plan = session.memory_plan()
    # conv: 3 channels of 3·3·16 + 8·4·4 floats; dense: 1 unit of 512 + 8 floats
    assert plan["tiled_updates"] == 2, plan
    assert plan["weight_tile_bytes"] == 3 * (144 + 128) * 4, plan
    np.savez(os.path.join(folder, "digits.npz"), x=x[:44], y=y[:44], x_eval=x[44:],
             y_eval=y[44:])
    return folder


@pytest.mark.parametrize("board", BOARDS)
def test_tiled_updates_fine_tune_bit_identical_to_host(board, tiled_inputs):
    losses, stdout = run_cli_firmware(
        board, os.path.join(tiled_inputs, "tiled.mtm"), os.path.join(tiled_inputs, "digits.npz"),
        os.path.join(tiled_inputs, board),
        "--epochs", "2", "--batch-size", "8", "--optimizer", "adam", "--learning-rate", "0.01")
    assert len(losses) == 2 and losses[-1] < losses[0], stdout


@pytest.mark.parametrize("board", BOARDS)
def test_sparse_update_fine_tunes_bit_identical_to_host(board, tiled_inputs):
    scheme = microtrain.SparseScheme({2: 0.25, 4: 5, 5: "all", 0: "bias"})
    path = os.path.join(tiled_inputs, "scheme.json")
    with open(path, "w") as handle:
        handle.write(scheme.to_json())
    with microtrain.TrainSession(os.path.join(tiled_inputs, "tiled.mtm")) as session:
        session.compile("adam", "categorical_crossentropy", batch_size=8, trainable=scheme)
        plan = session.memory_plan()
        session.compile("adam", "categorical_crossentropy", batch_size=8,
                        trainable={2: "all", 4: "all", 5: "all", 0: "bias"})
        whole = session.memory_plan()
    assert plan["tiled_updates"] == 2, plan  # the parts in tiles on the device too
    # the arena holds the trained rows alone (the others read from flash): 24 of the Conv2D's
    # 32 rows of 3·3·16 floats and 15 of the Dense's 20 rows of 512 floats stay out
    assert plan["weight_bytes"] == whole["weight_bytes"] - (24 * 144 + 15 * 512) * 4, plan
    assert [row["trains"] for row in plan["layers"]] == [
        "bias", "8 of 32 channels", "5 of 20 channels", "all"]
    losses, stdout = run_cli_firmware(
        board, os.path.join(tiled_inputs, "tiled.mtm"), os.path.join(tiled_inputs, "digits.npz"),
        os.path.join(tiled_inputs, board),
        "--epochs", "2", "--batch-size", "8", "--optimizer", "adam", "--learning-rate", "0.01",
        "--trainable-scheme", path)
    assert len(losses) == 2 and losses[-1] < losses[0], stdout
