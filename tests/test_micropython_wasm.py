"""The pure modules under a real MicroPython, over the core compiled to wasm32.

MicroPython's WebAssembly port (npm, tools/micropython/package.json) runs on Node with the
files of py_facade/manifest.py; microtrain/backend/microtrain_wasm.mjs (in the package, beside
js_backend.py) exposes the core (CMake preset wasm32-wasi) to it as the backend. examples/micropython_digits.py then
fine-tunes the digits MLP through lite.Session, DataLoader, metrics and the training loop,
and must end with the host's weights bit for bit (same image, config and batch order).

Needs node and npm, clang-14, wasm-ld-14 and wasi-libc (tools/run_tests.sh installs them);
the test builds the preset and runs `npm ci` when their outputs are missing.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

import microtrain
from microtrain import DataLoader, optimizers

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "micropython"))
from mp_setup import (INT8_SCRIPT, int8_in_place_transcript, sparse_rows_transcript,  # noqa: E402
                      weights_crc32, write_digits, write_int8_in_place,
                      write_sparse_rows)  # (the firmware tests' own)
RUNNER = os.path.join(ROOT, "tools", "micropython")
WASM = os.path.join(ROOT, "build", "presets", "wasm32-wasi", "micro_core", "microtrain.wasm")
PORT = os.path.join(RUNNER, "node_modules", "@micropython",
                    "micropython-webassembly-pyscript", "micropython.mjs")
EPOCHS = 2


def _missing(*programs):
    return [p for p in programs if shutil.which(p) is None]


@pytest.fixture(scope="module")
def runner():
    """Build microtrain.wasm and install the MicroPython port if needed; skip without tools."""
    missing = _missing("node", "npm", "cmake")
    if missing:
        pytest.skip("needs %s" % ", ".join(missing))
    if _missing("clang-14", "wasm-ld-14") or \
            not os.path.exists("/usr/include/wasm32-wasi/stdlib.h"):
        if not os.path.exists(WASM):
            pytest.skip("needs clang-14, lld-14 and wasi-libc (bash tools/setup_wasm.sh)")
    else:  # configure once, then an incremental build keeps the module current
        if not os.path.isdir(os.path.dirname(os.path.dirname(WASM))):
            subprocess.run(["cmake", "--preset", "wasm32-wasi"], cwd=ROOT, check=True,
                           capture_output=True, timeout=600)
        subprocess.run(["cmake", "--build", "--preset", "wasm32-wasi"], cwd=ROOT, check=True,
                       capture_output=True, timeout=600)
    if not os.path.exists(PORT):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=RUNNER, check=True,
                       capture_output=True, timeout=600)
    return os.path.join(RUNNER, "run.mjs")


def run_micropython(runner, script, data, *args):
    command = ["node", runner]
    for host, guest in data:
        command += ["--data", "%s=%s" % (host, guest)]
    command += [script] + [str(a) for a in args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The model image the CPython builder writes and the digits rows as raw float32 files
    (the MicroPython firmware tests' own, tests/micropython/mp_setup.py)."""
    return write_digits(tmp_path_factory.mktemp("micropython_digits"))


def host_run(digits):
    """What examples/micropython_digits.py does, with TrainSession on the host library."""
    with microtrain.TrainSession(digits["image"]) as sess:
        sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                     metrics=["categorical_accuracy"], batch_size=16)
        loader = DataLoader(digits["x"], digits["y"], batch_size=16, shuffle=True, seed=0)
        history = sess.train(loader, epochs=EPOCHS, verbose=0)
        return {"crc32": weights_crc32(sess), "losses": history.history["loss"],
                "steps": sess.get_counters()["step"],
                "arena": sess.memory_plan()["total_bytes"]}


def test_digits_under_micropython_match_the_host_bit_for_bit(runner, digits):
    assert len(digits["x"]) % 16 != 0  # the last batch of every epoch is partial
    result = run_micropython(runner, os.path.join(ROOT, "examples", "micropython_digits.py"),
                             digits["files"], EPOCHS)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout
    crc = re.search(r"^weights crc32 0x([0-9a-f]{8})$", output, re.MULTILINE)
    assert crc, output
    losses = [float(v) for v in re.findall(r"^epoch loss (\S+)$", output, re.MULTILINE)]
    host = host_run(digits)
    assert int(crc.group(1), 16) == host["crc32"], (output, host)
    assert losses == host["losses"]  # repr round-trips: the epoch means are the same doubles
    assert "steps %d" % host["steps"] in output
    assert "arena bytes %d" % host["arena"] in output
    assert output.count("Epoch ") == EPOCHS and "- categorical_accuracy: 0." in output


def test_micropython_sees_core_errors_and_the_state_machine(runner, digits, tmp_path):
    """A corrupt image is the core's MT_ERR_BAD_MODEL as a MicrotrainError; steps before
    compile() and after close() are refused by the pure state machine."""
    script = tmp_path / "errors.py"
    script.write_text(
        "from microtrain import lite\n"
        "from microtrain.errors import MicrotrainError\n"
        "image = open('/data/digits.mtm', 'rb').read()\n"
        "bad = bytearray(image)\n"
        "bad[-1] ^= 0xFF\n"
        "try:\n"
        "    lite.Session(bytes(bad))\n"
        "except MicrotrainError as error:\n"
        "    print('bad image', error.status, error.function)\n"
        "sess = lite.Session(image)\n"
        "try:\n"
        "    sess.train_step([[0.0] * 64], [[1.0] + [0.0] * 9])\n"
        "except RuntimeError as error:\n"
        "    print('before compile:', error)\n"
        "sess.compile('sgd', 'categorical_crossentropy', batch_size=4)\n"
        "try:\n"
        "    sess.train_step([[0.0] * 64] * 5, [[1.0] + [0.0] * 9] * 5)\n"
        "except ValueError as error:\n"
        "    print('too many rows:', error)\n"
        "print('loss', sess.train_step([[0.5] * 64], [[1.0] + [0.0] * 9])['loss'][0] > 0)\n"
        "sess.close()\n"
        "try:\n"
        "    sess.get_counters()\n"
        "except RuntimeError as error:\n"
        "    print('after close:', error)\n")
    result = run_micropython(runner, str(script), digits["files"][:1])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "bad image -2 mt_model_check" in result.stdout
    assert "before compile: call compile() before train_step()" in result.stdout
    assert "too many rows:" in result.stdout
    assert "loss True" in result.stdout
    assert "after close: this Session is closed" in result.stdout


