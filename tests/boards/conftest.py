"""Board tests: the example firmware fine-tunes under QEMU and must match the host exactly.

One session fixture packages the digits example (examples/firmware_digits.py) once, replays
it on the host through ctypes (the reference), and builds the firmware for every board
preset into build/board-tests/ (incremental across runs). The Cortex-M boards then run under
qemu-system-arm and the RISC-V boards under qemu-system-riscv32 through pytest-embedded's QEMU
service; the hosted builds (x86-64, ARM Linux under qemu-user) run as plain programs.

The fixtures below override pytest-embedded's command-line fixtures, so these tests need no
--embedded-services/--qemu-* options: `python -m pytest tests` runs them like any other.
Missing toolchains or QEMU are an error that names the install script, never a skip.
"""

import os
import shutil

import pytest

from microtrain.tools import firmware

from board_setup import (BARE_METAL_BOARDS, BUILD_ROOT, HERE, HOSTED_BOARDS, REPO_ROOT,
                         REQUIRED_PROGRAMS, SPEC, build_lock, load_example_module)


@pytest.fixture(scope="session")
def firmware_package():
    """The packaged example: {"record": firmware.json, "data_dir": its C sources}."""
    missing = [p for p in REQUIRED_PROGRAMS if shutil.which(p) is None]
    if missing:
        pytest.fail("not installed: %s; run `bash tools/setup_arm.sh` and `bash "
                    "tools/setup_riscv.sh` (tools/run_tests.sh does)"
                    % ", ".join(missing), pytrace=False)
    with build_lock("package"):
        record, data_dir = load_example_module().package_example(
            os.path.join(BUILD_ROOT, "package"), **SPEC)
    return {"record": record, "data_dir": data_dir}


@pytest.fixture(scope="session")
def board_builds(firmware_package):
    """Build every preset once; {preset: microtrain_board.json}."""
    source = firmware.find_source_dir(REPO_ROOT)
    with build_lock("boards"):
        return {name: firmware.build(source, name, firmware_package["data_dir"],
                                     os.path.join(BUILD_ROOT, name))
                for name in BARE_METAL_BOARDS + HOSTED_BOARDS}


# ---- pytest-embedded's option fixtures, taken from the board's build instead of the CLI.
# Its autouse fixture asks for them in every test, so tests without a "board" get None.


def pytest_configure(config):
    # That autouse fixture also calls record_xml_attribute, which warns on every test.
    config.addinivalue_line("filterwarnings", "ignore::pytest.PytestExperimentalApiWarning")


def _board_build(request):
    callspec = getattr(request.node, "callspec", None)
    board = callspec.params.get("board") if callspec else None
    return request.getfixturevalue("board_builds")[board] if board else None


@pytest.fixture
def embedded_services():
    return "qemu"


@pytest.fixture
def qemu_prog_path():
    return os.path.join(HERE, "qemu_kernel.sh")


@pytest.fixture
def qemu_cli_args(request):
    info = _board_build(request)
    return " ".join([info["qemu_program"]] + info["qemu_args"]) if info else None


@pytest.fixture
def qemu_image_path(request):
    info = _board_build(request)
    return info["firmware"] if info else None
