"""The Python facade's bad-input matrix (issue 6), files: model and checkpoint files that are
missing, in missing directories, empty, truncated, corrupt or garbage, and checkpoints saved
where they cannot be written, change nothing and raise (bad_input_setup.py says what every
mistake must do).
"""

import os

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError
from microtrain.backend import _native

from bad_input_setup import assert_same_weights, data, model, session


# ------------------------------------------------------------------ files


def test_model_files_missing_directories_empty_and_garbage(tmp_path):
    with pytest.raises(FileNotFoundError):
        microtrain.TrainSession(str(tmp_path / "missing.mtm"))
    with pytest.raises(IsADirectoryError):
        microtrain.TrainSession(str(tmp_path))
    (tmp_path / "empty.mtm").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        microtrain.TrainSession(str(tmp_path / "empty.mtm"))
    with pytest.raises(TypeError, match="path, bytes or a microtrain.Sequential"):
        microtrain.TrainSession(np.zeros(16, np.uint8))
    for garbage in (b"\0", b"MTM", os.urandom(7), os.urandom(4096), b"\xff" * 64):
        with pytest.raises(MicrotrainError) as error:
            microtrain.TrainSession(garbage)
        assert error.value.status == _native.MT_ERR_BAD_MODEL


def test_truncated_and_corrupted_model_images_raise_and_never_crash(tmp_path):
    """Every truncation, and byte flips with and without a repaired CRC (so the tables
    themselves are checked): the session is refused with MicrotrainError, or, when a
    flip lands where any value is valid (weights), it trains. The CRC repair is the
    same zlib CRC-32 the format uses over bytes [16, image_bytes)."""
    import zlib
    image = model().to_bytes()
    for length in range(0, len(image), 7):
        with pytest.raises((MicrotrainError, ValueError)):
            microtrain.TrainSession(image[:length])
    rng = np.random.default_rng(6)
    x, _, y = data(2)
    outcomes = {"refused": 0, "trained": 0}
    for trial in range(400):
        mutated = bytearray(image)
        for _ in range(int(rng.integers(1, 4))):
            mutated[int(rng.integers(0, min(len(mutated), 512)))] = int(rng.integers(0, 256))
        if trial % 4:
            size = int.from_bytes(mutated[8:12], "little")
            if 16 <= size <= len(mutated):
                crc = zlib.crc32(bytes(mutated[16:size])) & 0xFFFFFFFF
                mutated[12:16] = crc.to_bytes(4, "little")
        try:
            s = microtrain.TrainSession(bytes(mutated))
            s.compile("sgd", "mse", batch_size=2)
            with np.errstate(all="ignore"):
                s.train_step(x, y)
            outcomes["trained"] += 1
        except (MicrotrainError, ValueError):
            outcomes["refused"] += 1
    assert outcomes["refused"] > 300


def checkpoint(tmp_path, name="good.ck"):
    s = session()
    x, _, y = data()
    s.train_step(x, y)
    path = tmp_path / name
    s.save_checkpoint(str(path))
    return path


def test_checkpoint_files_missing_directories_and_garbage_change_nothing(tmp_path):
    good = checkpoint(tmp_path).read_bytes()
    s = session()
    x, _, y = data(seed=1)
    s.train_step(x, y)
    before, counters = s.get_weights(), s.get_counters()
    with pytest.raises(FileNotFoundError):
        s.load_checkpoint(str(tmp_path / "missing.ck"))
    with pytest.raises(IsADirectoryError):
        s.load_checkpoint(str(tmp_path))
    contents = {"empty": b"", "garbage": os.urandom(len(good)), "model": model().to_bytes(),
                "truncated": good[:len(good) // 2], "one byte short": good[:-1],
                "one byte long": good + b"\0", "flipped": good[:40] + bytes([good[40] ^ 1])
                + good[41:]}
    for name, content in contents.items():
        path = tmp_path / (name + ".ck")
        path.write_bytes(content)
        with pytest.raises(MicrotrainError) as error:
            s.load_checkpoint(str(path))
        assert error.value.status == _native.MT_ERR_BAD_CHECKPOINT, name
        assert_same_weights(before, s.get_weights())
        assert s.get_counters() == counters
    with pytest.raises(MicrotrainError) as error:  # a checkpoint is no model image
        microtrain.TrainSession(good)
    assert error.value.status == _native.MT_ERR_BAD_MODEL
    assert np.isfinite(s.train_step(x, y)["loss"][0])


def test_checkpoint_saved_where_it_cannot_be_written(tmp_path):
    s = session()
    x, _, y = data()
    s.train_step(x, y)
    blocker = tmp_path / "a_file"
    blocker.write_bytes(b"not a directory")
    for path, error in ((tmp_path / "missing" / "ck", FileNotFoundError),
                        (blocker / "ck", NotADirectoryError),
                        (tmp_path, IsADirectoryError)):
        for call in (s.save_checkpoint, s.export_model_for_inference):
            with pytest.raises(error):
                call(str(path))
    assert blocker.read_bytes() == b"not a directory"
    assert os.listdir(tmp_path) == ["a_file"]  # no temporary file left behind


def test_checkpoint_in_a_read_only_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "ck").write_bytes(b"previous")
    locked.chmod(0o555)
    try:
        probe = locked / ".probe"
        try:
            probe.write_bytes(b"")
            probe.unlink()
            pytest.skip("this user (root?) can write into a read-only directory")
        except PermissionError:
            pass
        s = session()
        with pytest.raises(PermissionError):
            s.save_checkpoint(str(locked / "ck"))
        assert (locked / "ck").read_bytes() == b"previous"
        assert os.listdir(locked) == ["ck"]
    finally:
        locked.chmod(0o755)
