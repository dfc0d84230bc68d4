"""Model images and checkpoints are read only from regular files, with a size limit, and saved
only over regular files (a symbolic link is written through to its target); temporary files
of killed saves are cleaned up by the next save (microtrain._files)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError, _files, layers
from microtrain.tools import cli


def model():
    return microtrain.Sequential([layers.Dense(4, activation="relu"), layers.Dense(2)],
                                 input_shape=(3,), seed=0)


def trained_session():
    s = microtrain.TrainSession(model())
    s.compile("sgd", "mse", batch_size=4)
    s.train_step(np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32))
    return s


def with_timeout(call, seconds=10):
    """Run ``call`` in a thread; fail (instead of hanging the suite) if it blocks."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def test_fifo_model_and_checkpoint_are_refused_without_blocking(tmp_path):
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    with pytest.raises(_files.NotARegularFileError, match="named pipe"):
        with_timeout(lambda: microtrain.TrainSession(fifo))
    s = trained_session()
    with pytest.raises(_files.NotARegularFileError, match="named pipe"):
        with_timeout(lambda: s.load_checkpoint(fifo))


def test_endless_devices_are_refused_before_reading():
    s = trained_session()
    for device in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(_files.NotARegularFileError, match="character device"):
            with_timeout(lambda: microtrain.TrainSession(device))
        with pytest.raises(_files.NotARegularFileError, match="character device"):
            with_timeout(lambda: s.load_checkpoint(device))


def test_a_file_over_the_limit_is_refused(tmp_path):
    path = tmp_path / "big.mtm"
    path.write_bytes(b"\0" * 1000)
    with pytest.raises(ValueError, match="more than the 100 allowed"):
        _files.read_file(str(path), "a model image", limit=100)


def test_saving_over_a_fifo_a_device_or_a_directory_is_refused(tmp_path):
    s = trained_session()
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    for target, error in ((fifo, _files.NotARegularFileError),
                          ("/dev/null", _files.NotARegularFileError),
                          (str(tmp_path), IsADirectoryError)):
        for save in (s.save_checkpoint, s.export_model_for_inference):
            with pytest.raises(error):
                with_timeout(lambda: save(target))
    import stat
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a FIFO
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]  # no temporary file left


def test_a_symlinked_checkpoint_is_written_through_to_its_target(tmp_path):
    s = trained_session()
    real = tmp_path / "store" / "real.ck"
    real.parent.mkdir()
    real.write_bytes(b"stale")
    link = tmp_path / "latest.ck"
    link.symlink_to(real)
    s.save_checkpoint(str(link))
    assert link.is_symlink() and os.readlink(link) == str(real)
    fresh = microtrain.TrainSession(model())
    fresh.compile("sgd", "mse", batch_size=4)
    fresh.load_checkpoint(str(real))  # the target holds the new checkpoint
    for a, b in zip(fresh.get_weights(), s.get_weights()):
        np.testing.assert_array_equal(a, b)
    dangling = tmp_path / "dangling.ck"
    dangling.symlink_to(tmp_path / "store" / "new.ck")
    s.export_model_for_inference(str(dangling))  # a link to a file not yet there: created
    assert (tmp_path / "store" / "new.ck").is_file() and dangling.is_symlink()


def test_temporary_files_of_a_killed_save_are_removed_by_the_next_save(tmp_path):
    path = str(tmp_path / "ck.bin")
    script = textwrap.dedent("""
        import os, sys, time
        import numpy as np
        import microtrain
        from microtrain import _files, layers
        s = microtrain.TrainSession(microtrain.Sequential([layers.Dense(2)], input_shape=(3,)))
        s.compile("sgd", "mse", batch_size=2)
        real_write = _files._Writer.write
        def hang(self, chunk):
            real_write(self, chunk)
            print("writing", flush=True)
            time.sleep(60)
        _files._Writer.write = hang
        s.save_checkpoint(sys.argv[1])
    """)
    process = subprocess.Popen([sys.executable, "-c", script, path], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "writing"
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(_files.TEMPORARY_SUFFIX)]
    assert len(leftovers) == 1 and ".%d." % process.pid in leftovers[0]
    live = tmp_path / (".ck.bin.%d.other.mt-tmp" % os.getpid())  # a save in progress here
    live.write_bytes(b"")
    trained_session().save_checkpoint(path)
    remaining = sorted(n for n in os.listdir(tmp_path) if n.endswith(_files.TEMPORARY_SUFFIX))
    assert remaining == [live.name]  # the killed one is gone, a running one is kept


def test_cli_names_what_a_special_file_is(tmp_path, capsys):
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    good = tmp_path / "m.mtm"
    model().save(str(good))
    x = tmp_path / "x.bin"
    np.ones((4, 3), "<f4").tofile(x)
    cases = [(["info", fifo], "model %s is a named pipe (FIFO), not a regular file" % fifo),
             (["info", str(tmp_path)], "is a directory, not a file"),
             (["info", str(tmp_path / "nope.mtm")], "model file not found"),
             (["predict", str(good), "--x", fifo], "input %s is a named pipe" % fifo),
             (["train", str(good), "--x", str(x), "--y", fifo], "expected %s is a named pipe"
              % fifo)]
    for argv, message in cases:
        assert with_timeout(lambda: cli.main(argv)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
