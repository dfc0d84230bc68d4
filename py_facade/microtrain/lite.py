"""``lite.Session``: TrainSession's training API over any backend (MicroPython-safe).

The same ``train`` / ``evaluate`` / ``predict`` loop, schedulers, metrics and
DataLoader batching as ``TrainSession`` (they are the same modules), with the
C core reached only through ``microtrain.backend``'s interface. On CPython the
backend is ctypes; under MicroPython it is the firmware's ``_microtrain`` module
or the wasm core behind a JS module (``microtrain.backend.js_backend``).

    from microtrain import lite, optimizers
    from microtrain.data import DataLoader

    sess = lite.Session(open("digits.mtm", "rb").read())
    sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                 metrics=["categorical_accuracy"], batch_size=16)
    history = sess.train(DataLoader(x_rows, y_rows, batch_size=16, shuffle=True, seed=0),
                         epochs=2, verbose=2)
    print("weights crc32 0x%08x" % sess.weights_crc32())

Rows are anything indexable per row: lists, ``array('f')`` rows, memoryviews, numpy
arrays. Outputs come back as flat ``array('f')`` rows. What TrainSession adds on
CPython (numpy buffer views, checkpoints, export, gradient accumulation) is not here.
"""

from array import array

from . import backend as _backend, losses as _losses, metrics as _metrics
from . import optimizers as _optimizers, trainable as _trainable
from ._lifecycle import LifecycleMixin, clock_ms
from .training import TrainingMixin


class _LastLoss:
    """The loss of the last step (``.value``, as the ctypes float TrainSession keeps)."""

    def __init__(self):
        self.value = 0.0


def _count(dims):
    total = 1
    for dim in dims:
        total *= dim
    return total


def _clone_metric(metric):
    clone = type(metric)()
    for name in ("name", "threshold"):
        if hasattr(metric, name):
            setattr(clone, name, getattr(metric, name))
    clone.reset_state()
    return clone


def _flat(rows, typecode, width, what, batch_size):
    """(flat values, n) of ``rows`` ([n][width] values, or a numpy array [n, ...])."""
    if hasattr(rows, "reshape"):  # numpy: the backend copies it as it is
        n = rows.shape[0] if len(rows.shape) else 0
        flat = rows.reshape(-1)
        size = flat.shape[0]
    else:
        n = len(rows)
        flat = array(typecode)
        for row in rows:
            if typecode == "i":
                flat.append(int(row))
            else:
                flat.extend(array(typecode, row))
        size = len(flat)
    if n < 1 or n > batch_size:
        raise ValueError("%s has %d rows; a step takes 1 to %d (the batch size)"
                         % (what, n, batch_size))
    if size != n * width:
        raise ValueError("%s: %d rows of %d values expected, got %d values"
                         % (what, n, width, size))
    return flat, n


