"""The CPython backend: ``microtrain.backend``'s interface over ctypes and numpy.

The image and the arena are numpy arrays the backend owns (the core never
allocates); rows are copied straight into numpy views of the arena's buffers.
Under MicroPython ``import ctypes`` fails first, so ``backend.load()`` moves on.
"""

import ctypes
import zlib

import numpy as np

from . import _native
from ._native import _check
from . import Backend as _Interface, KIND_INPUT, KIND_TARGET, PLAN_FIELDS
from ..session import _aligned_zeros, _pointer_address

_IMAGE_ALIGN = 16  # the core needs 4; 16 keeps weight data 16-aligned too


def train_config(config):
    """An mt_train_config from a ``backend`` config dict, and the mask array it borrows
    (keep it alive as long as the struct is used)."""
    struct = _native.mt_train_config()
    _native.mt_train_config_init(ctypes.byref(struct))
    mask = None
    for field, value in config.items():
        if field == "trainable_op_mask":
            if value is not None:
                mask = (ctypes.c_uint8 * max(1, len(value)))(*value)
                struct.trainable_op_mask = ctypes.cast(mask, ctypes.POINTER(ctypes.c_uint8))
        else:
            setattr(struct, field, value)
    return struct, mask


def bind_arena(image, struct):
    """mt_plan then mt_session_init on a fresh arena of exactly the planned size:
    (session handle, arena array, mt_memory_plan)."""
    plan = _native.mt_memory_plan()
    _check(_native.mt_plan(image.ctypes.data, image.size, ctypes.byref(struct),
                           ctypes.byref(plan)), "mt_plan")
    arena = _aligned_zeros(plan.total_bytes, _native.MT_ARENA_ALIGN)
    session = _native.mt_session_p()
    _check(_native.mt_session_init(ctypes.byref(session), image.ctypes.data, image.size,
                                   ctypes.byref(struct), arena.ctypes.data, arena.size),
           "mt_session_init")
    return session, arena, plan


def _aligned_image(image):
    data = np.frombuffer(bytes(image), dtype=np.uint8)
    copy = _aligned_zeros(data.size, _IMAGE_ALIGN)
    copy[:] = data
    return copy


