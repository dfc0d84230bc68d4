"""Checkpoints: bit-identical resume, properties, refusal of bad checkpoints with the session
unchanged, atomic saves that never damage the previous file, and export for inference."""

import os
import struct
import zlib

import numpy as np
import pytest

import microtrain
from microtrain import DataLoader, MicrotrainError, _files, layers
from microtrain.backend import ctypes_backend
from microtrain.nn import image as _image
from microtrain.backend import _native
from microtrain import properties
from microtrain import optimizers

HEADER_BYTES = 80


def model(seed=0, hidden=12):
    return microtrain.Sequential([layers.Dense(hidden, activation="relu"), layers.Dense(4),
                                  layers.Softmax()], input_shape=(6,), seed=seed)


def data(rows=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 6)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, rows)]
    return x, y


def session(optimizer=None, source=None, **options):
    s = microtrain.TrainSession(source if source is not None else model())
    s.compile(optimizer if optimizer is not None else optimizers.Adam(0.01),
              "categorical_crossentropy", batch_size=8, **options)
    return s


def steps(s, x, y, first, count):
    losses = []
    for step in range(first, first + count):
        rows = slice((step * 8) % len(x), (step * 8) % len(x) + 8)
        losses.append(s.train_step(x[rows], y[rows])["loss"][0])
    return losses


def snapshot(s):
    return ([w.copy() for w in s.get_weights()], s.get_counters(), s.get_learning_rate(),
            s.properties)


def assert_same_state(a, b):
    for x, y in zip(a[0], b[0]):
        np.testing.assert_array_equal(x, y)
    assert a[1:] == b[1:]


@pytest.mark.parametrize("optimizer", [optimizers.SGD(0.05), optimizers.SGD(0.05, momentum=0.9),
                                       optimizers.Adam(0.01), optimizers.AdamW(0.01)])
