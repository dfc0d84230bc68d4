"""The backend interface: what the pure-logic modules need from a C core (MicroPython-safe).

The facade's pure modules (``lite``, ``training``, ``data``, ``schedules``, ``metrics``,
``properties``, ``trainable``, ``losses``, ``optimizers``, ``_lifecycle``) never touch
ctypes, numpy or memory addresses: a *backend* owns the model image, the arena and the
C session, and moves numbers in and out. Three implementations exist or may exist:

  * ``microtrain.backend.ctypes_backend`` - CPython: ctypes over ``libmicrotrain.so``, numpy
    arrays for the image and the arena (what ``TrainSession`` uses);
  * ``microtrain.backend.js_backend`` - MicroPython on a JavaScript host (Node, a browser): the
    core compiled to wasm32 (CMake preset ``wasm32-wasi``) and driven by a JS module
    registered under the name ``_microtrain_js`` (``tools/micropython/microtrain_wasm.mjs``);
  * a firmware's own native module named ``_microtrain`` - MicroPython on a board, the
    core linked into the firmware (see README, "MicroPython on a board").

``load()`` picks the first that imports. A backend object serves one session and has
these methods (errors raise ``microtrain.errors.MicrotrainError`` with the
``mt_status``, its text and the C function's name):

    describe(image) -> {"num_ops": int, "inputs": [dims, ...], "outputs": [dims, ...],
                        "params": [dims, ...]}
        mt_model_check / mt_model_io / mt_model_tensor: validate ``image`` (bytes) and give
        one sample's shape (a tuple) per model input and output, and the shape of every
        CONST float32 tensor (weight) in tensor-table order.
    plan(image, config) -> {field: int for field in PLAN_FIELDS}
        mt_plan: the exact arena size and its breakdown for ``config`` (see CONFIG_FIELDS).
    open(image, config)
        Copy ``image`` to 4-byte aligned memory the backend owns (the core reads frozen
        weights in place from it), take an arena of plan's ``total_bytes`` at 16-byte
        alignment, mt_session_init. The image must stay where it is until close().
    write_rows(kind, position, first_row, values)
        Copy ``values`` (a flat sequence: array('f') / array('i'), list, memoryview or a
        numpy array) into input buffer ``position`` (kind KIND_INPUT) or the target buffer
        (kind KIND_TARGET, position 0) starting at row ``first_row``: float32 rows, or
        int32 labels when the loss is sparse categorical cross-entropy.
    train_step(n) -> float      mt_session_train_step on rows 0..n-1; the loss
    eval_step(n) -> float       mt_session_eval_step
    infer(n)                    mt_session_infer
    read_rows(output, n) -> flat float sequence of n rows of output ``output``
    weights() -> bytes          every weight tensor in mt_session_param order (trained ones
                                from the arena, frozen ones from the image), float32 LE
    weights_crc32() -> int      zlib.crc32 of weights() (the figure firmware prints)
    set_learning_rate(rate) / get_learning_rate() -> float
    counters() -> (step, epoch) / set_epoch(epoch)
    optimizer_step()            mt_session_optimizer_step (accumulate_gradients=1 only)
    numeric_errors() -> int     steps refused for a NaN/Inf loss or gradient
    close()                     forget the session; release image and arena

Result dicts may be any mapping read with ``[name]`` (a JS object proxy is fine); the
pure code copies what it keeps.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(value):
        return value

KIND_INPUT = const(0)
KIND_TARGET = const(1)

# mt_status values the pure code names (microtrain.h)
MT_OK = const(0)
MT_ERR_BAD_ARGUMENT = const(-1)
MT_ERR_STATE = const(-4)
MT_ERR_NUMERIC = const(-7)

OPTIMIZER_CODES = {"sgd": 0, "adam": 1, "adamw": 2}
LOSS_CODES = {"mse": 0, "mae": 1, "categorical_crossentropy": 2,
              "sparse_categorical_crossentropy": 3, "binary_crossentropy": 4}
REDUCTION_CODES = {"mean": 0, "sum": 1}

# mt_train_config, field for field (trainable_op_mask: None or a list of 0/1 per op)
CONFIG_FIELDS = ("optimizer", "loss", "reduction", "batch_size", "num_trainable_ops",
                 "biases_only", "learning_rate", "beta1", "beta2", "epsilon", "momentum",
                 "weight_decay", "trainable_op_mask", "accumulate_gradients", "guard_gradients")
# mt_memory_plan, field for field
PLAN_FIELDS = ("total_bytes", "metadata_bytes", "weight_bytes", "gradient_bytes",
               "optimizer_bytes", "activation_bytes", "activation_grad_bytes", "io_bytes",
               "scratch_bytes", "reuse_bytes", "lower_bound_bytes", "num_trained_params",
               "first_trained_op", "fused_update", "reserved")


def make_config(optimizer, loss, batch_size, num_trainable_ops=-1, trainable_op_mask=None,
                biases_only=0, accumulate_gradients=False, guard_gradients=False):
    """The config dict ``plan``/``open`` take, from ``microtrain.optimizers`` and
    ``microtrain.losses`` objects (mt_train_config_init's defaults for the rest)."""
    config = {"optimizer": OPTIMIZER_CODES[optimizer.name], "loss": LOSS_CODES[loss.name],
              "reduction": REDUCTION_CODES[loss.reduction], "batch_size": int(batch_size),
              "num_trainable_ops": int(num_trainable_ops), "biases_only": int(biases_only),
              "learning_rate": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
              "momentum": 0.0, "weight_decay": 0.0,
              "trainable_op_mask": None if trainable_op_mask is None else list(trainable_op_mask),
              "accumulate_gradients": 1 if accumulate_gradients else 0,
              "guard_gradients": 1 if guard_gradients else 0}
    for field, value in optimizer.get_config().items():
        config[field] = value
    return config


def crc32(data, crc=0):
    """zlib.crc32 (IEEE), from zlib/binascii when the port has them, else in Python."""
    try:
        from zlib import crc32 as native
        return native(data, crc) & 0xFFFFFFFF
    except ImportError:
        pass
    try:
        from binascii import crc32 as native
        return native(data, crc) & 0xFFFFFFFF
    except (ImportError, AttributeError):
        pass
    crc = ~crc & 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return ~crc & 0xFFFFFFFF


class Backend:
    """Base class of backends: the interface above; ``weights_crc32`` has a default."""

    def describe(self, image):
        raise NotImplementedError("describe")

    def plan(self, image, config):
        raise NotImplementedError("plan")

    def open(self, image, config):
        raise NotImplementedError("open")

    def write_rows(self, kind, position, first_row, values):
        raise NotImplementedError("write_rows")

    def train_step(self, n):
        raise NotImplementedError("train_step")

    def eval_step(self, n):
        raise NotImplementedError("eval_step")

    def infer(self, n):
        raise NotImplementedError("infer")

    def read_rows(self, output, n):
        raise NotImplementedError("read_rows")

    def weights(self):
        raise NotImplementedError("weights")

    def weights_crc32(self):
        return crc32(self.weights())

    def set_learning_rate(self, rate):
        raise NotImplementedError("set_learning_rate")

    def get_learning_rate(self):
        raise NotImplementedError("get_learning_rate")

    def counters(self):
        raise NotImplementedError("counters")

    def set_epoch(self, epoch):
        raise NotImplementedError("set_epoch")

    def optimizer_step(self):
        raise NotImplementedError("optimizer_step")

    def numeric_errors(self):
        raise NotImplementedError("numeric_errors")

    def close(self):
        pass


def load():
    """A new backend object: ctypes on CPython, else a firmware's ``_microtrain`` module,
    else the wasm core behind the JS module ``_microtrain_js``."""
    try:
        from . import ctypes_backend as implementation
    except ImportError:
        try:
            import _microtrain as implementation
        except ImportError:
            from . import js_backend as implementation
    return implementation.Backend()