class Session(LifecycleMixin, TrainingMixin):
    """One model image and, after ``compile()``, a session of the backend's core."""

    def __init__(self, model, backend=None):
        start = clock_ms()
        if isinstance(model, str):
            with open(model, "rb") as handle:
                model = handle.read()
        self._image = bytes(model)
        if not self._image:
            raise ValueError("the model image is empty")
        self._closed = False
        self._session = None
        self._backend = _backend.load() if backend is None else backend
        info = self._backend.describe(self._image)
        self._inputs = [{"dims": tuple(dims)} for dims in info["inputs"]]
        self._outputs = [{"dims": tuple(dims)} for dims in info["outputs"]]
        self._num_ops = int(info["num_ops"])
        self._loss_value = _LastLoss()
        self._reset_compiled_state()
        self.stop_training = False  # a train() callback may set it to end training early
        self._timings = {"model_load_ms": clock_ms() - start, "compile_ms": None}

    def _reset_compiled_state(self):
        self._session = None
        self._batch_size = None
        self._loss = None
        self._train_metrics = []
        self._eval_metrics = []
        self._accumulating = False   # gradient accumulation is TrainSession's (CPython)
        self._reset_grad_pending = False
        self._scheduler = None

    # ---------------------------------------------------------------- compile

    def compile(self, optimizer, loss, metrics=(), batch_size=16, trainable=None,
                biases_only=False, guard_gradients=False):
        """Plan and bind a session as ``TrainSession.compile`` does (same arguments, less
        gradient accumulation). Compiling again starts from the image's weights."""
        self._require_open()
        start = clock_ms()
        optimizer = _optimizers.get(optimizer)
        loss = _losses.get(loss)
        metric_list = _metrics.get_list(metrics)
        if not _trainable._is_int(batch_size) or batch_size < 1:
            raise ValueError("batch_size must be a positive integer, got %r" % (batch_size,))
        count, mask, bias_mode = _trainable.resolve(trainable, self._num_ops, None, biases_only)
        output_dims = self._outputs[0]["dims"]
        for metric in metric_list:
            metric.check_compatible(output_dims, loss.sparse_labels)
        config = _backend.make_config(optimizer, loss, batch_size, count, mask, bias_mode,
                                      False, guard_gradients)
        plan = self._backend.plan(self._image, config)
        self._backend.open(self._image, config)
        self._reset_compiled_state()
        self._session = True
        self._plan = {}
        for name in _backend.PLAN_FIELDS:
            self._plan[name] = int(plan[name])
        self._batch_size = int(batch_size)
        self._loss = loss
        self._train_metrics = metric_list
        self._eval_metrics = [_clone_metric(m) for m in metric_list]
        for metric in metric_list:
            metric.reset_state()
        self._trainable_text = _trainable.describe(count, mask, bias_mode)
        self._timings["compile_ms"] = clock_ms() - start

    # ---------------------------------------------------------------- steps

    def _load(self, inputs, expecteds):
        if len(self._inputs) == 1:
            inputs = [inputs]
        n = None
        for position, rows in enumerate(inputs):
            flat, rows_n = _flat(rows, "f", _count(self._inputs[position]["dims"]),
                                 "input %d" % position, self._batch_size)
            if n is not None and rows_n != n:
                raise ValueError("input %d has %d rows, input 0 has %d" % (position, rows_n, n))
            n = rows_n
            self._backend.write_rows(_backend.KIND_INPUT, position, 0, flat)
        if expecteds is not None:
            sparse = self._loss.sparse_labels
            width = 1 if sparse else _count(self._outputs[0]["dims"])
            flat, rows_n = _flat(expecteds, "i" if sparse else "f", width, "expecteds",
                                 self._batch_size)
            if rows_n != n:
                raise ValueError("got %d input rows but %d expected rows" % (n, rows_n))
            self._backend.write_rows(_backend.KIND_TARGET, 0, 0, flat)
        return n

    def _output_rows(self, position, n):
        flat = self._backend.read_rows(position, n)
        if not isinstance(flat, array) and not hasattr(flat, "reshape"):
            flat = array("f", flat)
        width = _count(self._outputs[position]["dims"])
        return [flat[i * width:(i + 1) * width] for i in range(n)]

    def _update_metrics(self, metric_list, n, expecteds, reset):
        if not metric_list:
            return {}
        return _metrics.update_all(metric_list, self._output_rows(0, n), expecteds, reset)

    def train_step(self, inputs, expecteds, reset_metrics=True, update=True):
        """One optimizer step on the n rows given; {"loss": [..], "metrics", "train_time"}."""
        self._require_compiled("train_step")
        if not update:
            self._require_accumulation("train_step(..., update=False)")
        n = self._load(inputs, expecteds)
        start = clock_ms()
        self._loss_value.value = self._backend.train_step(n)
        elapsed = clock_ms() - start
        return {"loss": [self._loss_value.value],
                "metrics": self._update_metrics(self._train_metrics, n, expecteds,
                                                reset_metrics),
                "train_time": elapsed}

    def eval_step(self, inputs, expecteds, reset_metrics=True):
        """Forward and loss on n rows, no update; {"loss", "metrics", "eval_time"}."""
        self._require_compiled("eval_step")
        n = self._load(inputs, expecteds)
        start = clock_ms()
        self._loss_value.value = self._backend.eval_step(n)
        elapsed = clock_ms() - start
        return {"loss": [self._loss_value.value],
                "metrics": self._update_metrics(self._eval_metrics, n, expecteds,
                                                reset_metrics),
                "eval_time": elapsed}

    def infer(self, inputs):
        """Forward only: per model output, a list of n flat rows."""
        self._require_compiled("infer")
        n = self._load(inputs, None)
        self._backend.infer(n)
        return [self._output_rows(position, n) for position in range(len(self._outputs))]

    def reset_metrics(self):
        self._require_open()
        for metric in self._train_metrics + self._eval_metrics:
            metric.reset_state()

    # ---------------------------------------------------------------- state

    def get_weights(self):
        """Every weight tensor in mt_session_param order as float32 little-endian bytes."""
        self._require_compiled("get_weights")
        return bytes(self._backend.weights())

    def weights_crc32(self):
        """zlib.crc32 of get_weights() (what TrainSession's weights and firmware give)."""
        self._require_compiled("weights_crc32")
        return int(self._backend.weights_crc32())

    def memory_plan(self):
        """The arena's byte breakdown (fields of mt_memory_plan) for the compiled config."""
        self._require_compiled("memory_plan")
        return dict(self._plan)

    def set_learning_rate(self, learning_rate):
        self._require_compiled("set_learning_rate")
        value = float(learning_rate)
        if value != value or value < 0.0 or value == float("inf"):
            raise ValueError("learning_rate must be a finite number >= 0, got %r"
                             % (learning_rate,))
        self._core_set_learning_rate(value)

    def _core_set_learning_rate(self, rate):
        self._backend.set_learning_rate(rate)

    def _core_optimizer_step(self):
        self._backend.optimizer_step()

    def get_learning_rate(self):
        self._require_compiled("get_learning_rate")
        return self._backend.get_learning_rate()

    def get_counters(self):
        """{"step": optimizer steps taken, "epoch": the epoch counter}."""
        self._require_compiled("get_counters")
        step, epoch = self._backend.counters()
        return {"step": int(step), "epoch": int(epoch)}

    def set_epoch(self, epoch):
        self._require_compiled("set_epoch")
        self._backend.set_epoch(int(epoch))

    def numeric_errors(self):
        self._require_compiled("numeric_errors")
        return int(self._backend.numeric_errors())

    def trainable_description(self):
        self._require_compiled("trainable_description")
        return self._trainable_text

    @property
    def batch_size(self):
        self._require_open()
        return self._batch_size

    def save_checkpoint(self, path, include_optimizer_state=True):
        raise NotImplementedError("checkpoints are TrainSession's (CPython) for now; "
                                  "train(checkpoint_path=None) on this session")

    def close(self):
        """Release the backend's session, arena and image copy (idempotent)."""
        if self._closed:
            return
        self._backend.close()
        self._reset_compiled_state()
        self._closed = True
