"""A device in the loop: a client's local round on MicroPython firmware under QEMU.

    update, logs = run_round("mps2-an500", image, settings, global_trained_weights, x, y,
                             server_round, partition)

The host is the device's link to the server: it writes the model image, the round's global
weights (trained tensors, float32, back to back) and the client's rows as files the board
sees under ``/data`` (``microtrain micropython --data``), runs ``local_round.py`` — the very
file the simulated client imports — on the board with the round's settings, and reads the
update the board wrote to ``/out/update.bin`` (``--out``). The firmware is microtrain's
MicroPython build (``tools/micropython/build_firmware.sh``: the pure modules frozen, the core
as the native module ``_microtrain``), so the board runs the same procedure over the same
core with the same float32 arithmetic: its update equals the simulated client's bit for bit
(``tests/federated/``).

Boards: those of ``microtrain.micropython_runner.run.BOARDS`` (every Cortex-M board the core
runs on, under QEMU, or the unix port; ``run_fleet`` builds a missing firmware before the
simulation starts). A board whose emulator dies, times out or whose script fails
raises ``DeviceError`` with what it printed: the client then sends no update.
"""

import os
import tempfile

import numpy as np

from ..micropython_runner.romfs import RunnerError
from ..micropython_runner.run import BOARDS as _RUNNER_BOARDS, run as run_script
from . import local_round

_HERE = os.path.dirname(os.path.abspath(__file__))

# Appended to local_round.py's text: what the board runs as __main__.
_MAIN = '''

def _read_rows(path, width, typecode):
    from array import array
    with open(path, "rb") as handle:
        values = array(typecode, handle.read())
    if width == 0:
        return list(values)
    return [values[i:i + width] for i in range(0, len(values), width)]


def _main():
    import sys
    from array import array
    from microtrain import lite
    words = sys.argv[1:]
    server_round, partition = int(words[-3]), int(words[-2])
    die = words[-1] == "die"
    settings = settings_from_words(words[:-3])
    with open("/data/model.mtm", "rb") as handle:
        image = handle.read()
    with lite.Session(image) as session:
        compile_session(session, settings)
        info = session.model_description()
        params = info["params"]
        trained = trained_positions(session)
        blob = _read_rows("/data/global.bin", 0, "f")
        weights, start = [], 0
        for position in trained:
            count = 1
            for dim in params[position][1]:
                count *= dim
            weights.append(blob[start:start + count])
            start += count
        width = 1
        for dim in info["inputs"][0][1]:
            width *= dim
        x = _read_rows("/data/x.bin", width, "f")
        sparse = settings["loss"] in ("sparse_categorical_crossentropy", "scce")
        out = 1
        for dim in info["outputs"][0][1]:
            out *= dim
        y = _read_rows("/data/y.bin", 0 if sparse else out, "i" if sparse else "f")
        if die:
            import machine
            machine.reset()  # the board goes down mid-round
        update, logs = train_round(session, weights, x, y, settings, server_round, partition)
        with open("/out/update.bin", "wb") as handle:
            for value in update:
                handle.write(array("f", value))
        with open("/out/logs.txt", "w") as handle:
            handle.write("loss %r\\narena %d\\n" % (logs["loss"],
                                                   session.memory_plan()["total_bytes"]))


_main()
'''


class DeviceError(RuntimeError):
    """The board did not deliver an update (its emulator died, timed out or failed)."""


def boards():
    """The boards a device client can train on: microtrain micropython's, sorted."""
    return sorted(_RUNNER_BOARDS)


def row_files(x, y):
    """{"x.bin", "y.bin"}: a client's rows as a board reads them: x float32, y int32
    labels ([N] integers) or float32 targets, little-endian, row after row."""
    y = np.asarray(y)
    labels = y.ndim == 1 and y.dtype.kind in "iu"
    return {"x.bin": np.ascontiguousarray(x, dtype="<f4").tobytes(),
            "y.bin": np.ascontiguousarray(y, dtype="<i4" if labels else "<f4").tobytes()}


def script_text():
    with open(os.path.join(_HERE, "local_round.py")) as handle:
        return handle.read() + _MAIN


def run_round(board, image, settings, trained_weights, x, y, server_round, partition,
              timeout=300.0, firmware=None, die=False):
    """One client round on ``board``; returns (update: float32 arrays shaped like
    ``trained_weights``, logs {"loss", "arena"})."""
    with tempfile.TemporaryDirectory(prefix="microtrain-device-") as folder:
        files = dict(row_files(x, y), **{
            "model.mtm": bytes(image),
            "global.bin": b"".join(np.ascontiguousarray(w, dtype="<f4").tobytes()
                                   for w in trained_weights)})
        data = []
        for name, blob in files.items():
            path = os.path.join(folder, name)
            with open(path, "wb") as handle:
                handle.write(blob)
            data.append("%s=/data/%s" % (path, name))
        script = os.path.join(folder, "client_round.py")
        with open(script, "w") as handle:
            handle.write(script_text())
        out_dir = os.path.join(folder, "out")
        printed, errors = [], []
        words = local_round.settings_to_words(settings) + [str(int(server_round)),
                                                           str(int(partition)),
                                                           "die" if die else "live"]
        options = {}
        if board != "unix":
            options = {"stdout": printed.append, "stderr": errors.append}
        try:
            status = run_script(board, script, data, words, firmware=firmware,
                                timeout=timeout, out="%s=/out" % out_dir, **options)
        except RunnerError as error:
            raise DeviceError("board %s: %s" % (board, error))
        text = b"".join(printed).decode("utf-8", "replace")
        update_path = os.path.join(out_dir, "update.bin")
        if status != 0 or not os.path.exists(update_path):
            tail = (text + b"".join(errors).decode("utf-8", "replace")).strip()[-400:]
            raise DeviceError("board %s stopped without an update (status %d)%s"
                              % (board, status, ": " + tail if tail else ""))
        with open(update_path, "rb") as handle:
            blob = np.frombuffer(handle.read(), dtype="<f4")
        logs_path = os.path.join(out_dir, "logs.txt")
        lines = []
        if os.path.exists(logs_path):
            with open(logs_path) as handle:
                lines = handle.read().splitlines()
    update, start = [], 0
    for weight in trained_weights:
        shape = np.shape(weight)
        count = int(np.prod(shape))
        if start + count > blob.size:
            raise DeviceError("board %s sent %d values, the update needs more"
                              % (board, blob.size))
        update.append(blob[start:start + count].reshape(shape).astype(np.float32))
        start += count
    logs = {}
    for line in lines:
        name, _, value = line.partition(" ")
        if name == "loss":
            logs["loss"] = float(value)
        elif name == "arena":
            logs["arena"] = int(value)
    return update, logs
