"""Where the board tests build and what they run (shared by conftest.py and the tests)."""

import importlib.util
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_ROOT = os.path.join(REPO_ROOT, "build", "board-tests")
REQUIRED_PROGRAMS = ("cmake", "arm-none-eabi-gcc", "qemu-system-arm", "qemu-arm", "qemu-aarch64",
                     "arm-linux-gnueabihf-gcc", "aarch64-linux-gnu-gcc")

# What every board runs: the digits MLP 64 -> 16 relu -> 10 softmax, every op trained (so
# the device runs every backward kernel of the model), 150 rows = 9 full batches of 16 and a
# partial one of 6, 3 epochs.
SPEC = dict(epochs=3, optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy",
            batch_size=16, num_trainable_ops=-1)


def _presets():
    with open(os.path.join(REPO_ROOT, "CMakePresets.json")) as handle:
        presets = json.load(handle)["configurePresets"]
    return {p["name"]: p.get("cacheVariables", {}).get("MT_BOARD") for p in presets
            if not p.get("hidden")}


PRESETS = _presets()
# Bare-metal boards (anything but the hosted "posix" board) run under qemu-system-arm.
CORTEX_M_BOARDS = sorted(name for name, board in PRESETS.items() if board and board != "posix")
HOSTED_BOARDS = sorted(name for name, board in PRESETS.items() if board == "posix")


def load_example_module():
    path = os.path.join(REPO_ROOT, "examples", "firmware_digits.py")
    spec = importlib.util.spec_from_file_location("firmware_digits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A line of the CLI firmware's device transcript (microtrain firmware --run).
FIRMWARE_EPOCH = re.compile(r"epoch (\d+)  train loss (\S+)")


def run_cli_firmware(board, model, data, out, *options):
    """``microtrain firmware --board B --model M --data D --out O --run`` plus ``options``:
    checks that it exits 0 and that the host replayed the device's bits; returns (the
    device's per-epoch train losses, the whole stdout)."""
    result = subprocess.run(
        [sys.executable, "-m", "microtrain.tools.firmware", "--board", board, "--model", model,
         "--data", data, "--out", out, "--run"] + list(options),
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bit-identical: yes" in result.stdout, result.stdout
    device = result.stdout.split("host (ctypes):")[0]
    return [float(m.group(2)) for m in FIRMWARE_EPOCH.finditer(device)], result.stdout
