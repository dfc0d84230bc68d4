"""Exports on hostile paths (issue 45, item 12): the three ways to write a trained model —
``Session.export_model_for_inference``, ``ConvertedModel.export`` and ``microtrain convert``
— are one writer (``microtrain._files.atomic_write``) with one policy:

* a symbolic link is written through (its target gets the file, the link stays);
* a new file gets 0o666 less the umask, a replaced file keeps its mode (never mkstemp's 0o600);
* the temporary file of a killed export is removed by the next export of the same path;
* a missing folder is named by the user's path, never by a temporary file's.
"""

import os
import signal
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtrain
from microtrain import layers
from microtrain.tools import cli

from hostile_process import python, run_capped, snapshot

TFLITE_MAGIC = b"TFL3"


def model():
    return microtrain.Sequential([layers.Dense(3), layers.Softmax()], input_shape=(4,), seed=0)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """A trained session, the .mtm it came from, and a ConvertedModel of a .tflite."""
    from microtrain import convert
    folder = tmp_path_factory.mktemp("export_sources")
    image = str(folder / "m.mtm")
    model().save(image)
    session = microtrain.TrainSession(image)
    session.compile("sgd", "mse", batch_size=2)
    session.train_step(np.ones((2, 4), np.float32), np.full((2, 3), 0.5, np.float32))
    convert.export(model().to_bytes(), session.get_weights(), str(folder / "m.tflite"))
    return {"session": session, "image": image, "converted": convert.convert(
        str(folder / "m.tflite"))}


def writers(sources):
    """name -> write(path): the three exports of a .tflite file."""
    def command(path):
        status = cli.main(["convert", sources["image"], "-o", str(path)])
        if status != 0:
            raise OSError("microtrain convert exited with %d" % status)
    return {"Session.export_model_for_inference":
            lambda path: sources["session"].export_model_for_inference(str(path)),
            "ConvertedModel.export": lambda path: sources["converted"].export(str(path)),
            "microtrain convert": command}


WRITERS = ("Session.export_model_for_inference", "ConvertedModel.export", "microtrain convert")


def leftovers(folder):
    return sorted(n for n in os.listdir(str(folder)) if n.startswith("."))


