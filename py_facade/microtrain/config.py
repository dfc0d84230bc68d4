"""The one place an ``mt_train_config`` is built (MicroPython-safe).

Names become the core's codes here, defaults are the core's (``mt_train_config_init``), and
every backend, the firmware generator and the tools take the dict ``make_config`` returns
(fields: ``microtrain.backend.CONFIG_FIELDS``). The C enum values are checked against
microtrain.h by tests/test_native_bindings.py.
"""

OPTIMIZER_CODES = {"sgd": 0, "adam": 1, "adamw": 2}
LOSS_CODES = {"mse": 0, "mae": 1, "categorical_crossentropy": 2,
              "sparse_categorical_crossentropy": 3, "binary_crossentropy": 4}
REDUCTION_CODES = {"mean": 0, "sum": 1}

# mt_train_config_init's values for the fields an optimizer object does not set
CORE_DEFAULTS = {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
                 "momentum": 0.0, "weight_decay": 0.0, "proximal_mu": 0.0}

# compile()'s defaults, which every CLI subcommand and the firmware generator share
DEFAULT_OPTIMIZER = "sgd"
DEFAULT_LOSS = "mse"
DEFAULT_BATCH_SIZE = 16

INT32_MAX = 2147483647
MAX_BATCH_SIZE = 65535      # MT_MAX_BATCH_SIZE
MAX_OPS = 256               # MT_MAX_OPS


def make_config(optimizer, loss, batch_size, num_trainable_ops=-1, trainable_op_mask=None,
                biases_only=0, accumulate_gradients=False, guard_gradients=False,
                proximal_mu=0.0, trainable_op_channels=None):
    """The config dict of ``microtrain.backend.CONFIG_FIELDS`` for ``microtrain.optimizers``
    and ``microtrain.losses`` objects; integers must already be in range (``Session.compile``
    checks them). ``proximal_mu``: FedProx's μ (0 = no proximal term).
    ``trainable_op_channels``: None, or per op -1 (all), 0 (bias only) or k (the first k output
    channels): the sparse update of ``microtrain.sparse``."""
    config = {"optimizer": OPTIMIZER_CODES[optimizer.name], "loss": LOSS_CODES[loss.name],
              "reduction": REDUCTION_CODES[loss.reduction], "batch_size": int(batch_size),
              "num_trainable_ops": int(num_trainable_ops), "biases_only": 1 if biases_only else 0,
              "trainable_op_mask": None if trainable_op_mask is None else list(trainable_op_mask),
              "accumulate_gradients": 1 if accumulate_gradients else 0,
              "guard_gradients": 1 if guard_gradients else 0}
    for field, value in CORE_DEFAULTS.items():
        config[field] = value
    for field, value in optimizer.get_config().items():
        config[field] = value
    config["proximal_mu"] = float(proximal_mu)
    config["trainable_op_channels"] = None if trainable_op_channels is None else \
        [int(k) for k in trainable_op_channels]
    return config
