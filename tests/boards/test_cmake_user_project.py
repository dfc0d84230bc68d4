"""The firmware template (examples/cmake_user_project) boots and fine-tunes on every Cortex-M and
RISC-V board, built out of tree as its README says, with the host's exact bits.

Once per run: make_model.py writes the model and data, `microtrain firmware --sources-only`
turns them into C (from outside the tree, with an empty PATH and a source-tree variable that
points nowhere: it must need neither a toolchain nor the tree), and the host replays main.c's
sequence of core calls through microtrain.TrainSession. Per board the template is built twice, taking
microtrain::microtrain_core and microtrain::board from the source tree (add_subdirectory,
MT_BOARD) and from a package installed out of the board test's preset build
(find_package), and booted with its `run` target under QEMU. Both must print the host's
per-epoch losses (float32 bits) and weight CRC, and exit 0.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import microtrain
from microtrain.tools import firmware
from microtrain.session_state import weights_crc32
from microtrain.tools.firmware_training import TrainingSpec, float_bits

from board_setup import BARE_METAL_BOARDS, BUILD_ROOT, PRESETS, REPO_ROOT

PROJECT = os.path.join(REPO_ROOT, "examples", "cmake_user_project")
WORK = os.path.join(BUILD_ROOT, "user-project")
EPOCHS = 3
SPEC = dict(epochs=EPOCHS, optimizer="adam", learning_rate=0.01,
            loss="categorical_crossentropy", batch_size=16, num_trainable_ops=-1)
RUN_TIMEOUT = 120

EPOCH = re.compile(r"^epoch (\d+) loss [0-9.]+ \((0x[0-9a-f]{8})\)$", re.MULTILINE)
CRC = re.compile(r"^weights crc32 (0x[0-9a-f]{8})$", re.MULTILINE)
PLAN = re.compile(r"^plan: (\d+) arena bytes, as built$", re.MULTILINE)


def _run(command, what, timeout=300, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, "%s failed (%d):\n%s%s" % (
        what, result.returncode, result.stdout, result.stderr)
    return result.stdout


def _toolchain(board):
    """The toolchain file of the board's preset (a user passes the same with --toolchain)."""
    with open(os.path.join(REPO_ROOT, "CMakePresets.json")) as handle:
        presets = {p["name"]: p for p in json.load(handle)["configurePresets"]}
    return presets[board]["toolchainFile"].replace("${sourceDir}", REPO_ROOT)


def host_replay(model_path, data_path, spec):
    """main.c's calls on the host: per epoch, train_step over the rows in batches (the last
    partial), loss_sum += loss * n in float32, mean = loss_sum / rows; then the weight CRC."""
    with np.load(data_path) as archive:
        x = np.ascontiguousarray(archive["x"], dtype="<f4")
        y = np.ascontiguousarray(archive["y"], dtype="<f4")
    with microtrain.TrainSession(model_path) as session:
        spec.compile(session)  # the configuration the generated C builds
        losses = []
        for epoch in range(1, spec.epochs + 1):
            loss_sum = np.float32(0.0)
            for first in range(0, len(x), spec.batch_size):
                n = min(spec.batch_size, len(x) - first)
                loss = np.float32(session.train_step(x[first:first + n], y[first:first + n])
                                  ["loss"][0])
                loss_sum = np.float32(loss_sum + loss * np.float32(n))
            session.set_epoch(epoch)
            losses.append(float_bits(loss_sum / np.float32(len(x))))
        return {"arena_bytes": session.memory_plan()["total_bytes"], "losses": losses,
                "crc32": weights_crc32(session.get_weights())}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Model, data, the generated C sources and the host's replay, shared by every board."""
    missing = [program for program in ("arm-none-eabi-gcc", "qemu-system-arm",
                                       "riscv64-unknown-elf-gcc", "qemu-system-riscv32")
               if shutil.which(program) is None]
    if missing:
        pytest.fail("not installed: %s; run `bash tools/setup_arm.sh` and `bash "
                    "tools/setup_riscv.sh`" % ", ".join(missing), pytrace=False)
    os.makedirs(WORK, exist_ok=True)
    _run([sys.executable, os.path.join(PROJECT, "make_model.py"), WORK], "make_model.py")
    model, data, out = (os.path.join(WORK, name) for name in ("model.mtm", "data.npz", "gen"))
    # Outside the tree, with nothing on PATH (no cmake, no compiler) and a source-tree
    # variable that points nowhere: --sources-only needs none of them.
    outside = str(tmp_path_factory.mktemp("outside"))
    env = dict(os.environ, PATH=outside, MICROTRAIN_SOURCE_DIR=os.path.join(outside, "no-tree"))
    _run([sys.executable, "-m", "microtrain.tools.firmware", "--sources-only",
          "--model", model, "--data", data, "--out", out, "--epochs", str(EPOCHS),
          "--optimizer", SPEC["optimizer"], "--learning-rate", str(SPEC["learning_rate"]),
          "--loss", SPEC["loss"], "--batch-size", str(SPEC["batch_size"]),
          "--num-of-trainable-ops", str(SPEC["num_trainable_ops"])],
         "microtrain firmware --sources-only", env=env, cwd=outside)
    assert sorted(os.listdir(out)) == ["data", "firmware.json"]
    with open(os.path.join(out, "firmware.json")) as handle:
        record = json.load(handle)
    reference = host_replay(model, data, TrainingSpec(**SPEC))
    assert reference["arena_bytes"] == record["plan"]["total_bytes"]
    # The template's README points users to firmware.json for the host's figures: the example
    # firmware's training losses and CRC (its evaluation passes change no weight).
    assert reference["losses"] == [e["train_loss"] for e in record["host_reference"]["epochs"]]
    assert reference["crc32"] == record["host_reference"]["crc32"]
    return {"data_dir": os.path.join(out, "data"), "reference": reference}


