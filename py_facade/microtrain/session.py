"""``Session``: one training session over any backend (pure Python, MicroPython-safe).

    with microtrain.Session("model.mtm") as sess:          # TrainSession on CPython
        sess.compile(optimizer="adam", loss="categorical_crossentropy",
                     metrics=["categorical_accuracy"], batch_size=16)
        sess.train(DataLoader(x, y, batch_size=16), epochs=5, checkpoint_path="ck.bin")

This is the only implementation of compile, steps, weights, checkpoints and the training
loop. The C core is reached through a *backend* (``microtrain.backend``): ctypes on
CPython, the wasm core under MicroPython on a JavaScript host, the ``_microtrain`` native
module on a board. ``TrainSession`` (``train_session.py``) adds numpy views of the arena.

The session owns the model image (``bytes``) between compiles; a compiled session also
owns a backend holding the image copy, the arena and the C session. Only model output 0
has a loss: targets and metrics refer to it.

States: open, not compiled → ``compile()`` → compiled (``compile()`` again rebinds: the
weights trained so far are kept, optimizer state and counters restart) → ``close()`` →
closed (every call but ``close()`` raises RuntimeError). Inference needs no compile():
``infer``/``predict`` on an uncompiled session bind an inference-only session
(nothing trains, no loss) of the batch size given, 16 by default.

Threads: every public method holds the session's lock, so calls from several threads are
serialised whole (a step, a checkpoint save, ``close()``) and never interleave inside the
core; ``close()`` or ``compile()`` from another thread waits for a running call. ``train()``
takes the lock per step, so a close from another thread ends it with RuntimeError at the
next step. Views of the arena handed out by ``TrainSession`` are not guarded: writing
them while another thread runs a step is the caller's race.
"""

from . import _feed, _files, _random, config as _config, losses as _losses
from . import metrics as _metrics, optimizers as _optimizers, properties as _properties
from . import schedules as _schedules, trainable as _trainable, training as _training
from . import backend as _backend, ops as _ops
from ._platform import SessionLock, clock_ms, is_integer
from .backend import KIND_INPUT, KIND_TARGET, MT_ERR_NUMERIC, MT_ERR_STATE
from .errors import MicrotrainError

try:
    import numpy as _np
except ImportError:  # MicroPython
    _np = None

INFERENCE_BATCH_SIZE = 16
_INT32_MAX = 2147483647
_INT64_MAX = 9223372036854775807
_FLOAT32_MAX = 3.4028234663852886e38


def _clone_metric(metric):
    """A fresh metric of the same kind and settings, for evaluation."""
    try:
        import copy
        clone = copy.deepcopy(metric)
    except Exception:  # MicroPython: no copy module, or one that cannot copy instances
        clone = type(metric)()
        for name in ("name", "threshold"):
            if hasattr(metric, name):
                setattr(clone, name, getattr(metric, name))
    clone.reset_state()
    return clone


def _count(dims):
    total = 1
    for dim in dims:
        total *= dim
    return total


def _model_bytes(model):
    """The image bytes and the kind of source of ``model`` (see Session)."""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, memoryview):
        return bytes(model)
    if hasattr(model, "to_bytes") and not isinstance(model, int):
        return model.to_bytes()  # a microtrain.Sequential / Model, or a converted model
    if isinstance(model, str) or hasattr(model, "__fspath__"):
        return _files.read_file(model, "a model image")
    raise TypeError("a session takes a path, bytes or a microtrain.Sequential/Model, got %s"
                    % type(model).__name__)


