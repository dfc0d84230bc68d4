"""Updates in tiles on the device: a Dense larger than the planner's tiles fine-tunes on the
Cortex-M3 (soft float), M7 (FPv5) and M55 (Helium) with the host's exact bits.

64 -> Dense 80 relu -> Dense 10 -> Softmax on 8x8 digits, every op trained, Adam, batch 8
(100 rows: 12 batches of 8 and a partial one of 4): W1 [80, 64] (20,480 bytes) is updated in
tiles of 14 rows (its gradient: one tile of 4,032 bytes in the arena; session.c
update_in_tiles), so the device runs the tiled path of every kernel column that has one's
own optimizer and Dense backward kernels. `microtrain firmware --run` builds, runs under
QEMU and replays on the host through ctypes: per-epoch losses and the weight CRC must match.
"""

import os

import numpy as np
import pytest

import microtrain
from microtrain import layers

from board_setup import BARE_METAL_BOARDS, BUILD_ROOT, run_cli_firmware

BOARDS = [b for b in ("mps2-an385", "mps2-an500", "mps3-an547") if b in BARE_METAL_BOARDS]


@pytest.fixture(scope="module")
def tiled_inputs():
    from sklearn.datasets import load_digits

    folder = os.path.join(BUILD_ROOT, "tiled")
    os.makedirs(folder, exist_ok=True)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)[:130]
    y = np.eye(10, dtype=np.float32)[digits.target][:130]
    model = microtrain.Sequential([layers.Dense(80, activation="relu"), layers.Dense(10),
                                   layers.Softmax()], input_shape=(64,), seed=0)
    path = os.path.join(folder, "wide.mtm")
    model.save(path)
    with microtrain.TrainSession(path) as session:
        session.compile("adam", "categorical_crossentropy", batch_size=8)
        plan = session.memory_plan()
    assert plan["tiled_updates"] == 1 and plan["weight_tile_bytes"] == 14 * (64 + 8) * 4, plan
    np.savez(os.path.join(folder, "digits.npz"), x=x[:100], y=y[:100], x_eval=x[100:],
             y_eval=y[100:])
    return folder


@pytest.mark.parametrize("board", BOARDS)
def test_tiled_updates_fine_tune_bit_identical_to_host(board, tiled_inputs):
    losses, stdout = run_cli_firmware(
        board, os.path.join(tiled_inputs, "wide.mtm"), os.path.join(tiled_inputs, "digits.npz"),
        os.path.join(tiled_inputs, board),
        "--epochs", "2", "--batch-size", "8", "--optimizer", "adam", "--learning-rate", "0.01")
    assert len(losses) == 2 and losses[-1] < losses[0], stdout