@pytest.mark.parametrize("writer", WRITERS)
def test_an_export_onto_a_symlink_writes_through_it(sources, writer, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    real = store / "real.tflite"
    real.write_bytes(b"stale")
    link = tmp_path / "latest.tflite"
    link.symlink_to(real)
    writers(sources)[writer](link)
    assert link.is_symlink() and os.readlink(str(link)) == str(real)
    assert real.read_bytes()[4:8] == TFLITE_MAGIC
    dangling = tmp_path / "next.tflite"
    dangling.symlink_to(store / "new.tflite")  # a link to a file not there yet: created
    writers(sources)[writer](dangling)
    assert dangling.is_symlink() and (store / "new.tflite").read_bytes()[4:8] == TFLITE_MAGIC
    assert leftovers(tmp_path) == [] and leftovers(store) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_a_new_export_gets_the_umask_mode_and_a_replaced_one_keeps_its_mode(sources, writer,
                                                                           tmp_path):
    old_mask = os.umask(0o027)
    try:
        writers(sources)[writer](tmp_path / "new.tflite")
        kept = tmp_path / "kept.tflite"
        kept.write_bytes(b"old")
        os.chmod(str(kept), 0o604)
        writers(sources)[writer](kept)
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE(os.stat(str(tmp_path / "new.tflite")).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(str(kept)).st_mode) == 0o604
    assert kept.read_bytes()[4:8] == TFLITE_MAGIC


@pytest.mark.parametrize("writer", WRITERS)
def test_an_export_into_a_missing_folder_names_the_users_path(sources, writer, tmp_path,
                                                              capsys):
    target = tmp_path / "no" / "such" / "folder" / "m.tflite"
    if writer == "microtrain convert":
        assert cli.main(["convert", sources["image"], "-o", str(target)]) == 1
        message = capsys.readouterr().err
    else:
        with pytest.raises(FileNotFoundError) as error:
            writers(sources)[writer](target)
        message = str(error.value)
        assert error.value.filename == str(target)
    assert str(target) in message and "no folder" in message, message
    assert ".mt-tmp" not in message and ".export-" not in message, message


@pytest.mark.parametrize("writer", WRITERS)
def test_an_export_over_a_fifo_a_device_or_a_folder_is_refused(sources, writer, tmp_path):
    fifo = tmp_path / "pipe.tflite"
    os.mkfifo(str(fifo))
    folder = tmp_path / "folder.tflite"
    folder.mkdir()
    before = snapshot(str(tmp_path))
    for target in (fifo, folder):
        with pytest.raises(OSError):
            writers(sources)[writer](target)
    assert snapshot(str(tmp_path)) == before


@pytest.mark.parametrize("writer", WRITERS)
def test_an_export_with_a_long_name_or_none_at_all(sources, writer, tmp_path, capsys):
    """A name of 250 characters is valid: its temporary file's longer name must not make the
    export fail. An empty path is refused by name, not by a temporary file's."""
    long_name = tmp_path / ("m" * 243 + ".tflite")
    writers(sources)[writer](long_name)
    assert long_name.read_bytes()[4:8] == TFLITE_MAGIC and leftovers(tmp_path) == []
    if writer == "microtrain convert":
        assert cli.main(["convert", sources["image"], "-o", ""]) != 0
        message = capsys.readouterr().err
    else:
        with pytest.raises(ValueError) as error:
            writers(sources)[writer]("")
        message = str(error.value)
    assert ".mt-tmp" not in message and leftovers(tmp_path) == [], message


KILLED_EXPORT = textwrap.dedent("""
    import os, sys, time
    import microtrain
    from microtrain import convert
    model = convert.convert(sys.argv[1])
    real_replace = os.replace
    def hang(source, target):
        print("replacing", flush=True)
        time.sleep(60)
    os.replace = hang
    model.export(sys.argv[2])
""")


def test_the_temporary_file_of_a_killed_export_is_removed_by_the_next_export(sources,
                                                                              tmp_path):
    """ConvertedModel.export killed (SIGKILL) between writing and renaming leaves its
    temporary file; the next export of the same path removes it."""
    tflite = os.path.join(os.path.dirname(sources["image"]), "m.tflite")
    target = tmp_path / "out.tflite"
    process = subprocess.Popen([sys.executable, "-c", KILLED_EXPORT, tflite, str(target)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "replacing"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    assert len(leftovers(tmp_path)) == 1 and not target.exists()
    sources["converted"].export(str(target))
    assert leftovers(tmp_path) == [] and target.read_bytes()[4:8] == TFLITE_MAGIC


def test_convert_refusals_in_a_capped_process_leave_the_folder_as_it_was(sources, tmp_path):
    """The command line's export, in its own process under the 4 GiB cap: onto a directory
    and into a missing folder, one line naming the user's path."""
    (tmp_path / "taken.tflite").mkdir()
    before = snapshot(str(tmp_path))
    for target, words in ((tmp_path / "taken.tflite", "Is a directory"),
                          (tmp_path / "none" / "m.tflite", "no folder")):
        outcome = run_capped(python("-m", "microtrain", "convert", sources["image"], "-o",
                                    str(target)))
        assert outcome.status == 1 and words in outcome.stderr, outcome
        assert str(target) in outcome.stderr and "Traceback" not in outcome.stderr, outcome
        assert outcome.peak_bytes < 1 << 30, outcome
    assert snapshot(str(tmp_path)) == before


# Modules that write only into a TemporaryDirectory of their own (the images, launcher and
# files a MicroPython run needs), never a path a user gave.
SCRATCH_WRITERS = ("_files.py", os.path.join("micropython_runner", "run.py"),
                   os.path.join("federated", "device.py"),
                   # the deployment's spec, Flower config and facts go into its mkdtemp
                   # folder, the board's ROMFS images into the emulator's
                   os.path.join("federated", "deployment.py"),
                   os.path.join("federated", "board_emulator.py"))


def test_every_output_goes_through_the_one_writer():
    """No module of the package writes a file (open for writing, mkstemp, tofile, savefig)
    but microtrain._files, and those that write only into their own temporary folders."""
    import ast
    package = os.path.dirname(os.path.abspath(microtrain.__file__))
    found = []
    for directory, _, files in os.walk(package):
        for name in files:
            path = os.path.join(directory, name)
            if not name.endswith(".py") or os.path.relpath(path, package) in SCRATCH_WRITERS:
                continue
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open" \
                        and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                        and any(c in str(node.args[1].value) for c in "wax"):
                    found.append("%s:%d" % (os.path.relpath(path, package), node.lineno))
                if isinstance(node, ast.Attribute) and node.attr in ("mkstemp", "tofile",
                                                                     "savefig"):
                    found.append("%s:%d %s" % (os.path.relpath(path, package), node.lineno,
                                               node.attr))
    assert found == [], found