class Backend(_Interface):
    """One C session over numpy-owned image and arena (see ``microtrain.backend``)."""

    def __init__(self):
        self._image = None
        self._arena = None
        self._session = None
        self._inputs = []
        self._outputs = []
        self._target = None
        self._batch_size = 1  # B: every buffer holds B rows
        self._loss = ctypes.c_float()

    # ------------------------------------------------------------ image

    def describe(self, image):
        image = _aligned_image(image)
        info = _native.mt_model_info()
        _check(_native.mt_model_check(image.ctypes.data, image.size, ctypes.byref(info)),
               "mt_model_check")
        tensor = _native.mt_tensor_info()

        def dims(index):
            _check(_native.mt_model_tensor(image.ctypes.data, image.size, index,
                                           ctypes.byref(tensor)), "mt_model_tensor")
            return tuple(tensor.dims[:tensor.ndim])

        def io(is_output, count):
            shapes = []
            index = ctypes.c_int32()
            for position in range(count):
                _check(_native.mt_model_io(image.ctypes.data, image.size, is_output, position,
                                           ctypes.byref(index)), "mt_model_io")
                shapes.append(dims(index.value))
            return shapes

        params = []
        for index in range(info.num_tensors):
            shape = dims(index)
            if tensor.flags & _native.MT_TENSOR_CONST and tensor.dtype == _native.MT_DTYPE_F32:
                params.append(shape)
        return {"num_ops": info.num_ops, "inputs": io(0, info.num_inputs),
                "outputs": io(1, info.num_outputs), "params": params}

    def plan(self, image, config):
        image = _aligned_image(image)
        struct, mask = train_config(config)
        plan = _native.mt_memory_plan()
        _check(_native.mt_plan(image.ctypes.data, image.size, ctypes.byref(struct),
                               ctypes.byref(plan)), "mt_plan")
        del mask
        return {name: getattr(plan, name) for name in PLAN_FIELDS}

    def open(self, image, config):
        self.close()
        self._image = _aligned_image(image)
        struct, mask = train_config(config)
        self._session, self._arena, _ = bind_arena(self._image, struct)
        self._batch_size = int(config["batch_size"])
        del mask  # borrowed by mt_plan/mt_session_init only
        data, count = ctypes.POINTER(ctypes.c_float)(), ctypes.c_int32()
        views = []
        for getter, name in ((_native.mt_session_input, "mt_session_input"),
                             (_native.mt_session_output, "mt_session_output")):
            views.append([])
            position = 0
            while getter(self._session, position, ctypes.byref(data),
                         ctypes.byref(count)) == _native.MT_OK:
                views[-1].append(self._view(_pointer_address(data), 4 * count.value,
                                            np.float32))
                position += 1
        self._inputs, self._outputs = views
        target, nbytes = ctypes.c_void_p(), ctypes.c_int32()
        _check(_native.mt_session_target(self._session, ctypes.byref(target),
                                         ctypes.byref(nbytes)), "mt_session_target")
        sparse = config["loss"] == _native.MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY
        self._target = self._view(target.value, nbytes.value, np.int32 if sparse else np.float32)

    def _view(self, address, nbytes, dtype):
        offset = address - self._arena.ctypes.data
        if offset < 0 or offset + nbytes > self._arena.size:
            raise RuntimeError("the core returned a buffer outside the arena")
        return self._arena[offset:offset + nbytes].view(dtype)

    def _require_session(self):
        if self._session is None:
            raise RuntimeError("the backend has no session: call open() first")

    # ------------------------------------------------------------ rows

    def write_rows(self, kind, position, first_row, values):
        self._require_session()
        if kind not in (KIND_INPUT, KIND_TARGET):
            raise ValueError("unknown row kind %r" % (kind,))
        view = self._inputs[position] if kind == KIND_INPUT else self._target
        flat = np.asarray(values, dtype=view.dtype).reshape(-1)
        start = first_row * (view.size // self._batch_size)
        if start + flat.size > view.size:
            raise ValueError("%d values from row %d overflow a buffer of %d"
                             % (flat.size, first_row, view.size))
        view[start:start + flat.size] = flat

    def read_rows(self, output, n):
        self._require_session()
        view = self._outputs[output]
        return view[:n * (view.size // self._batch_size)].copy()

    # ------------------------------------------------------------ steps

    def _step(self, function, name, n):
        self._require_session()
        _check(function(self._session, int(n), ctypes.byref(self._loss)), name)
        return self._loss.value

    def train_step(self, n):
        return self._step(_native.mt_session_train_step, "mt_session_train_step", n)

    def eval_step(self, n):
        return self._step(_native.mt_session_eval_step, "mt_session_eval_step", n)

    def infer(self, n):
        self._require_session()
        _check(_native.mt_session_infer(self._session, int(n)), "mt_session_infer")

    def optimizer_step(self):
        self._require_session()
        _check(_native.mt_session_optimizer_step(self._session), "mt_session_optimizer_step")

    # ------------------------------------------------------------ state

    def weights(self):
        self._require_session()
        count = ctypes.c_int32()
        _check(_native.mt_session_param_count(self._session, ctypes.byref(count)),
               "mt_session_param_count")
        info = _native.mt_param_info()
        pieces = []
        for position in range(count.value):
            _check(_native.mt_session_param(self._session, position, ctypes.byref(info)),
                   "mt_session_param")
            pointer = info.data if info.trained else info.image_data
            pieces.append(ctypes.string_at(pointer, 4 * info.count))
        return b"".join(pieces)

    def weights_crc32(self):
        return zlib.crc32(self.weights()) & 0xFFFFFFFF

    def set_learning_rate(self, rate):
        self._require_session()
        _check(_native.mt_session_set_learning_rate(self._session, rate),
               "mt_session_set_learning_rate")

    def get_learning_rate(self):
        self._require_session()
        value = ctypes.c_float()
        _check(_native.mt_session_get_learning_rate(self._session, ctypes.byref(value)),
               "mt_session_get_learning_rate")
        return value.value

    def counters(self):
        self._require_session()
        step, epoch = ctypes.c_int64(), ctypes.c_int64()
        _check(_native.mt_session_counters(self._session, ctypes.byref(step),
                                           ctypes.byref(epoch)), "mt_session_counters")
        return step.value, epoch.value

    def set_epoch(self, epoch):
        self._require_session()
        _check(_native.mt_session_set_epoch(self._session, int(epoch)), "mt_session_set_epoch")

    def numeric_errors(self):
        self._require_session()
        count = ctypes.c_int64()
        _check(_native.mt_session_numeric_errors(self._session, ctypes.byref(count)),
               "mt_session_numeric_errors")
        return count.value

    def close(self):
        self._session = None
        self._arena = None
        self._image = None
        self._inputs, self._outputs, self._target = [], [], None
