"""``TrainSession``: the owning wrapper over one C training session (onert's API).

    with microtrain.TrainSession("model.mtm") as sess:
        sess.compile(optimizer="adam", loss="categorical_crossentropy",
                     metrics=["categorical_accuracy"], batch_size=16)
        result = sess.train_step(x_batch, y_batch)   # {"loss": [..], "metrics": {..}, ...}

Memory: the session owns two buffers, both numpy arrays it never reallocates
between steps:

  * the model image (4-byte aligned; the core reads frozen weights in place from it),
  * the arena of exactly ``mt_memory_plan.total_bytes`` (16-byte aligned), in which
    the core lays out trained weights, gradients, optimizer state, activations and
    the input/output/target buffers.

Input, output and target buffers are numpy views on the arena, so a step copies
the caller's rows straight into them. Views handed out stay readable after
``close()`` because they keep the arena array alive.

Only model output 0 has a loss: ``expecteds`` and the metrics refer to it.

The class is split by responsibility: this file holds compile, steps (including
ONNX Runtime's gradient accumulation), buffers and weights; ``training.py`` adds
``train``/``evaluate``/``predict`` and learning-rate schedulers; ``checkpoint.py``
adds checkpoints, properties and export.
"""

import copy
import ctypes
import math
import os
import time

import numpy as np

from .errors import MicrotrainError

from . import _random, losses as _losses, metrics as _metrics
from .backend import _native
from .nn import image as _image
from . import optimizers as _optimizers, properties as _properties, trainable as _trainable
from .backend._native import _check
from ._feeding import FeedMixin
from .checkpoint import CheckpointMixin
from ._lifecycle import LifecycleMixin
from .nn.model import Model
from .training import TrainingMixin

_OPTIMIZER_CODES = {
    "sgd": _native.MT_OPTIMIZER_SGD,
    "adam": _native.MT_OPTIMIZER_ADAM,
    "adamw": _native.MT_OPTIMIZER_ADAMW,
}
_LOSS_CODES = {
    "mse": _native.MT_LOSS_MSE,
    "mae": _native.MT_LOSS_MAE,
    "categorical_crossentropy": _native.MT_LOSS_CATEGORICAL_CROSSENTROPY,
    "sparse_categorical_crossentropy": _native.MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
    "binary_crossentropy": _native.MT_LOSS_BINARY_CROSSENTROPY,
}
_REDUCTION_CODES = {"mean": _native.MT_REDUCTION_MEAN, "sum": _native.MT_REDUCTION_SUM}
_NUMPY_DTYPES = {_native.MT_DTYPE_F32: np.dtype(np.float32),
                 _native.MT_DTYPE_I32: np.dtype(np.int32)}
_IMAGE_ALIGN = 16     # the core needs 4; 16 keeps weight data 16-aligned in memory too
_INT32_MAX = 2 ** 31 - 1


def _aligned_zeros(nbytes, alignment):
    """A zeroed uint8 array of ``nbytes`` whose data address is a multiple of ``alignment``."""
    raw = np.zeros(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + nbytes]


def _pointer_address(pointer):
    return ctypes.cast(pointer, ctypes.c_void_p).value


def _read_model_bytes(model):
    if isinstance(model, Model):
        return model.to_bytes()
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as handle:
            return handle.read()
    raise TypeError("TrainSession takes a path, bytes or a microtrain.Sequential/Model, got %s"
                    % type(model).__name__)


