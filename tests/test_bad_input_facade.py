"""The Python facade's bad-input matrix (issue 6), through the public API only.

Every mistake below must either raise a clear exception (ValueError, TypeError,
RuntimeError, MemoryError, OSError or MicrotrainError with the C status) whose
message names the problem, or work correctly; nothing may crash or read memory it
should not. Arrays the facade accepts in any layout (strided, transposed, negative
strides, Fortran order, other real dtypes) are checked bit for bit against the same
data given as a contiguous float32 copy.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError, layers, optimizers
from microtrain.backend import _native
from microtrain.schedules import LinearLRScheduler

BATCH = 8
FEATURES = 10
CLASSES = 4


def model(seed=0):
    """10 -> 16 relu -> 4 softmax."""
    return microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(CLASSES),
                                  layers.Softmax()], input_shape=(FEATURES,), seed=seed)


def session(loss="categorical_crossentropy", **options):
    s = microtrain.TrainSession(model())
    arguments = {"optimizer": optimizers.Adam(0.01), "loss": loss, "batch_size": BATCH}
    arguments.update(options)
    s.compile(**arguments)
    return s


def data(rows=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, FEATURES)).astype(np.float32)
    labels = rng.integers(0, CLASSES, rows).astype(np.int32)
    return x, labels, np.eye(CLASSES, dtype=np.float32)[labels]


def assert_same_weights(a, b):
    for left, right in zip(a, b):
        np.testing.assert_array_equal(left, right)


def same_step(inputs, targets, reference_inputs, reference_targets, loss=None):
    """A train step on (inputs, targets) equals one on the reference arrays: loss, outputs
    of a following infer, and every weight, bit for bit."""
    options = {} if loss is None else {"loss": loss}
    a, b = session(**options), session(**options)
    result_a = a.train_step(inputs, targets)
    result_b = b.train_step(reference_inputs, reference_targets)
    assert result_a["loss"] == result_b["loss"]
    assert_same_weights(a.get_weights(), b.get_weights())
    np.testing.assert_array_equal(a.infer(inputs)[0], b.infer(reference_inputs)[0])
    return a


# ------------------------------------------------------------------ dtypes

REFUSED_DTYPES = {
    "object": lambda a: a.astype(object),
    "complex": lambda a: a.astype(np.complex64),
    "str": lambda a: a.astype(str),
    "bytes": lambda a: a.astype(bytes),
    "datetime": lambda a: a.astype(np.int64).astype("datetime64[s]"),
    "structured": lambda a: np.zeros(a.shape, dtype=[("v", "<f4")]),
    "void": lambda a: np.zeros(a.shape, dtype="V4"),
}


@pytest.mark.parametrize("kind", sorted(REFUSED_DTYPES))
def test_inputs_and_targets_of_non_real_dtypes_are_refused_by_name(kind):
    s = session()
    x, _, y = data()
    before = s.get_weights()
    convert = REFUSED_DTYPES[kind]
    for call in (lambda: s.train_step(convert(x), y), lambda: s.train_step(x, convert(y)),
                 lambda: s.eval_step(convert(x), y), lambda: s.infer(convert(x))):
        with pytest.raises(ValueError, match=r"dtype .*cannot be converted to float32"):
            call()
    with pytest.raises(ValueError, match="dtype"):
        s.predict(convert(x))
    assert_same_weights(before, s.get_weights())
    assert s.get_counters()["step"] == 0


def test_none_and_ragged_inputs_are_refused():
    s = session()
    x, _, y = data()
    with pytest.raises(ValueError, match=r"must be rows \[n, 10\].*got NoneType"):
        s.train_step(None, y)
    with pytest.raises(ValueError, match="row 1 has 1 values, a sample of shape"):
        s.train_step([[1.0] * 10, [3.0]], y[:2])
    with pytest.raises(ValueError, match="row 0 holds a str"):
        s.train_step([["1.0"] * 10], y[:1])
    with pytest.raises(ValueError, match="dtype object"):
        s.train_step(np.array([None] * 10)[None], y[:1])


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int64, np.uint64,
                                   np.float16, np.float64, ">f4", ">f8"])
def test_other_real_dtypes_are_converted_exactly_like_an_explicit_float32_copy(dtype):
    x, _, y = data()
    if np.dtype(dtype).kind in "biu":
        x = (x * 10).astype(np.int64)
        x = x > 0 if np.dtype(dtype).kind == "b" else np.abs(x)
    x = x.astype(dtype)
    same_step(x, y.astype(dtype), x.astype(np.float32), y.astype(dtype).astype(np.float32))


@pytest.mark.parametrize("labels", [np.array([0.0, 1.0]), np.array([True, False]),
                                    np.array([1 + 0j, 0j]), np.array([0, 1], dtype=object),
                                    np.array(["0", "1"])])
def test_sparse_labels_must_be_integers(labels):
    s = session("sparse_categorical_crossentropy")
    x, _, _ = data(2)
    with pytest.raises(ValueError, match="integer labels"):
        s.train_step(x, labels)


@pytest.mark.parametrize("bad", [2 ** 31, 2 ** 40, -1, -2 ** 63, CLASSES])
def test_out_of_range_and_overflowing_labels_are_refused(bad):
    s = session("sparse_categorical_crossentropy")
    x, labels, _ = data()
    labels = labels.astype(np.int64)
    labels[3] = bad
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
        s.train_step(x, labels)
    big = np.zeros(BATCH, dtype=np.uint64)
    big[0] = 2 ** 64 - 1
    with pytest.raises(ValueError, match="18446744073709551615"):
        s.train_step(x, big)
    assert s.get_counters()["step"] == 0


# ------------------------------------------------------------------ layouts


def layouts(array):
    """The same values as ``array`` in layouts numpy hands out without copying."""
    rows, columns = array.shape
    wide = np.zeros((2 * rows, 3 * columns), dtype=array.dtype)
    wide[::2, ::3] = array
    reversed_both = np.ascontiguousarray(array[::-1, ::-1])[::-1, ::-1]
    transposed = np.ascontiguousarray(array.T).T
    return {"strided": wide[::2, ::3], "negative strides": reversed_both,
            "transposed": transposed, "fortran": np.asfortranarray(array),
            "column slice": np.concatenate([array, array], axis=1)[:, columns:],
            "read-only": np.frombuffer(array.tobytes(), array.dtype).reshape(array.shape)}


@pytest.mark.parametrize("layout", sorted(layouts(np.zeros((2, 2)))))
def test_non_contiguous_inputs_and_targets_are_read_correctly(layout):
    x, _, y = data(5, seed=3)
    xs, ys = layouts(x)[layout], layouts(y)[layout]
    if layout != "fortran" and layout != "read-only":
        assert not xs.flags.c_contiguous
    s = same_step(xs, ys, x.copy(), y.copy())
    np.testing.assert_array_equal(s.eval_step(xs, ys)["loss"], s.eval_step(x, y)["loss"])


def test_non_contiguous_labels_and_multi_column_label_views():
    x, labels, _ = data(6, seed=4)
    table = np.stack([labels, labels[::-1]], axis=1).astype(np.int64)  # column 0: labels
    same_step(x, table[:, 0], x, labels, loss="sparse_categorical_crossentropy")
    same_step(x, table[:, :1], x, labels, loss="sparse_categorical_crossentropy")
    same_step(x, labels[::-1][::-1], x, labels, loss="sparse_categorical_crossentropy")


def test_non_contiguous_weights_are_set_correctly():
    s = session()
    weights = [w * 0.5 for w in s.get_weights()]
    s.set_weights([np.asfortranarray(w) if w.ndim == 2 else w[::-1][::-1] for w in weights])
    assert_same_weights(s.get_weights(), [w.astype(np.float32) for w in weights])
    transposed = [np.ascontiguousarray(w.T).T if w.ndim == 2 else w for w in weights]
    s.set_weights(transposed)
    assert_same_weights(s.get_weights(), weights)


def test_batches_from_a_loader_over_non_contiguous_arrays():
    x, _, y = data(20, seed=5)
    wide_x, wide_y = layouts(x)["strided"], layouts(y)["negative strides"]
    a, b = session(), session()
    ha = a.train(microtrain.DataLoader(wide_x, wide_y, batch_size=BATCH, shuffle=True, seed=1),
                 epochs=2, verbose=0)
    hb = b.train(microtrain.DataLoader(x.copy(), y.copy(), batch_size=BATCH, shuffle=True,
                                       seed=1), epochs=2, verbose=0)
    assert ha.history["loss"] == hb.history["loss"]
    assert_same_weights(a.get_weights(), b.get_weights())


# ------------------------------------------------------------------ shapes and row counts


def test_wrong_shapes_and_row_counts_are_refused_and_change_nothing():
    s = session()
    x, _, y = data()
    before = s.get_weights()
    cases = [
        (lambda: s.train_step(x[:, :9], y), r"input 0 must have shape \(n, 10\), got \(8, 9\)"),
        (lambda: s.train_step(x[0], y[:1]), r"must have shape \(n, 10\), got \(10,\)"),
        (lambda: s.train_step(x[None], y), r"got \(1, 8, 10\)"),
        (lambda: s.train_step(np.float32(1.0), y), r"got \(\)"),
        (lambda: s.train_step(x[:0], y[:0]), "has no rows"),
        (lambda: s.train_step(np.ones((BATCH + 1, FEATURES)), np.ones((BATCH + 1, CLASSES))),
         "9 rows, more than the batch size 8"),
        (lambda: s.train_step(x, y[:, :3]), r"expecteds must have shape \(n, 4\)"),
        (lambda: s.train_step(x, y[:5]), "8 input rows but 5 expected rows"),
        (lambda: s.train_step([x, x], y), r"1 input\(s\), got 2 array\(s\)"),
        (lambda: s.train_step(x, [y, y]), "one expected array, got 2"),
        (lambda: s.eval_step(x[:0], y[:0]), "has no rows"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    assert_same_weights(before, s.get_weights())
    assert s.get_counters()["step"] == 0


def test_label_shapes():
    s = session("sparse_categorical_crossentropy")
    x, labels, _ = data()
    for bad, message in ((labels.reshape(2, 4), r"\(n,\) or \(n, 1\), got \(2, 4\)"),
                         (np.int32(1), r"got \(\)"), (labels[:0], "labels has no rows"),
                         (labels[:3], "8 input rows but 3 labels")):
        with pytest.raises(ValueError, match=message):
            s.train_step(x, bad)


def test_loaders_too_big_or_empty():
    s = session()
    x, _, y = data(20)
    with pytest.raises(ValueError, match="batch_size 16, more than the 8"):
        s.train(microtrain.DataLoader(x, y, batch_size=16), verbose=0)
    with pytest.raises(ValueError, match="at least one sample"):
        s.train((x[:0], y[:0]), verbose=0)
    with pytest.raises(ValueError, match="20 input samples but 19 expected"):
        s.train((x, y[:19]), verbose=0)
    with pytest.raises(ValueError, match="more than the batch size"):
        s.predict(x, batch_size=20)


# ------------------------------------------------------------------ NaN and infinity


@pytest.mark.parametrize("where, value", [("input", np.nan), ("input", np.inf),
                                          ("input", -np.inf), ("target", np.nan),
                                          ("target", np.inf), ("input", 1e300)])
def test_non_finite_inputs_and_targets_raise_numeric_error_and_change_nothing(where, value):
    s = session()
    x, _, y = data()
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    (x64 if where == "input" else y64)[2, 1] = value  # 1e300 becomes inf as float32
    before = s.get_weights()
    with np.errstate(over="ignore"), pytest.raises(MicrotrainError) as error:
        s.train_step(x64, y64)
    assert error.value.status == _native.MT_ERR_NUMERIC and "MT_ERR_NUMERIC" in str(error.value)
    assert "the loss is nan" in str(error.value) or "the loss is inf" in str(error.value)
    with np.errstate(over="ignore"), pytest.raises(MicrotrainError) as error:
        s.eval_step(x64, y64)
    assert error.value.status == _native.MT_ERR_NUMERIC
    assert_same_weights(before, s.get_weights())
    assert s.get_counters()["step"] == 0 and s.numeric_errors() == 1
    assert np.isfinite(s.train_step(x, y)["loss"][0])  # the session goes on


def test_infer_on_non_finite_rows_returns_them_as_computed():
    """Inference has no loss to refuse: a NaN row gives a NaN output row, the others
    are exact."""
    s = session()
    x, _, _ = data()
    clean = s.infer(x)[0]
    x[3, 0] = np.nan
    out = s.infer(x)[0]
    assert np.isnan(out[3]).all()
    np.testing.assert_array_equal(np.delete(out, 3, axis=0), np.delete(clean, 3, axis=0))


# ------------------------------------------------------------------ lifetime


def closed_session_calls(s, x, y, path):
    """Every public method and property of TrainSession, with plausible arguments."""
    return {
        "add_property": lambda: s.add_property("a", 1),
        "batch_size": lambda: s.batch_size,
        "checkpoint_bytes": s.checkpoint_bytes,
        "compile": lambda: s.compile("sgd", "mse", batch_size=2),
        "eval_step": lambda: s.eval_step(x, y),
        "evaluate": lambda: s.evaluate((x, y)),
        "export_model_for_inference": lambda: s.export_model_for_inference(path),
        "get_counters": s.get_counters,
        "config": lambda: s.config,
        "eval_metrics": lambda: s.eval_metrics,
        "layers": lambda: s.layers,
        "loss": lambda: s.loss,
        "lr_scheduler": lambda: s.lr_scheduler,
        "model_description": s.model_description,
        "model_image": lambda: s.model_image,
        "train_metrics": lambda: s.train_metrics,
        "weights_crc32": s.weights_crc32,
        "get_inputs_tensorinfo": s.get_inputs_tensorinfo,
        "get_learning_rate": s.get_learning_rate,
        "get_outputs_tensorinfo": s.get_outputs_tensorinfo,
        "get_property": lambda: s.get_property("a"),
        "get_weights": s.get_weights,
        "infer": lambda: s.infer(x),
        "input_buffer": s.input_buffer,
        "lazy_reset_grad": s.lazy_reset_grad,
        "load_checkpoint": lambda: s.load_checkpoint(path),
        "memory_plan": s.memory_plan,
        "numeric_errors": s.numeric_errors,
        "optimizer_step": s.optimizer_step,
        "output_buffer": s.output_buffer,
        "predict": lambda: s.predict(x),
        "properties": lambda: s.properties,
        "register_lr_scheduler": lambda: s.register_lr_scheduler(LinearLRScheduler(1, 2)),
        "remove_property": lambda: s.remove_property("a"),
        "reset_metrics": s.reset_metrics,
        "save_checkpoint": lambda: s.save_checkpoint(path),
        "scheduler_step": s.scheduler_step,
        "set_epoch": lambda: s.set_epoch(1),
        "set_learning_rate": lambda: s.set_learning_rate(0.1),
        "set_reference": s.set_reference,
        "set_seed": lambda: s.set_seed(1),
        "set_weights": lambda: s.set_weights([]),
        "target_buffer": s.target_buffer,
        "timings": lambda: s.timings,
        "train": lambda: s.train((x, y), verbose=0),
        "train_step": lambda: s.train_step(x, y),
        "trainable_description": s.trainable_description,
        "trained_tensors": s.trained_tensors,
        "__enter__": s.__enter__,
    }


@pytest.mark.parametrize("compiled", [True, False])
def test_every_method_of_a_closed_session_raises_runtime_error(tmp_path, compiled):
    s = session(accumulate_gradients=True) if compiled else microtrain.TrainSession(model())
    x, _, y = data()
    if compiled:
        s.train_step(x, y)
        s.save_checkpoint(str(tmp_path / "ck"))  # so load_checkpoint would find a file
    s.close()
    s.close()  # idempotent
    assert s.closed
    calls = closed_session_calls(s, x, y, str(tmp_path / "ck"))
    public = {name for name in dir(microtrain.TrainSession) if not name.startswith("_")}
    assert public - {"close", "closed"} == set(calls) - {"__enter__"}, \
        "a public method is missing from this table"
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match="this TrainSession is closed"):
            call()


def test_views_handed_out_before_close_stay_valid_memory(tmp_path):
    s = session()
    x, _, y = data()
    s.train_step(x, y)
    inputs, outputs = s.input_buffer(), s.output_buffer()
    s.close()
    inputs[...] = 1.0  # the arena array lives on with the view: no write to freed memory
    assert np.isfinite(outputs).all()


def test_use_before_compile(tmp_path):
    s = microtrain.TrainSession(model())
    x, _, y = data()
    needs_compile = ["checkpoint_bytes", "eval_step", "evaluate", "export_model_for_inference",
                     "get_counters", "get_learning_rate", "input_buffer",
                     "lazy_reset_grad", "load_checkpoint", "memory_plan", "numeric_errors",
                     "optimizer_step", "output_buffer", "register_lr_scheduler",
                     "save_checkpoint", "scheduler_step", "set_epoch", "set_learning_rate",
                     "target_buffer", "train", "train_step", "trainable_description",
                     "trained_tensors"]
    calls = closed_session_calls(s, x, y, str(tmp_path / "ck"))
    for name in needs_compile:
        with pytest.raises(RuntimeError, match=r"call compile\(\) before"):
            calls[name]()
    assert not os.path.exists(tmp_path / "ck")
    for name in ("add_property", "get_property", "properties", "remove_property",
                 "get_inputs_tensorinfo", "get_outputs_tensorinfo", "get_weights",
                 "batch_size", "timings", "set_seed", "weights_crc32", "model_description",
                 "model_image", "layers", "config", "loss", "train_metrics", "eval_metrics",
                 "lr_scheduler"):
        calls[name]()  # work without a C session
    assert s.batch_size is None
    for name in ("infer", "predict"):  # inference binds an inference-only session itself
        calls[name]()
        with pytest.raises(RuntimeError, match="inference only"):
            s.train_step(x, y)
    assert s.batch_size == 16


def test_compile_twice_and_a_failed_compile_keeps_the_working_session():
    s = session()
    x, _, y = data()
    s.train_step(x, y)
    trained = s.get_weights()
    s.compile("sgd", "mse", batch_size=4)  # rebinds: weights kept, counters restart
    assert_same_weights(trained, s.get_weights())
    assert s.get_counters()["step"] == 0 and s.batch_size == 4
    for bad, error in (({"batch_size": 0}, ValueError), ({"loss": "hinge"}, ValueError),
                       ({"optimizer": "rmsprop"}, ValueError), ({"trainable": [99]}, ValueError),
                       ({"batch_size": 100000}, MicrotrainError)):
        arguments = {"optimizer": "sgd", "loss": "mse", "batch_size": 4}
        arguments.update(bad)
        with pytest.raises(error):
            s.compile(**arguments)
        assert s.batch_size == 4  # the previous session is still bound and works
        assert np.isfinite(s.train_step(x[:4], y[:4])["loss"][0])


# ------------------------------------------------------------------ numbers out of range


def test_numbers_that_overflow_the_c_types_are_refused_not_wrapped():
    s = session()
    for batch_size in (2 ** 31, 2 ** 32 + BATCH, 2 ** 64):
        with pytest.raises(ValueError, match="batch_size must be a positive integer up to 2147483647"):
            microtrain.TrainSession(model()).compile("sgd", "mse", batch_size=batch_size)
    with pytest.raises(MicrotrainError, match="batch_size 100000") as error:
        microtrain.TrainSession(model()).compile("sgd", "mse", batch_size=100000)
    assert error.value.status == _native.MT_ERR_BAD_ARGUMENT
    for epoch in (2 ** 63, 2 ** 70, -1, 1.5, "3", True):
        with pytest.raises(ValueError, match="epoch must be an integer"):
            s.set_epoch(epoch)
    assert s.get_counters()["epoch"] == 0
    for rate in (1e300, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="learning_rate"):
            s.set_learning_rate(rate)
        with pytest.raises(ValueError, match="learning_rate"):
            optimizers.SGD(rate)
    with pytest.raises(ValueError, match="epsilon"):
        optimizers.Adam(epsilon=1e39)
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.AdamW(weight_decay=1e39)


def test_set_weights_refuses_values_that_overflow_float32_and_changes_nothing():
    s = session()
    before = s.get_weights()
    huge = [w.astype(np.float64) for w in before]
    huge[2][0, 0] = 1e300
    with pytest.raises(ValueError, match="weight 2 contains NaN or infinity"):
        s.set_weights(huge)
    for dtype in (object, complex, bool, str):
        with pytest.raises(ValueError, match="cannot be converted to float32"):
            s.set_weights([w.astype(dtype) for w in before])
    with pytest.raises(ValueError, match="must have shape"):
        s.set_weights([w.T for w in before])
    with pytest.raises(ValueError, match="4 weight tensors, got 3"):
        s.set_weights(before[:3])
    assert_same_weights(before, s.get_weights())


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


# ------------------------------------------------------------------ memory


def test_an_arena_that_cannot_be_allocated_raises_memory_error_not_a_crash():
    """batch 65535 of a 4096-feature input needs a ~1 GiB arena; under an address-space
    limit 256 MiB above what the process uses, compile() must raise MemoryError naming
    the arena, and the session must still compile a small batch afterwards."""
    script = textwrap.dedent("""
        import os, resource
        import numpy as np
        import microtrain
        from microtrain import layers
        s = microtrain.TrainSession(microtrain.Sequential([layers.Dense(1)],
                                                          input_shape=(4096,), seed=0))
        pages = int(open("/proc/self/statm").read().split()[0])
        limit = pages * os.sysconf("SC_PAGE_SIZE") + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        try:
            s.compile("sgd", "mse", batch_size=65535)
            print("compiled")
        except MemoryError as error:
            print("MemoryError:", error)
        s.compile("sgd", "mse", batch_size=4)
        print("loss", s.train_step(np.ones((4, 4096), np.float32), np.ones((4, 1), np.float32))["loss"][0])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("MemoryError: the arena of "), result.stdout
    assert "batch_size 65535" in lines[0] and "smaller batch_size" in lines[0]
    assert lines[1].startswith("loss ")


