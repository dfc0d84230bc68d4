"""Copying the caller's rows into the session's arena buffers (``TrainSession`` methods).

Checks happen here, before any C call: the rows must be [n, *sample_shape] with
1 <= n <= B of a real dtype (converted to float32 on copy), labels must be
integers in range, and every input and the targets must agree on n.
"""

import numpy as np

_REAL_KINDS = "biuf"  # bool, signed, unsigned, float: converted to float32 on copy


def _shape_text(dims):
    return "(n, %s)" % ", ".join(str(d) for d in dims)


class FeedMixin:
    """Input and target loading for ``TrainSession``."""

    # ---------------------------------------------------------------- data in

    def _as_input_list(self, inputs):
        if isinstance(inputs, (list, tuple)) and inputs and \
                all(isinstance(a, np.ndarray) for a in inputs):
            arrays = list(inputs)
        else:
            arrays = [inputs]
        if len(arrays) != len(self._inputs):
            raise ValueError("the model has %d input(s), got %d array(s)"
                             % (len(self._inputs), len(arrays)))
        return arrays

    def _rows_of(self, array, dims, what):
        """Check ``array`` is [n, *dims] with 1 <= n <= B of a real dtype; return n."""
        if array.dtype.kind not in _REAL_KINDS:
            raise ValueError("%s has dtype %s, which cannot be converted to float32"
                             % (what, array.dtype))
        if array.ndim != 1 + len(dims) or tuple(array.shape[1:]) != dims:
            raise ValueError("%s must have shape %s, got %s"
                             % (what, _shape_text(dims), tuple(array.shape)))
        return self._check_row_count(array.shape[0], what)

    def _check_row_count(self, rows, what):
        if rows > self._batch_size:
            raise ValueError("%s has %d rows, more than the batch size %d given to compile()"
                             % (what, rows, self._batch_size))
        if rows < 1:
            raise ValueError("%s has no rows" % what)
        return rows

    def _load_inputs(self, inputs):
        n = None
        for position, (array, view) in enumerate(zip(self._as_input_list(inputs),
                                                     self._input_views)):
            array = np.asarray(array)
            what = "input %d" % position
            rows = self._rows_of(array, self._inputs[position]["dims"], what)
            if n is not None and rows != n:
                raise ValueError("input %d has %d rows, input 0 has %d" % (position, rows, n))
            n = rows
            view[:rows] = array
        return n

    def _load_targets(self, expecteds, n):
        if isinstance(expecteds, (list, tuple)) and expecteds and \
                all(isinstance(a, np.ndarray) for a in expecteds):
            if len(expecteds) != 1:
                raise ValueError("the loss applies to output 0 only: give one expected array, "
                                 "got %d" % len(expecteds))
            expecteds = expecteds[0]
        array = np.asarray(expecteds)
        if self._loss.sparse_labels:
            self._load_labels(array, n)
            return
        rows = self._rows_of(array, self._outputs[0]["dims"], "expecteds")
        if rows != n:
            raise ValueError("got %d input rows but %d expected rows" % (n, rows))
        self._target_view[:n] = array

    def _load_labels(self, labels, n):
        if labels.dtype.kind not in "iu":
            raise ValueError("sparse categorical cross-entropy takes integer labels, got dtype "
                             "%s" % labels.dtype)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1:
            raise ValueError("labels must have shape (n,) or (n, 1), got %s"
                             % (tuple(labels.shape),))
        rows = self._check_row_count(labels.shape[0], "labels")
        if rows != n:
            raise ValueError("got %d input rows but %d labels" % (n, rows))
        classes = self._outputs[0]["dims"][-1]
        low, high = int(labels.min()), int(labels.max())
        if low < 0 or high >= classes:
            raise ValueError("labels must lie in [0, %d), got values from %d to %d"
                             % (classes, low, high))
        self._target_view[:n] = labels
