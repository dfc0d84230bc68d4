"""What the MicroPython firmware tests share (tests/micropython/): paths, the boards, the
runner, the host's weight CRC."""

import os
import subprocess
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(HERE, "scripts")
BOARDS = ("unix", "mps2-an500", "mps2-an385", "rv32imac-qemu")  # built before the tests
# Built on demand by the test that runs on it: the Cortex-M55 (Helium, secure state, its
# own memory layout). mps2-an386 and mps2-an505 build and run the same way (about 40 s of
# CPU each to build); the test command leaves them out for time.
ON_DEMAND_BOARDS = ("mps3-an547",)
TARBALL = "micropython-1.28.0.tar.gz"


def vendored_tarball():
    """$MICROPYTHON_TARBALL, or shared/vendor/<tarball> next to an ancestor folder."""
    if os.environ.get("MICROPYTHON_TARBALL"):
        return os.environ["MICROPYTHON_TARBALL"]
    path = ROOT
    while True:
        candidate = os.path.join(path, "shared", "vendor", TARBALL)
        if os.path.exists(candidate):
            return candidate
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def run_micropython(board, script, data=(), *args, out=None, timeout=600):
    """(exit status, stdout, stderr) of ``microtrain micropython`` on ``board``."""
    command = [sys.executable, "-m", "microtrain.tools.micropython", "--board", board,
               "--timeout", str(timeout)]
    for host, guest in data:
        command += ["--data", "%s=%s" % (host, guest)]
    if out is not None:
        command += ["--out", "%s=/out" % out]
    command += [script] + [str(a) for a in args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 60,
                            env=runner_env())
    return result.returncode, result.stdout, result.stderr


def runner_env():
    """The environment of a runner process: this tree's firmware, wherever the tests run
    from and whichever microtrain package they import (tools/run_tests.sh installs it)."""
    return dict(os.environ, MICROTRAIN_MICROPYTHON_DIR=os.path.join(ROOT, "build",
                                                                    "micropython"))


def digits_arrays():
    from sklearn.datasets import load_digits
    data = load_digits()
    x = (data.data / 16.0).astype("<f4")
    y = np.eye(10, dtype="<f4")[data.target]
    return x, y, data.target.astype("<i4")


def write_digits(folder):
    """The digits model image the CPython builder writes and the rows as raw float32 files,
    in ``folder`` (a pathlib.Path); ``files``: the (host, guest) pairs the example reads from
    /data."""
    import microtrain
    from microtrain import layers
    x, y, labels = digits_arrays()
    x.tofile(str(folder / "digits_x.bin"))
    y.tofile(str(folder / "digits_y.bin"))
    model = microtrain.Sequential([layers.Dense(32, activation="relu"), layers.Dense(10),
                                   layers.Softmax()], input_shape=(64,), seed=0)
    model.save(str(folder / "digits.mtm"))
    files = [(str(folder / name), "/data/" + name)
             for name in ("digits.mtm", "digits_x.bin", "digits_y.bin")]
    return {"x": x, "y": y, "labels": labels, "folder": str(folder),
            "image": str(folder / "digits.mtm"), "files": files}


def weights_crc32(session):
    blob = b"".join(np.ascontiguousarray(w, dtype="<f4").tobytes()
                    for w in session.get_weights())
    return zlib.crc32(blob) & 0xFFFFFFFF
