"""The CPython backend: ``microtrain.backend``'s interface over ctypes and numpy.

The image copy and the arena are numpy arrays this object owns (the core never
allocates); rows are copied straight into numpy views of the arena's buffers, and
``buffer_views()`` hands those views to ``TrainSession`` for zero-copy use. Under
MicroPython ``import ctypes`` fails first, so ``backend.loader.load()`` moves on.

Beyond the interface, for the CPython tools: ``buffer_views()``, ``plan_buffers(image,
config)`` (``mt_plan_buffers``) and ``struct_config(config)``.
"""

import ctypes

import numpy as np

from . import Backend as _Interface, KIND_INPUT, KIND_TARGET, PLAN_FIELDS
from . import _native
from .ctypes_fast_steps import FastSteps
from .ctypes_callbacks import Callback as _Callback, property_array, property_item, writer
from ..errors import MicrotrainError

_IMAGE_ALIGN = 16  # the core needs 4; 16 keeps weight data 16-aligned too
_SPARSE_LOSS = 3   # MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY


def aligned_zeros(nbytes, alignment):
    """A zeroed uint8 array of ``nbytes`` whose data address is a multiple of ``alignment``."""
    raw = np.zeros(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + nbytes]


def _aligned_image(image):
    data = np.frombuffer(bytes(image), dtype=np.uint8)
    copy = aligned_zeros(data.size, _IMAGE_ALIGN)
    copy[:] = data
    return copy


def _address(pointer):
    return ctypes.cast(pointer, ctypes.c_void_p).value


def struct_config(config):
    """An mt_train_config from a config dict, and the arrays it borrows (the op mask, the
    per-op channel counts; keep them alive as long as the struct is used)."""
    struct = _native.mt_train_config()
    _native.mt_train_config_init(ctypes.byref(struct))
    borrowed = []
    for field, value in config.items():
        if field == "trainable_op_mask":
            if value is not None:
                mask = (ctypes.c_uint8 * max(1, len(value)))(*value)
                borrowed.append(mask)
                struct.trainable_op_mask = ctypes.cast(mask, ctypes.POINTER(ctypes.c_uint8))
        elif field == "trainable_op_channels":
            if value is not None:
                channels = (ctypes.c_int32 * max(1, len(value)))(*value)
                borrowed.append(channels)
                struct.trainable_op_channels = ctypes.cast(channels, ctypes.POINTER(ctypes.c_int32))
        else:
            setattr(struct, field, value)
    return struct, borrowed


def _error(status, function, detail=None):
    """MicrotrainError for a failed call; ``detail`` an mt_error_detail or None."""
    op_index, op_type = -1, 0
    if detail is not None and detail.status == status:
        op_index, op_type = detail.op_index, detail.op_type
    return MicrotrainError(status, _native.status_text(status), function, op_index, op_type)


class _Planned:
    """What plan() bound its C plan to, kept for open(): the aligned image copy whose address
    the plan names, the configuration and its struct with the mask array the struct borrows."""

    __slots__ = ("image", "config", "struct", "mask", "plan")

    def __init__(self, image, config, struct, mask, plan):
        self.image, self.config, self.struct, self.mask, self.plan = image, config, struct, mask, plan


_F32 = np.dtype(np.float32)
_DTYPE_NAMES = {_native.MT_DTYPE_F32: "float32", _native.MT_DTYPE_I8: "int8",
                _native.MT_DTYPE_I32: "int32"}
