"""What the MicroPython firmware tests share (tests/micropython/): paths, the boards, the
runner, the host's weight CRC, the int8 models trained in place."""

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


INT8_BACKBONE = os.path.join(ROOT, "tests", "convert", "fixtures", "int8",
                             "digits_backbone_int8.tflite")


def interleaved(image):
    """``image`` (.mtm bytes) with its first float32 weight moved to the front of the tensor
    table, every index remapped: the same model, whose weights in table order alternate
    between the core's two lists (mt_session_param's f32, mt_session_qparam's int8 / int32),
    so that neither list's weights all come first."""
    from microtrain.nn import image as _image
    model = _image.read_image(image)
    first = model.const_f32_tensors()[0]
    order = [first] + [t.index for t in model.tensors if t.index != first]
    new = {old: position for position, old in enumerate(order)}
    tensors = [_image.TensorSpec(model.tensors[old].dims, model.tensors[old].flags,
                                 model.tensors[old].dtype,
                                 model.tensor_data(old)
                                 if model.tensors[old].flags & _image.FLAG_CONST else None,
                                 model.tensors[old].quant) for old in order]
    ops = [_image.OpSpec(op.op_type, [None if i is None else new[i] for i in op.inputs],
                         [new[o] for o in op.outputs], op.params, op.layer)
           for op in model.ops]
    return _image.write_image(tensors, ops, [new[i] for i in model.inputs],
                              [new[o] for o in model.outputs])


def write_int8_in_place(folder):
    """The digits int8 backbone with a new 5-class head, trained from its depthwise
    convolution with int8 weights in place (convert(..., train_from="dw", int8_train=True)):
    as converted; interleaved(); interleaved() with float master copies of the int8 weights.
    Their paths in ``folder`` (a pathlib.Path), and the (host, guest) pairs under /data."""
    import microtrain
    names = []
    for name, master, mix in (("int8_plain.mtm", False, False),
                              ("int8_mixed.mtm", False, True),
                              ("int8_master_mixed.mtm", True, True)):
        model = microtrain.convert(INT8_BACKBONE, new_head=5, train_from="dw", int8_train=True,
                                   int8_master_weights=master)
        path = str(folder / name)
        model.save(path)
        if mix:
            with open(path, "rb") as handle:
                image = interleaved(handle.read())
            with open(path, "wb") as handle:
                handle.write(image)
        names.append(name)
    return {"paths": [str(folder / name) for name in names],
            "guests": ["/data/" + name for name in names],
            "files": [(str(folder / name), "/data/" + name) for name in names]}


INT8_SCRIPT = os.path.join(SCRIPTS, "int8_in_place_weights.py")


def int8_in_place_transcript(models):
    """What scripts/int8_in_place_weights.py prints for ``models`` (write_int8_in_place's)
    on CPython, the ctypes backend: the lines a MicroPython backend must print. Checked for
    what the comparison relies on: every check of the script held, the interleaved models'
    weights alternate between the core's two lists, and the frozen sessions' int8 weights
    are frozen."""
    result = subprocess.run([sys.executable, INT8_SCRIPT] + models["paths"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout
    assert output.splitlines()[-1] == "done"
    checks = [line for line in output.splitlines() if not line.startswith("frozen: trained")]
    assert not [line for line in checks if "False" in line or "NoneType" in line], output
    assert output.count("restored step equals the first True True") == 3
    # the frozen sessions' int8 weights and int32 biases are the image's
    assert output.count("frozen: trained [True, False, False, False, False, True]") == 2
    assert "start 0 float32 160" in output and "start 1 int8 144" in output
    assert "start 5 float32 5" in output
    return output


def write_sparse_rows(folder):
    """A float model (x [64] -> Dense 16 relu -> Dense 5 -> Softmax) that
    scripts/int8_in_place_weights.py trains by a sparse update (its file name says so): the
    first Dense's first 2 of 16 rows, which the arena holds alone, and the head whole. Its path
    in ``folder`` (a pathlib.Path); checked: the plan leaves the 14 frozen rows out."""
    import microtrain
    from microtrain import layers
    model = microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(5),
                                   layers.Softmax()], input_shape=(64,), seed=7)
    path = str(folder / "sparse_rows.mtm")
    model.save(path)
    with microtrain.TrainSession(path) as session:
        session.compile("sgd", "categorical_crossentropy", batch_size=4,
                        trainable={0: 2, 1: "all"})
        whole = session.plan_memory("sgd", "categorical_crossentropy", 4, {0: "all", 1: "all"})
        assert session.memory_plan()["weight_bytes"] == whole["weight_bytes"] - 14 * 64 * 4
    return path


def sparse_rows_transcript(path):
    """What scripts/int8_in_place_weights.py prints for write_sparse_rows' model on CPython
    (the ctypes backend): the lines a MicroPython backend must print; checked for what the
    comparison relies on (every check of the script held, every weight trained)."""
    result = subprocess.run([sys.executable, INT8_SCRIPT, path], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout
    assert output.splitlines()[-1] == "done"
    assert "restored step equals the first True True" in output
    assert "trained [True, True, True, True]" in output
    assert not [line for line in output.splitlines() if "False" in line
                and not line.startswith("frozen: trained")], output
    return output