class TrainSession(LifecycleMixin, FeedMixin, TrainingMixin, CheckpointMixin):
    """A model image plus, after ``compile()``, a C session bound to an owned arena."""

    def __init__(self, model):
        start = time.perf_counter()
        data = _read_model_bytes(model)
        if not data:
            raise ValueError("the model image is empty")
        self._closed = False
        self._image = _aligned_zeros(len(data), _IMAGE_ALIGN)
        self._image[:] = np.frombuffer(data, dtype=np.uint8)
        self._model_info = _native.mt_model_info()
        _check(_native.mt_model_check(self._image_address(), self._image.size,
                                      ctypes.byref(self._model_info)), "mt_model_check")
        self._inputs = [self._describe_io(0, p) for p in range(self._model_info.num_inputs)]
        self._outputs = [self._describe_io(1, p) for p in range(self._model_info.num_outputs)]
        self._params = self._find_params()
        self._loss_value = ctypes.c_float()
        self._loss_pointer = ctypes.pointer(self._loss_value)
        # layer position -> op indices, for compile(trainable=[layers]); None for an image
        self._layer_ops = ([list(ops) for ops in model.layer_ops]
                           if isinstance(model, Model) else None)
        self._properties = _properties.Properties()
        self.stop_training = False  # a train() callback may set it to end training early
        self._reset_compiled_state()
        self._timings = {"model_load_ms": (time.perf_counter() - start) * 1000.0,
                         "compile_ms": None}

    # ---------------------------------------------------------------- helpers

    def _image_address(self):
        return self._image.ctypes.data

    def _tensor_info(self, index):
        info = _native.mt_tensor_info()
        _check(_native.mt_model_tensor(self._image_address(), self._image.size, index,
                                       ctypes.byref(info)), "mt_model_tensor")
        return info

    def _describe_io(self, is_output, position):
        index = ctypes.c_int32()
        _check(_native.mt_model_io(self._image_address(), self._image.size, is_output, position,
                                   ctypes.byref(index)), "mt_model_io")
        info = self._tensor_info(index.value)
        return {"index": info.index, "dims": tuple(info.dims[:info.ndim]),
                "dtype": _NUMPY_DTYPES[info.dtype]}

    def _find_params(self):
        """CONST f32 tensors in tensor-table order (how the core lists weights, see
        mt_session_param), with where their data lies in the image."""
        parsed = _image.read_image(self._image)
        return [{"index": index, "shape": parsed.tensors[index].dims,
                 "image_offset": parsed.tensors[index].data_offset}
                for index in parsed.const_f32_tensors()]

    def _check_mask_selects_weights(self, mask_bits):
        parsed = _image.read_image(self._image)
        has_weights = [any(t is not None and parsed.tensors[t].flags & _image.FLAG_TRAINABLE
                           for t in op.inputs) for op in parsed.ops]
        names = [_native.OP_NAMES.get(op.op_type, "?") for op in parsed.ops]
        _trainable.check_selects_weights(mask_bits, has_weights, names,
                                         "op" if self._layer_ops is None else "layer")

    def _reset_compiled_state(self):
        self._session = None
        self._arena = None
        self._config = None
        self._batch_size = None
        self._loss = None
        self._input_views = []
        self._output_views = []
        self._target_view = None
        self._param_views = []
        self._train_metrics = []
        self._eval_metrics = []
        self._trainable_mask = None   # ctypes uint8 array the config points at, or None
        self._trainable_text = None
        self._reset_grad_pending = False
        self._accumulating = False
        self._scheduler = None

    def _buffer_view(self, owner, address, nbytes, dtype, shape):
        """A numpy view of ``nbytes`` at ``address`` inside ``owner`` (arena or image)."""
        offset = address - owner.ctypes.data
        if offset < 0 or offset + nbytes > owner.size:
            raise RuntimeError("the core returned a buffer outside the memory it was given "
                               "(offset %d, %d bytes, buffer %d bytes)"
                               % (offset, nbytes, owner.size))
        return owner[offset:offset + nbytes].view(dtype).reshape(shape)

    # ---------------------------------------------------------------- compile

    def compile(self, optimizer, loss, metrics=(), batch_size=16, num_trainable_ops=None,
                trainable=None, biases_only=False, accumulate_gradients=False,
                guard_gradients=False):
        """Plan the arena, allocate it and bind a C session.

        Args:
            optimizer: "sgd", "adam", "adamw" or a ``microtrain.optimizers`` instance
            loss:      a name from ``microtrain.losses.ALIASES`` or a ``losses`` instance;
                       applied to model output 0
            metrics:   names or ``microtrain.metrics`` instances, evaluated on output 0
            batch_size: B, the rows of every buffer; steps take 1..B rows
            trainable: what trains (see ``microtrain.trainable``): "all" (default), an int N
                       (the last N ops, onert's num_of_trainable_ops; 0 = inference only),
                       a list of layer positions (Sequential) or op indices (image file),
                       or "bias" for bias-only training of every op
            num_trainable_ops: the int form of ``trainable`` under onert's name
            biases_only: train only the 1-D weights (biases) of the chosen ops
            accumulate_gradients: keep weight gradients between calls so that
                       ``train_step(..., update=False)`` / ``optimizer_step()`` can accumulate
                       several batches (ONNX Runtime's control). False (the core's default):
                       each weight is updated as soon as its gradient is complete, so the
                       gradients never live all at once and the arena is smaller; a plain
                       ``train_step`` gives the same bits either way.
            guard_gradients: check every weight gradient for NaN/Inf before any weight
                       changes, so a refused step leaves weights and optimizer state exactly
                       as they were (needs the accumulate layout's memory). Without it a
                       non-finite loss still changes nothing, but with fused updates a
                       non-finite gradient stops the step after the weights already updated.

        Frozen weights are read from the image and get no gradient or optimizer bytes
        (``memory_plan()`` shows it). Compiling again rebinds the session: the weights
        trained so far are kept, the optimizer state and step counter start afresh.
        """
        self._require_open()
        start = time.perf_counter()
        optimizer = _optimizers.get(optimizer)
        loss = _losses.get(loss)
        metric_list = _metrics.get_list(metrics)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or not 1 <= batch_size <= _INT32_MAX:  # an int32 field: ctypes would wrap it
            raise ValueError("batch_size must be a positive integer up to %d, got %r"
                             % (_INT32_MAX, batch_size))
        if num_trainable_ops is not None:
            if trainable is not None:
                raise ValueError("give trainable or num_trainable_ops, not both")
            if isinstance(num_trainable_ops, bool) or \
                    not isinstance(num_trainable_ops, (int, np.integer)) or num_trainable_ops < -1:
                raise ValueError("num_trainable_ops must be an integer >= -1 (-1 = all ops), "
                                 "got %r" % (num_trainable_ops,))
            trainable = int(num_trainable_ops)
        num_ops = self._model_info.num_ops
        trainable_count, mask_bits, bias_mode = _trainable.resolve(
            trainable, num_ops, self._layer_ops, biases_only)
        if mask_bits is not None and any(mask_bits):
            self._check_mask_selects_weights(mask_bits)
        output_dims = self._outputs[0]["dims"]
        if loss.sparse_labels and (len(output_dims) != 1 or output_dims[0] < 2):
            raise ValueError("sparse categorical cross-entropy needs a 1-D output of at least 2 "
                             "classes; output 0 has shape %r" % (output_dims,))
        names = set()
        for metric in metric_list:
            metric.check_compatible(output_dims, loss.sparse_labels)
            if metric.name in names:
                raise ValueError("two metrics are named %r; give them distinct names"
                                 % metric.name)
            names.add(metric.name)

        config = _native.mt_train_config()
        _native.mt_train_config_init(ctypes.byref(config))
        config.optimizer = _OPTIMIZER_CODES[optimizer.name]
        config.loss = _LOSS_CODES[loss.name]
        config.reduction = _REDUCTION_CODES[loss.reduction]
        config.batch_size = int(batch_size)
        config.num_trainable_ops = trainable_count
        config.biases_only = bias_mode
        config.accumulate_gradients = 1 if accumulate_gradients else 0
        config.guard_gradients = 1 if guard_gradients else 0
        mask = None
        if mask_bits is not None:
            # borrowed by mt_plan()/mt_session_init(); kept alive with the session anyway
            mask = (ctypes.c_uint8 * max(1, num_ops))(*mask_bits)
            config.trainable_op_mask = ctypes.cast(mask, ctypes.POINTER(ctypes.c_uint8))
        for field, value in optimizer.get_config().items():
            setattr(config, field, value)

        if self._session is not None:
            self._store_trained_weights_in_image()
        plan = _native.mt_memory_plan()
        status = _native.mt_plan(self._image_address(), self._image.size, ctypes.byref(config),
                                 ctypes.byref(plan))
        if status == _native.MT_ERR_BAD_ARGUMENT:  # say which configuration was refused
            raise MicrotrainError(status, "%s; batch_size %d, %r" % (
                _native.status_text(status), batch_size, optimizer), "mt_plan")
        _check(status, "mt_plan")
        try:
            arena = _aligned_zeros(plan.total_bytes, _native.MT_ARENA_ALIGN)
        except MemoryError as error:
            raise MemoryError("the arena of %d bytes that batch_size %d needs cannot be "
                              "allocated (%s); use a smaller batch_size or train fewer ops"
                              % (plan.total_bytes, batch_size, error)) from None
        session = _native.mt_session_p()
        _check(_native.mt_session_init(ctypes.byref(session), self._image_address(),
                                       self._image.size, ctypes.byref(config),
                                       arena.ctypes.data, arena.size), "mt_session_init")
        self._reset_compiled_state()
        self._session, self._arena, self._config = session, arena, config
        self._trainable_mask = mask
        self._accumulating = bool(accumulate_gradients)
        self._trainable_text = _trainable.describe(trainable_count, mask_bits, bias_mode)
        self._batch_size, self._loss = int(batch_size), loss
        self._optimizer = optimizer
        self._bind_buffers()
        self._train_metrics = metric_list
        self._eval_metrics = [copy.deepcopy(m) for m in metric_list]
        for metric in metric_list + self._eval_metrics:
            metric.reset_state()
        self._timings["compile_ms"] = (time.perf_counter() - start) * 1000.0

    def _bind_buffers(self):
        B = self._batch_size
        data = ctypes.POINTER(ctypes.c_float)()
        count = ctypes.c_int32()
        for position, io in enumerate(self._inputs):
            _check(_native.mt_session_input(self._session, position, ctypes.byref(data),
                                            ctypes.byref(count)), "mt_session_input")
            shape = (B,) + io["dims"]
            self._input_views.append(self._buffer_view(
                self._arena, _pointer_address(data), 4 * count.value, np.float32, shape))
        for position, io in enumerate(self._outputs):
            _check(_native.mt_session_output(self._session, position, ctypes.byref(data),
                                             ctypes.byref(count)), "mt_session_output")
            view = self._buffer_view(self._arena, _pointer_address(data), 4 * count.value,
                                     np.float32, (B,) + io["dims"])
            view.flags.writeable = False
            self._output_views.append(view)
        target = ctypes.c_void_p()
        target_bytes = ctypes.c_int32()
        _check(_native.mt_session_target(self._session, ctypes.byref(target),
                                         ctypes.byref(target_bytes)), "mt_session_target")
        if self._loss.sparse_labels:
            dtype, shape = np.int32, (B,)
        else:
            dtype, shape = np.float32, (B,) + self._outputs[0]["dims"]
        self._target_view = self._buffer_view(self._arena, target.value, target_bytes.value,
                                              dtype, shape)
        self._param_views = self._bind_params()

    def _bind_params(self):
        count = ctypes.c_int32()
        _check(_native.mt_session_param_count(self._session, ctypes.byref(count)),
               "mt_session_param_count")
        if count.value != len(self._params):
            raise RuntimeError("the core lists %d weight tensors, the image holds %d"
                               % (count.value, len(self._params)))
        views = []
        info = _native.mt_param_info()
        for position, param in enumerate(self._params):
            _check(_native.mt_session_param(self._session, position, ctypes.byref(info)),
                   "mt_session_param")
            if info.tensor_index != param["index"]:
                raise RuntimeError("the core lists tensor %d as weight %d, expected tensor %d"
                                   % (info.tensor_index, position, param["index"]))
            if info.trained:
                owner, address = self._arena, _pointer_address(info.data)
            else:
                owner, address = self._image, _pointer_address(info.image_data)
            views.append((self._buffer_view(owner, address, 4 * info.count, np.float32,
                                            param["shape"]), bool(info.trained)))
        return views

    def _store_trained_weights_in_image(self):
        """Copy the arena's trained weights into the image (and fix its CRC) before rebinding."""
        for param, (view, trained) in zip(self._params, self._param_views):
            if trained:
                self._image_param_view(param)[...] = view
        _image.update_crc(self._image)

    def _image_param_view(self, param):
        count = int(np.prod(param["shape"]))
        offset = param["image_offset"]
        return self._image[offset:offset + 4 * count].view(np.float32).reshape(param["shape"])

    # ---------------------------------------------------------------- steps

    def _update_metrics(self, metric_list, n, reset):
        if not metric_list:
            return {}
        return _metrics.update_all(metric_list, self._output_views[0][:n],
                                   self._target_view[:n], reset)

    def train_step(self, inputs, expecteds, reset_metrics=True, update=True):
        """A training step on the n rows given (1 <= n <= batch_size).

        ``inputs`` is an array [n, ...] or a list of arrays (one per model input);
        ``expecteds`` the targets of output 0 ([n] int labels for sparse CCE).
        Metrics cover this step only unless ``reset_metrics=False``, which
        accumulates them until ``reset_metrics()``.

        ``update=True`` (default): one optimizer step on these rows alone (zero the
        gradients, forward, backward, update). ``update=False``: ONNX Runtime's
        ``train_step``: forward and backward only, gradients added to those already
        accumulated (after a ``lazy_reset_grad()`` or an ``update=True`` step they start
        from zero); ``optimizer_step()`` applies them. With mean reduction, k batches
        of n rows accumulated then applied give the update of one batch of k*n rows.

        Returns {"loss": [loss], "metrics": {name: value}, "train_time": milliseconds}.
        Raises MicrotrainError (MT_ERR_NUMERIC) on a non-finite loss; no update is
        applied and no gradient is accumulated.
        """
        self._require_compiled("train_step")
        if not update:
            self._require_accumulation("train_step(..., update=False)")
        n = self._load_inputs(inputs)
        self._load_targets(expecteds, n)
        start = time.perf_counter()
        if update:
            name = "mt_session_train_step"
            status = _native.mt_session_train_step(self._session, n, self._loss_pointer)
        else:
            name = "mt_session_accumulate"
            if self._reset_grad_pending:
                _check(_native.mt_session_zero_grad(self._session), "mt_session_zero_grad")
                self._reset_grad_pending = False
            status = _native.mt_session_accumulate(self._session, n, self._loss_pointer)
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        if status == _native.MT_ERR_NUMERIC:
            error = MicrotrainError(status, self._numeric_error_text(status, update), name)
            error.loss = self._loss_value.value  # train(on_numeric_error="stop") reports it
            raise error
        _check(status, name)
        if update:
            self._reset_grad_pending = True  # this step's gradients are used up
        return {"loss": [self._loss_value.value],
                "metrics": self._update_metrics(self._train_metrics, n, reset_metrics),
                "train_time": elapsed_ms}

    def _numeric_error_text(self, status, update):
        """The core's text for MT_ERR_NUMERIC speaks of the loss; say what was refused."""
        loss = self._loss_value.value
        if not math.isfinite(loss):
            return "%s; the loss is %r" % (_native.status_text(status), loss)
        if update and self.memory_plan()["fused_update"]:
            return ("a weight gradient is NaN or infinite (the loss %r is finite): the step "
                    "stopped there, after updating the layers nearer the output; "
                    "compile(guard_gradients=True) refuses such steps whole "
                    "[MT_ERR_NUMERIC]" % loss)
        return ("a weight gradient is NaN or infinite (the loss %r is finite): nothing was "
                "updated [MT_ERR_NUMERIC]" % loss)

    def eval_step(self, inputs, expecteds, reset_metrics=True):
        """Forward and loss on n rows, no update. Returns {"loss", "metrics", "eval_time"}.
        Evaluation metrics are kept apart from training metrics."""
        self._require_compiled("eval_step")
        n = self._load_inputs(inputs)
        self._load_targets(expecteds, n)
        start = time.perf_counter()
        status = _native.mt_session_eval_step(self._session, n, self._loss_pointer)
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        _check(status, "mt_session_eval_step")
        return {"loss": [self._loss_value.value],
                "metrics": self._update_metrics(self._eval_metrics, n, reset_metrics),
                "eval_time": elapsed_ms}

    def infer(self, inputs):
        """Forward only; a list with one array [n, ...] (a copy) per model output."""
        self._require_compiled("infer")
        n = self._load_inputs(inputs)
        _check(_native.mt_session_infer(self._session, n), "mt_session_infer")
        return [view[:n].copy() for view in self._output_views]

    def reset_metrics(self):
        """Reset the accumulated training and evaluation metrics."""
        self._require_open()
        for metric in self._train_metrics + self._eval_metrics:
            metric.reset_state()

    # ---------------------------------------------------------------- buffers

    def input_buffer(self, position=0):
        """The arena's input buffer number ``position``: a float32 view [B, ...]."""
        self._require_compiled("input_buffer")
        return self._input_views[position]

    def output_buffer(self, position=0):
        """The arena's output buffer number ``position``: a read-only float32 view [B, ...]."""
        self._require_compiled("output_buffer")
        return self._output_views[position]

    def target_buffer(self):
        """The arena's target buffer: float32 [B, ...] or int32 [B] labels."""
        self._require_compiled("target_buffer")
        return self._target_view

    # ---------------------------------------------------------------- weights

    def get_weights(self):
        """Copies of every weight tensor in layer order, each layer's weight then bias."""
        self._require_open()
        if self._session is None:
            return [self._image_param_view(p).copy() for p in self._params]
        return [view.copy() for view, _ in self._param_views]

    def set_weights(self, weights):
        """Replace every weight tensor; ``weights`` as get_weights() returns them.
        Trained weights are written into the arena, frozen ones into the session's
        copy of the image (whose CRC is then updated)."""
        self._require_open()
        weights = list(weights)
        if len(weights) != len(self._params):
            raise ValueError("the model has %d weight tensors, got %d arrays"
                             % (len(self._params), len(weights)))
        arrays = []
        for position, (param, value) in enumerate(zip(self._params, weights)):
            array = np.asarray(value)
            if array.dtype.kind not in "iuf":
                raise ValueError("weight %d has dtype %s, which cannot be converted to float32"
                                 % (position, array.dtype))
            if tuple(array.shape) != param["shape"]:
                raise ValueError("weight %d must have shape %s, got %s"
                                 % (position, param["shape"], tuple(array.shape)))
            with np.errstate(over="ignore"):  # checked as float32: 1e300 would become inf
                array = array.astype(np.float32)
            if not np.all(np.isfinite(array)):
                raise ValueError("weight %d contains NaN or infinity" % position)
            arrays.append(array)
        if self._session is None:
            targets = [self._image_param_view(p) for p in self._params]
        else:
            targets = [view for view, _ in self._param_views]
        for target, array in zip(targets, arrays):
            target[...] = array
        _image.update_crc(self._image)

    # ---------------------------------------------------------------- info

    def memory_plan(self):
        """The arena's byte breakdown (fields of mt_memory_plan) as a dict."""
        self._require_compiled("memory_plan")
        plan = _native.mt_memory_plan()
        _check(_native.mt_session_plan(self._session, ctypes.byref(plan)), "mt_session_plan")
        return {name: getattr(plan, name) for name, _ in _native.mt_memory_plan._fields_}

    def _tensorinfo(self, ios):
        batch = self._batch_size  # None before compile()
        return [{"index": io["index"], "shape": (batch,) + io["dims"], "dtype": io["dtype"]}
                for io in ios]

    def get_inputs_tensorinfo(self):
        """Per input: {"index", "shape": (B, ...), "dtype"}; B is None before compile()."""
        self._require_open()
        return self._tensorinfo(self._inputs)

    def get_outputs_tensorinfo(self):
        """Per output: {"index", "shape": (B, ...), "dtype"}; B is None before compile()."""
        self._require_open()
        return self._tensorinfo(self._outputs)

    def trained_tensors(self):
        """Tensor indices of the weights the optimizer updates (the rest stay in the image)."""
        self._require_compiled("trained_tensors")
        return [param["index"] for param, (_, trained) in zip(self._params, self._param_views)
                if trained]

    def trainable_description(self):
        """What trains, as text: "all", "last 2 ops", "ops [3, 4]", "..., biases only"."""
        self._require_compiled("trainable_description")
        return self._trainable_text

    @property
    def timings(self):
        """{"model_load_ms": reading and validating the image, "compile_ms": the last
        compile() (None before)}."""
        self._require_open()
        return dict(self._timings)

    @property
    def batch_size(self):
        self._require_open()
        return self._batch_size

    def set_learning_rate(self, learning_rate):
        self._require_compiled("set_learning_rate")
        value = float(learning_rate)
        if not math.isfinite(value) or value < 0.0 or not np.isfinite(np.float32(value)):
            raise ValueError("learning_rate must be a finite float32 number >= 0, got %r"
                             % (learning_rate,))
        _check(_native.mt_session_set_learning_rate(self._session, value),
               "mt_session_set_learning_rate")

    def _core_set_learning_rate(self, rate):
        """The C call behind set_learning_rate and the schedulers (TrainingMixin)."""
        _check(_native.mt_session_set_learning_rate(self._session, rate),
               "mt_session_set_learning_rate")

    def _core_optimizer_step(self):
        """The C call behind optimizer_step (TrainingMixin)."""
        _check(_native.mt_session_optimizer_step(self._session), "mt_session_optimizer_step")

    def get_learning_rate(self):
        self._require_compiled("get_learning_rate")
        value = ctypes.c_float()
        _check(_native.mt_session_get_learning_rate(self._session, ctypes.byref(value)),
               "mt_session_get_learning_rate")
        return value.value

    def get_counters(self):
        """{"step": optimizer steps taken, "epoch": the epoch counter}."""
        self._require_compiled("get_counters")
        step, epoch = ctypes.c_int64(), ctypes.c_int64()
        _check(_native.mt_session_counters(self._session, ctypes.byref(step),
                                           ctypes.byref(epoch)), "mt_session_counters")
        return {"step": step.value, "epoch": epoch.value}

    def numeric_errors(self):
        """Steps the core refused because the loss or a gradient was NaN or infinite."""
        self._require_compiled("numeric_errors")
        count = ctypes.c_int64()
        _check(_native.mt_session_numeric_errors(self._session, ctypes.byref(count)),
               "mt_session_numeric_errors")
        return count.value

    def set_epoch(self, epoch):
        self._require_compiled("set_epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) \
                or not 0 <= epoch < 2 ** 63:  # an int64 argument: ctypes would wrap it
            raise ValueError("epoch must be an integer in [0, 2**63), got %r" % (epoch,))
        _check(_native.mt_session_set_epoch(self._session, int(epoch)), "mt_session_set_epoch")

    # ---------------------------------------------------------------- lifetime

    def close(self):
        """Forget the C session and release the arena and image (idempotent)."""
        if self._closed:
            return
        self._reset_compiled_state()
        self._image = None
        self._closed = True
