"""``sparse_update(..., calibration=(x, y))``: a scheme chosen by each layer's measured
contribution (tiny-training's contribution analysis) instead of the published heuristic.

tiny-training's contribution analysis (Lin et al. 2022) fine-tunes the classifier with one
candidate — the biases of the last layers, or one layer's weights at a channel ratio —
measures the accuracy gain over the classifier alone, and picks the candidates whose gains,
assumed additive, are largest under the memory budget. Here, on rows the caller holds out for it:

1. the anchor: the last layer with weights, whole if that fits the budget, else its bias
   (every candidate's contribution is measured beside it, as tiny-training's beside the
   classifier);
2. per other layer with weights, the candidates: its bias, and its weights whole; a
   pointwise layer's (Dense, 1x1 Conv2D) also by channel fraction 1/8, 1/4, 1/2. Each is
   fine-tuned with the anchor from the same initial weights, ``calibration_epochs`` epochs
   over the first half of the calibration rows (after a permutation by ``seed``), with the
   optimizer, loss and batch size the scheme is planned for; its contribution is the drop
   of the mean loss on the other half against the anchor's alone. The loss, not accuracy:
   on a few dozen rows accuracy moves in steps of 1/n and ties, and the loss is defined for
   every task (a regression's too);
3. greedily, by contribution per byte (the candidate's arena bytes over the anchor's, the
   core's plan), each candidate with a positive contribution is added, or replaces the same
   layer's smaller one when it contributes more, while the plan of the whole scheme fits.

Every run is deterministic (the core's step is, and the split and order follow ``seed``), so
the same model, rows and seed give the same scheme.
"""

from .._platform import is_integer
from ..sparse_scheme import SparseScheme, nothing_fits
from ..train_session import TrainSession

FRACTIONS = (0.125, 0.25, 0.5)


def checked_calibration(session, calibration, batch_size):
    """(x, y) as float32 arrays, or ValueError naming what is wrong with ``calibration``."""
    import numpy as np
    if not isinstance(calibration, (tuple, list)) or len(calibration) != 2:
        raise ValueError("calibration is a pair (x, y) of input rows and their targets; got %s"
                         % type(calibration).__name__)
    arrays = []
    for name, value in zip("xy", calibration):
        try:
            array = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError) as error:
            raise ValueError("calibration %s is not an array of numbers: %s" % (name, error))
        if array.ndim == 0:
            raise ValueError("calibration %s is one number; it needs one row per example"
                             % name)
        if not np.all(np.isfinite(array)):
            raise ValueError("calibration %s holds NaN or infinite values" % name)
        arrays.append(array)
    x, y = arrays
    expected = tuple(session._inputs[0][1])
    if tuple(x.shape[1:]) != expected:
        raise ValueError("calibration x rows have shape %r; the model's input is %r"
                         % (tuple(x.shape[1:]), expected))
    if len(x) != len(y):
        raise ValueError("calibration x has %d rows but y has %d" % (len(x), len(y)))
    if len(x) < 2 * batch_size:
        raise ValueError("calibration needs at least 2 x batch_size = %d rows (half to train "
                         "each candidate, half to measure it); got %d"
                         % (2 * batch_size, len(x)))
    return x, y


def _candidates(layers, anchor):
    """(layer, value) pairs to measure, the anchor's layer left out."""
    found = []
    for layer, bias, pointwise in layers:
        if layer == anchor:
            continue
        if bias:
            found.append((layer, "bias"))
        if pointwise:
            found += [(layer, fraction) for fraction in FRACTIONS]
        found.append((layer, "all"))
    return found


class _Trial(object):
    """Fine-tunes a scheme on the calibration's first half and measures the second's loss."""

    def __init__(self, session, x, y, batch_size, optimizer, loss, epochs, seed):
        import numpy as np
        order = np.random.default_rng(seed).permutation(len(x))
        half = len(x) // 2
        self.train = (x[order[:half]], y[order[:half]])
        self.held = (x[order[half:]], y[order[half:]])
        self.image = session._current_image()  # every trial starts from the same weights
        self.batch_size, self.optimizer, self.loss, self.epochs = (batch_size, optimizer, loss,
                                                                   epochs)

    def _batches(self, rows):
        x, y = rows
        for first in range(0, len(x), self.batch_size):
            yield x[first:first + self.batch_size], y[first:first + self.batch_size]

    def loss_after(self, trainable):
        with TrainSession(self.image) as session:
            session.compile(self.optimizer, self.loss, batch_size=self.batch_size,
                            trainable=dict(trainable))
            for _ in range(self.epochs):
                for x, y in self._batches(self.train):
                    session.train_step(x, y)
            total, count = 0.0, 0
            for x, y in self._batches(self.held):
                total += session.eval_step(x, y)["loss"][0] * len(x)
                count += len(x)
        return total / count


def choose(session, layers, budget, batch_size, optimizer, loss, calibration, epochs, seed,
           total, names):
    """The calibrated scheme (the module doc); ``total(pairs)`` is the core's plan in bytes,
    ``names`` (optimizer name, loss name) what the scheme records."""
    if not is_integer(epochs) or epochs < 1:
        raise ValueError("calibration_epochs is a positive integer; got %r" % (epochs,))
    if not is_integer(seed) or seed < 0:
        raise ValueError("seed (the calibration rows' permutation) is an integer >= 0; got %r"
                         % (seed,))
    x, y = checked_calibration(session, calibration, batch_size)
    last, bias, _ = layers[0]
    anchor = (last, "all")
    if total([anchor]) > budget and bias:
        anchor = (last, "bias")
    anchor_bytes = total([anchor])
    if anchor_bytes > budget:
        raise nothing_fits(budget, batch_size, last, anchor[1], anchor_bytes)
    try:
        trial = _Trial(session, x, y, batch_size, optimizer, loss, int(epochs), int(seed))
        base = trial.loss_after([anchor])
    except ValueError as error:  # targets the loss cannot take, named by the session
        raise ValueError("calibration: %s" % error)
    measured = []  # (contribution per byte, contribution, extra bytes, layer, value)
    for layer, value in _candidates(layers, last):
        pairs = [anchor, (layer, value)]
        extra = total(pairs) - anchor_bytes
        if anchor_bytes + extra > budget:
            continue  # alone beside the anchor it does not fit: never in a scheme that does
        gain = base - trial.loss_after(pairs)
        if gain > 0:
            measured.append((gain / max(extra, 1), gain, extra, layer, value))
    measured.sort(key=lambda row: (-row[0], row[2], -row[3], str(row[4])))
    chosen, gains, used = dict([anchor]), {}, anchor_bytes
    for _, gain, _, layer, value in measured:
        if layer in gains and gain <= gains[layer]:
            continue
        trial_scheme = dict(chosen)
        trial_scheme[layer] = value
        bytes_needed = total(list(trial_scheme.items()))
        if bytes_needed <= budget:
            chosen, used = trial_scheme, bytes_needed
            gains[layer] = gain
    return SparseScheme(list(chosen.items()), budget_bytes=budget, total_bytes=used,
                        batch_size=batch_size, optimizer=names[0], loss=names[1])