# ------------------------------------------------------------------ integers that would wrap


def test_integers_beyond_the_c_types_are_refused_on_every_path(tmp_path, capsys):
    """2**32 + 3 must not become 3 anywhere: compile(), the CLI, the pure-Python rows."""
    from microtrain import _feed
    from microtrain.tools import cli
    for value in (2 ** 32 + 3, 2 ** 31, -2):
        for keyword in ("trainable", "num_trainable_ops"):
            with pytest.raises(ValueError):
                microtrain.TrainSession(model()).compile("sgd", "mse", **{keyword: value})
    for batch_size in (2 ** 32 + BATCH, 0, -1, 2.0):
        with pytest.raises(ValueError, match="batch_size"):
            microtrain.Session(model()).compile("sgd", "mse", batch_size=batch_size)
    path = tmp_path / "m.mtm"
    model().save(str(path))
    assert cli.main(["info", str(path), "--num-of-trainable-ops", str(2 ** 32 + 3)]) == 1
    assert "num_trainable_ops" in capsys.readouterr().err
    for labels in ([2 ** 32 + 1, 0], [3.99, 0], [True, 0], [CLASSES, 0]):
        with pytest.raises(ValueError, match="label"):
            _feed.label_rows(labels, CLASSES, BATCH)
    s = session("sparse_categorical_crossentropy")
    x, _, _ = data(2)
    for labels in ([2 ** 32 + 1, 0], [3.99, 0]):
        with pytest.raises(ValueError, match="label"):
            s.train_step(x, labels)
    assert s.get_counters()["step"] == 0


def test_a_plan_beyond_4_gib_is_unsupported_and_says_why():
    """Not "arena too small": the planner lays shared buffers out at 32-bit offsets."""
    # 1x1 convolutions: tiny weights, 1 GiB activations at batch 1024, four of them live
    wide = microtrain.Sequential([layers.Conv2D(64, 1) for _ in range(4)],
                                 input_shape=(64, 64, 64))
    s = microtrain.TrainSession(wide)
    with pytest.raises(MicrotrainError, match="larger than the planner lays out") as error:
        s.compile("sgd", "mse", batch_size=1024)
    assert error.value.status == _native.MT_ERR_UNSUPPORTED
    s.compile("sgd", "mse", batch_size=2)  # the session is still usable
