"""The layer sums' fused multiply-add is correctly rounded on the RISC-V boards.

tests/core/test_fma_soft.c, built as firmware for each RISC-V board (boards/app's
microtrain_fma_test, 100,000 draws of each class: about 0.9M cases), holds mt_fmaf_soft,
mt_fmaf_via_double and the build's mt_fmaf to fmadd.s bit for bit, and their NaNs to RISC-V's
canonical NaN. picolibc's fmaf rounds twice on rv32imac, so the reference is the instruction:
both builds run on QEMU's SiFive E34, which has F (the rv32imac build reaches fmadd.s through
asm that asks the assembler for F); the rv32imac build then checks the integer routine its
layer sums call, compiled for that core, and the rv32imafc build that mt_fmaf is fmadd.s.
"""

import os
import re
import subprocess

import pytest

from microtrain.tools import firmware

from board_setup import RISCV_BOARDS

RESULT = re.compile(r"^(\d+) cases compared, (\d+) wrong$", re.MULTILINE)
CHECKS = re.compile(r"^(\d+) passed, (\d+) failed$", re.MULTILINE)
CPU_WITH_F = ["-cpu", "sifive-e34"]  # after the board's own -cpu: QEMU takes the last


@pytest.mark.parametrize("board", RISCV_BOARDS)
def test_fused_multiply_add_is_correctly_rounded_on_the_device(board, board_builds):
    info = dict(board_builds[board])
    build_dir = os.path.dirname(os.path.dirname(os.path.dirname(info["firmware"])))
    subprocess.run(["cmake", "--build", build_dir, "--target", "microtrain_fma_test"],
                   check=True, capture_output=True)
    info["fma_test"] = os.path.join(os.path.dirname(info["firmware"]), "microtrain_fma_test.elf")
    status, text, errors = firmware.run(info, "fma_test", timeout=300,
                                        extra_qemu_args=CPU_WITH_F)
    result, checks = RESULT.search(text), CHECKS.search(text)
    assert result and checks, text + errors
    assert status == 0 and result.group(2) == "0" and checks.group(2) == "0", text + errors
    assert int(result.group(1)) > 600000 and int(checks.group(1)) > 90, text
