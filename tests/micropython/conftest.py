"""Fixtures of the MicroPython firmware tests (tests/micropython/).

One session fixture builds MicroPython v1.28.0 with microtrain for the unix port and the
QEMU boards mps2-an500 (Cortex-M7 + FPU), mps2-an385 (Cortex-M3, soft float) and
rv32imac-qemu (RISC-V RV32IMAC, soft float) through
tools/micropython/build_firmware.sh into build/micropython/ (incremental: seconds when
nothing changed); ``firmware_of`` builds one more board (mps3-an547) for the test that
needs it. The source is the vendored tarball when one is found (``shared/vendor/``
beside an ancestor of the repository, or $MICROPYTHON_TARBALL), else the script clones tag
v1.28.0. Missing toolchains or QEMU are an error naming the install script, never a skip.

A second one writes the digits model image and rows the scripts read (mp_setup.py holds
the helpers the tests import: the runner, the host's weight CRC).
"""

import os
import shutil
import subprocess

import pytest

from mp_setup import BOARDS, ROOT, vendored_tarball, write_digits


def build(boards):
    """build_firmware.sh for ``boards``: the firmware's folders, or the test fails."""
    env = dict(os.environ)
    tarball = vendored_tarball()
    if tarball:
        env["MICROPYTHON_TARBALL"] = tarball
    result = subprocess.run(["bash", os.path.join(ROOT, "tools", "micropython",
                                                  "build_firmware.sh")] + list(boards),
                            env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        pytest.fail("building the MicroPython firmware failed:\n%s%s"
                    % (result.stdout[-3000:], result.stderr[-3000:]), pytrace=False)
    return {board: os.path.join(ROOT, "build", "micropython", board) for board in boards}


@pytest.fixture(scope="session")
def micropython_firmware():
    """Build (or bring up to date) the firmware images once per test session."""
    missing = [p for p in ("make", "cc", "arm-none-eabi-gcc", "qemu-system-arm",
                           "riscv64-unknown-elf-gcc", "qemu-system-riscv32")
               if shutil.which(p) is None]
    if missing:
        pytest.fail("not installed: %s; run `bash tools/setup_arm.sh` and `bash "
                    "tools/setup_riscv.sh` (tools/run_tests.sh does)" % ", ".join(missing),
                    pytrace=False)
    return build(BOARDS)


@pytest.fixture(scope="session")
def firmware_of():
    """A function that builds one more board's firmware (those the test command does not
    build beforehand: MicroPython builds them on first use), once per session."""
    built = {}

    def firmware(board):
        if board not in built:
            built.update(build([board]))
        return built[board]
    return firmware


@pytest.fixture(scope="session")
def digits(tmp_path_factory):
    """The digits model image and rows the scripts read (mp_setup.write_digits)."""
    return write_digits(tmp_path_factory.mktemp("mp_digits"))
