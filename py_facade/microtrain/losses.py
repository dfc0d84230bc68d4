"""Loss settings for ``TrainSession.compile``.

The loss is computed in the C core on model output 0 (micro_core/src/losses.h).
Per-sample losses follow Keras / onert:

    MeanSquaredError              mean over features of (p - y)^2
    MeanAbsoluteError             mean over features of |p - y|
    CategoricalCrossentropy       -sum over classes of y * log p       (p are probabilities)
    SparseCategoricalCrossentropy -log p[label]                        (int32 labels)
    BinaryCrossentropy            mean over features of -(y log p + (1 - y) log(1 - p))

``reduction="mean"`` averages the per-sample losses over the valid rows of a
step, ``"sum"`` adds them. When the model ends in Softmax (Sigmoid) the core
fuses it with (sparse) categorical (binary) cross-entropy and works from the
logits, as torch's log_softmax / binary_cross_entropy_with_logits do.
Pure Python (its one import: get's lookup, _named.py), so MicroPython can run it.
"""

from ._named import from_name

REDUCTIONS = ("mean", "sum")


class Loss:
    """Base class. ``name`` is the core's loss; ``sparse_labels`` says targets are labels."""

    name = None
    sparse_labels = False

    def __init__(self, reduction="mean"):
        if reduction not in REDUCTIONS:
            raise ValueError("unknown reduction %r; expected 'mean' or 'sum'" % (reduction,))
        self.reduction = reduction

    def __repr__(self):
        return "%s(reduction=%r)" % (type(self).__name__, self.reduction)


class MeanSquaredError(Loss):
    name = "mse"


class MeanAbsoluteError(Loss):
    name = "mae"


class CategoricalCrossentropy(Loss):
    name = "categorical_crossentropy"


class SparseCategoricalCrossentropy(Loss):
    name = "sparse_categorical_crossentropy"
    sparse_labels = True


class BinaryCrossentropy(Loss):
    name = "binary_crossentropy"


# The one vocabulary of loss names: compile(), every CLI subcommand and the firmware
# generator take these (the CLI also takes onert_train's numeric codes).
ALIASES = {
    "mse": MeanSquaredError,
    "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError,
    "mean_absolute_error": MeanAbsoluteError,
    "cce": CategoricalCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "scce": SparseCategoricalCrossentropy,
    "sparse_cce": SparseCategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "bce": BinaryCrossentropy,
    "binary_crossentropy": BinaryCrossentropy,
}


def get(identifier):
    """A Loss from an instance or a name (see ALIASES) with reduction "mean"."""
    return from_name(identifier, Loss, ALIASES, "loss", "a microtrain.losses.Loss")