def test_resume_is_bit_identical(tmp_path, optimizer):
    x, y = data()
    N = 5
    straight = session(optimizer)
    straight_losses = steps(straight, x, y, 0, 2 * N)

    first = session(optimizer)
    first_losses = steps(first, x, y, 0, N)
    first.set_epoch(1)
    path = str(tmp_path / "ck.bin")
    first.save_checkpoint(path)
    assert os.path.getsize(path) == first.checkpoint_bytes()

    resumed = session(optimizer)  # fresh session of the same model: the initial weights
    resumed.load_checkpoint(path)
    assert resumed.get_counters() == {"step": N, "epoch": 1}
    resumed_losses = steps(resumed, x, y, N, N)
    assert first_losses + resumed_losses == straight_losses
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_checkpoint_without_optimizer_state_restarts_the_optimizer(tmp_path):
    x, y = data()
    trained = session()
    steps(trained, x, y, 0, 4)
    path = str(tmp_path / "weights-only.bin")
    trained.save_checkpoint(path, include_optimizer_state=False)
    assert os.path.getsize(path) < trained.checkpoint_bytes(include_optimizer_state=True)
    loaded = session()
    loaded.load_checkpoint(path)
    for a, b in zip(trained.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert loaded.get_counters()["step"] == 4
    straight = steps(trained, x, y, 4, 1)
    restarted = steps(loaded, x, y, 4, 1)
    assert straight == restarted  # same forward on the same weights
    assert any(not np.array_equal(a, b) for a, b in zip(trained.get_weights(),
                                                         loaded.get_weights()))


def test_resume_through_train_with_shuffling_is_bit_identical(tmp_path):
    x, y = data(37)
    path = str(tmp_path / "ck.bin")
    straight = session(metrics=["categorical_accuracy"])
    full = straight.train(DataLoader(x, y, batch_size=8, shuffle=True, seed=4), epochs=3,
                          validation_split=0.25, verbose=0)

    first = session(metrics=["categorical_accuracy"])
    part1 = first.train(DataLoader(x, y, batch_size=8, shuffle=True, seed=4), epochs=1,
                        validation_split=0.25, checkpoint_path=path, verbose=0)
    resumed = session(metrics=["categorical_accuracy"])
    resumed.load_checkpoint(path)
    part2 = resumed.train(DataLoader(x, y, batch_size=8, shuffle=True, seed=4), epochs=2,
                          validation_split=0.25, verbose=0)
    assert part2.epochs == [2, 3]
    for name in ("loss", "val_loss", "categorical_accuracy", "val_categorical_accuracy"):
        assert part1.history[name] + part2.history[name] == full.history[name], name
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_properties_round_trip(tmp_path):
    s = session()
    values = {"epoch_note": "fine-tuned on device 7 ✓", "long": "z" * 255, "n" * 63: 1, "count": -(2 ** 63), "big": 2 ** 63 - 1,
              "rate": 0.1, "tiny": 5e-324, "empty": "", "inf": float("inf")}
    for name, value in values.items():
        s.add_property(name, value)
    s.add_property("count", 42)  # replacing keeps one entry
    values["count"] = 42
    path = str(tmp_path / "ck.bin")
    s.save_checkpoint(path)
    loaded = session()
    loaded.add_property("stale", 1)
    loaded.load_checkpoint(path)
    assert loaded.properties == values
    for name, value in values.items():
        got = loaded.get_property(name)
        assert got == value and type(got) is type(value)
    assert "stale" not in loaded.properties
    with pytest.raises(KeyError):
        loaded.get_property("missing")
    assert loaded.get_property("missing", None) is None


def test_property_validation():
    s = session()
    for name, value, error, message in [
        ("", 1, ValueError, "empty"), ("x" * 64, 1, ValueError, "at most 63"),
        ("é" * 32, 1, ValueError, "64 UTF-8 bytes"),
        ("a\0b", 1, ValueError, "NUL"), (3, 1, TypeError, "str"),
        ("flag", True, TypeError, "bool"), ("big", 2 ** 63, ValueError, "64 bits"),
        ("list", [1], TypeError, "int, float or str"), ("s", "x" * 256, ValueError, "at most 255"),
        ("s", "a\0", ValueError, "NUL"),
    ]:
        with pytest.raises(error, match=message):
            s.add_property(name, value)
    assert s.properties == {}
    s.add_property("x" * 63, "y" * 255)  # the limits themselves are fine
    assert properties.MAX_NAME_BYTES == _native.MT_PROPERTY_MAX_NAME
    assert properties.MAX_STRING_BYTES == _native.MT_PROPERTY_MAX_STRING


def saved_checkpoint(tmp_path, optimizer=None, name="good.bin", **options):
    x, y = data()
    s = session(optimizer, **options)
    steps(s, x, y, 0, 3)
    s.add_property("note", "hello")
    path = str(tmp_path / name)
    s.save_checkpoint(path)
    with open(path, "rb") as handle:
        return handle.read()


def refused(target, content, tmp_path, status):
    path = str(tmp_path / "bad.bin")
    with open(path, "wb") as handle:
        handle.write(content)
    before = snapshot(target)
    with pytest.raises(MicrotrainError) as error:
        target.load_checkpoint(path)
    assert error.value.status == status, (error.value, len(content))
    assert_same_state(before, snapshot(target))
    return error.value


def trained_target():
    x, y = data(seed=9)
    target = session()
    steps(target, x, y, 0, 2)
    target.add_property("mine", 1)
    return target


def test_truncated_checkpoints_are_refused_and_change_nothing(tmp_path):
    good = saved_checkpoint(tmp_path)
    target = trained_target()
    rng = np.random.default_rng(0)
    lengths = {0, 1, 4, 8, 12, HEADER_BYTES - 1, HEADER_BYTES, HEADER_BYTES + 1, len(good) - 4,
               len(good) - 1}
    lengths |= set(int(v) for v in rng.integers(0, len(good), 24))
    for length in sorted(lengths):
        error = refused(target, good[:length], tmp_path, _native.MT_ERR_BAD_CHECKPOINT)
        assert "checkpoint" in str(error)
    refused(target, good + b"\0" * 4, tmp_path, _native.MT_ERR_BAD_CHECKPOINT)


def test_bit_flipped_checkpoints_are_refused_and_change_nothing(tmp_path):
    good = saved_checkpoint(tmp_path)
    target = trained_target()
    rng = np.random.default_rng(1)
    positions = {0, 4, 8, 12, 20, 32, 48, 56, HEADER_BYTES, len(good) - 1}
    positions |= set(int(v) for v in rng.integers(0, len(good), 40))
    for position in sorted(positions):
        corrupt = bytearray(good)
        corrupt[position] ^= 1 << int(rng.integers(0, 8))
        refused(target, bytes(corrupt), tmp_path, _native.MT_ERR_BAD_CHECKPOINT)


def with_valid_crc(content):
    body = bytes(content[:-4])
    return body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)


