"""The Python facade's bad-input matrix (issue 6), rows: what train_step, infer and the
loaders are given (bad_input_setup.py says what every mistake must do).

Inputs and targets of dtypes that are not real numbers, None and ragged rows, labels that are
not integers or out of range, wrong shapes and row counts, NaN and infinity. Arrays the facade
accepts in any layout (strided, transposed, negative strides, Fortran order, other real dtypes)
are checked bit for bit against the same data given as a contiguous float32 copy.
"""

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError
from microtrain.backend import _native

from bad_input_setup import (BATCH, CLASSES, FEATURES, assert_same_weights, data, same_step,
                             session)


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
