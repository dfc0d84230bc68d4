"""The board column of the MLPerf Tiny table (docs/importers.md) (benchmarks/mlperf_tiny.py): an
imported MLPerf Tiny int8 model fine-tunes its own head on the Cortex-M7 of mps2-an500 under
QEMU with the host's exact bits. Two builds, 4 rows at batch 1, one epoch of SGD: the int8
file whose head plans the smallest arena (measured: the streaming wake word model, 10,256
bytes), its int8 DS-CNN on the device's int8 kernels, the float Dense trained; and the int8
anomaly-detection autoencoder, whose head (Dense 128 -> 640, 330 KB of weights) fits the
board's 512 KiB only because its gradient is updated in tiles (348,640 bytes instead of
672,704: session.c, update_in_tiles).
"""

import os
import shutil
import sys

import pytest

import microtrain

from board_setup import BUILD_ROOT, REPO_ROOT

pytest.importorskip("tflite", reason="converting .tflite needs microtrain[convert]")

sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
import mlperf_tiny as table  # noqa: E402

BOARD = "mps2-an500"


def test_the_smallest_int8_head_fine_tunes_on_the_board_with_the_host_s_bits():
    if shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.fail("not installed: qemu-system-arm / arm-none-eabi-gcc; run "
                    "`bash tools/setup_arm.sh`", pytrace=False)
    int8 = [name for name in table.NAMES if table.kind_of(name) == "int8"]
    name = min(int8, key=lambda n: table.plan(n, table.head_model(n))["bytes"])
    result = table.board_run(name, BOARD, os.path.join(BUILD_ROOT, "mlperf-tiny"))
    assert result["fits"] and "error" not in result, result.get("error", result)
    assert result["equal"] and result["crc32"] == result["host_crc32"], result
    # RAM = .data + .bss (the arena among them) + the stack the run measured, within
    # memory.ld's allowance
    assert result["arena"] <= result["static"] and 0 < result["stack_measured"] <= result["stack"]
    assert result["ram_used"] == result["static"] + result["stack_measured"] <= result["ram"]
    assert table.board_cell(result).startswith("host = device: CRC 0x%08x"
                                               % result["host_crc32"])


def test_the_int8_autoencoder_head_fits_in_tiles_and_has_the_host_s_bits():
    if shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.fail("not installed: qemu-system-arm / arm-none-eabi-gcc; run "
                    "`bash tools/setup_arm.sh`", pytrace=False)
    name = "ad01_int8.tflite"
    model = table.head_model(name)
    with microtrain.TrainSession(model) as session:
        table.compiled(session, name, 1)
        plan = session.memory_plan()
    assert plan["tiled_updates"] == 1 and 0 < plan["weight_tile_bytes"] <= 4096, plan
    result = table.board_run(name, BOARD, os.path.join(BUILD_ROOT, "mlperf-tiny"))
    assert result["fits"] and "error" not in result, result.get("error", result)
    assert result["arena"] == plan["total_bytes"] < result["ram"] - result["stack"]
    assert result["equal"] and result["crc32"] == result["host_crc32"], result
