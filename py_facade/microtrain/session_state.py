"""``SessionState``: weights, information, counters, schedulers and the training loop of a
``Session`` (part of session.Session; MicroPython-safe).

It is a part of one class, split off by responsibility to keep files short. It uses, of the
``Session`` it belongs to: ``_lock``, ``_backend``, ``_require_open/_compiled/_training``,
``_compiled``, ``_image``, ``_params`` [(tensor, dims, image offset)], ``_param_dtypes``
["float32" | "int8" | "int32"], ``_inputs`` /
``_outputs`` [(tensor, dims)], ``_ops`` [(type, layer, has weights)], ``_layer_ops``,
``_plan``, ``_config``, ``_batch_size``, ``_loss``, ``_train_metrics`` / ``_eval_metrics``,
``_trained``, ``_trainable_text``, ``_scheme_layers``, ``_op_facts``, ``_timings``,
``_scheduler``, ``_layer_names()``, ``_new_backend()``, ``_check_batch_size()``,
``_current_image()`` and ``_bind_for_inference()`` — each set up by ``Session.__init__`` /
``compile``.
"""

from . import _random, ops as _ops, schedules as _schedules, training as _training
from . import config as _config, losses as _losses, optimizers as _optimizers
from . import sparse_scheme as _sparse, trainable as _trainable
from ._model_source import _le_bytes, _set_image_crc
from ._platform import is_integer
from ._shapes import element_count
from .backend import PLAN_FIELDS, crc32

try:
    import numpy as _np
except ImportError:  # MicroPython
    _np = None

INFERENCE_BATCH_SIZE = 16
_INT64_MAX = 9223372036854775807
_FLOAT32_MAX = 3.4028234663852886e38
# a weight's dtype: (bytes a value, array typecode, lowest and highest value of an integer one)
_WIDTHS = {"float32": (4, "f", None, None), "int8": (1, "b", -128, 127),
           "int32": (4, "i", -2147483648, 2147483647)}


def weights_crc32(weights):
    """zlib.crc32 over weight arrays in get_weights() order, each as its little-endian bytes
    at its width (float32; an int8 layer's trained in place int8 and int32): what
    ``Session.weights_crc32()`` and a firmware (mt_session_weights_crc32) give for them."""
    crc = 0
    for weight in weights:
        weight = _np.ascontiguousarray(weight)
        width = weight.dtype if weight.dtype.kind in "iu" else _np.dtype(_np.float32)
        crc = crc32(weight.astype(width.newbyteorder("<")).tobytes(), crc)
    return crc & 0xFFFFFFFF


