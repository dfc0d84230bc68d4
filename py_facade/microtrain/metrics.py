"""Streaming metrics: ``reset_state()``, ``update_state(outputs, expecteds)``, ``result()``.

A metric accumulates over every ``update_state`` call until ``reset_state``.
``outputs`` are model output rows ``[n, ..., C]``; ``expecteds`` are target rows of
the same shape, or ``[n]`` integer labels for SparseCategoricalAccuracy.

The module runs under MicroPython: with numpy importable it vectorises, without
it the same rules run on plain lists of rows (``[[0.1, 0.9], ...]``) with loops.
Both paths break argmax ties toward the lowest index.
"""

from ._shapes import element_count

try:
    import numpy as _np
except ImportError:  # MicroPython: plain Python fallback below
    _np = None


def _use_numpy(*values):
    if _np is None:
        return False
    for value in values:
        if hasattr(value, "shape"):
            return True
    return False


def _argmax(row):
    best_index = 0
    best_value = row[0]
    for index in range(1, len(row)):
        if row[index] > best_value:
            best_index = index
            best_value = row[index]
    return best_index


def _check_same_length(outputs, expecteds):
    if len(outputs) != len(expecteds):
        raise ValueError("got %d output rows but %d expected rows" % (len(outputs),
                                                                       len(expecteds)))


def _numpy_pair(outputs, expecteds):
    outputs = _np.asarray(outputs)
    expecteds = _np.asarray(expecteds)
    if outputs.shape != expecteds.shape:
        raise ValueError("outputs have shape %s but expecteds have shape %s"
                         % (outputs.shape, expecteds.shape))
    return outputs, expecteds


class Metric:
    """Base class. Subclasses keep ``_total`` (a sum) and ``_count`` (its weight)."""

    default_name = None

    def __init__(self, name=None):
        self.name = name if name is not None else self.default_name
        self.reset_state()

    def reset_state(self):
        """Forget every update: ``result()`` is 0.0 until the next ``update_state``."""
        self._total = 0.0
        self._count = 0

    def result(self):
        """The metric over everything seen since the last reset (0.0 before any update)."""
        if self._count == 0:
            return 0.0
        return self._total / self._count

    def update_state(self, outputs, expecteds):
        """Add a batch: ``outputs`` as the model gives them, ``expecteds`` the targets
        (rows shaped like the outputs, or labels for a sparse loss).
        """
        raise NotImplementedError("%s does not define update_state()" % type(self).__name__)

    def check_compatible(self, output_shape, sparse_labels):
        """Raise ValueError unless the metric fits output 0 (one sample's shape) and targets
        that are labels (``sparse_labels``) or rows shaped like the output."""
        if sparse_labels:
            raise ValueError("metric %r compares output rows with target rows, but the loss "
                             "takes integer labels" % self.name)

    def __repr__(self):
        return "%s(name=%r)" % (type(self).__name__, self.name)


class _Streamed(Metric):
    """A built-in metric: numpy arrays in one vectorised pass (``_numpy_sums``: the step's
    total and count), plain sequences row by row (``_add_row``), the same sums either way."""

    def update_state(self, outputs, expecteds):
        if _use_numpy(outputs, expecteds):
            total, count = self._numpy_sums(outputs, expecteds)
            self._total += total
            self._count += count
            return
        _check_same_length(outputs, expecteds)
        for output_row, expected_row in zip(outputs, expecteds):
            self._add_row(output_row, expected_row)


class _PerRow(_Streamed):
    """A hit (1) or a miss (0) per row: ``_hit(output_row, expected)``."""

    def _add_row(self, output_row, expected):
        if self._hit(output_row, expected):
            self._total += 1.0
        self._count += 1


class _PerElement(_Streamed):
    """A score per element of rows shaped like the output: ``_scores`` (numpy, every element
    at once) and ``_score`` (one element) compute the same value."""

    def _numpy_sums(self, outputs, expecteds):
        outputs, expecteds = _numpy_pair(outputs, expecteds)
        scores = self._scores(outputs, expecteds)
        return float(scores.sum()), int(scores.size)

    def _add_row(self, output_row, expected_row):
        _check_same_length(output_row, expected_row)
        for output, expected in zip(output_row, expected_row):
            self._total += self._score(output, expected)
            self._count += 1


class CategoricalAccuracy(_PerRow):
    """Fraction of rows whose output argmax equals the one-hot target's argmax."""

    default_name = "categorical_accuracy"

    def check_compatible(self, output_shape, sparse_labels):
        Metric.check_compatible(self, output_shape, sparse_labels)
        if output_shape[-1] < 2:
            raise ValueError("metric %r needs at least 2 classes in the last output "
                             "dimension, the output has shape %r" % (self.name, output_shape))

    def _numpy_sums(self, outputs, expecteds):
        outputs, expecteds = _numpy_pair(outputs, expecteds)
        predicted = outputs.reshape(-1, outputs.shape[-1]).argmax(axis=1)
        actual = expecteds.reshape(-1, expecteds.shape[-1]).argmax(axis=1)
        return float((predicted == actual).sum()), int(predicted.shape[0])

    def _hit(self, output_row, expected_row):
        return _argmax(output_row) == _argmax(expected_row)


