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

from . import _feed, config as _config, losses as _losses, metrics as _metrics
from . import optimizers as _optimizers, properties as _properties, trainable as _trainable
from . import backend as _backend
from .backend import loader as _backend_loader
from ._model_source import model_bytes
from .session_persistence import SessionPersistence
from .session_rows import SessionRows
from ._shapes import element_count
from .session_state import INFERENCE_BATCH_SIZE, SessionState
from ._platform import SessionLock, clock_ms, is_integer
from .backend import KIND_INPUT, KIND_TARGET, MT_ERR_NUMERIC, MT_ERR_STATE
from .errors import MicrotrainError

try:
    import numpy as _np
except ImportError:  # MicroPython
    _np = None

_INT32_MAX = 2147483647


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


class Session(SessionState, SessionPersistence, SessionRows):
    """A model image and, after ``compile()``, a session of the backend's core.

    One class, three names: ``Session`` runs everywhere (CPython, MicroPython on a board or
    a JavaScript host); ``TrainSession`` is the same class on CPython with numpy views of
    the arena added (what the examples and the CLI use there); ``lite.Session`` is this
    class under the short import MicroPython scripts use (``from microtrain import lite``).

    Args:
        model:   a path, bytes, or a built model (``microtrain.Sequential`` / ``Model``,
                 anything with ``to_bytes()``)
        backend: a backend object (``microtrain.backend``) or None for the platform's
    """

    def __init__(self, model, backend=None):
        start = clock_ms()
        self._lock = SessionLock()
        self._closed = False
        image, self._source = model_bytes(model)
        if not image:
            raise ValueError("the model image is empty")
        self._backend = _backend_loader.load() if backend is None else backend
        self._new_backend = type(self._backend)
        info = self._backend.describe(image)
        self._image = image
        self._inputs = [(int(io["tensor"]), tuple(io["dims"])) for io in info["inputs"]]
        self._outputs = [(int(io["tensor"]), tuple(io["dims"])) for io in info["outputs"]]
        self._params = [(int(p["tensor"]), tuple(p["dims"]), int(p["offset"]))
                        for p in info["params"]]
        # per weight: "float32", or an int8 layer's trained in place "int8" / "int32" (every
        # backend lists those; an entry without "dtype" is float32)
        self._param_dtypes = [p.get("dtype", "float32") for p in info["params"]]
        float_params = [p for p in info["params"] if p.get("dtype", "float32") == "float32"]
        self._ops = [(int(op["type"]), int(op["layer"]), bool(op["weights"]))
                     for op in info["ops"]]
        # ops whose trainable weights are int8/int32 (an int8 layer trained in place): none
        # of their TRAINABLE inputs is a float weight
        float_trainable = set(int(p["tensor"]) for p in float_params if p["trainable"])
        self._int8_weighted = [bool(op["weights"]) and
                               not any(int(i) in float_trainable for i in op["inputs"])
                               for op in info["ops"]]
        self._op_facts = _trainable.op_facts(info["ops"], float_params, info.get("quantized", ()))
        self._layer_ops = []
        for index, (_, layer, _) in enumerate(self._ops):
            while len(self._layer_ops) <= layer:
                self._layer_ops.append([])
            self._layer_ops[layer].append(index)
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
        self._trainable_given = None
        self._scheme_layers = None  # a sparse scheme's rows (sparse_scheme.resolve)
        self._trained = []
        self._accumulating = False
        self._reset_grad_pending = False
        self._scheduler = None
        self._fast = None  # the backend's lean step path for exact float32 arrays, if any

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

    def _require_trainable(self, function):
        """Refuse a step that would update weights when the compiled choice trains none
        (the core would answer MT_ERR_STATE without saying why)."""
        if not self._plan["num_trained_params"]:
            raise MicrotrainError(MT_ERR_STATE, "nothing is trainable: the session was "
                                  "compiled with %s, which trains no weight (0 and [] mean "
                                  "inference only); compile again with trainable='all', a "
                                  "count of layers or the layers to train (microtrain info "
                                  "lists them)" % self._trainable_given, function)

    @property
    def closed(self):
        """Whether ``close()`` has run: a closed session refuses every call but ``close()``."""
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
                accumulate_gradients=False, guard_gradients=False, arena=None, proximal_mu=0.0):
        """Plan the arena, take it and bind a C session.

        Args:
            optimizer: "sgd", "adam", "adamw" or a ``microtrain.optimizers`` instance
            loss:      a name of ``microtrain.losses.ALIASES`` ("mse", "cce", "scce", ...) or
                       a ``losses`` instance; applied to model output 0
            metrics:   names or ``microtrain.metrics`` instances, evaluated on output 0;
                       "accuracy" is the loss's accuracy, as in Keras (sparse categorical
                       for scce, binary for bce, else categorical)
            batch_size: B, the rows of every buffer; steps take 1..B rows
            trainable: what trains (``microtrain.trainable``): "all" (default), an int N (the
                       last N layers with weights; 0 = inference only), a list of layer
                       positions (``model.layers`` of a built model, ``self.layers``, the
                       layer column of ``microtrain info``) or of names (an imported
                       model's: ``self.layers[i].name``), "bias", or a sparse scheme
                       {layer: "bias" | "all" | k channels | fraction} (``sparse_update``)
            num_trainable_ops: onert's num_of_trainable_ops: the last N ops (-1 all)
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
            proximal_mu: FedProx's μ >= 0 (0: off). Training then minimises
                       loss + μ/2·‖w − w_ref‖² over the trained weights: every update adds
                       μ·(w − w_ref) to the gradient, in the core. w_ref is a copy of the
                       trained weights in the arena (``memory_plan()["reference_bytes"]``):
                       the weights at compile(), then what ``set_reference()`` copies.

        Frozen weights are read from the image and get no gradient or optimizer bytes.
        A failed compile() leaves a compiled session as it was.
        """
        with self._lock:
            self._require_open()
            start = clock_ms()
            optimizer = _optimizers.get(optimizer)
            loss = _losses.get(loss)
            metric_list = _metrics.get_list(metrics, loss, self._outputs[0][1])
            self._check_batch_size(batch_size)
            proximal_mu = self._checked_mu(proximal_mu)
            chosen = _trainable.choose(trainable, num_trainable_ops, biases_only, self._ops,
                                       self._layer_ops, self._layer_names(), self._op_facts)
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
            config = _config.make_config(optimizer, loss, batch_size, chosen["count"],
                                         chosen["mask"], chosen["biases_only"],
                                         accumulate_gradients, guard_gradients, proximal_mu,
                                         chosen["channels"])
            self._check_int8_training(config)
            self._bind(config, arena)
            self._optimizer, self._loss = optimizer, loss
            self._accumulating = bool(accumulate_gradients)
            self._trainable_given, self._trainable_text = chosen["given"], chosen["text"]
            self._scheme_layers = chosen["layers"]
            self._train_metrics = metric_list
            self._eval_metrics = [_clone_metric(m) for m in metric_list]
            self._fast = None
            fast_steps = getattr(self._backend, "fast_steps", None)
            if fast_steps is not None and not loss.sparse_labels:
                self._fast = fast_steps(self._inputs[0][1], self._outputs[0][1])
            for metric in metric_list:
                metric.reset_state()
            self._timings["compile_ms"] = clock_ms() - start

    def _layer_names(self):
        """Per layer, the names it answers to (an imported model's; None otherwise)."""
        source = self._source
        if source is None or not hasattr(source, "layer_names"):
            return None
        names = source.layer_names()
        return names if names is not None and len(names) == len(self._layer_ops) else None

    @staticmethod
    def _checked_mu(proximal_mu):
        try:
            value = float(proximal_mu)
        except (TypeError, ValueError):
            raise ValueError("proximal_mu must be a number >= 0, got %r" % (proximal_mu,))
        if value != value or value < 0.0 or value > 3.4028234663852886e38:
            raise ValueError("proximal_mu must be a finite float32 number >= 0, got %r"
                             % (proximal_mu,))
        return value

    def _check_batch_size(self, batch_size):
        if not is_integer(batch_size) or not 1 <= batch_size <= _INT32_MAX:
            raise ValueError("batch_size must be a positive integer up to %d, got %r"
                             % (_INT32_MAX, batch_size))

    def _bind(self, config, arena=None):
        """Plan ``config`` on the current weights (a refusal leaves everything as it was), then
        open a session from that plan and drop the old one: the image is validated and
        planned once, by the plan; the backend that plans is the one that opens."""
        image = self._current_image()
        if not self._compiled or arena is not None:
            backend = self._backend  # with an arena given, the old session closes first (below)
        else:
            backend = self._new_backend()  # the old session stays intact until this one opens
        try:
            plan = backend.plan(image, config)
        except MicrotrainError as error:
            if error.status == _backend.MT_ERR_BAD_ARGUMENT and error.op_index < 0:
                raise MicrotrainError(error.status, "%s; batch_size %d, %s" % (
                    error.message, config["batch_size"], self._describe_optimizer(config)),
                    error.function)
            if error.status == _backend.MT_ERR_UNSUPPORTED and error.op_index < 0:
                raise MicrotrainError(error.status, "%s: the arena batch_size %d needs is "
                                      "larger than the planner lays out (4 GiB of shared "
                                      "buffers); use a smaller batch_size or train fewer ops"
                                      % (error.message, config["batch_size"]), error.function)
            raise
        if self._compiled and arena is not None:
            # the caller's arena may be the one the old session lives in: that one goes first
            self._backend.close()
            self._image = image
            self._reset_compiled_state()
        try:
            backend.open(plan, arena)
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
            self._require_trainable("mt_session_train_step" if update else
                                    "mt_session_accumulate")
            fast = self._fast if update else None
            n = fast.write(inputs, expecteds) if fast is not None else 0
            if n:  # exact float32 arrays: checked and copied by the lean path
                targets = expecteds
                start = clock_ms()
                loss, status = fast.step(fast.train, n)
                elapsed_ms = clock_ms() - start
                if status is not None:
                    try:
                        self._backend.step_failed(status, "mt_session_train_step")
                    except MicrotrainError as error:
                        if error.status == MT_ERR_NUMERIC:
                            raise self._numeric_error(error, update)
                        raise
                self._reset_grad_pending = True
                return {"loss": [loss],
                        "metrics": self._update_metrics(self._train_metrics, n, targets,
                                                        reset_metrics)
                        if self._train_metrics else {},
                        "train_time": elapsed_ms}
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
            fast = self._fast
            n = fast.write(inputs, expecteds) if fast is not None else 0
            if n:  # exact float32 arrays: checked and handed over by the lean path
                targets = expecteds
                start = clock_ms()
                loss, status = fast.step(fast.eval, n)
                elapsed_ms = clock_ms() - start
                if status is not None:
                    self._backend.step_failed(status, "mt_session_eval_step")
            else:
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
                    width = element_count(self._inputs[position][1])
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


