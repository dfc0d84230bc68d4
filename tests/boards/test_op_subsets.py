"""A core built with only some ops (-DMT_OPS=...) links on its own on every kind of core.

The optimized siblings of one op may call a helper that another op's sources define: a
Conv2D built with Dense (its pointwise layers run as Dense) called the Helium activation
derivative and bias gradient that the DepthwiseConv2D sources defined, so a Cortex-M55
firmware with those two ops and no DepthwiseConv2D did not link. Each library is built for a
core with Helium (mps3-an547), one with the FPv4 assembly siblings (mps2-an386) and one with
the portable siblings in C alone (rv32imafc-qemu), with each
op that has optimized siblings alone and with Conv2D and Dense together, and every `mt_`
symbol it references must be defined in the library itself.
"""

import os
import re
import subprocess

import pytest

from board_setup import BUILD_ROOT, REPO_ROOT

BOARDS = ("mps3-an547", "mps2-an386", "rv32imafc-qemu")
OPS = ("dense", "conv2d", "conv2d;dense", "depthwise_conv2d", "max_pool2d")


def _nm(build):
    """The build's nm (arm-none-eabi-nm, riscv64-unknown-elf-nm), as CMake found it."""
    with open(os.path.join(build, "CMakeCache.txt")) as handle:
        return re.search(r"^CMAKE_NM:FILEPATH=(.+)$", handle.read(), re.MULTILINE).group(1)


def _symbols(archive, nm):
    """(defined, undefined) global symbol names of a static library."""
    output = subprocess.run([nm, "-g", archive], check=True, capture_output=True,
                            text=True).stdout
    defined, undefined = set(), set()
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "U":
            undefined.add(fields[1])
        elif len(fields) == 3:
            defined.add(fields[2])
    return defined, undefined


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("op", OPS)
def test_a_core_with_some_ops_is_self_contained(board, op):
    build = os.path.join(BUILD_ROOT, "op-subsets", "%s-%s" % (board, op.replace(";", "+")))
    subprocess.run(["cmake", "--preset", board, "-B", build, "-DMT_OPS=" + op], cwd=REPO_ROOT,
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", build, "--target", "microtrain_core"], check=True,
                   capture_output=True)
    defined, undefined = _symbols(os.path.join(build, "micro_core", "libmicrotrain_core.a"),
                                  _nm(build))
    missing = sorted(name for name in undefined - defined if name.startswith("mt_"))
    assert missing == [], "%s core with MT_OPS=%s references %s" % (board, op, missing)
    assert any(name.startswith("mt_op_") for name in defined)
