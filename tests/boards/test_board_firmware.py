"""The example firmware fine-tunes on every board and computes the host's bits exactly.

Host simulation is exact, not approximate: per-epoch losses (as float32 bit patterns),
accuracy counts and the CRC-32 of the trained weights printed by the firmware must equal
what the host library computes through ctypes for the same model, data and steps, on
Cortex-M3 (soft float), M4F, M7, M33, M55, RISC-V rv32imac (soft float) and rv32imafc,
x86-64 and ARM Linux (32 and 64 bit) alike.
"""

import os
import re

import pytest

from microtrain.tools import firmware
from microtrain.tools.firmware_sources import DATA_HEADER, DATA_SOURCE

from board_setup import BARE_METAL_BOARDS, BUILD_ROOT, HOSTED_BOARDS, build_lock

# Each pattern ends at the line end: the UART text arrives in pieces, and without it
# "accuracy 69/80" could match as 69/8 before the last digit is there.
EPOCH = re.compile(r"epoch (\d+) train_loss \S+ \((0x[0-9a-f]{8})\) eval_loss \S+ "
                   r"\((0x[0-9a-f]{8})\) accuracy (\d+)/(\d+)\r?\n")
QEMU_EXIT_TIMEOUT = 120


def _text(match, group):
    value = match.group(group)
    return value.decode() if isinstance(value, bytes) else value


@pytest.mark.parametrize("board", BARE_METAL_BOARDS)
def test_device_fine_tunes_bit_identical_to_host(dut, board, firmware_package):
    reference = firmware_package["record"]["host_reference"]
    arena = dut.expect(r"arena (\d+) bytes \(planned on the host, checked\)\r?\n", timeout=30)
    assert int(_text(arena, 1)) == reference["arena_bytes"]
    epochs = []
    for _ in reference["epochs"]:
        m = dut.expect(EPOCH, timeout=120)
        epochs.append({"epoch": int(_text(m, 1)), "train_loss": int(_text(m, 2), 16),
                       "eval_loss": int(_text(m, 3), 16), "correct": int(_text(m, 4)),
                       "total": int(_text(m, 5))})
    crc = int(_text(dut.expect(r"weights crc32 (0x[0-9a-f]{8})\r?\n", timeout=30), 1), 16)
    dut.expect_exact("microtrain firmware: done", timeout=30)
    assert dut.qemu.wait(timeout=QEMU_EXIT_TIMEOUT) == 0  # the board's exit status

    losses = [firmware.bits_to_float(e["train_loss"]) for e in epochs]
    assert losses[-1] < losses[0], "the training loss did not decrease: %r" % losses
    assert epochs == reference["epochs"]
    assert crc == reference["crc32"], "device 0x%08x, host 0x%08x" % (crc, reference["crc32"])


@pytest.mark.parametrize("board", HOSTED_BOARDS)
def test_hosted_build_bit_identical_to_host(board, board_builds, firmware_package):
    """x86-64 natively, ARM Linux under qemu-arm / qemu-aarch64: the same app, the same bits."""
    status, text, errors = firmware.run(board_builds[board], timeout=QEMU_EXIT_TIMEOUT)
    assert status == 0, text + errors
    assert firmware.parse_output(text) == firmware_package["record"]["host_reference"]


@pytest.mark.parametrize("board", ["mps2-an386", "rv32imac-qemu"])  # semihosting, test device
@pytest.mark.parametrize("off", [16, -16])
def test_firmware_refuses_an_arena_that_disagrees_with_its_plan(firmware_package, off, board):
    """A build whose declared arena is not mt_plan's figure stops at boot with status 2:
    larger (the session opens, and its plan disagrees) or smaller (mt_session_init refuses
    the arena, and mt_plan says why). The status reaches QEMU's exit through each kind of
    board exit."""
    data_dir = os.path.join(BUILD_ROOT, "bad-arena%+d" % off, "data")
    os.makedirs(data_dir, exist_ok=True)
    for name in (DATA_SOURCE, DATA_HEADER):
        with open(os.path.join(firmware_package["data_dir"], name)) as handle:
            text = handle.read()
        if name == DATA_HEADER:
            planned = firmware_package["record"]["plan"]["total_bytes"]
            text = text.replace("#define MT_FW_ARENA_BYTES %du" % planned,
                                "#define MT_FW_ARENA_BYTES %du" % (planned + off))
            assert str(planned + off) in text
        with open(os.path.join(data_dir, name), "w") as handle:
            handle.write(text)
    # Both offsets build in one folder a board: the second rebuilds the app on its data, not
    # the core again. A board's folder is held while its firmware builds and runs.
    with build_lock("bad-arena-" + board):
        info = firmware.build(firmware.find_source_dir(), board, data_dir,
                              os.path.join(BUILD_ROOT, "bad-arena", board))
        status, text, _ = firmware.run(info, timeout=QEMU_EXIT_TIMEOUT)
    assert status == firmware.EXIT_PLAN_MISMATCH
    assert "error: mt_plan() asks for %d arena bytes on this device, the build declared %d" % (
        planned, planned + off) in text


@pytest.mark.parametrize("board", ["mps2-an386", "rv32imac-qemu"])
@pytest.mark.parametrize("table", ["plan", 2])
def test_a_planner_table_of_the_plans_size(firmware_package, table, board):
    """Built with the planner's table sized as `microtrain firmware` sizes it (CMake's
    MT_PLAN_MAX_BUFFERS = the host plan's activation and gradient buffers, record
    ["plan_buffers"]; src/sharing.h), the device plans the same arena and computes the host's
    bits, with 28 bytes of stack less an entry below 256; with a table too small for the plan
    it stops at boot, init and mt_plan refusing it (MT_ERR_UNSUPPORTED), never another plan."""
    record = firmware_package["record"]
    entries = record["plan_buffers"] if table == "plan" else table
    assert 2 < record["plan_buffers"] < 256
    info = firmware.build(firmware.find_source_dir(), board, firmware_package["data_dir"],
                          os.path.join(BUILD_ROOT, "plan-table-%s" % table, board),
                          plan_buffers=entries)
    status, text, _ = firmware.run(info, timeout=QEMU_EXIT_TIMEOUT)
    if table == "plan":
        assert status == 0, text
        assert firmware.parse_output(text) == record["host_reference"]
    else:
        assert status == firmware.EXIT_CORE_ERROR, text
        assert "error: mt_plan: " in text and "arena" not in text.split("error:")[1]