@pytest.fixture(scope="module")
def installed(board_builds):
    """{board: prefix} of `cmake --install` of the board tests' preset builds."""
    prefixes = {}
    for board in BARE_METAL_BOARDS:
        prefix = os.path.join(WORK, "install", board)
        _run(["cmake", "--install", os.path.join(BUILD_ROOT, board), "--prefix", prefix],
             "cmake --install " + board)
        prefixes[board] = prefix
    return prefixes


def _build_and_boot(build, board, generated, *options):
    _run(["cmake", "-S", PROJECT, "-B", build, "-G", "Ninja", "--toolchain", _toolchain(board),
          "-DFIRMWARE_DATA_DIR=" + generated["data_dir"], *options], "configuring " + build)
    _run(["cmake", "--build", build], "building " + build)
    text = _run(["cmake", "--build", build, "--target", "run"], "booting " + build,
                timeout=RUN_TIMEOUT).replace("\r\n", "\n")
    reference = generated["reference"]

    plan = PLAN.search(text)
    assert plan and int(plan.group(1)) == reference["arena_bytes"], text
    losses = [int(m.group(2), 16) for m in EPOCH.finditer(text)]
    assert [int(m.group(1)) for m in EPOCH.finditer(text)] == list(range(1, EPOCHS + 1)), text
    values = [firmware.bits_to_float(bits) for bits in losses]
    assert values[-1] < values[0], "the loss did not decrease: %r" % values
    assert losses == reference["losses"], "device %s, host %s" % (
        [hex(b) for b in losses], [hex(b) for b in reference["losses"]])
    crc = CRC.search(text)
    assert crc and int(crc.group(1), 16) == reference["crc32"], text
    assert text.rstrip().endswith("done"), text


@pytest.mark.parametrize("board", BARE_METAL_BOARDS)
def test_template_from_source_tree(board, generated):
    _build_and_boot(os.path.join(WORK, "subdirectory", board), board, generated,
                    "-DMT_BOARD=" + PRESETS[board], "-DMICROTRAIN_DIR=" + REPO_ROOT)


@pytest.mark.parametrize("board", BARE_METAL_BOARDS)
def test_template_from_installed_package(board, generated, installed):
    _build_and_boot(os.path.join(WORK, "package", board), board, generated,
                    "-DMICROTRAIN_PACKAGE=ON", "-DCMAKE_PREFIX_PATH=" + installed[board])


def test_installed_package_refuses_another_core(generated, installed):
    """A package built for the M4F, found by a project with the M7's toolchain file."""
    result = subprocess.run(
        ["cmake", "-S", PROJECT, "-B", os.path.join(WORK, "wrong-core"), "-G", "Ninja",
         "--toolchain", _toolchain("mps2-an500"), "-DFIRMWARE_DATA_DIR=" + generated["data_dir"],
         "-DMICROTRAIN_PACKAGE=ON", "-DCMAKE_PREFIX_PATH=" + installed["mps2-an386"]],
        capture_output=True, text=True)
    assert result.returncode != 0
    assert "was built for a cortex-m4f" in result.stdout + result.stderr
