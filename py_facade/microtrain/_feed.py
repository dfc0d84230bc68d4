"""Checking the caller's rows before they reach the core (MicroPython-safe).

Every check happens here, before any core call, so a refused step changes nothing:
inputs and targets must be ``[n, *sample_shape]`` with 1 <= n <= B of a real dtype
(converted to float32 on copy), labels must be integers in ``[0, classes)``, and every
input and the targets must agree on n.

Two kinds of rows arrive. Arrays with ``shape`` and ``dtype`` (numpy) are checked by shape
and passed to the backend whole. Anything else is a sequence of n rows, each a flat sequence
of the sample's D values (``array('f')``, a list, a memoryview) or, when D is 1, a number;
labels a sequence of ints. Those are checked row by row, with the same rules and messages on
CPython and MicroPython, and flattened into ``array('f')`` / ``array('i')`` here (numpy
views of them on CPython).

Each function returns ``(n, values, rows_for_metrics)``: the row count, what the backend
copies, and the rows in a form the metrics read (a float32 array ``[n, ...]`` or a list).
"""

from array import array

try:
    import numpy as _np
except ImportError:  # MicroPython
    _np = None

from ._platform import is_integer
from ._shapes import element_count

_REAL_KINDS = "biuf"  # bool, signed, unsigned, float: converted to float32 on copy
_INT32_MIN = -2147483648
_INT32_MAX = 2147483647


def _shape_text(dims):
    return "(n, %s)" % ", ".join(str(d) for d in dims)


def _is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype")


def check_row_count(rows, what, batch_size):
    if rows > batch_size:
        raise ValueError("%s has %d rows, more than the batch size %d given to compile()"
                         % (what, rows, batch_size))
    if rows < 1:
        raise ValueError("%s has no rows" % what)
    return rows


def input_values(inputs, num_inputs):
    """The per-input values of a step: ``inputs`` itself for a one-input model, or a list
    or tuple of one array per input."""
    if isinstance(inputs, (list, tuple)) and inputs and all(_is_array(a) for a in inputs):
        values = list(inputs)
    elif num_inputs == 1:
        values = [inputs]
    elif isinstance(inputs, (list, tuple)):
        values = list(inputs)
    else:
        values = [inputs]
    if len(values) != num_inputs:
        raise ValueError("the model has %d input(s), got %d array(s)" % (num_inputs,
                                                                          len(values)))
    return values


def target_value(expecteds):
    """The targets of output 0 (the only one with a loss)."""
    if isinstance(expecteds, (list, tuple)) and expecteds and \
            all(_is_array(a) for a in expecteds):
        if len(expecteds) != 1:
            raise ValueError("the loss applies to output 0 only: give one expected array, "
                             "got %d" % len(expecteds))
        return expecteds[0]
    return expecteds


def float_rows(value, dims, what, batch_size):
    """(n, values, metric rows) of float rows [n, *dims]: an array checked by shape, or a
    sequence of rows checked row by row (the same rules and messages on every platform).
    Where a sample has more than one dimension, flat rows [n, D] (D the product of dims,
    the layout of raw files and of the board's rows) are taken too: an array is reshaped
    (a view, no copy, when it is contiguous), a sequence's rows are flat already."""
    if _is_array(value):
        if value.dtype.kind not in _REAL_KINDS:
            raise ValueError("%s has dtype %s, which cannot be converted to float32"
                             % (what, value.dtype))
        width = element_count(dims)
        if len(dims) > 1 and len(value.shape) == 2 and value.shape[1] == width:
            value = value.reshape((value.shape[0],) + tuple(dims))
        if len(value.shape) != 1 + len(dims) or tuple(value.shape[1:]) != tuple(dims):
            flat = " or flat rows (n, %d)" % width if len(dims) > 1 else ""
            raise ValueError("%s must have shape %s%s, got %s"
                             % (what, _shape_text(dims), flat, tuple(value.shape)))
        n = check_row_count(value.shape[0], what, batch_size)
        return n, value, value
    width = element_count(dims)
    try:
        if value is None or isinstance(value, (int, float, str, bytes)):
            raise TypeError
        n = len(value)
    except TypeError:
        raise ValueError("%s must be rows [n, %s] (an array, or a sequence of rows of %d "
                         "values), got %s" % (what, ", ".join(str(d) for d in dims), width,
                                              type(value).__name__))
    check_row_count(n, what, batch_size)
    flat = array("f")
    for index in range(n):
        row = value[index]
        if width == 1 and isinstance(row, (int, float)) and not isinstance(row, bool):
            flat.append(row)
            continue
        try:
            size = len(row)
        except TypeError:
            raise ValueError("%s row %d is a %s, not a sequence of %d values"
                             % (what, index, type(row).__name__, width))
        if size != width:
            raise ValueError("%s row %d has %d values, a sample of shape %s has %d"
                             % (what, index, size, tuple(dims), width))
        for item in row:
            if not isinstance(item, (int, float)) and not (
                    _is_array(item) and item.dtype.kind in _REAL_KINDS):
                raise ValueError("%s row %d holds a %s, which cannot be converted to "
                                 "float32" % (what, index, type(item).__name__))
        flat.extend(array("f", [float(item) for item in row]))
    if _np is not None:  # what the metrics and the ctypes backend read
        flat = _np.frombuffer(flat, dtype=_np.float32).reshape((n,) + tuple(dims))
        return n, flat, flat
    return n, flat, value


