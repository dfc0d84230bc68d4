"""Where the board tests build and what they run (shared by conftest.py and the tests)."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_ROOT = os.path.join(REPO_ROOT, "build", "board-tests")
REQUIRED_PROGRAMS = ("cmake", "arm-none-eabi-gcc", "qemu-system-arm", "qemu-arm", "qemu-aarch64",
                     "arm-linux-gnueabihf-gcc", "aarch64-linux-gnu-gcc",
                     "riscv64-unknown-elf-gcc", "qemu-system-riscv32")

# What every board runs: the digits MLP 64 -> 16 relu -> 10 softmax, every op trained (so
# the device runs every backward kernel of the model), 150 rows = 9 full batches of 16 and a
# partial one of 6, 3 epochs.
SPEC = dict(epochs=3, optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy",
            batch_size=16, num_trainable_ops=-1)


def _presets():
    """{preset: (MT_BOARD, toolchain file name)} of the visible configure presets."""
    with open(os.path.join(REPO_ROOT, "CMakePresets.json")) as handle:
        presets = json.load(handle)["configurePresets"]
    return {p["name"]: (p.get("cacheVariables", {}).get("MT_BOARD"),
                        os.path.basename(p.get("toolchainFile", "")))
            for p in presets if not p.get("hidden")}


_PRESET_INFO = _presets()
PRESETS = {name: board for name, (board, _) in _PRESET_INFO.items()}
# Bare-metal boards (anything but the hosted "posix" board) run under QEMU: the Cortex-M ones
# under qemu-system-arm, the RISC-V ones (cmake/toolchains/rv32*.cmake) under
# qemu-system-riscv32. Tests of what every device must do take BARE_METAL_BOARDS.
BARE_METAL_BOARDS = sorted(name for name, board in PRESETS.items() if board and board != "posix")
CORTEX_M_BOARDS = [name for name in BARE_METAL_BOARDS
                   if _PRESET_INFO[name][1].startswith("cortex-m")]
RISCV_BOARDS = [name for name in BARE_METAL_BOARDS if _PRESET_INFO[name][1].startswith("rv32")]
HOSTED_BOARDS = sorted(name for name, board in PRESETS.items() if board == "posix")
# Cores without an FPU: their float op adapters call the reference kernels themselves
CORES_WITHOUT_FPU = ("cortex-m3", "rv32imac")


def load_example_module():
    path = os.path.join(REPO_ROOT, "examples", "firmware_digits.py")
    spec = importlib.util.spec_from_file_location("firmware_digits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A line of the CLI firmware's device transcript (microtrain firmware --run).
FIRMWARE_EPOCH = re.compile(r"epoch (\d+)  train loss (\S+)")


def digits_folder(name, rows, first_class=0):
    """(folder, x, y): BUILD_ROOT/name (made if missing), and the first ``rows`` of sklearn's
    digits of class first_class or above, as 8x8x1 images in [0, 1], y one-hot over those
    classes (class first_class is column 0)"""
    from sklearn.datasets import load_digits

    folder = os.path.join(BUILD_ROOT, name)
    os.makedirs(folder, exist_ok=True)
    digits = load_digits()
    keep = digits.target >= first_class
    x = (digits.data[keep] / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)[:rows]
    y = np.eye(10 - first_class, dtype=np.float32)[digits.target[keep] - first_class][:rows]
    return folder, x, y


def save_digits_rows(folder, x, y):
    """folder/digits.npz: 100 training rows (6 batches of 16 and a partial one of 4), the rest
    to evaluate"""
    np.savez(os.path.join(folder, "digits.npz"), x=x[:100], y=y[:100], x_eval=x[100:],
             y_eval=y[100:])


def fine_tune_three_epochs(board, folder, model_file, optimizer, learning_rate):
    """run_cli_firmware on folder/``model_file`` and folder/digits.npz, 3 epochs of batches of
    16, whose losses must fall; returns the stdout"""
    losses, stdout = run_cli_firmware(
        board, os.path.join(folder, model_file), os.path.join(folder, "digits.npz"),
        os.path.join(folder, board), "--epochs", "3", "--batch-size", "16", "--optimizer",
        optimizer, "--learning-rate", learning_rate)
    assert len(losses) == 3 and losses[-1] < losses[0], stdout
    return stdout


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