class Backend(_Interface):
    """One C session over a numpy-owned image copy and arena (see ``microtrain.backend``)."""

    def __init__(self):
        self._loss = ctypes.c_float()
        self.close()  # no session yet: every other field as close() leaves it

    # ------------------------------------------------------------ errors

    def _check_model(self, status, function, image, struct=None):
        if status == _native.MT_OK:
            return
        detail = None
        if hasattr(_native, "mt_model_diagnose"):
            detail = _native.mt_error_detail()
            _native.mt_model_diagnose(image.ctypes.data, image.size,
                                      None if struct is None else ctypes.byref(struct),
                                      ctypes.byref(detail))
        raise _error(status, function, detail)

    def _check(self, status, function):
        if status == _native.MT_OK:
            return
        detail = None
        if self._session is not None and hasattr(_native, "mt_session_last_error"):
            detail = _native.mt_error_detail()
            _native.mt_session_last_error(self._session, ctypes.byref(detail))
        raise _error(status, function, detail)

    def _require_session(self):
        if self._session is None:
            raise RuntimeError("the backend has no session: call open() first")

    # ------------------------------------------------------------ model

    def describe(self, image):
        image = _aligned_image(image)
        info = _native.mt_model_info()
        self._check_model(_native.mt_model_check(image.ctypes.data, image.size,
                                                 ctypes.byref(info)), "mt_model_check", image)
        # the whole tables in one call each: a call per entry validated the image per entry
        tensors = (_native.mt_tensor_info * max(info.num_tensors, 1))()
        self._check_model(_native.mt_model_tensors(image.ctypes.data, image.size, 0, info.num_tensors,
                                                   tensors), "mt_model_tensors", image)
        op_table = (_native.mt_op_info * max(info.num_ops, 1))()
        self._check_model(_native.mt_model_ops(image.ctypes.data, image.size, 0, info.num_ops, op_table),
                          "mt_model_ops", image)

        def dims_of(index):
            return tuple(tensors[index].dims[:tensors[index].ndim])

        def io(is_output, count):
            entries = []
            index = ctypes.c_int32()
            for position in range(count):
                self._check_model(_native.mt_model_io(image.ctypes.data, image.size, is_output,
                                                      position, ctypes.byref(index)),
                                  "mt_model_io", image)
                entries.append({"tensor": index.value, "dims": dims_of(index.value)})
            return entries

        params, trainable, quantized = [], set(), []
        for index in range(info.num_tensors):
            tensor = tensors[index]
            if tensor.flags & _native.MT_TENSOR_TRAINABLE:  # f32, or int8 trained in place
                trainable.add(index)
                if tensor.dtype != _native.MT_DTYPE_F32:  # what a sparse scheme's channels read
                    quantized.append({"tensor": index, "dims": dims_of(index)})
            # the weights: CONST f32 tensors, and the TRAINABLE int8 weights and int32 biases
            # of int8 layers trained in place (mt_session_param, then mt_session_qparam)
            trainable_q = tensor.flags & _native.MT_TENSOR_TRAINABLE and \
                tensor.dtype != _native.MT_DTYPE_F32
            if tensor.flags & _native.MT_TENSOR_CONST and \
                    (tensor.dtype == _native.MT_DTYPE_F32 or trainable_q):
                params.append({"tensor": index, "dims": dims_of(index), "offset": tensor.data_offset,
                               "trainable": bool(tensor.flags & _native.MT_TENSOR_TRAINABLE),
                               "dtype": _DTYPE_NAMES[tensor.dtype]})
        ops = []
        for op in op_table[:info.num_ops]:
            inputs = list(op.inputs[:op.num_inputs])
            ops.append({"type": op.type, "layer": op.layer, "inputs": inputs,
                        "outputs": list(op.outputs[:op.num_outputs]),
                        "weights": any(i in trainable for i in inputs)})
        return {"num_ops": info.num_ops, "num_tensors": info.num_tensors,
                "inputs": io(0, info.num_inputs), "outputs": io(1, info.num_outputs),
                "params": params, "quantized": quantized, "ops": ops}

    def plan(self, image, config):
        """The plan (see the interface): its figures, and under "binding" the aligned image
        copy it is bound to, the configuration (dict, struct and the mask array the struct
        borrows) and the C plan, for open()."""
        image = _aligned_image(image)
        struct, mask = struct_config(config)
        plan = _native.mt_memory_plan()
        self._check_model(_native.mt_plan(image.ctypes.data, image.size, ctypes.byref(struct),
                                          ctypes.byref(plan)), "mt_plan", image, struct)
        result = {name: getattr(plan, name) for name in PLAN_FIELDS}
        result["binding"] = _Planned(image, dict(config), struct, mask, plan)
        return result

    def plan_buffers(self, image, config):
        """Every buffer of the plan (``mt_plan_buffers``) as dicts; for the CPython tools."""
        image = _aligned_image(image)
        struct, mask = struct_config(config)
        found = []

        def report(user, pointer):
            item = pointer.contents
            found.append({"kind": _native.BUFFER_KIND_NAMES.get(item.kind, str(item.kind)),
                          "kind_code": item.kind, "tensor": item.tensor_index,
                          "start": item.start, "end": item.end,
                          "in_place_of": item.in_place_of, "offset": item.offset,
                          "bytes": item.bytes})
            return _native.MT_OK

        callback = _Callback(_native.mt_buffer_fn, report)
        status = _native.mt_plan_buffers(image.ctypes.data, image.size, ctypes.byref(struct),
                                         callback.pointer, None)
        callback.check(status, "mt_plan_buffers",
                       lambda s, f: self._check_model(s, f, image, struct))
        del mask
        return found

    # ------------------------------------------------------------ session

    def open(self, plan, arena=None):
        planned = plan.get("binding") if isinstance(plan, dict) else None
        if not isinstance(planned, _Planned):
            raise TypeError("open() takes the plan this backend's plan() returned, got %r"
                            % (type(plan).__name__,))
        self.close()
        image, c_plan, struct = planned.image, planned.plan, planned.struct
        if arena is None:
            arena = aligned_zeros(c_plan.total_bytes, _native.MT_ARENA_ALIGN)
        else:
            raw = np.frombuffer(arena, dtype=np.uint8)  # a writable buffer of the caller's
            start = (-raw.ctypes.data) % _native.MT_ARENA_ALIGN
            if raw.size < start + c_plan.total_bytes:
                raise MicrotrainError(_native.MT_ERR_ARENA_TOO_SMALL, "%s: %d bytes given, %d "
                                      "needed with alignment" % (
                                          _native.status_text(_native.MT_ERR_ARENA_TOO_SMALL),
                                          raw.size, start + c_plan.total_bytes),
                                      "mt_session_init_from_plan")
            arena = raw[start:start + c_plan.total_bytes]
        session = _native.mt_session_p()
        # laid out from the plan: the image was validated and planned once, by plan()
        self._check_model(_native.mt_session_init_from_plan(ctypes.byref(session), ctypes.byref(c_plan),
                                                            ctypes.byref(struct), arena.ctypes.data,
                                                            arena.size),
                          "mt_session_init_from_plan", image, struct)
        self._image, self._arena, self._session = image, arena, session
        self._config = dict(planned.config)
        batch = int(self._config["batch_size"])
        data, count = ctypes.POINTER(ctypes.c_float)(), ctypes.c_int32()
        for getter, views, is_output in ((_native.mt_session_input, self._inputs, 0),
                                         (_native.mt_session_output, self._outputs, 1)):
            position = 0
            while getter(session, position, ctypes.byref(data),
                         ctypes.byref(count)) == _native.MT_OK:
                # an int8 model input (a quantized image) holds one byte per element
                dtype = self._io_dtype(session, is_output, position)
                views.append(self._view(self._arena, _address(data),
                                        dtype.itemsize * count.value, dtype).reshape(batch, -1))
                position += 1
        target, nbytes = ctypes.c_void_p(), ctypes.c_int32()
        self._check(_native.mt_session_target(session, ctypes.byref(target),
                                              ctypes.byref(nbytes)), "mt_session_target")
        sparse = self._config["loss"] == _SPARSE_LOSS
        self._target = self._view(self._arena, target.value, nbytes.value,
                                  np.int32 if sparse else np.float32).reshape(batch, -1)
        self._params = self._bind_params()

    @staticmethod
    def _io_dtype(session, is_output, position):
        """numpy dtype of model input/output ``position``: float32, or int8 for an int8
        input (image version 3); from the session (mt_session_io), the image not validated
        again."""
        info = _native.mt_tensor_info()
        if _native.mt_session_io(session, is_output, position, ctypes.byref(info)) != _native.MT_OK:
            return np.dtype(np.float32)
        return np.dtype(np.int8) if info.dtype == _native.MT_DTYPE_I8 else np.dtype(np.float32)

    @staticmethod
    def _view(owner, address, nbytes, dtype):
        offset = address - owner.ctypes.data
        if offset < 0 or offset + nbytes > owner.size:
            raise RuntimeError("the core returned a buffer outside the memory it was given "
                               "(offset %d, %d bytes, buffer %d bytes)"
                               % (offset, nbytes, owner.size))
        return owner[offset:offset + nbytes].view(dtype)

    def _bind_params(self):
        """Per weight in tensor-table order (describe()'s "params"): (views of its values at
        their dtype, trained, its position among the quantized parameters or None): the f32
        tensors of mt_session_param merged with the int8 weights and int32 biases of
        mt_session_qparam. The views, back to back, are the weight: the arena's elements
        (info.held: all of a weight trained whole, the first rows of a float layer a sparse
        update trains the first channels of), then the image's (the rest, read in place)."""
        params = []
        for name, quantized in (("mt_session_param", False), ("mt_session_qparam", True)):
            listing, counting = getattr(_native, name), getattr(_native, name + "_count")
            count = ctypes.c_int32()
            self._check(counting(self._session, ctypes.byref(count)), name + "_count")
            info = _native.mt_param_info()
            for position in range(count.value):
                self._check(listing(self._session, position, ctypes.byref(info)), name)
                dtype = np.dtype(_DTYPE_NAMES[info.dtype])
                views = []
                if info.held:
                    views.append(self._view(self._arena, _address(info.data), dtype.itemsize * info.held, dtype))
                if info.held < info.count:
                    image = self._view(self._image, _address(info.image_data), dtype.itemsize * info.count, dtype)
                    views.append(image[info.held:])
                params.append((info.tensor_index,
                               (tuple(views), bool(info.trained), position if quantized else None)))
        params.sort(key=lambda entry: entry[0])
        return [entry for _, entry in params]

    def close(self):
        self._session = None
        self._arena = None
        self._image = None
        self._config = None
        self._inputs, self._outputs, self._target = [], [], None
        self._params = []  # per weight: (numpy views of its values, trained, qparam position)

    # ------------------------------------------------------------ rows

    def write_rows(self, kind, position, first_row, values):
        self._require_session()
        if kind == KIND_INPUT:
            view = self._inputs[position]
        elif kind == KIND_TARGET:
            view = self._target
        else:
            raise ValueError("unknown row kind %r" % (kind,))
        if not hasattr(values, "shape"):
            values = np.frombuffer(values, dtype=view.dtype) if isinstance(
                values, (bytes, bytearray, memoryview)) or hasattr(values, "typecode") \
                else np.asarray(values)
        rows = values.reshape(-1, view.shape[1]) if values.ndim != 2 or \
            values.shape[1] != view.shape[1] else values
        if first_row + rows.shape[0] > view.shape[0]:
            raise ValueError("%d rows from row %d overflow a buffer of %d rows"
                             % (rows.shape[0], first_row, view.shape[0]))
        if view.dtype == np.int8 and not (np.all(rows == np.round(rows)) and
                                          np.all(rows >= -128) and np.all(rows <= 127)):
            raise ValueError("input %d is int8 (quantized by the caller): its values must be "
                             "integers in -128..127" % position)
        view[first_row:first_row + rows.shape[0]] = rows

    def read_rows(self, output, n):
        self._require_session()
        return self._outputs[output][:n].reshape(-1).copy()

    def buffer_views(self):
        """Zero-copy numpy views: (inputs [B, D] each, outputs [B, D] each, targets)."""
        self._require_session()
        return list(self._inputs), list(self._outputs), self._target

    # ------------------------------------------------------------ steps

    def _step(self, function, name, n, out=None):
        self._require_session()
        if out is not None and len(out) < 1:
            raise ValueError("out must hold at least one float")
        status = function(self._session, int(n), ctypes.byref(self._loss))
        if status != _native.MT_OK:
            try:
                self._check(status, name)
            except MicrotrainError as error:
                error.loss = self._loss.value
                raise
        if out is not None:
            out[0] = self._loss.value
            return None
        return self._loss.value

    def train_step(self, n, out=None):
        return self._step(_native.mt_session_train_step, "mt_session_train_step", n, out)

    def fast_steps(self, input_dims, target_dims):
        """The lean step path of one compiled session (FastSteps), or None without one."""
        self._require_session()
        if len(self._inputs) != 1 or self._inputs[0].dtype != _F32 or self._target.dtype != _F32:
            return None  # an int8 input's rows are checked (integers in -128..127) and converted
        return FastSteps(self, input_dims, target_dims)

    def step_failed(self, status, name):
        """Raise what _step raises for a failed step whose status the fast path got."""
        try:
            self._check(status, name)
        except MicrotrainError as error:
            error.loss = self._loss.value
            raise

    def accumulate(self, n, out=None):
        return self._step(_native.mt_session_accumulate, "mt_session_accumulate", n, out)

    def eval_step(self, n, out=None):
        return self._step(_native.mt_session_eval_step, "mt_session_eval_step", n, out)

    def zero_grad(self):
        self._require_session()
        self._check(_native.mt_session_zero_grad(self._session), "mt_session_zero_grad")

    def optimizer_step(self):
        self._require_session()
        self._check(_native.mt_session_optimizer_step(self._session),
                    "mt_session_optimizer_step")

    def infer(self, n):
        self._require_session()
        self._check(_native.mt_session_infer(self._session, int(n)), "mt_session_infer")

    # ------------------------------------------------------------ weights and state

    def trained(self):
        self._require_session()
        return [trained for _, trained, _ in self._params]

    def read_param(self, position):
        self._require_session()
        return np.concatenate(self._params[position][0])

    def write_param(self, position, values):
        self._require_session()
        views, trained, quantized = self._params[position]
        dtype, size = views[0].dtype, sum(view.size for view in views)
        flat = np.asarray(values).reshape(-1)
        if flat.size != size:
            raise ValueError("weight %d has %d values, got %d" % (position, size, flat.size))
        if quantized is not None and (flat.dtype.kind not in "iu" or np.any(
                flat != flat.astype(dtype))):  # the Session checked; a direct caller
            raise ValueError("weight %d holds %s values: got %s values outside that type"
                             % (position, dtype, flat.dtype))
        done = 0
        for view in views:  # the arena's rows, then the image's (frozen: read there in place)
            view[:] = flat[done:done + view.size].astype(dtype)
            done += view.size
        if quantized is not None and trained:  # a master copy restarts from the weight
            self._check(_native.mt_session_qparam_written(self._session, quantized),
                        "mt_session_qparam_written")

    def weights(self):
        self._require_session()
        return b"".join(view.astype(view.dtype.newbyteorder("<")).tobytes()
                        for views, _, _ in self._params for view in views)

    def weights_crc32(self):
        self._require_session()
        crc = ctypes.c_uint32()
        self._check(_native.mt_session_weights_crc32(self._session, ctypes.byref(crc)),
                    "mt_session_weights_crc32")
        return crc.value

    def set_learning_rate(self, rate):
        self._require_session()
        self._check(_native.mt_session_set_learning_rate(self._session, rate),
                    "mt_session_set_learning_rate")

    def _read_value(self, function, ctype):
        """The one value ``function`` (``mt_session_<name>(s, ctype *out)``) writes."""
        self._require_session()
        value = ctype()
        self._check(getattr(_native, function)(self._session, ctypes.byref(value)), function)
        return value.value

    def get_learning_rate(self):
        return self._read_value("mt_session_get_learning_rate", ctypes.c_float)

    def base_learning_rate(self):
        return self._read_value("mt_session_get_base_learning_rate", ctypes.c_float)

    def set_reference(self):
        self._require_session()
        self._check(_native.mt_session_set_reference(self._session), "mt_session_set_reference")

    def counters(self):
        self._require_session()
        step, epoch = ctypes.c_int64(), ctypes.c_int64()
        self._check(_native.mt_session_counters(self._session, ctypes.byref(step),
                                                ctypes.byref(epoch)), "mt_session_counters")
        return step.value, epoch.value

    def set_epoch(self, epoch):
        self._require_session()
        self._check(_native.mt_session_set_epoch(self._session, int(epoch)),
                    "mt_session_set_epoch")

    def numeric_errors(self):
        return self._read_value("mt_session_numeric_errors", ctypes.c_int64)

    # ------------------------------------------------------------ checkpoints and export

    def checkpoint_bytes(self, include_optimizer, properties):
        self._require_session()
        array, count, keep = property_array(properties)
        size = ctypes.c_size_t()
        self._check(_native.mt_checkpoint_bytes(self._session, int(bool(include_optimizer)),
                                                 array, count, ctypes.byref(size)),
                    "mt_checkpoint_bytes")
        del keep
        return size.value

    def checkpoint_save(self, include_optimizer, properties, write):
        self._require_session()
        array, count, keep = property_array(properties)
        callback = writer(write)
        status = _native.mt_checkpoint_save(self._session, int(bool(include_optimizer)),
                                            array, count, callback.pointer, None)
        callback.check(status, "mt_checkpoint_save", self._check)
        del keep

    def checkpoint_load(self, size, read):
        self._require_session()

        def read_into(user, offset, data, count):
            if count:
                chunk = read(offset, count)
                if len(chunk) != count:
                    return _native.MT_ERR_IO
                ctypes.memmove(data, bytes(chunk), count)
            return _native.MT_OK

        loaded = []

        def on_property(user, pointer):
            loaded.append(property_item(pointer.contents))
            return _native.MT_OK

        reader = _Callback(_native.mt_read_fn, read_into)
        listener = _Callback(_native.mt_property_fn, on_property)
        # The core validates everything before writing, but its second pass reads in place:
        # a read failing there would leave a half-loaded session, so keep the whole state.
        backup = self._arena.copy()
        try:
            status = _native.mt_checkpoint_load(self._session, size, reader.pointer, None,
                                                listener.pointer, None)
            if listener.error is not None:
                raise listener.error
            reader.check(status, "mt_checkpoint_load", self._check)
        except BaseException:
            self._arena[...] = backup
            raise
        return loaded

    def export_image(self, write):
        self._require_session()
        callback = writer(write)
        status = _native.mt_session_export_image(self._session, callback.pointer, None)
        callback.check(status, "mt_session_export_image", self._check)
