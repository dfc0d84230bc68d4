"""One behaviour script, every backend: tests/scripts/shared_behaviour.py runs on CPython over
the ctypes backend and on MicroPython (WebAssembly port on Node) over the wasm core, asserts
each behaviour itself, and prints a transcript of float32 bits and CRCs that must be the
same line for line: one Session, the same results everywhere."""

import os
import subprocess
import sys

import microtrain
from microtrain import layers

from test_micropython_wasm import ROOT, run_micropython, runner  # noqa: F401 - a fixture

SCRIPT = os.path.join(ROOT, "tests", "scripts", "shared_behaviour.py")


def test_ctypes_and_wasm_backends_behave_the_same_bit_for_bit(runner, tmp_path):  # noqa: F811
    model = tmp_path / "model.mtm"
    microtrain.Sequential([layers.Dense(5, activation="relu"), layers.Dense(2),
                           layers.Softmax()], input_shape=(3,), seed=0).save(str(model))
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    host = subprocess.run([sys.executable, SCRIPT, str(model), str(host_dir)],
                          capture_output=True, text=True, timeout=300)
    assert host.returncode == 0, host.stderr[-3000:]
    wasm = run_micropython(runner, SCRIPT, [(str(model), "/data/model.mtm")],
                           "/data/model.mtm", "/tmp")
    assert wasm.returncode == 0, wasm.stderr[-3000:]
    assert host.stdout.splitlines()[-1] == "done"
    assert wasm.stdout.splitlines() == host.stdout.splitlines()
