"""Each Cortex-M and RISC-V board runs its column of the kernel table, every kernel with the
reference's bits.

micro_core/src/select/kernels.def holds the kernel table: a row a slot (Dense's forward, Adam's
guard, ...), and in each row the kernel every column (a target) calls. The sibling firmware
(boards/app/siblings.c) walks its core's column: every kernel that is not its row's reference
runs beside it under QEMU, on ordinary data, on data whose inputs or results are subnormal
(Helium flushes those) and on data holding NaNs of both signs (Helium returns the default NaN),
and every bit must be equal. The host runs the same cases on its own columns
(tests/core/test_kernel_siblings.c, test_int8_siblings.c). RISC-V has no kernels of its own:
rv32imafc takes the portable column (whose NaN outputs are the canonical NaN there, as the
reference's are), rv32imac, without an FPU, the soft_float one (the int8 rows only).

Here, for each board: the column is the one its core must take; the kernels the firmware ran
are exactly that column's kernels that are not the reference (read from the table, so a row or
kernel added there is expected here without another list); and the number of checks
is exact for the column (the cases of boards/app/siblings_*.c), so a case that stops running
fails. A new case changes CHECKS (and the host's counts in tests/core/test_kernel_siblings.c and
test_int8_siblings.c); a new core needs its line in CORE_COLUMN.
"""

import os
import re
import subprocess

import pytest

from microtrain.tools import firmware

from board_setup import BARE_METAL_BOARDS, REPO_ROOT

KERNELS_DEF = os.path.join(REPO_ROOT, "micro_core", "src", "select", "kernels.def")
RESULT = re.compile(r"siblings: (\d+) passed, (\d+) failed")
COLUMN = re.compile(r"^column (\w+)\r?$", re.M)
KERNEL = re.compile(r"^(mt_\w+): (\d+) passed, (\d+) failed\r?$", re.M)

# the column of the kernel table each core's build must select (select/target.h)
CORE_COLUMN = {"cortex-m3": "soft_float", "cortex-m4f": "dsp", "cortex-m7": "dsp", "cortex-m33": "dsp",
               "cortex-m55": "mve", "rv32imac": "soft_float", "rv32imafc": "portable"}
# the checks the cases of boards/app/siblings_*.c make on each column's kernels
CHECKS = {"soft_float": 319, "dsp": 2074, "mve": 2744, "portable": 1812}


def column_kernels(column):
    """The kernels of a column of the table that are not their row's reference: base_suffix, the
    row's base and the column's cell (kernels.def: (avx512, avx2, mve, dsp, soft_float, portable))."""
    position = ("avx512", "avx2", "mve", "dsp", "soft_float", "portable").index(column)
    with open(KERNELS_DEF) as handle:
        rows = re.findall(r"^MT_KERNEL_(?:VOID|INT)\(\w+, (\w+),.*?\(([\w, ]+)\)\)$", handle.read(), re.M | re.S)
    cells = {base: [c.strip() for c in cells.split(",")][position] for base, cells in rows}
    return {"%s_%s" % (base, cell) for base, cell in cells.items() if cell != "ref"}


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

    column = COLUMN.search(text).group(1)
    assert column == CORE_COLUMN[info["core"]], text
    ran = {name: int(passed) for name, passed, failed in KERNEL.findall(text)}
    assert set(ran) == column_kernels(column), text
    assert all(ran.values()), text  # every kernel met some case
    assert int(result.group(1)) == sum(ran.values()) == CHECKS[column], text