def test_unknown_version_is_refused(tmp_path):
    good = bytearray(saved_checkpoint(tmp_path))
    struct.pack_into("<H", good, 4, 99)
    refused(trained_target(), with_valid_crc(good), tmp_path, _native.MT_ERR_BAD_CHECKPOINT)


def test_mismatched_checkpoints_are_refused_with_the_reason(tmp_path):
    """The refusal says which of optimizer, trained set and model differs, and what the
    checkpoint holds."""
    target = trained_target()
    tensors = [index for index, _ in target.model_description()["params"]]
    t = ["t%d" % index for index in tensors]
    other_model = saved_checkpoint(tmp_path, source=model(hidden=10), name="m.bin")
    error = refused(target, other_model, tmp_path, _native.MT_ERR_CHECKPOINT_MISMATCH)
    assert "it holds trained tensors %s (60 values), %s (10), %s (40), %s (4); this session "\
        "trains %s (72 values), %s (12), %s (48), %s (4)" % tuple(t + t) in str(error)
    other_optimizer = saved_checkpoint(tmp_path, optimizers.SGD(0.1, momentum=0.9), "o.bin")
    error = refused(target, other_optimizer, tmp_path, _native.MT_ERR_CHECKPOINT_MISMATCH)
    assert "another model, optimizer or trained set" in str(error)
    assert "it was saved with optimizer sgd, this session has adam" in str(error)
    assert "trained tensors" not in str(error)
    other_set = saved_checkpoint(tmp_path, name="t.bin", num_trainable_ops=2)
    error = refused(target, other_set, tmp_path, _native.MT_ERR_CHECKPOINT_MISMATCH)
    assert "it holds trained tensors %s (48 values), %s (4); this session trains %s (72 " \
        "values), %s (12), %s (48), %s (4)" % (t[2], t[3], t[0], t[1], t[2], t[3]) in str(error)
    bias_only = saved_checkpoint(tmp_path, name="b.bin", trainable="bias")
    error = refused(target, bias_only, tmp_path, _native.MT_ERR_CHECKPOINT_MISMATCH)
    assert "it holds trained tensors %s (12 values), %s (4)" % (t[1], t[3]) in str(error)
    plain = session(optimizers.SGD(0.1))
    error = refused(plain, other_optimizer, tmp_path, _native.MT_ERR_CHECKPOINT_MISMATCH)
    assert "it stores SGD momentum; this sgd session keeps none" in str(error)
    reshaped = session(source=microtrain.Sequential(
        [layers.Dense(12, activation="tanh"), layers.Dense(4), layers.Softmax()],
        input_shape=(6,), seed=0))
    error = refused(reshaped, saved_checkpoint(tmp_path, name="g.bin"), tmp_path,
                    _native.MT_ERR_CHECKPOINT_MISMATCH)
    assert "it was saved from another model architecture (structure fingerprint 0x" in \
        str(error)


