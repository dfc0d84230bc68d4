"""What the firmware of ``microtrain firmware`` trains, and the same training on the host.

``TrainingSpec`` (configuration and epochs) and ``Dataset`` (rows as the exact float32 /
int32 arrays both sides use) are what the C sources are generated from (firmware_sources.py);
``host_reference`` replays on the host, through ctypes, the identical sequence of core calls
the example firmware makes and returns what it prints, which ``microtrain firmware --run``
compares bit for bit (microtrain.tools.firmware describes the sequence).
"""

import numpy as np

from .. import _array_files, config as _config, losses as _losses, optimizers as _optimizers
from ..nn import image as _image
from ..train_session import TrainSession

# MT_FW_ACCURACY values (boards/app/fw_app.h)
ACCURACY_NONE = 0
ACCURACY_ARGMAX_ONE_HOT = 1
ACCURACY_ARGMAX_LABEL = 2
ACCURACY_BINARY = 3


class FirmwareError(Exception):
    """A step of packaging, building or running failed; the message says which and why."""


# ------------------------------------------------------------------ training spec


class TrainingSpec:
    """What the firmware and the host replay both run: configuration and epochs. Names and
    defaults are compile()'s (``microtrain.config``): SGD, MSE, batch 16, the optimizer's
    own learning rate, everything trains. What trains is compile()'s ``trainable`` (all,
    bias, the last N layers with weights, a list of layers, a sparse scheme: the firmware
    gets the op mask and channel counts as the host compiled them) or onert's
    ``num_trainable_ops`` (the last N ops), one of them."""

    def __init__(self, epochs=3, optimizer=_config.DEFAULT_OPTIMIZER, learning_rate=None,
                 loss=_config.DEFAULT_LOSS, batch_size=_config.DEFAULT_BATCH_SIZE,
                 num_trainable_ops=None, trainable=None):
        if int(epochs) < 1:
            raise ValueError("epochs must be at least 1, got %r" % (epochs,))
        self.epochs = int(epochs)
        self.optimizer = _optimizers.get(optimizer)
        if learning_rate is not None:
            settings = self.optimizer.get_config()
            settings["learning_rate"] = learning_rate
            self.optimizer = type(self.optimizer)(**settings)
        self.loss = _losses.get(loss)
        self.batch_size = int(batch_size)
        if num_trainable_ops is not None and trainable is not None:
            raise ValueError("give trainable or num_trainable_ops, not both")
        self.num_trainable_ops = None if num_trainable_ops is None else int(num_trainable_ops)
        self.trainable = trainable

    def compile(self, session):
        session.compile(optimizer=self.optimizer, loss=self.loss, batch_size=self.batch_size,
                        trainable=self.trainable, num_trainable_ops=self.num_trainable_ops)


# ------------------------------------------------------------------ dataset


class Dataset:
    """Training and evaluation rows, converted once to the exact arrays both sides use."""

    def __init__(self, x, y, x_eval=None, y_eval=None):
        self.x, self.y = x, y
        self.x_eval = x if x_eval is None else x_eval
        self.y_eval = y if y_eval is None else y_eval

    @classmethod
    def load(cls, path):
        """The rows of an .npz (x, y; optionally x_eval, y_eval), read as
        ``microtrain._array_files.load_npz`` reads a user's archive (a regular file, no
        pickles, sizes checked before anything is decompressed)."""
        arrays = _array_files.load_npz(path, "a firmware data set", required=("x", "y"))
        if ("x_eval" in arrays) != ("y_eval" in arrays):
            raise FirmwareError("%s has only one of x_eval and y_eval" % path)
        return cls(arrays["x"], arrays["y"], arrays.get("x_eval"), arrays.get("y_eval"))

    def conform(self, input_dims, output_dims, sparse_labels, int8_input=False):
        """Check shapes against the model and convert to float32 rows / int32 labels (flat
        rows [N, D] are taken for a multi-dimensional input); the rows of an int8 input (a quantized image) stay int8, any length (the C sources hold
        them back to back)."""
        def rows(x, y, what):
            x = np.asarray(x)
            y = np.asarray(y)
            width = int(np.prod(input_dims, dtype=np.int64))
            if len(input_dims) > 1 and x.ndim == 2 and x.shape[1] == width:
                x = x.reshape((len(x),) + tuple(input_dims))  # flat rows, as the C sources
            if x.ndim < 1 or tuple(x.shape[1:]) != tuple(input_dims) or len(x) == 0:
                raise FirmwareError("%s x has shape %s; the model takes (N, %s), N >= 1"
                                    % (what, x.shape, ", ".join(map(str, input_dims))))
            if int8_input:
                if not (np.all(x == np.round(x)) and x.min() >= -128 and x.max() <= 127):
                    raise FirmwareError("%s x must hold int8 values (-128..127): the model's "
                                        "input is int8" % what)
                x = np.ascontiguousarray(x, dtype=np.int8)
            if sparse_labels:
                if y.shape != (len(x),) or y.dtype.kind not in "iu":
                    raise FirmwareError("%s y must be [N] integer labels for sparse "
                                        "categorical cross-entropy, got %s %s"
                                        % (what, y.dtype, y.shape))
                y = y.astype("<i4")
            else:
                if tuple(y.shape) != (len(x),) + tuple(output_dims):
                    raise FirmwareError("%s y has shape %s; output 0 needs (%d, %s)"
                                        % (what, y.shape, len(x),
                                           ", ".join(map(str, output_dims))))
                y = np.ascontiguousarray(y, dtype="<f4")
            return (x if int8_input else np.ascontiguousarray(x, dtype="<f4")), y

        x, y = rows(self.x, self.y, "training")
        x_eval, y_eval = rows(self.x_eval, self.y_eval, "evaluation")
        return Dataset(x, y, x_eval, y_eval)