class SparseCategoricalAccuracy(_PerRow):
    """Fraction of rows whose output argmax equals the integer label."""

    default_name = "sparse_categorical_accuracy"

    def check_compatible(self, output_shape, sparse_labels):
        if not sparse_labels:
            raise ValueError("metric %r compares with integer labels, but the loss takes "
                             "target rows shaped like the output; use "
                             "'categorical_accuracy'" % self.name)
        if len(output_shape) != 1 or output_shape[0] < 2:
            raise ValueError("metric %r needs a 1-D output of at least 2 classes, the output "
                             "has shape %r" % (self.name, output_shape))

    def _numpy_sums(self, outputs, expecteds):
        outputs = _np.asarray(outputs)
        labels = _np.asarray(expecteds).reshape(-1)
        if outputs.ndim != 2 or outputs.shape[0] != labels.shape[0]:
            raise ValueError("outputs of shape %s do not match %d labels"
                             % (outputs.shape, labels.shape[0]))
        return float((outputs.argmax(axis=1) == labels).sum()), int(labels.shape[0])

    def _hit(self, output_row, label):
        return _argmax(output_row) == int(label)


class BinaryAccuracy(_PerElement):
    """Fraction of elements where output and target fall on the same side of ``threshold``."""

    default_name = "binary_accuracy"

    def __init__(self, name=None, threshold=0.5):
        self.threshold = float(threshold)
        Metric.__init__(self, name)

    def _scores(self, outputs, expecteds):
        return (outputs > self.threshold) == (expecteds > self.threshold)

    def _score(self, output, expected):
        return 1.0 if (output > self.threshold) == (expected > self.threshold) else 0.0


class MeanSquaredError(_PerElement):
    """Mean over every element of (output - target)^2."""

    default_name = "mean_squared_error"

    def _scores(self, outputs, expecteds):
        difference = outputs.astype(_np.float64) - expecteds
        return difference * difference

    def _score(self, output, expected):
        difference = float(output) - float(expected)
        return difference * difference


class MeanAbsoluteError(_PerElement):
    """Mean over every element of |output - target|."""

    default_name = "mean_absolute_error"

    def _scores(self, outputs, expecteds):
        return _np.abs(outputs.astype(_np.float64) - expecteds)

    def _score(self, output, expected):
        return abs(float(output) - float(expected))


ALIASES = {
    "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "binary_accuracy": BinaryAccuracy,
    "mse": MeanSquaredError,
    "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError,
    "mean_absolute_error": MeanAbsoluteError,
}


def update_all(metric_list, outputs, expecteds, reset):
    """Feed one step's rows to every metric (after a reset when ``reset``); {name: result}."""
    results = {}
    for metric in metric_list:
        if reset:
            metric.reset_state()
        metric.update_state(outputs, expecteds)
        results[metric.name] = metric.result()
    return results


# Keras's "accuracy": which accuracy it is depends on the loss (and the output)
LOSS_DEPENDENT = ("accuracy", "acc")


def accuracy_for(loss, output_dims=None):
    """The accuracy class Keras's "accuracy" means for ``loss`` (a ``microtrain.losses``
    object): sparse categorical for integer labels, binary for binary cross-entropy,
    categorical for categorical cross-entropy; for any other loss, binary when output 0
    has one value per sample, else categorical."""
    if loss.sparse_labels:
        return SparseCategoricalAccuracy
    if loss.name == "binary_crossentropy":
        return BinaryAccuracy
    if loss.name == "categorical_crossentropy":
        return CategoricalAccuracy
    if output_dims is not None and element_count(output_dims) == 1:
        return BinaryAccuracy
    return CategoricalAccuracy


def get(identifier, loss=None, output_dims=None):
    """A Metric from an instance or a name (see ALIASES); a name also names the result.
    "accuracy" (or "acc") is resolved from ``loss`` as Keras does (``accuracy_for``) and
    keeps the name given."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in ALIASES:
        return ALIASES[identifier.lower()](name=identifier.lower())
    if isinstance(identifier, str) and identifier.lower() in LOSS_DEPENDENT:
        if loss is None:
            raise ValueError("metric %r depends on the loss: give it to compile(), or name the "
                             "accuracy (categorical_accuracy, sparse_categorical_accuracy, "
                             "binary_accuracy)" % identifier)
        return accuracy_for(loss, output_dims)(name=identifier.lower())
    raise ValueError("unknown metric %r; expected a microtrain.metrics.Metric or one of %s"
                     % (identifier, ", ".join(sorted(list(ALIASES) + list(LOSS_DEPENDENT)))))


def get_list(metrics, loss=None, output_dims=None):
    """compile()'s metrics argument (None, one name or Metric, or a sequence) as Metrics;
    ``loss`` and ``output_dims`` resolve "accuracy" (``get``)."""
    if metrics is None:
        return []
    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    return [get(m, loss, output_dims) for m in metrics]