class SessionState:
    """Weights, information, hyper-parameters, counters, schedulers and the loop."""

    def _while_open(self, read):
        """read() under the session's lock, on an open session (RuntimeError once closed): the
        readers of information below, so a close() from another thread never runs inside one."""
        with self._lock:
            self._require_open()
            return read()

    # ---------------------------------------------------------------- weights

    def _param_list(self):
        return [(index, dims) for index, dims, _ in self._params]

    def get_weights(self):
        """Every weight tensor in tensor-table order (each layer's weight, then its bias):
        numpy arrays of their shapes, or flat ``array('f')`` without numpy. The weights of an
        int8 layer trained in place (``convert(..., int8_train=True)``) are int8 and its
        biases int32 (``array('b')`` / ``array('i')`` without numpy)."""
        with self._lock:
            self._require_open()
            weights = []
            for position, (_, dims, offset) in enumerate(self._params):
                if self._compiled:
                    flat = self._backend.read_param(position)
                else:
                    flat = self._image_param(offset, dims, self._param_dtypes[position])
                weights.append(flat.reshape(dims) if hasattr(flat, "reshape") else flat)
            return weights

    def _image_bytes(self, position):
        """Weight ``position``'s bytes in the session's image."""
        _, dims, offset = self._params[position]
        width = _WIDTHS[self._param_dtypes[position]][0]
        return self._image[offset:offset + width * element_count(dims)]

    def _image_param(self, offset, dims, dtype="float32"):
        data = self._image[offset:offset + _WIDTHS[dtype][0] * element_count(dims)]
        if _np is not None:
            return _np.frombuffer(data, dtype=_np.dtype(dtype).newbyteorder("<")).astype(dtype)
        from array import array
        return array(_WIDTHS[dtype][1], data)  # the machine's order: little-endian here

    def weights_crc32(self):
        """zlib.crc32 over every weight in get_weights() order, each as its little-endian
        bytes at its width (float32; an int8 layer's trained in place int8 and int32): the
        figure a firmware prints for the same weights (mt_session_weights_crc32)."""
        with self._lock:
            self._require_open()
            if self._compiled:
                return int(self._backend.weights_crc32())
            crc = 0
            for position in range(len(self._params)):
                crc = crc32(self._image_bytes(position), crc)
            return crc

    def set_weights(self, weights):
        """Replace weight tensors (arrays of their shapes, or flat sequences). ``weights``:
        every tensor, as get_weights() returns them; or, on a compiled session, only the
        trained ones in that order (``trained_tensors()``: what a fleet's clients send);
        or a dict {tensor index, or "t<index>" as a fleet's ``keys`` name it: array} that
        replaces those tensors alone. Trained weights go into the arena, frozen ones into
        the session's image. Everything is checked before anything changes."""
        with self._lock:
            self._require_open()
            checked = [(position, self._checked_weight(position, value))
                       for position, value in self._weight_positions(weights)]
            if self._compiled:
                for position, flat in checked:
                    self._backend.write_param(position, flat)
            else:
                image = bytearray(self._image)
                for position, flat in checked:
                    _, dims, offset = self._params[position]
                    width = _WIDTHS[self._param_dtypes[position]][0]
                    image[offset:offset + width * element_count(dims)] = _le_bytes(flat)
                _set_image_crc(image)
                self._image = bytes(image)

    def _weight_positions(self, weights):
        """[(position in get_weights() order, value)] of set_weights' argument."""
        if isinstance(weights, dict):
            by_tensor = {}
            for position, (index, _, _) in enumerate(self._params):
                by_tensor[index] = position
            chosen = []
            for key, value in weights.items():
                index = key
                if isinstance(key, str) and key[1:].isdigit() and key[:1] == "t":
                    index = int(key[1:])
                if not is_integer(index) or int(index) not in by_tensor:
                    raise ValueError("the model has no weight tensor %r; its weight tensors "
                                     "are %s (tensor indices, or keys t<index>)"
                                     % (key, ", ".join("t%d" % i for i, _, _ in self._params)))
                chosen.append((by_tensor[int(index)], value))
            return chosen
        weights = list(weights)
        if len(weights) == len(self._params):
            return list(enumerate(weights))
        trained = [position for position, flag in enumerate(self._trained) if flag] \
            if self._compiled else []
        if self._compiled and len(weights) == len(trained):
            return list(zip(trained, weights))
        if self._compiled:
            raise ValueError("the model has %d weight tensors, got %d arrays; give all of "
                             "them, the %d trained ones (trained_tensors(), in get_weights() "
                             "order) or a dict by tensor" % (len(self._params), len(weights),
                                                            len(trained)))
        raise ValueError("the model has %d weight tensors, got %d arrays (the trained ones "
                         "alone are known after compile(); or give a dict by tensor)"
                         % (len(self._params), len(weights)))

    def set_reference(self):
        """Make the trained weights as they are now the proximal term's reference w_ref
        (``compile(proximal_mu=...)``): a federated client calls it after ``set_weights`` of
        the round's global model. RuntimeError when the session has no proximal term."""
        with self._lock:
            self._require_training("set_reference")
            if not self._config.get("proximal_mu"):
                raise RuntimeError("set_reference() needs a proximal term: compile(..., "
                                   "proximal_mu=...) with a value > 0")
            self._backend.set_reference()

    def _checked_weight(self, position, value):
        if self._param_dtypes[position] != "float32":
            return self._checked_integer_weight(position, value)
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
        if len(flat) != element_count(dims):
            raise ValueError("weight %d must have %d values (shape %s), got %d"
                             % (position, element_count(dims), dims, len(flat)))
        for item in flat:
            if item != item or item in (float("inf"), float("-inf")):
                raise ValueError("weight %d contains NaN or infinity" % position)
        return flat

    def _checked_integer_weight(self, position, value):
        """An int8 layer's weight trained in place (int8) or bias (int32): integers of that
        type's range, of the weight's shape, converted to it."""
        dtype = self._param_dtypes[position]
        dims = self._params[position][1]
        _, code, lo, hi = _WIDTHS[dtype]
        kind = "an int8 weight" if dtype == "int8" else "an int32 bias"
        if _np is not None:
            array = _np.asarray(value)
            if array.dtype.kind not in "iu":
                raise ValueError("weight %d is %s of an int8 layer trained in place: give "
                                 "integers (an int8 or int32 array), got dtype %s"
                                 % (position, kind, array.dtype))
            if tuple(array.shape) != dims:
                raise ValueError("weight %d must have shape %s, got %s"
                                 % (position, dims, tuple(array.shape)))
            if array.size and (int(array.min()) < lo or int(array.max()) > hi):
                raise ValueError("weight %d is %s: its values must lie in [%d, %d], got "
                                 "[%d, %d]" % (position, kind, lo, hi, int(array.min()),
                                               int(array.max())))
            return array.astype(dtype).reshape(-1)
        values = list(value)
        if len(values) != element_count(dims):
            raise ValueError("weight %d must have %d values (shape %s), got %d"
                             % (position, element_count(dims), dims, len(values)))
        for item in values:
            if not is_integer(item) or not lo <= item <= hi:
                raise ValueError("weight %d is %s: its values must be integers in [%d, %d], "
                                 "got %r" % (position, kind, lo, hi, item))
        from array import array as _array
        return _array(code, values)

    # ---------------------------------------------------------------- information

    def memory_plan(self):
        """The arena's byte breakdown (fields of mt_memory_plan) as a dict; under
        "int8_trained_layers" the layers whose int8 weights train in place (their names, or
        layer positions for a model without names). Compiled with a sparse scheme, also
        "layers": per layer with weights, what it trains ("none", "bias", "all", "k of C
        channels") and "bytes", those of its trained weights, their gradient and optimizer
        state (None on a backend that cannot list the arena's buffers)."""
        with self._lock:
            self._require_compiled("memory_plan")
            plan = dict(self._plan)
            plan["int8_trained_layers"] = self._int8_trained_layers(self._config)
            if self._scheme_layers is not None:
                listing = getattr(self._backend, "plan_buffers", None)
                buffers = listing(self._image, self._config) if listing is not None else None
                plan["layers"] = _sparse.plan_rows(
                    self._scheme_layers, self._layer_ops, self._op_facts, buffers,
                    lambda layer: _trainable.layer_label(layer, self._layer_ops, self._ops,
                                                         self._layer_names()))
            return plan

    def _int8_trained_layers(self, config):
        """The layers (names, else positions) whose int8 weights train under ``config``:
        an int8 op with trainable weights that the configuration trains."""
        mask, count = config["trainable_op_mask"], config["num_trainable_ops"]
        names = self._layer_names()
        layers = []
        for o, (_, layer, _) in enumerate(self._ops):
            trains = mask[o] if mask is not None else count < 0 or o >= len(self._ops) - count
            name = layer if names is None else names[layer][0]
            if trains and self._int8_weighted[o] and name not in layers:
                layers.append(name)
        return layers

    def _check_int8_training(self, config):
        """Refuse, before the core does, an update an int8 layer trained in place has not:
        SGD (with momentum) is what ops/qas.c computes."""
        layers = self._int8_trained_layers(config)
        if not layers:
            return
        if config["optimizer"] != 0 or config["weight_decay"] != 0.0 or \
                config["proximal_mu"] != 0.0:
            raise ValueError(
                "layer %r trains its int8 weights in place, whose update is SGD with "
                "quantization-aware scaling; got %s with weight_decay %r and proximal_mu %r. "
                "Supported: optimizers.SGD(learning_rate, momentum) without weight decay or "
                "proximal term (or convert without int8_train to train those layers in float)"
                % (layers[0], self._describe_optimizer(config), config["weight_decay"],
                   config["proximal_mu"]))

    def plan_memory(self, optimizer="sgd", loss="mse", batch_size=16, trainable=None,
                    accumulate_gradients=False):
        """``memory_plan()``'s figures for ``compile()`` with these arguments, planned by the
        core on another backend object: nothing is bound, this session is unchanged (what
        ``microtrain.sparse_update`` weighs schemes with). Raises as compile() would."""
        with self._lock:
            self._require_open()
            self._check_batch_size(batch_size)
            chosen = _trainable.choose(trainable, None, False, self._ops, self._layer_ops,
                                       self._layer_names(), self._op_facts)
            config = _config.make_config(_optimizers.get(optimizer), _losses.get(loss),
                                         batch_size, chosen["count"], chosen["mask"],
                                         chosen["biases_only"], accumulate_gradients,
                                         trainable_op_channels=chosen["channels"])
            self._check_int8_training(config)
            plan = self._new_backend().plan(self._current_image(), config)
            return dict((name, int(plan[name])) for name in PLAN_FIELDS)

    def _tensorinfo(self, ios):
        dtype = _np.dtype(_np.float32) if _np is not None else "float32"
        return [{"index": index, "shape": (self._batch_size,) + dims, "dtype": dtype}
                for index, dims in ios]

    def get_inputs_tensorinfo(self):
        """Per input: {"index", "shape": (B, ...), "dtype"}; B is None before compile()."""
        return self._while_open(lambda: self._tensorinfo(self._inputs))

    def get_outputs_tensorinfo(self):
        """Per output: {"index", "shape": (B, ...), "dtype"}; B is None before compile()."""
        return self._while_open(lambda: self._tensorinfo(self._outputs))

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
        return self._while_open(lambda: dict(self._timings))

    @property
    def batch_size(self):
        """The batch size the session was compiled with (the rows of every step)."""
        return self._while_open(lambda: self._batch_size)

    @property
    def loss(self):
        """The compiled ``microtrain.losses`` object (None before compile())."""
        return self._while_open(lambda: self._loss)

    @property
    def train_metrics(self):
        """The compiled training metrics (``microtrain.metrics`` objects)."""
        return self._while_open(lambda: list(self._train_metrics))

    @property
    def eval_metrics(self):
        """The evaluation metrics: copies of the training ones, kept apart."""
        return self._while_open(lambda: list(self._eval_metrics))

    @property
    def config(self):
        """The compiled ``mt_train_config`` as the dict ``microtrain.config`` builds (None
        before compile())."""
        return self._while_open(lambda: None if self._config is None else dict(self._config))

    @property
    def model_image(self):
        """The model image with the weights as they are now (trained ones baked in)."""
        return self._while_open(lambda: self._current_image())

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
        return self._while_open(lambda: self._scheduler)

    @property
    def layers(self):
        """Op indices of each layer (what ``compile(trainable=[...])`` numbers). A model
        imported from a .tflite file gives ``Layer`` lists that also carry the file's
        ``name`` and ``type`` (``microtrain.convert.model.Layer``)."""
        with self._lock:
            self._require_open()
            plain = [list(ops) for ops in self._layer_ops]
            source = self._source
            if source is not None and hasattr(source, "named_layers"):
                named = source.named_layers(plain)
                if named is not None:
                    return named
            return plain

    # ---------------------------------------------------------------- hyper-parameters, counters

    def set_learning_rate(self, learning_rate):
        """Set the optimizer's learning rate for the next steps (a finite float32 >= 0; a
        registered scheduler sets it again at its next step).
        """
        with self._lock:
            self._require_training("set_learning_rate")
            value = float(learning_rate)
            if value != value or value < 0.0 or value > _FLOAT32_MAX:
                raise ValueError("learning_rate must be a finite float32 number >= 0, got %r"
                                 % (learning_rate,))
            self._backend.set_learning_rate(value)

    def get_learning_rate(self):
        """The learning rate the next step uses (float32, as the core holds it)."""
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
        """Set the epoch counter (an integer in [0, 2**63)) that schedules and checkpoints read."""
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

    def train(self, data_loader, expecteds=None, epochs=1, validation_split=0.0,
              checkpoint_path=None, callbacks=None, verbose=1, scheduler=None,
              validation_data=None, on_numeric_error="raise", line_format="keras"):
        """Train for ``epochs`` epochs on a loader, ``(x, y)`` or ``x, y`` as Keras's fit
        takes them; a ``History``. See ``microtrain.training.train``."""
        return _training.train(self, data_loader, epochs, validation_split, checkpoint_path,
                               callbacks, verbose, scheduler, validation_data,
                               on_numeric_error, expecteds, line_format)

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