def int8_input(model_bytes):
    """True when the model's input 0 is int8 (image version 3: a quantized image)."""
    info = _image.read_image(model_bytes)
    return info.tensors[info.inputs[0]].dtype == _image.DTYPE_I8


def accuracy_kind(loss, output_count):
    """How predictions are scored (MT_FW_ACCURACY) for a loss and output 0's element count."""
    if loss.name == "sparse_categorical_crossentropy":
        return ACCURACY_ARGMAX_LABEL
    if loss.name == "categorical_crossentropy" and output_count > 1:
        return ACCURACY_ARGMAX_ONE_HOT
    if loss.name == "binary_crossentropy":
        return ACCURACY_BINARY
    return ACCURACY_NONE


def _count_correct(kind, outputs, targets):
    """mt_fw_count_correct() of boards/app/fw_app.c, on numpy rows (argmax: first maximum)."""
    outputs = outputs.reshape(len(outputs), -1)
    if kind == ACCURACY_ARGMAX_ONE_HOT:
        return int(np.sum(outputs.argmax(1) == targets.reshape(len(targets), -1).argmax(1)))
    if kind == ACCURACY_ARGMAX_LABEL:
        return int(np.sum(outputs.argmax(1) == targets))
    if kind == ACCURACY_BINARY:
        return int(np.sum((outputs > 0.5) == (targets.reshape(outputs.shape) > 0.5)))
    return 0


def _accuracy_total(kind, rows, output_count):
    if kind == ACCURACY_BINARY:
        return rows * output_count
    return 0 if kind == ACCURACY_NONE else rows


# ------------------------------------------------------------------ host replay


def float_bits(value):
    """The IEEE-754 bit pattern of ``value`` rounded to float32."""
    return int(np.array(value, dtype="<f4").view("<u4"))


def _run_pass(session, x, y, batch_size, train, kind):
    """One pass over rows in order; the float32 loss sum of the firmware and the correct count."""
    loss_sum = np.float32(0.0)
    correct = 0
    for first in range(0, len(x), batch_size):
        stop = min(first + batch_size, len(x))
        n = stop - first
        if train:
            result = session.train_step(x[first:stop], y[first:stop])
        else:
            result = session.eval_step(x[first:stop], y[first:stop])
            correct += _count_correct(kind, session.output_buffer(0)[:n], y[first:stop])
        loss_sum = np.float32(loss_sum + np.float32(result["loss"][0]) * np.float32(n))
    return np.float32(loss_sum / np.float32(len(x))), correct


def host_reference(model_bytes, dataset, spec):
    """Run on the host, through ctypes, exactly what the firmware runs; return what it prints:
    {"arena_bytes", "epochs": [{"epoch", "train_loss", "eval_loss", "correct", "total"}],
    "crc32"} with losses as float32 bit patterns."""
    with TrainSession(model_bytes) as session:
        spec.compile(session)
        output_count = int(np.prod(session.get_outputs_tensorinfo()[0]["shape"][1:]))
        kind = accuracy_kind(spec.loss, output_count)
        data = dataset.conform(session.get_inputs_tensorinfo()[0]["shape"][1:],
                               session.get_outputs_tensorinfo()[0]["shape"][1:],
                               spec.loss.sparse_labels, int8_input(model_bytes))
        epochs = []
        for epoch in range(1, spec.epochs + 1):
            train_loss, _ = _run_pass(session, data.x, data.y, spec.batch_size, True, kind)
            session.set_epoch(epoch)
            eval_loss, correct = _run_pass(session, data.x_eval, data.y_eval, spec.batch_size,
                                           False, kind)
            epochs.append({"epoch": epoch, "train_loss": float_bits(train_loss),
                           "eval_loss": float_bits(eval_loss), "correct": correct,
                           "total": _accuracy_total(kind, len(data.x_eval), output_count)})
        return {"arena_bytes": session.memory_plan()["total_bytes"], "epochs": epochs,
                "crc32": session.weights_crc32()}  # the firmware's mt_session_weights_crc32
