"""examples/micropython_digits.py fine-tunes on MicroPython firmware with the host's bits.

The same file runs on CPython, on the unix port and under QEMU on a Cortex-M7 with FPU
(mps2-an500), a Cortex-M3 without one (mps2-an385) and a Cortex-M55 with Helium
(mps3-an547, its firmware built on demand), each through
``microtrain micropython``. Every run must print the per-epoch losses and the weight CRC of
the host's TrainSession on the same image, data and batch order, bit for bit; and
checkpoints cross both ways: one saved by the script on the board is the host's file byte
for byte and resumes on the host, one saved on the host resumes on the board, both ending
on the bits of an uninterrupted run.
"""

import os
import re
import subprocess
import sys

import pytest

import microtrain
from microtrain import DataLoader, optimizers

from mp_setup import BOARDS, ON_DEMAND_BOARDS, ROOT, run_micropython, weights_crc32

EXAMPLE = os.path.join(ROOT, "examples", "micropython_digits.py")


def parse(output):
    crc = re.search(r"^weights crc32 0x([0-9a-f]{8})$", output, re.MULTILINE)
    assert crc, output
    return {"losses": [float(v) for v in re.findall(r"^epoch loss (\S+)$", output,
                                                    re.MULTILINE)],
            "crc32": int(crc.group(1), 16),
            "steps": int(re.search(r"^steps (\d+)$", output, re.MULTILINE).group(1)),
            "arena": int(re.search(r"^arena bytes (\d+)$", output, re.MULTILINE).group(1))}


@pytest.fixture(scope="module")
def host(digits, tmp_path_factory):
    """TrainSession on the host, epoch by epoch (what the example does), three epochs:
    losses, CRC and step count after each, and the checkpoint after each."""
    folder = tmp_path_factory.mktemp("host_checkpoints")
    epochs = []
    with microtrain.TrainSession(digits["image"]) as sess:
        sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                     metrics=["categorical_accuracy"], batch_size=16)
        arena = sess.memory_plan()["total_bytes"]
        loader = DataLoader(digits["x"], digits["y"], batch_size=16, shuffle=True, seed=0)
        for epoch in range(3):
            history = sess.train(loader, epochs=1, verbose=0)
            path = str(folder / ("after%d.mtc" % (epoch + 1)))
            sess.save_checkpoint(path)
            epochs.append({"loss": history.history["loss"][0], "crc32": weights_crc32(sess),
                           "steps": sess.get_counters()["step"], "checkpoint": path})
    return {"epochs": epochs, "arena": arena}


def test_the_example_on_cpython_is_the_host(digits, host):
    result = subprocess.run([sys.executable, EXAMPLE, "2", "--data", digits["folder"]],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    run = parse(result.stdout)
    assert run["losses"] == [e["loss"] for e in host["epochs"][:2]]
    assert run["crc32"] == host["epochs"][1]["crc32"]


@pytest.mark.parametrize("board", BOARDS + ON_DEMAND_BOARDS)
def test_digits_fine_tune_on_micropython_match_the_host_bit_for_bit(
        board, micropython_firmware, firmware_of, digits, host, tmp_path):
    if board in ON_DEMAND_BOARDS:
        firmware_of(board)
    assert len(digits["x"]) % 16 != 0  # the last batch of every epoch is partial
    status, output, errors = run_micropython(board, EXAMPLE, digits["files"], 2, "--save",
                                             "/out/board.mtc", out=str(tmp_path))
    assert status == 0, errors[-3000:]
    run = parse(output)
    assert run["losses"] == [e["loss"] for e in host["epochs"][:2]]  # repr round-trips
    assert run["crc32"] == host["epochs"][1]["crc32"], (output, host)
    assert run["steps"] == host["epochs"][1]["steps"]
    assert run["arena"] == host["arena"]
    assert output.count("Epoch ") == 2 and "- categorical_accuracy: 0." in output

    # The board's checkpoint is the host's, byte for byte, and resumes on the host.
    with open(str(tmp_path / "board.mtc"), "rb") as handle:
        saved = handle.read()
    with open(host["epochs"][1]["checkpoint"], "rb") as handle:
        assert saved == handle.read()
    with microtrain.TrainSession(digits["image"]) as sess:
        sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                     metrics=["categorical_accuracy"], batch_size=16)
        sess.load_checkpoint(str(tmp_path / "board.mtc"))
        loader = DataLoader(digits["x"], digits["y"], batch_size=16, shuffle=True, seed=0)
        history = sess.train(loader, epochs=1, verbose=0)
        assert history.history["loss"] == [host["epochs"][2]["loss"]]
        assert weights_crc32(sess) == host["epochs"][2]["crc32"]


@pytest.mark.parametrize("board", BOARDS)
def test_a_host_checkpoint_resumes_on_micropython(board, micropython_firmware, digits, host):
    files = digits["files"] + [(host["epochs"][0]["checkpoint"], "/data/host.mtc")]
    status, output, errors = run_micropython(board, EXAMPLE, files, 1, "--resume",
                                             "/data/host.mtc")
    assert status == 0, errors[-3000:]
    run = parse(output)
    assert run["losses"] == [host["epochs"][1]["loss"]]
    assert run["crc32"] == host["epochs"][1]["crc32"]
    assert run["steps"] == host["epochs"][1]["steps"]
    assert "Epoch 2/2" in output  # the checkpoint's epoch counter carried over