class Session:
    """A model image and, after ``compile()``, a session of the backend's core.

    Args:
        model:   a path, bytes, or a built model (``microtrain.Sequential`` / ``Model``,
                 anything with ``to_bytes()``)
        backend: a backend object (``microtrain.backend``) or None for the platform's
    """

    def __init__(self, model, backend=None):
        start = clock_ms()
        self._lock = SessionLock()
        self._closed = False
        image = _model_bytes(model)
        if not image:
            raise ValueError("the model image is empty")
        self._backend = _backend.load() if backend is None else backend
        self._new_backend = type(self._backend)
        info = self._backend.describe(image)
        self._image = image
        self._inputs = [(int(io["tensor"]), tuple(io["dims"])) for io in info["inputs"]]
        self._outputs = [(int(io["tensor"]), tuple(io["dims"])) for io in info["outputs"]]
        self._params = [(int(p["tensor"]), tuple(p["dims"]), int(p["offset"]))
                        for p in info["params"]]
        self._ops = [(int(op["type"]), int(op["layer"]), bool(op["weights"]))
                     for op in info["ops"]]
        self._layer_ops = []
        for index, (_, layer, _) in enumerate(self._ops):
            while len(self._layer_ops) <= layer:
                self._layer_ops.append([])
            self._layer_ops[layer].append(index)
        if hasattr(model, "layer_ops"):  # TEMPORARY until images record layers (format v2)
            self._layer_ops = [list(ops) for ops in model.layer_ops]
        self._properties = _properties.Properties()
        self.stop_training = False  # a train() callback may set it to end training early
        self._reset_compiled_state()
        self._timings = {"model_load_ms": clock_ms() - start, "compile_ms": None}

    # ---------------------------------------------------------------- state checks

    def _reset_compiled_state(self):
        self._compiled = False
        self._inference_only = False
        self._config = None
        self._plan = None
        self._batch_size = None
        self._loss = None
        self._optimizer = None
        self._train_metrics = []
        self._eval_metrics = []
        self._trainable_text = None
        self._trained = []
        self._accumulating = False
        self._reset_grad_pending = False
        self._scheduler = None

    def _require_open(self):
        if self._closed:
            raise RuntimeError("this %s is closed" % type(self).__name__)

    def _require_compiled(self, what):
        self._require_open()
        if not self._compiled:
            raise RuntimeError("call compile() before %s()" % what)

    def _require_training(self, what):
        self._require_compiled(what)
        if self._inference_only:
            raise RuntimeError("call compile() before %s(): this session was bound for "
                               "inference only" % what)

    @property
    def closed(self):
        return self._closed

    def __enter__(self):
        with self._lock:
            self._require_open()
            return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False

    # ---------------------------------------------------------------- compile

    def compile(self, optimizer="sgd", loss="mse", metrics=(), batch_size=16,
                num_trainable_ops=None, trainable=None, biases_only=False,
                accumulate_gradients=False, guard_gradients=False, arena=None):
        """Plan the arena, take it and bind a C session.

        Args:
            optimizer: "sgd", "adam", "adamw" or a ``microtrain.optimizers`` instance
            loss:      a name of ``microtrain.losses.ALIASES`` ("mse", "cce", "scce", ...) or
                       a ``losses`` instance; applied to model output 0
            metrics:   names or ``microtrain.metrics`` instances, evaluated on output 0
            batch_size: B, the rows of every buffer; steps take 1..B rows
            trainable: what trains (``microtrain.trainable``): "all" (default), an int N (the
                       last N ops, onert's num_of_trainable_ops; 0 = inference only), a list
                       of layer positions (``model.layers`` of a built model, the layer
                       column of ``microtrain info`` for an image file), or "bias"
            num_trainable_ops: the int form of ``trainable`` under onert's name
            biases_only: train only the 1-D weights (biases) of the chosen ops
            accumulate_gradients: keep weight gradients between calls so that
                       ``train_step(..., update=False)`` / ``optimizer_step()`` accumulate
                       several batches (ONNX Runtime's control). False (default): each weight
                       is updated as soon as its gradient is complete; a plain train_step
                       gives the same bits either way, with a smaller arena.
            guard_gradients: check every weight update for NaN/Inf before any weight changes,
                       so a refused step leaves weights, optimizer state and counters exactly
                       as they were (needs the accumulate layout's memory).
            arena:     None, or a writable buffer (bytearray) to lay the session out in, at
                       least ``memory_plan()["total_bytes"] + 15`` bytes (MicroPython boards)

        Frozen weights are read from the image and get no gradient or optimizer bytes.
        A failed compile() leaves a compiled session as it was.
        """
        with self._lock:
            self._require_open()
            start = clock_ms()
            optimizer = _optimizers.get(optimizer)
            loss = _losses.get(loss)
            metric_list = _metrics.get_list(metrics)
            self._check_batch_size(batch_size)
            if num_trainable_ops is not None:
                if trainable is not None:
                    raise ValueError("give trainable or num_trainable_ops, not both")
                if not is_integer(num_trainable_ops) or not -1 <= num_trainable_ops <= \
                        _INT32_MAX:
                    raise ValueError("num_trainable_ops must be an integer >= -1 (-1 = all "
                                     "ops), got %r" % (num_trainable_ops,))
                trainable = int(num_trainable_ops)
            count, mask, bias_mode = _trainable.resolve(trainable, len(self._ops),
                                                        self._layer_ops, biases_only)
            if mask is not None and any(mask):
                _trainable.check_selects_weights(
                    mask, [weights for _, _, weights in self._ops],
                    [_trainable.op_label(op_type) for op_type, _, _ in self._ops], "layer")
            output_dims = self._outputs[0][1]
            if loss.sparse_labels and (len(output_dims) != 1 or output_dims[0] < 2):
                raise ValueError("sparse categorical cross-entropy needs a 1-D output of at "
                                 "least 2 classes; output 0 has shape %r" % (output_dims,))
            names = []
            for metric in metric_list:
                metric.check_compatible(output_dims, loss.sparse_labels)
                if metric.name in names:
                    raise ValueError("two metrics are named %r; give them distinct names"
                                     % metric.name)
                names.append(metric.name)
            config = _config.make_config(optimizer, loss, batch_size, count, mask, bias_mode,
                                         accumulate_gradients, guard_gradients)
            self._bind(config, arena)
            self._optimizer, self._loss = optimizer, loss
            self._accumulating = bool(accumulate_gradients)
            self._trainable_text = _trainable.describe(count, mask, bias_mode)
            self._train_metrics = metric_list
            self._eval_metrics = [_clone_metric(m) for m in metric_list]
            for metric in metric_list:
                metric.reset_state()
            self._timings["compile_ms"] = clock_ms() - start

    def _check_batch_size(self, batch_size):
        if not is_integer(batch_size) or not 1 <= batch_size <= _INT32_MAX:
            raise ValueError("batch_size must be a positive integer up to %d, got %r"
                             % (_INT32_MAX, batch_size))

    def _bind(self, config, arena=None):
        """Plan ``config`` (a refusal leaves everything as it was), then open a new backend
        session on the current weights and drop the old one."""
        try:
            plan = self._backend.plan(self._image, config)
        except MicrotrainError as error:
            if error.status == _backend.MT_ERR_BAD_ARGUMENT and error.op_index < 0:
                raise MicrotrainError(error.status, "%s; batch_size %d, %s" % (
                    error.message, config["batch_size"], self._describe_optimizer(config)),
                    error.function)
            raise
        image = self._current_image()
        if not self._compiled:
            backend = self._backend
        elif arena is None:
            backend = self._new_backend()  # the old session stays intact until this one opens
        else:
            # the caller's arena may be the one the old session lives in: that one goes first
            self._backend.close()
            self._image = image
            self._reset_compiled_state()
            backend = self._backend
        try:
            backend.open(image, config, arena)
        except MemoryError as error:
            raise MemoryError("the arena of %d bytes that batch_size %d needs cannot be "
                              "allocated (%s); use a smaller batch_size or train fewer ops"
                              % (plan["total_bytes"], config["batch_size"], error))
        if backend is not self._backend:
            self._backend.close()
            self._backend = backend
        self._image = image
        self._reset_compiled_state()
        self._compiled = True
        self._config = config
        self._plan = {}
        for name in _backend.PLAN_FIELDS:
            self._plan[name] = int(plan[name])
        self._batch_size = int(config["batch_size"])
        self._trained = [bool(flag) for flag in self._backend.trained()]

    @staticmethod
    def _describe_optimizer(config):
        for name, code in _config.OPTIMIZER_CODES.items():
            if code == config["optimizer"]:
                return "%s(learning_rate=%r)" % (name, config["learning_rate"])
        return "optimizer %r" % (config["optimizer"],)

    def _current_image(self):
        """The image with the weights trained so far (and set_weights' frozen ones)."""
        if not self._compiled:
            return self._image
        pieces = []
        self._backend.export_image(lambda chunk: pieces.append(bytes(chunk)))
        return b"".join(pieces)

    def _bind_for_inference(self, batch_size):
        """infer/predict on an uncompiled session: nothing trains, no loss is used."""
        self._check_batch_size(batch_size)
        config = _config.make_config(_optimizers.SGD(), _losses.MeanSquaredError(),
                                     batch_size, num_trainable_ops=0)
        self._bind(config)
        self._inference_only = True
        self._loss = _losses.MeanSquaredError()
        self._trainable_text = "none (inference)"

    # ---------------------------------------------------------------- rows

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
            rows, flat, metric_rows = _feed.float_rows(expecteds, self._outputs[0][1],
                                                       "expecteds", self._batch_size)
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
        width = _count(dims)
        return [flat[i * width:(i + 1) * width] for i in range(n)]

    def _update_metrics(self, metric_list, n, targets, reset):
        if not metric_list:
            return {}
        if hasattr(targets, "astype"):
            targets = targets.astype("int32" if self._loss.sparse_labels else "float32")
        return _metrics.update_all(metric_list, self._output_rows(0, n), targets, reset)

    # ---------------------------------------------------------------- steps

    def train_step(self, inputs, expecteds, reset_metrics=True, update=True):
        """A training step on the n rows given (1 <= n <= batch_size).

        ``inputs``: rows [n, ...] (or one such per model input, in a list); ``expecteds``:
        the targets of output 0 ([n] int labels for sparse categorical cross-entropy).
        Metrics cover this step only unless ``reset_metrics=False``.

        ``update=True``: one optimizer step on these rows alone. ``update=False`` (ONNX
        Runtime's train_step; needs accumulate_gradients): forward and backward only,
        gradients added to those accumulated since ``lazy_reset_grad()``;
        ``optimizer_step()`` applies them. k batches of n rows accumulated then applied
        give the update of one batch of k*n rows.

        Returns {"loss": [loss], "metrics": {name: value}, "train_time": milliseconds}.
        Raises MicrotrainError (MT_ERR_NUMERIC) when the loss, a gradient or an update is
        NaN or infinite (see compile's guard_gradients for what then changed).
        """
        with self._lock:
            self._require_training("train_step")
            if not update:
                self._require_accumulation("train_step(..., update=False)")
            n, targets = self._step_rows(inputs, expecteds)
            start = clock_ms()
            try:
                if update:
                    loss = self._backend.train_step(n)
                else:
                    if self._reset_grad_pending:
                        self._backend.zero_grad()
                        self._reset_grad_pending = False
                    loss = self._backend.accumulate(n)
            except MicrotrainError as error:
                if error.status == MT_ERR_NUMERIC:
                    raise self._numeric_error(error, update)
                raise
            elapsed_ms = clock_ms() - start
            if update:
                self._reset_grad_pending = True  # this step's gradients are used up
            return {"loss": [loss],
                    "metrics": self._update_metrics(self._train_metrics, n, targets,
                                                    reset_metrics),
                    "train_time": elapsed_ms}

    def _numeric_error(self, error, update):
        """The core says MT_ERR_NUMERIC; say what was refused and what changed."""
        loss = getattr(error, "loss", None)
        base = error.message
        if loss is not None and (loss != loss or loss in (float("inf"), float("-inf"))):
            text = "%s; the loss is %r" % (base, loss)
        elif update and self._plan["fused_update"]:
            text = ("%s: a weight gradient or update is NaN or infinite (the loss %r is "
                    "finite): the step stopped there, after updating the layers nearer the "
                    "output; compile(guard_gradients=True) refuses such steps whole"
                    % (base, loss))
        else:
            text = ("%s: a weight gradient or update is NaN or infinite (the loss %r is "
                    "finite): nothing was updated" % (base, loss))
        refused = MicrotrainError(error.status, text, error.function)
        refused.op_index, refused.op_type = error.op_index, error.op_type
        refused.loss = loss  # train(on_numeric_error="stop") reports it
        return refused

    def eval_step(self, inputs, expecteds, reset_metrics=True):
        """Forward and loss on n rows, no update. {"loss", "metrics", "eval_time"}.
        Evaluation metrics are kept apart from training metrics."""
        with self._lock:
            self._require_training("eval_step")
            n, targets = self._step_rows(inputs, expecteds)
            start = clock_ms()
            loss = self._backend.eval_step(n)
            elapsed_ms = clock_ms() - start
            return {"loss": [loss],
                    "metrics": self._update_metrics(self._eval_metrics, n, targets,
                                                    reset_metrics),
                    "eval_time": elapsed_ms}

    def infer(self, inputs):
        """Forward only, on any number of rows (in batches of the compiled batch size): one
        array [n, ...] per model output (a list of n flat rows without numpy). An
        uncompiled session binds an inference-only session of batch size 16 first."""
        with self._lock:
            self._require_open()
            if not self._compiled:
                self._bind_for_inference(INFERENCE_BATCH_SIZE)
            total, values = self._check_inputs(inputs, _INT32_MAX)  # any number of rows
            pieces = [[] for _ in self._outputs]
            for start in range(0, total, self._batch_size):
                for position, flat in enumerate(values):
                    width = _count(self._inputs[position][1])
                    stop = min(total, start + self._batch_size)
                    chunk = flat[start:stop] if hasattr(flat, "shape") else \
                        flat[start * width:stop * width]
                    self._backend.write_rows(KIND_INPUT, position, 0, chunk)
                n = min(total, start + self._batch_size) - start
                self._backend.infer(n)
                for position in range(len(self._outputs)):
                    pieces[position].append(self._output_rows(position, n))
            return [_feed.concatenate(p) for p in pieces]

    def reset_metrics(self):
        """Reset the accumulated training and evaluation metrics."""
        with self._lock:
            self._require_open()
            for metric in self._train_metrics + self._eval_metrics:
                metric.reset_state()

    # ---------------------------------------------------------------- ONNX Runtime's control

    def _require_accumulation(self, what):
        if not self._accumulating:
            raise RuntimeError("%s needs gradients kept between calls: compile(..., "
                               "accumulate_gradients=True)" % what)

    def lazy_reset_grad(self):
        """Zero the accumulated gradients at the start of the next accumulating
        ``train_step(..., update=False)`` (ONNX Runtime's lazy_reset_grad)."""
        with self._lock:
            self._require_training("lazy_reset_grad")
            self._require_accumulation("lazy_reset_grad()")
            self._reset_grad_pending = True

    def optimizer_step(self):
        """Apply the optimizer to the gradients accumulated by ``train_step(update=False)``
        and advance the step counter; the gradients are kept until ``lazy_reset_grad()``.
        Raises MicrotrainError (MT_ERR_STATE) when nothing was accumulated since the
        gradients were last reset, (MT_ERR_NUMERIC) when a gradient or update is not
        finite — then nothing changes."""
        with self._lock:
            self._require_training("optimizer_step")
            self._require_accumulation("optimizer_step()")
            if self._reset_grad_pending:
                raise MicrotrainError(MT_ERR_STATE,
                                      "no gradients accumulated since the last reset: call "
                                      "train_step(..., update=False) first",
                                      "mt_session_optimizer_step")
            self._backend.optimizer_step()

    # ---------------------------------------------------------------- weights

    def _param_list(self):
        return [(index, dims) for index, dims, _ in self._params]

    def get_weights(self):
        """Every weight tensor in tensor-table order (each layer's weight, then its bias):
        numpy arrays of their shapes, or flat ``array('f')`` without numpy."""
        with self._lock:
            self._require_open()
            weights = []
            for position, (_, dims, offset) in enumerate(self._params):
                if self._compiled:
                    flat = self._backend.read_param(position)
                else:
                    flat = self._image_param(offset, dims)
                weights.append(flat.reshape(dims) if hasattr(flat, "reshape") else flat)
            return weights

    def _image_param(self, offset, dims):
        data = self._image[offset:offset + 4 * _count(dims)]
        if _np is not None:
            return _np.frombuffer(data, dtype="<f4").copy()
        from array import array
        return array("f", data)  # the board's byte order: little-endian on every target here

    def weights_crc32(self):
        """zlib.crc32 over every weight, float32 little-endian, in get_weights() order: the
        figure a firmware prints for the same weights."""
        with self._lock:
            self._require_open()
            if self._compiled:
                return int(self._backend.weights_crc32())
            crc = 0
            for _, dims, offset in self._params:
                crc = _backend.crc32(self._image[offset:offset + 4 * _count(dims)], crc)
            return crc

    def set_weights(self, weights):
        """Replace every weight tensor; ``weights`` as get_weights() returns them (arrays of
        those shapes, or flat sequences). Trained weights go into the arena, frozen ones
        into the session's image. Everything is checked before anything changes."""
        with self._lock:
            self._require_open()
            weights = list(weights)
            if len(weights) != len(self._params):
                raise ValueError("the model has %d weight tensors, got %d arrays"
                                 % (len(self._params), len(weights)))
            checked = [self._checked_weight(position, value)
                       for position, value in enumerate(weights)]
            if self._compiled:
                for position, flat in enumerate(checked):
                    self._backend.write_param(position, flat)
            else:
                image = bytearray(self._image)
                for (_, dims, offset), flat in zip(self._params, checked):
                    image[offset:offset + 4 * _count(dims)] = _le_bytes(flat)
                _set_image_crc(image)
                self._image = bytes(image)

    def _checked_weight(self, position, value):
        dims = self._params[position][1]
        if _np is not None:
            array = _np.asarray(value)
            if array.dtype.kind not in "iuf":
                raise ValueError("weight %d has dtype %s, which cannot be converted to "
                                 "float32" % (position, array.dtype))
            if tuple(array.shape) != dims:
                raise ValueError("weight %d must have shape %s, got %s"
                                 % (position, dims, tuple(array.shape)))
            with _np.errstate(over="ignore"):  # checked as float32: 1e300 becomes inf
                flat = array.astype(_np.float32).reshape(-1)
            if not _np.all(_np.isfinite(flat)):
                raise ValueError("weight %d contains NaN or infinity" % position)
            return flat
        from array import array as _array
        flat = _array("f", value)
        if len(flat) != _count(dims):
            raise ValueError("weight %d must have %d values (shape %s), got %d"
                             % (position, _count(dims), dims, len(flat)))
        for item in flat:
            if item != item or item in (float("inf"), float("-inf")):
                raise ValueError("weight %d contains NaN or infinity" % position)
        return flat

    # ---------------------------------------------------------------- information

    def memory_plan(self):
        """The arena's byte breakdown (fields of mt_memory_plan) as a dict."""
        with self._lock:
            self._require_compiled("memory_plan")
            return dict(self._plan)

    def _tensorinfo(self, ios):
        dtype = _np.dtype(_np.float32) if _np is not None else "float32"
        return [{"index": index, "shape": (self._batch_size,) + dims, "dtype": dtype}
                for index, dims in ios]

    def get_inputs_tensorinfo(self):
        """Per input: {"index", "shape": (B, ...), "dtype"}; B is None before compile()."""
        with self._lock:
            self._require_open()
            return self._tensorinfo(self._inputs)

    def get_outputs_tensorinfo(self):
        """Per output: {"index", "shape": (B, ...), "dtype"}; B is None before compile()."""
        with self._lock:
            self._require_open()
            return self._tensorinfo(self._outputs)

    def trained_tensors(self):
        """Tensor indices of the weights the optimizer updates (the rest stay in the image)."""
        with self._lock:
            self._require_compiled("trained_tensors")
            return [index for (index, _, _), trained in zip(self._params, self._trained)
                    if trained]

    def trainable_description(self):
        """What trains, as text: "all", "last 2 ops", "ops [3, 4]", "..., biases only"."""
        with self._lock:
            self._require_compiled("trainable_description")
            return self._trainable_text

    @property
    def timings(self):
        """{"model_load_ms": reading and validating the image, "compile_ms": the last
        compile() (None before)}."""
        with self._lock:
            self._require_open()
            return dict(self._timings)

    @property
    def batch_size(self):
        with self._lock:
            self._require_open()
            return self._batch_size

    @property
    def loss(self):
        """The compiled ``microtrain.losses`` object (None before compile())."""
        with self._lock:
            self._require_open()
            return self._loss

    @property
    def train_metrics(self):
        """The compiled training metrics (``microtrain.metrics`` objects)."""
        with self._lock:
            self._require_open()
            return list(self._train_metrics)

    @property
    def eval_metrics(self):
        """The evaluation metrics: copies of the training ones, kept apart."""
        with self._lock:
            self._require_open()
            return list(self._eval_metrics)

    @property
    def config(self):
        """The compiled ``mt_train_config`` as the dict ``microtrain.config`` builds (None
        before compile())."""
        with self._lock:
            self._require_open()
            return None if self._config is None else dict(self._config)

    @property
    def model_image(self):
        """The model image with the weights as they are now (trained ones baked in)."""
        with self._lock:
            self._require_open()
            return self._current_image()

    def model_description(self):
        """{"inputs", "outputs": [(tensor, dims)], "params": [(tensor, dims)], "ops":
        [{"index", "type", "name", "layer", "weights"}]}: the model as the core reads it."""
        with self._lock:
            self._require_open()
            return {"inputs": list(self._inputs), "outputs": list(self._outputs),
                    "params": [(index, dims) for index, dims, _ in self._params],
                    "ops": [{"index": index, "type": op_type, "name": _ops.name(op_type),
                             "layer": layer, "weights": weights}
                            for index, (op_type, layer, weights) in enumerate(self._ops)]}

    @property
    def lr_scheduler(self):
        """The registered learning-rate scheduler, or None."""
        with self._lock:
            self._require_open()
            return self._scheduler

    @property
    def layers(self):
        """Op indices of each layer (what ``compile(trainable=[...])`` numbers)."""
        with self._lock:
            self._require_open()
            return [list(ops) for ops in self._layer_ops]

    # ---------------------------------------------------------------- hyper-parameters, counters

    def set_learning_rate(self, learning_rate):
        with self._lock:
            self._require_training("set_learning_rate")
            value = float(learning_rate)
            if value != value or value < 0.0 or value > _FLOAT32_MAX:
                raise ValueError("learning_rate must be a finite float32 number >= 0, got %r"
                                 % (learning_rate,))
            self._backend.set_learning_rate(value)

    def get_learning_rate(self):
        with self._lock:
            self._require_training("get_learning_rate")
            return self._backend.get_learning_rate()

    def get_counters(self):
        """{"step": optimizer steps taken, "epoch": the epoch counter}."""
        with self._lock:
            self._require_compiled("get_counters")
            step, epoch = self._backend.counters()
            return {"step": int(step), "epoch": int(epoch)}

    def set_epoch(self, epoch):
        with self._lock:
            self._require_compiled("set_epoch")
            if not is_integer(epoch) or not 0 <= epoch <= _INT64_MAX:
                raise ValueError("epoch must be an integer in [0, 2**63), got %r" % (epoch,))
            self._backend.set_epoch(int(epoch))

    def numeric_errors(self):
        """Steps the core refused because the loss, a gradient or an update was not finite."""
        with self._lock:
            self._require_compiled("numeric_errors")
            return int(self._backend.numeric_errors())

    def set_seed(self, seed):
        """``microtrain.set_seed(seed)``: weight initialisation of built models and the
        orders of shuffling DataLoaders created afterwards become reproducible."""
        with self._lock:
            self._require_open()
            _random.set_seed(seed)

    # ---------------------------------------------------------------- schedulers

    def register_lr_scheduler(self, scheduler):
        """Attach a ``microtrain.schedules`` scheduler: ``lr = initial_lr * factor(step)``
        after every optimizer step (``scheduler_step()``; ``train(scheduler=...)`` does it).
        ``initial_lr`` None takes the session's base learning rate: the compiled one, or
        the one a loaded checkpoint's run was compiled with. Registering sets the rate the
        schedule gives for the current step counter, so a resumed session continues the
        schedule exactly (before any step: ``initial_lr``). ``None`` detaches."""
        with self._lock:
            self._require_training("register_lr_scheduler")
            if scheduler is None:
                self._scheduler = None
                return
            if not isinstance(scheduler, _schedules.LRScheduler):
                raise TypeError("expected a microtrain.schedules.LRScheduler, got %s"
                                % type(scheduler).__name__)
            if scheduler.initial_lr is None:
                scheduler.initial_lr = self._backend.base_learning_rate()
            self._scheduler = scheduler
            self._backend.set_learning_rate(self._scheduled_rate())

    def _scheduled_rate(self):
        step = int(self._backend.counters()[0])
        if step == 0:
            return _schedules.f32(self._scheduler.initial_lr)
        return self._scheduler.learning_rate(step)

    def scheduler_step(self):
        """Set the learning rate the registered scheduler gives for the current optimizer
        step counter; returns it."""
        with self._lock:
            self._require_training("scheduler_step")
            if self._scheduler is None:
                raise RuntimeError("no learning-rate scheduler: call register_lr_scheduler() "
                                   "first")
            rate = self._scheduled_rate()
            self._backend.set_learning_rate(rate)
            return rate

    # ---------------------------------------------------------------- loop

    def train(self, data_loader, epochs=1, validation_split=0.0, checkpoint_path=None,
              callbacks=None, verbose=1, scheduler=None, validation_data=None,
              on_numeric_error="raise"):
        """Train for ``epochs`` epochs; a ``History``. See ``microtrain.training.train``."""
        return _training.train(self, data_loader, epochs, validation_split, checkpoint_path,
                               callbacks, verbose, scheduler, validation_data,
                               on_numeric_error)

    def evaluate(self, data_loader, expecteds=None):
        """Loss and metrics over a loader or ``x, y``; see ``microtrain.training.evaluate``."""
        return _training.evaluate(self, data_loader, expecteds)

    def predict(self, data, batch_size=None):
        """Outputs over a loader or arrays; see ``microtrain.training.predict``."""
        with self._lock:
            self._require_open()
            if not self._compiled:
                self._bind_for_inference(INFERENCE_BATCH_SIZE if batch_size is None
                                         else batch_size)
        return _training.predict(self, data, batch_size)

    # ---------------------------------------------------------------- properties

    def add_property(self, name, value):
        """Store an int, float or str under ``name`` in the checkpoints saved from now on."""
        with self._lock:
            self._require_open()
            self._properties.add(name, value)

    def get_property(self, name, *default):
        """A property added or loaded from a checkpoint; KeyError (or ``default``) if absent."""
        with self._lock:
            self._require_open()
            return self._properties.get(name, *default)

    def remove_property(self, name):
        with self._lock:
            self._require_open()
            self._properties.remove(name)

    @property
    def properties(self):
        """A copy of every property, name -> value."""
        with self._lock:
            self._require_open()
            return self._properties.as_dict()

    # ---------------------------------------------------------------- checkpoints and export

    def checkpoint_bytes(self, include_optimizer_state=True):
        """Size in bytes of the checkpoint save_checkpoint() would write now."""
        with self._lock:
            self._require_training("checkpoint_bytes")
            return int(self._backend.checkpoint_bytes(bool(include_optimizer_state),
                                                      self._properties.items()))

    def save_checkpoint(self, path, include_optimizer_state=True):
        """Write trained weights, optimizer state (unless ``include_optimizer_state`` is
        False), step and epoch counters, learning rates and properties to ``path``,
        atomically: a failure leaves the previous file as it was (``microtrain._files``)."""
        with self._lock:
            self._require_training("save_checkpoint")
            include = bool(include_optimizer_state)
            items = self._properties.items()
            expected = int(self._backend.checkpoint_bytes(include, items))

            def produce(writer):
                self._backend.checkpoint_save(include, items, writer.write)
                if writer.bytes_written != expected:
                    raise RuntimeError("the core wrote %d checkpoint bytes but announced %d"
                                       % (writer.bytes_written, expected))

            _files.atomic_write(path, produce)

    def load_checkpoint(self, path):
        """Restore a checkpoint saved from a session of the same model, optimizer and
        trained set. A refused checkpoint raises MicrotrainError (MT_ERR_BAD_CHECKPOINT:
        corrupt, truncated or impossible contents; MT_ERR_CHECKPOINT_MISMATCH: another
        model, optimizer or trained set) and changes nothing. Properties are replaced by
        the checkpoint's."""
        with self._lock:
            self._require_training("load_checkpoint")
            handle, size = _files.open_regular(path, "a checkpoint")
            try:
                def read(offset, count):
                    handle.seek(offset)
                    data = handle.read(count)
                    if len(data) != count:
                        raise OSError(5, "the checkpoint file shrank while it was read")
                    return data

                loaded = self._backend.checkpoint_load(size, read)
            finally:
                handle.close()
            self._properties.replace_all(loaded)
            self._reset_grad_pending = True  # gradients of the old weights are stale

    def export_model_for_inference(self, path):
        """Write the model image with the trained weights baked in and no training state
        (atomically); load it with ``Session(path)`` or embed it in firmware."""
        with self._lock:
            self._require_compiled("export_model_for_inference")

            def produce(writer):
                self._backend.export_image(writer.write)
                if writer.bytes_written != len(self._image):
                    raise RuntimeError("the core exported %d bytes, the image has %d"
                                       % (writer.bytes_written, len(self._image)))

            _files.atomic_write(path, produce)

    # ---------------------------------------------------------------- lifetime

    def close(self):
        """Forget the C session and release the arena and image (idempotent). Waits for a
        call running in another thread."""
        with self._lock:
            if self._closed:
                return
            self._backend.close()
            self._reset_compiled_state()
            self._image = b""
            self._closed = True


def _le_bytes(flat):
    """float32 little-endian bytes of a flat float32 array (numpy or array('f'))."""
    if hasattr(flat, "astype"):
        return flat.astype("<f4").tobytes()
    return bytes(flat)  # array('f'): the machine's order, little-endian on every target here


def _set_image_crc(image):
    """Store the CRC of an .mtm image (bytes [16, image_bytes) at offset 12) in place."""
    size = image[8] | image[9] << 8 | image[10] << 16 | image[11] << 24
    crc = _backend.crc32(memoryview(image)[16:size])
    for shift in range(4):
        image[12 + shift] = (crc >> (8 * shift)) & 0xFF
