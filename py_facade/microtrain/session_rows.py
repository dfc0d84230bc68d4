"""The rows of a step: checked whole before any is copied into the arena, and the outputs
read back (pure Python, MicroPython-safe). ``SessionRows`` is one part of ``Session``
(session.py); it uses the session's ``_inputs``, ``_outputs``, ``_loss``, ``_batch_size`` and
``_backend``.
"""

from . import _feed, metrics as _metrics
from ._shapes import element_count
from .backend import KIND_INPUT, KIND_TARGET


class SessionRows:
    """Input and target rows in, output rows and metrics out."""

    def _check_inputs(self, inputs, batch_size):
        """(n, per-input values for the backend) of checked input rows; nothing copied."""
        n = None
        values = _feed.input_values(inputs, len(self._inputs))
        for position, value in enumerate(values):
            rows, flat, _ = _feed.float_rows(value, self._inputs[position][1],
                                             "input %d" % position, batch_size)
            if n is not None and rows != n:
                raise ValueError("input %d has %d rows, input 0 has %d" % (position, rows, n))
            n = rows
            values[position] = flat
        return n, values

    def _check_targets(self, expecteds, n):
        """(values for the backend, rows for the metrics) of checked targets."""
        expecteds = _feed.target_value(expecteds)
        if self._loss.sparse_labels:
            rows, flat, metric_rows = _feed.label_rows(expecteds, self._outputs[0][1][-1],
                                                       self._batch_size)
            if rows != n:
                raise ValueError("got %d input rows but %d labels" % (n, rows))
        else:
            dims = self._outputs[0][1]
            try:
                rows, flat, metric_rows = _feed.float_rows(expecteds, dims, "expecteds",
                                                           self._batch_size)
            except ValueError as error:
                if len(dims) == 1 and dims[0] > 1 and _feed.looks_like_labels(expecteds):
                    raise ValueError("%s: these look like integer class labels, which need "
                                     "loss='sparse_categorical_crossentropy' ('scce'); "
                                     "%s takes rows of %d values (one-hot for classes)"
                                     % (error, self._loss.name, dims[0]))
                raise
            if rows != n:
                raise ValueError("got %d input rows but %d expected rows" % (n, rows))
        return flat, metric_rows

    def _step_rows(self, inputs, expecteds):
        """Check inputs and targets fully, then copy both; (n, target rows for metrics)."""
        n, values = self._check_inputs(inputs, self._batch_size)
        targets, metric_rows = self._check_targets(expecteds, n)
        for position, flat in enumerate(values):
            self._backend.write_rows(KIND_INPUT, position, 0, flat)
        self._backend.write_rows(KIND_TARGET, 0, 0, targets)
        return n, metric_rows

    def _output_rows(self, position, n):
        flat = self._backend.read_rows(position, n)
        dims = self._outputs[position][1]
        if hasattr(flat, "reshape"):
            return flat.reshape((n,) + dims)
        width = element_count(dims)
        return [flat[i * width:(i + 1) * width] for i in range(n)]

    def _update_metrics(self, metric_list, n, targets, reset):
        if not metric_list:
            return {}
        if hasattr(targets, "astype"):
            targets = targets.astype("int32" if self._loss.sparse_labels else "float32")
        return _metrics.update_all(metric_list, self._output_rows(0, n), targets, reset)