def test_a_checkpoint_fits_any_image_of_the_same_architecture(tmp_path):
    good = saved_checkpoint(tmp_path)
    path = str(tmp_path / "good.bin")
    target = session(source=model(seed=5))  # other initial weights, same structure
    target.load_checkpoint(path)
    source = session()
    source.load_checkpoint(path)
    for a, b in zip(source.get_weights(), target.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert len(good) == os.path.getsize(path)


def test_a_read_failing_after_validation_still_changes_nothing(tmp_path, monkeypatch):
    """The core's second pass reads in place; the facade restores the arena on failure.
    The read callback fails on the last read of a load, when weights are being replaced."""
    saved_checkpoint(tmp_path)
    path = str(tmp_path / "good.bin")
    real_callback = ctypes_backend._Callback
    reads = []

    class Counting(real_callback):
        def __init__(self, function_type, body):
            def counted(*args):
                if function_type is _native.mt_read_fn:
                    reads.append(args[1])
                    if fail_at[0] is not None and len(reads) == fail_at[0]:
                        return _native.MT_ERR_IO
                return body(*args)
            real_callback.__init__(self, function_type, counted)

    fail_at = [None]
    monkeypatch.setattr(ctypes_backend, "_Callback", Counting)
    session().load_checkpoint(path)
    total = len(reads)
    assert total >= 2
    target = trained_target()
    before = snapshot(target)
    del reads[:]
    fail_at[0] = total
    with pytest.raises(MicrotrainError) as error:
        target.load_checkpoint(path)
    assert error.value.status == _native.MT_ERR_IO
    assert_same_state(before, snapshot(target))


def test_missing_checkpoint_file_raises_file_not_found(tmp_path):
    target = trained_target()
    with pytest.raises(FileNotFoundError):
        target.load_checkpoint(str(tmp_path / "nope.bin"))


def temporary_files(directory):
    return [name for name in os.listdir(directory) if name.endswith(_files.TEMPORARY_SUFFIX)]


def test_a_write_failing_midway_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    x, y = data()
    s = session()
    s.add_property("version", "first")
    path = str(tmp_path / "ck.bin")
    s.save_checkpoint(path)
    with open(path, "rb") as handle:
        previous = handle.read()
    steps(s, x, y, 0, 2)
    s.add_property("version", "second")

    calls = []
    real_write = _files._Writer.write

    def failing_write(self, chunk):
        calls.append(len(chunk))
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_write(self, chunk)

    monkeypatch.setattr(_files._Writer, "write", failing_write)
    with pytest.raises(OSError, match="No space left"):
        s.save_checkpoint(path)
    assert len(calls) == 3  # the core stopped at the first failed chunk
    with open(path, "rb") as handle:
        assert handle.read() == previous
    assert temporary_files(tmp_path) == []

    monkeypatch.setattr(_files._Writer, "write", real_write)

    def interrupted(self, chunk):
        raise KeyboardInterrupt()

    monkeypatch.setattr(_files._Writer, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        s.save_checkpoint(path)
    with open(path, "rb") as handle:
        assert handle.read() == previous
    assert temporary_files(tmp_path) == []


def test_a_failing_rename_or_fsync_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    s = session()
    path = str(tmp_path / "ck.bin")
    s.save_checkpoint(path)
    with open(path, "rb") as handle:
        previous = handle.read()
    s.add_property("changed", 1)

    def no_replace(source, target):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_files.os, "replace", no_replace)
    with pytest.raises(PermissionError):
        s.save_checkpoint(path)
    monkeypatch.undo()

    def no_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(_files.os, "fsync", no_fsync)
    with pytest.raises(OSError, match="Input/output"):
        s.save_checkpoint(path)
    monkeypatch.undo()
    with open(path, "rb") as handle:
        assert handle.read() == previous
    assert temporary_files(tmp_path) == []
    s.save_checkpoint(path)  # and a later save works
    loaded = session()
    loaded.load_checkpoint(path)
    assert loaded.get_property("changed") == 1


def test_save_errors(tmp_path):
    s = session()
    with pytest.raises(IsADirectoryError):
        s.save_checkpoint(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        s.save_checkpoint(str(tmp_path / "no" / "such" / "dir" / "ck.bin"))
    assert temporary_files(tmp_path) == []
    fresh = microtrain.TrainSession(model())
    with pytest.raises(RuntimeError, match="compile"):
        fresh.save_checkpoint(str(tmp_path / "ck.bin"))


def test_saved_file_keeps_the_permissions_of_the_one_it_replaces(tmp_path):
    s = session()
    path = str(tmp_path / "ck.bin")
    s.save_checkpoint(path)
    assert os.stat(path).st_mode & 0o777 == _files._default_mode()
    os.chmod(path, 0o640)
    s.save_checkpoint(path)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_export_for_inference_bakes_in_the_trained_weights(tmp_path):
    x, y = data()
    s = session(num_trainable_ops=2)  # frozen first layer stays as in the image
    steps(s, x, y, 0, 5)
    path = str(tmp_path / "inference.mtm")
    s.export_model_for_inference(path)
    with open(path, "rb") as handle:
        exported = handle.read()
    assert len(exported) == len(model().to_bytes())
    parsed = _image.read_image(exported)  # CRC checked
    assert parsed.header.num_ops == 4
    inference = microtrain.TrainSession(path)
    inference.compile("sgd", "categorical_crossentropy", batch_size=8)
    for a, b in zip(s.get_weights(), inference.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(inference.infer(x[:8])[0], s.infer(x[:8])[0])
    assert inference.get_counters() == {"step": 0, "epoch": 0}
    assert temporary_files(tmp_path) == []