def looks_like_labels(value):
    """True for integer class labels: an integer array [n] or [n, 1], or a sequence of ints
    (what a float loss is given by mistake instead of one-hot rows)."""
    if _is_array(value):
        shape = tuple(value.shape)
        return value.dtype.kind in "iu" and (len(shape) == 1 or (len(shape) == 2 and
                                                                  shape[1] == 1))
    try:
        items = [value[i] for i in range(min(len(value), 8))]
    except TypeError:
        return False
    return bool(items) and all(is_integer(item) for item in items)


def label_rows(value, classes, batch_size):
    """(n, values, metric rows) of integer labels in [0, classes), shape (n,) or (n, 1).
    A list is checked label by label (as under MicroPython: True or 3.0 are not labels),
    not through numpy, which would turn [True, 0] into [1, 0]."""
    if _is_array(value):
        if value.dtype.kind not in "iu":
            raise ValueError("sparse categorical cross-entropy takes integer labels, got "
                             "dtype %s" % value.dtype)
        if len(value.shape) == 2 and value.shape[1] == 1:
            value = value[:, 0]
        if len(value.shape) != 1:
            raise ValueError("labels must have shape (n,) or (n, 1), got %s"
                             % (tuple(value.shape),))
        n = check_row_count(value.shape[0], "labels", batch_size)
        low, high = int(value.min()), int(value.max())
        if low < 0 or high >= classes:
            raise ValueError("labels must lie in [0, %d), got values from %d to %d"
                             % (classes, low, high))
        return n, value, value
    if value is None or isinstance(value, (int, float, str, bytes)):
        raise ValueError("labels must be a sequence of integers, got %s"
                         % type(value).__name__)
    n = len(value)
    check_row_count(n, "labels", batch_size)
    flat = array("i")
    for index in range(n):
        label = value[index]
        if isinstance(label, (list, tuple)) and len(label) == 1:
            label = label[0]
        if not is_integer(label):
            raise ValueError("sparse categorical cross-entropy takes integer labels; label "
                             "%d is %r" % (index, label))
        label = int(label)
        if label < 0 or label >= classes:
            raise ValueError("labels must lie in [0, %d), got %d at row %d"
                             % (classes, label, index))
        flat.append(label)
    if _np is not None:
        flat = _np.frombuffer(flat, dtype=_np.int32)
    return n, flat, flat


def concatenate(pieces):
    """Row blocks of one output joined: a numpy array, or one list of rows."""
    if not pieces:
        return []
    if _np is not None and _is_array(pieces[0]):
        return _np.concatenate(pieces)
    joined = []
    for piece in pieces:
        joined.extend(piece)
    return joined


def empty_rows(dims):
    """What an output of no rows looks like: a [0, ...] array with numpy, else []."""
    if _np is not None:
        return _np.zeros((0,) + tuple(dims), dtype=_np.float32)
    return []
