"""The ctypes backend's lean path for the commonest step (``Backend.fast_steps``): one float
input and float targets given as float32 numpy arrays of the compiled shapes, the input read
where it lies when it is large enough. Any other step takes the session's full checks.
"""

import ctypes

import numpy as np

from . import _native

_F32 = np.dtype(np.float32)

# Rows of at least this many bytes are read in place rather than copied into the arena:
# asking numpy for an array's address (x.ctypes.data) takes about 1 us, what copying 32 KB
# takes; MLP 784-128-10's batch of 32 (100 KB) saves 1.5-2.5 us a step.
IN_PLACE_BYTES = 32768


class FastSteps:
    """A lean path for the commonest step, made once per compiled session: one float input,
    float targets, and both given as float32 numpy arrays of exactly the shapes (n, *dims)
    with 1 <= n <= B. ``write(x, y)`` copies the targets into the arena, and x too unless it
    is C-contiguous and at least IN_PLACE_BYTES: then the step reads x's rows where they are
    (mt_session_*_step_rows, which copy only what must be: rows inside the arena or not
    16-byte aligned); it returns n. For anything else it copies nothing and returns 0, so the
    session's full checks run as before (they would accept exactly these arrays and step on
    the same values). ``step(functions, n)`` calls ``train`` or ``eval`` (the C step on the
    arena's rows, and on the caller's) with a reused pointer to the loss: None on success,
    else the status. The caller holds x from write() until step() returns, and step()
    forgets its address."""

    __slots__ = ("_x", "_y", "_x_dims", "_y_dims", "_batch", "_handle", "_loss", "_loss_ref",
                 "_rows", "_row_bytes", "_in_place", "train", "eval")

    def __init__(self, backend, input_dims, target_dims):
        batch = backend._inputs[0].shape[0]
        self._x_dims, self._y_dims, self._batch = tuple(input_dims), tuple(target_dims), batch
        self._x = backend._inputs[0].reshape((batch,) + self._x_dims)
        self._y = backend._target.reshape((batch,) + self._y_dims)
        self._handle, self._loss = backend._session, backend._loss
        self._loss_ref = ctypes.byref(backend._loss)
        self._rows = (ctypes.c_void_p * 1)()  # input 0's rows, read in place by the next step
        self._row_bytes = 4 * int(np.prod(self._x_dims, dtype=np.int64))
        self._in_place = False
        self.train = (_native.resolve(_native.mt_session_train_step),
                      _native.resolve(_native.mt_session_train_step_rows))
        self.eval = (_native.resolve(_native.mt_session_eval_step),
                     _native.resolve(_native.mt_session_eval_step_rows))

    def write(self, x, y):
        if type(x) is not np.ndarray or type(y) is not np.ndarray:
            return 0
        if x.dtype is not _F32 or y.dtype is not _F32:
            return 0
        shape = x.shape
        if not shape or shape[1:] != self._x_dims or y.shape != (shape[0],) + self._y_dims:
            return 0
        n = shape[0]
        if not 0 < n <= self._batch:
            return 0
        if n * self._row_bytes >= IN_PLACE_BYTES and x.flags.c_contiguous:
            self._rows[0] = x.ctypes.data
            self._in_place = True
        else:
            np.copyto(self._x[:n] if n < self._batch else self._x, x)
            self._in_place = False
        np.copyto(self._y[:n] if n < self._batch else self._y, y)
        return n

    def step(self, functions, n):
        """(loss, None) after a successful C step, or (None, status)."""
        if self._in_place:
            self._in_place = False
            status = functions[1](self._handle, n, self._rows, self._loss_ref)
            self._rows[0] = None
        else:
            status = functions[0](self._handle, n, self._loss_ref)
        if status:
            return None, status
        return self._loss.value, None
