"""The optimized kernels each Cortex-M and RISC-V board runs compute the reference's bits on the
device.

tests/core/test_kernel_siblings.c and test_kernel_siblings_x86.c hold every kernel the host
can run to the reference; the Helium (MVE) kernels of the Cortex-M55 and the portable scalar
siblings as compiled for each core run only there. boards/app/siblings.c runs them beside the reference kernels under
QEMU, on ordinary data, on data whose inputs or results are subnormal (Helium flushes
those) and on data holding NaNs of both signs (Helium returns the default NaN), so its
kernels must notice and fall back to scalar code, and requires every bit to be equal. The
int8 siblings (Helium, the DSP extension's SMLAD, or portable C on the Cortex-M3) run on
every board, beside the int8 reference kernels, every output byte equal. On RISC-V (no
kernels of its own yet) rv32imafc runs the portable scalar siblings, whose NaN outputs are the
canonical NaN there as the reference's are, and rv32imac, without an FPU, the int8 cases only.
"""

import os
import re
import subprocess

import pytest

from microtrain.tools import firmware

from board_setup import BARE_METAL_BOARDS, CORES_WITHOUT_FPU

RESULT = re.compile(r"siblings: (\d+) passed, (\d+) failed")
S8_CASES = 132  # the checks of boards/app/siblings_s8.c (its s8_sibling_cases returns the count)


@pytest.mark.parametrize("board", BARE_METAL_BOARDS)
def test_device_kernels_match_the_reference(board, board_builds):
    info = dict(board_builds[board])
    build_dir = os.path.dirname(os.path.dirname(os.path.dirname(info["firmware"])))
    subprocess.run(["cmake", "--build", build_dir, "--target", "microtrain_siblings"], check=True,
                   capture_output=True)
    info["siblings"] = os.path.join(os.path.dirname(info["firmware"]), "microtrain_siblings.elf")
    status, text, errors = firmware.run(info, "siblings", timeout=300)
    result = RESULT.search(text)
    assert result, text + errors
    assert status == 0 and result.group(2) == "0", text + errors
    # every core runs the int8 cases (siblings_s8.c); the Cortex-M3 and rv32imac (no FPU:
    # their float adapters call the reference itself) only those
    if info["core"] in CORES_WITHOUT_FPU:
        assert result.group(1) == str(S8_CASES), text
    else:
        assert int(result.group(1)) > S8_CASES, text