SPARSE_SCRIPT = """
import sys
from microtrain import lite, optimizers
sess = lite.Session(open(sys.argv[1], "rb").read())
sess.compile(optimizers.Adam(learning_rate=0.01), "categorical_crossentropy", batch_size=4,
             trainable={0: 8, 1: "bias"})
rows = [[((r * 64 + c) % 17) / 17.0 for c in range(64)] for r in range(4)]
targets = [[1.0 if c == r else 0.0 for c in range(10)] for r in range(4)]
for step in range(3):
    sess.train_step(rows, targets)
plan = sess.memory_plan()
print("sparse", sess.weights_crc32(), plan["total_bytes"], plan["optimizer_bytes"],
      [row["trains"] for row in plan["layers"]])
"""


def test_a_sparse_scheme_under_micropython_matches_the_host(runner, digits, tmp_path):
    """A sparse update (the hidden Dense's first 8 units, the last Dense's bias) through the
    wasm backend's trainable_op_channels: the host's weights and plan, bit for bit."""
    script = tmp_path / "sparse.py"
    script.write_text(SPARSE_SCRIPT)
    result = run_micropython(runner, str(script), digits["files"][:1], "/data/digits.mtm")
    assert result.returncode == 0, result.stderr[-3000:]
    host = subprocess.run([sys.executable, str(script), digits["image"]], capture_output=True,
                          text=True, timeout=300)
    assert host.returncode == 0, host.stderr
    assert result.stdout.strip() == host.stdout.strip()
    assert "['8 of 32 channels', 'bias']" in host.stdout


INT8_IN_PLACE_SCRIPT = """
import sys
from microtrain import lite, optimizers
sess = lite.Session(open(sys.argv[1], "rb").read())
sess.compile(optimizers.SGD(learning_rate=0.5), "categorical_crossentropy", batch_size=4)
start = sess.weights_crc32()
rows = [[((r * 64 + c) % 17) / 17.0 for c in range(64)] for r in range(4)]
targets = [[1.0 if c == r else 0.0 for c in range(5)] for r in range(4)]
for step in range(3):
    sess.train_step(rows, targets)
print("int8 in place", start, sess.weights_crc32())
"""


def test_int8_layers_trained_in_place_under_micropython_have_the_host_s_crc(runner, tmp_path):
    """The digits int8 backbone trained from its depthwise convolution in int8, in place
    (convert(..., int8_train=True)), through the wasm backend: weights_crc32 is the core's
    mt_session_weights_crc32, which covers the int8 weights and int32 biases that the QAS
    update changes (the float weights alone would miss them), and equals the host's before and
    after three steps."""
    pytest.importorskip("tflite")
    backbone = os.path.join(ROOT, "tests", "convert", "fixtures", "int8",
                            "digits_backbone_int8.tflite")
    image = tmp_path / "int8_in_place.mtm"
    microtrain.convert(backbone, new_head=5, train_from="dw", int8_train=True).save(str(image))
    script = tmp_path / "int8_in_place.py"
    script.write_text(INT8_IN_PLACE_SCRIPT)
    result = run_micropython(runner, str(script), [(str(image), "/data/int8.mtm")],
                             "/data/int8.mtm")
    assert result.returncode == 0, result.stderr[-3000:]
    host = subprocess.run([sys.executable, str(script), str(image)], capture_output=True,
                          text=True, timeout=300)
    assert host.returncode == 0, host.stderr
    assert result.stdout.strip() == host.stdout.strip()
    _, start, end = host.stdout.strip().rsplit(" ", 2)
    assert start != end  # the steps moved weights the CRC covers


def test_int8_in_place_weights_under_micropython_match_the_host(runner, tmp_path):
    """get_weights() / set_weights() / weights() of int8 layers trained in place through the
    wasm backend: the float32, int8 and int32 weights in tensor-table order with their dtypes,
    written back (master copies restarting), out-of-range values refused naming the weight
    and changing nothing; line for line the ctypes backend's output
    (tests/micropython/scripts/int8_in_place_weights.py, on the models of
    mp_setup.write_int8_in_place: one interleaves the core's two weight lists)."""
    models = write_int8_in_place(tmp_path)
    result = run_micropython(runner, INT8_SCRIPT, models["files"], *models["guests"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == int8_in_place_transcript(models).splitlines()


def test_sparse_rows_weights_under_micropython_match_the_host(runner, tmp_path):
    """A float layer training its first 2 of 16 rows, whose arena part and image part the wasm
    backend joins and splits (mt_param_info.held): get_weights() / set_weights() / weights()
    line for line the ctypes backend's (tests/micropython/test_sparse_rows.py's script)."""
    path = write_sparse_rows(tmp_path)
    result = run_micropython(runner, INT8_SCRIPT, [(path, "/data/sparse_rows.mtm")],
                             "/data/sparse_rows.mtm")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == sparse_rows_transcript(path).splitlines()
