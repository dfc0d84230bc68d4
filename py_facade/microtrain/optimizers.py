"""Optimizer settings for ``TrainSession.compile``.

These objects only carry hyper-parameters; the update itself runs in the C core
with PyTorch's formulas (micro_core/src/optimizers.h). Pure Python (its one import: get's
lookup, _named.py), so MicroPython can run it.

    SGD:   g' = g + weight_decay * w
           momentum > 0: buf = momentum * buf + g'  (buf starts at g' like torch)
           w -= learning_rate * (buf if momentum > 0 else g')
    Adam:  PyTorch Adam, L2 weight decay added to the gradient, epsilon outside
           the square root: w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
    AdamW: as Adam, with decoupled decay w *= 1 - lr * weight_decay first.

Adam's epsilon defaults to PyTorch's 1e-8 (Keras uses 1e-7): the core is
checked against PyTorch, and a script moved from torch.optim keeps its numbers.
"""

from ._named import from_name


def _check_range(name, value, low, high, low_inclusive, high_inclusive):
    value = float(value)
    if value != value:
        raise ValueError("%s must be a number, got NaN" % name)
    too_low = value < low if low_inclusive else value <= low
    too_high = value > high if high_inclusive else value >= high
    if too_low or too_high:
        raise ValueError("%s must be in %s%s, %s%s, got %r" % (
            name, "[" if low_inclusive else "(", low, high, "]" if high_inclusive else ")",
            value))
    return value


# The core takes float32: a larger value would arrive as infinity and be refused there
# with a bare "bad argument", so it is refused here with its name.
_FLOAT32_MAX = 3.4028234663852886e38


def _check_learning_rate(learning_rate):
    return _check_range("learning_rate", learning_rate, 0.0, _FLOAT32_MAX, False, True)


def _check_weight_decay(weight_decay):
    return _check_range("weight_decay", weight_decay, 0.0, _FLOAT32_MAX, True, True)


class Optimizer:
    """Base class. ``name`` is what the core calls the algorithm."""

    name = None

    def get_config(self):
        """The optimizer's settings as a dict of its constructor's arguments."""
        raise NotImplementedError("%s does not define get_config()" % type(self).__name__)

    def __repr__(self):
        items = sorted(self.get_config().items())
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in items))


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and L2 weight decay."""

    name = "sgd"

    def __init__(self, learning_rate=0.01, momentum=0.0, weight_decay=0.0):
        self.learning_rate = _check_learning_rate(learning_rate)
        self.momentum = _check_range("momentum", momentum, 0.0, 1.0, True, False)
        self.weight_decay = _check_weight_decay(weight_decay)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "momentum": self.momentum,
                "weight_decay": self.weight_decay}


class Adam(Optimizer):
    """Adam as torch.optim.Adam (epsilon default 1e-8), weight decay as L2 on the gradient."""

    name = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.0):
        self.learning_rate = _check_learning_rate(learning_rate)
        self.beta1 = _check_range("beta1", beta1, 0.0, 1.0, True, False)
        self.beta2 = _check_range("beta2", beta2, 0.0, 1.0, True, False)
        self.epsilon = _check_range("epsilon", epsilon, 0.0, _FLOAT32_MAX, False, True)
        self.weight_decay = _check_weight_decay(weight_decay)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "beta1": self.beta1, "beta2": self.beta2,
                "epsilon": self.epsilon, "weight_decay": self.weight_decay}


class AdamW(Adam):
    """AdamW as torch.optim.AdamW: decoupled weight decay (default 0.01 like torch)."""

    name = "adamw"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.01):
        Adam.__init__(self, learning_rate, beta1, beta2, epsilon, weight_decay)


ALIASES = {"sgd": SGD, "adam": Adam, "adamw": AdamW}


def get(identifier):
    """An Optimizer from an instance or a name ("sgd", "adam", "adamw") with defaults."""
    return from_name(identifier, Optimizer, ALIASES, "optimizer", "an Optimizer")
