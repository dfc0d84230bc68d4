"""Raw 1:1 ctypes bindings of micro_core/include/microtrain.h.

Layer one of the facade (STYLE.md section 10): nothing here owns memory or
hides a C call. Each binding carries its C prototype as a comment, with
argtypes/restype that mirror it. The owning wrapper is ``session.TrainSession``.

The shared library is loaded on the first call of any binding, so that the
pure-Python parts of the package (model builder, image writer, metrics) work
without it. Where it comes from, in order:

  1. the environment variable ``MICROTRAIN_LIB`` (a path to libmicrotrain.so);
  2. ``libmicrotrain.so`` (``.dylib``, ``.dll``) next to this file, as
     ``pip install .`` ships it.

At load the library's ABI version and the size of every public struct are
compared with the mirrors below; a mismatch raises instead of corrupting memory.
"""

import ctypes
import os
import sys
import threading

from .. import ops as _ops
from ..errors import MicrotrainError

# --------------------------------------------------------------------------
# Constants mirrored from microtrain.h
# --------------------------------------------------------------------------

MT_ABI_VERSION = 5
MT_ARENA_ALIGN = 16
MT_MAX_DIMS = 4
MT_MAX_TENSORS = 256
MT_MAX_OPS = 256
MT_MAX_BATCH_SIZE = 65535
MT_MAX_ELEMENTS = 1 << 28

# mt_status
MT_OK = 0
MT_ERR_BAD_ARGUMENT = -1
MT_ERR_BAD_MODEL = -2
MT_ERR_SHAPE = -3
MT_ERR_STATE = -4
MT_ERR_UNSUPPORTED = -5
MT_ERR_ARENA_TOO_SMALL = -6
MT_ERR_NUMERIC = -7
MT_ERR_BAD_CHECKPOINT = -8
MT_ERR_CHECKPOINT_MISMATCH = -9
MT_ERR_IO = -10

STATUS_NAMES = {
    MT_OK: "MT_OK",
    MT_ERR_BAD_ARGUMENT: "MT_ERR_BAD_ARGUMENT",
    MT_ERR_BAD_MODEL: "MT_ERR_BAD_MODEL",
    MT_ERR_SHAPE: "MT_ERR_SHAPE",
    MT_ERR_STATE: "MT_ERR_STATE",
    MT_ERR_UNSUPPORTED: "MT_ERR_UNSUPPORTED",
    MT_ERR_ARENA_TOO_SMALL: "MT_ERR_ARENA_TOO_SMALL",
    MT_ERR_NUMERIC: "MT_ERR_NUMERIC",
    MT_ERR_BAD_CHECKPOINT: "MT_ERR_BAD_CHECKPOINT",
    MT_ERR_CHECKPOINT_MISMATCH: "MT_ERR_CHECKPOINT_MISMATCH",
    MT_ERR_IO: "MT_ERR_IO",
}

# mt_dtype
MT_DTYPE_F32 = 1
MT_DTYPE_I32 = 2

# tensor flags
MT_TENSOR_CONST = 1
MT_TENSOR_TRAINABLE = 2
MT_TENSOR_INPUT = 4
MT_TENSOR_OUTPUT = 8

# mt_op_type: microtrain.ops holds the one Python copy of the op table
OP_NAMES = _ops.DISPLAY_NAMES

# mt_optimizer
MT_OPTIMIZER_SGD = 0
MT_OPTIMIZER_ADAM = 1
MT_OPTIMIZER_ADAMW = 2

# mt_loss
MT_LOSS_MSE = 0
MT_LOSS_MAE = 1
MT_LOSS_CATEGORICAL_CROSSENTROPY = 2
MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY = 3
MT_LOSS_BINARY_CROSSENTROPY = 4

# mt_reduction
MT_REDUCTION_MEAN = 0
MT_REDUCTION_SUM = 1

# checkpoint property limits, in bytes (without the NUL)
MT_PROPERTY_MAX_NAME = 63
MT_PROPERTY_MAX_STRING = 255

# kinds of mt_property
MT_PROPERTY_INT = 1
MT_PROPERTY_FLOAT = 2
MT_PROPERTY_STRING = 3

# which argument of mt_struct_size()
MT_STRUCT_TRAIN_CONFIG = 0
MT_STRUCT_MEMORY_PLAN = 1
MT_STRUCT_TENSOR_INFO = 2
MT_STRUCT_MODEL_INFO = 3
MT_STRUCT_PARAM_INFO = 4
MT_STRUCT_PROPERTY = 5
MT_STRUCT_BUFFER_INFO = 6

# --------------------------------------------------------------------------
# Struct mirrors
# --------------------------------------------------------------------------


class mt_model_info(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int32),
        ("num_tensors", ctypes.c_int32),
        ("num_ops", ctypes.c_int32),
        ("num_inputs", ctypes.c_int32),
        ("num_outputs", ctypes.c_int32),
        ("num_params", ctypes.c_int32),
        ("param_count", ctypes.c_int32),
        ("crc32", ctypes.c_uint32),
    ]


class mt_tensor_info(ctypes.Structure):
    _fields_ = [
        ("index", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("flags", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("dims", ctypes.c_int32 * MT_MAX_DIMS),
        ("count", ctypes.c_int32),
        ("producer", ctypes.c_int32),
    ]


class mt_train_config(ctypes.Structure):
    _fields_ = [
        ("optimizer", ctypes.c_int32),
        ("loss", ctypes.c_int32),
        ("reduction", ctypes.c_int32),
        ("batch_size", ctypes.c_int32),
        ("num_trainable_ops", ctypes.c_int32),
        ("biases_only", ctypes.c_int32),
        ("learning_rate", ctypes.c_float),
        ("beta1", ctypes.c_float),
        ("beta2", ctypes.c_float),
        ("epsilon", ctypes.c_float),
        ("momentum", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        # const uint8_t *: one byte per op, or NULL. Borrowed by mt_plan()/mt_session_init()
        # only; the caller keeps the array alive across those calls.
        ("trainable_op_mask", ctypes.POINTER(ctypes.c_uint8)),
        # 0: fused update (each weight updated as soon as its gradient is complete);
        # 1: gradients kept for mt_session_accumulate() / mt_session_optimizer_step()
        ("accumulate_gradients", ctypes.c_int32),
        # 1: check all gradients before any update (atomic refusal of a NaN/Inf step)
        ("guard_gradients", ctypes.c_int32),
    ]


class mt_memory_plan(ctypes.Structure):
    _fields_ = [
        ("total_bytes", ctypes.c_size_t),
        ("metadata_bytes", ctypes.c_size_t),
        ("weight_bytes", ctypes.c_size_t),
        ("gradient_bytes", ctypes.c_size_t),
        ("optimizer_bytes", ctypes.c_size_t),
        ("activation_bytes", ctypes.c_size_t),
        ("activation_grad_bytes", ctypes.c_size_t),
        ("io_bytes", ctypes.c_size_t),
        ("scratch_bytes", ctypes.c_size_t),
        ("reuse_bytes", ctypes.c_size_t),
        ("lower_bound_bytes", ctypes.c_size_t),
        ("num_trained_params", ctypes.c_int32),
        ("first_trained_op", ctypes.c_int32),
        ("fused_update", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


class mt_param_info(ctypes.Structure):
    _fields_ = [
        ("tensor_index", ctypes.c_int32),
        ("count", ctypes.c_int32),
        ("trained", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("data", ctypes.POINTER(ctypes.c_float)),
        ("image_data", ctypes.POINTER(ctypes.c_float)),
    ]


class mt_property(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),       # NUL-terminated, 1..MT_PROPERTY_MAX_NAME bytes
        ("type", ctypes.c_int32),        # MT_PROPERTY_*
        ("reserved", ctypes.c_int32),
        ("int_value", ctypes.c_int64),
        ("float_value", ctypes.c_double),
        ("str_value", ctypes.c_char_p),  # NUL-terminated, <= MT_PROPERTY_MAX_STRING bytes
    ]


# What an arena buffer holds (mt_buffer_info.kind)
MT_BUFFER_METADATA = 0
MT_BUFFER_WEIGHT = 1
MT_BUFFER_GRADIENT = 2
MT_BUFFER_OPTIMIZER = 3
MT_BUFFER_ACTIVATION = 4
MT_BUFFER_TARGET = 5
MT_BUFFER_SCRATCH = 6
BUFFER_KIND_NAMES = {
    MT_BUFFER_METADATA: "metadata", MT_BUFFER_WEIGHT: "weight", MT_BUFFER_GRADIENT: "gradient",
    MT_BUFFER_OPTIMIZER: "optimizer", MT_BUFFER_ACTIVATION: "activation",
    MT_BUFFER_TARGET: "target", MT_BUFFER_SCRATCH: "scratch",
}


class mt_buffer_info(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int32),          # MT_BUFFER_*
        ("tensor_index", ctypes.c_int32),  # -1 for metadata, target, scratch
        ("start", ctypes.c_int32),         # lifetime over the step's schedule, inclusive
        ("end", ctypes.c_int32),
        ("in_place_of", ctypes.c_int32),   # tensor whose bytes it overwrites in place, or -1
        ("reserved", ctypes.c_int32),
        ("offset", ctypes.c_size_t),       # from the arena's start
        ("bytes", ctypes.c_size_t),
    ]


# mt_struct_size(which) -> the mirror it must equal
STRUCT_MIRRORS = {
    MT_STRUCT_TRAIN_CONFIG: mt_train_config,
    MT_STRUCT_MEMORY_PLAN: mt_memory_plan,
    MT_STRUCT_TENSOR_INFO: mt_tensor_info,
    MT_STRUCT_MODEL_INFO: mt_model_info,
    MT_STRUCT_PARAM_INFO: mt_param_info,
    MT_STRUCT_PROPERTY: mt_property,
    MT_STRUCT_BUFFER_INFO: mt_buffer_info,
}

# Callback types. A Python callback must not raise (ctypes would print the exception and
# return 0, which is MT_OK): wrap its body, return MT_ERR_IO on failure and re-raise the
# stored exception after the C call returns. The CFUNCTYPE object must stay referenced
# until the C call that uses it has returned.

# typedef mt_status (*mt_write_fn)(void *user, const void *data, size_t bytes);
mt_write_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)

# typedef mt_status (*mt_read_fn)(void *user, size_t offset, void *data, size_t bytes);
mt_read_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                              ctypes.c_size_t)

# typedef mt_status (*mt_property_fn)(void *user, const mt_property *property);
mt_property_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(mt_property))

# typedef mt_status (*mt_buffer_fn)(void *user, const mt_buffer_info *buffer);
mt_buffer_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(mt_buffer_info))

# typedef struct mt_session mt_session;  (opaque, lives inside the arena)
mt_session_p = ctypes.c_void_p

# --------------------------------------------------------------------------
# Library loading and ABI check
# --------------------------------------------------------------------------

ENV_LIBRARY_PATH = "MICROTRAIN_LIB"

if sys.platform == "darwin":
    _LIBRARY_FILE = "libmicrotrain.dylib"
elif sys.platform == "win32":
    _LIBRARY_FILE = "microtrain.dll"
else:
    _LIBRARY_FILE = "libmicrotrain.so"

_loaded_library = None
_load_lock = threading.Lock()


def bundled_library_path():
    """Where ``pip install .`` puts the library: in the package directory.

    An editable install (``pip install -e .``) keeps the sources in py_facade/ and
    the built library in site-packages, so every directory of the package's
    ``__path__`` is searched; the first one is named when none has it.
    """
    package = sys.modules.get(__package__.rpartition(".")[0])  # microtrain, not .backend
    directories = list(getattr(package, "__path__", None) or [])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if here not in directories:
        directories.insert(0, here)
    for directory in directories:
        candidate = os.path.join(directory, _LIBRARY_FILE)
        if os.path.isfile(candidate):
            return candidate
    return os.path.join(here, _LIBRARY_FILE)


def library_path():
    """The path the library is (or would be) loaded from; raises OSError if there is none."""
    override = os.environ.get(ENV_LIBRARY_PATH)
    if override:
        if not os.path.isfile(override):
            raise OSError(
                "microtrain: %s=%r does not name an existing file" % (ENV_LIBRARY_PATH, override)
            )
        return override
    bundled = bundled_library_path()
    if os.path.isfile(bundled):
        return bundled
    raise OSError(
        "microtrain: no native library found. It is not bundled at %s (pip install . builds "
        "it there); build micro_core with CMake and set %s=/path/to/%s"
        % (bundled, ENV_LIBRARY_PATH, _LIBRARY_FILE)
    )


def check_abi(library):
    """Compare the library's ABI version and struct sizes with the mirrors of this module."""
    library.mt_abi_version.argtypes = []
    library.mt_abi_version.restype = ctypes.c_uint32
    library.mt_struct_size.argtypes = [ctypes.c_int]
    library.mt_struct_size.restype = ctypes.c_size_t
    version = library.mt_abi_version()
    if version != MT_ABI_VERSION:
        raise RuntimeError(
            "microtrain: the native library has ABI version %d, these bindings expect %d; "
            "rebuild the library or update the package" % (version, MT_ABI_VERSION)
        )
    for which, mirror in sorted(STRUCT_MIRRORS.items()):
        native_size = library.mt_struct_size(which)
        if native_size != ctypes.sizeof(mirror):
            raise RuntimeError(
                "microtrain: sizeof(%s) is %d bytes in the native library but %d in the "
                "Python mirror; the header and _native.py disagree"
                % (mirror.__name__, native_size, ctypes.sizeof(mirror))
            )


def load_library():
    """Load the shared library once (thread-safe), check its ABI and return the CDLL."""
    global _loaded_library
    if _loaded_library is not None:
        return _loaded_library
    with _load_lock:
        if _loaded_library is None:
            library = ctypes.CDLL(library_path())
            check_abi(library)
            _loaded_library = library
    return _loaded_library


class _LazyFunction:
    """A C function bound on first call, so importing the package needs no library."""

    __slots__ = ("name", "argtypes", "restype", "_function")

    def __init__(self, name, argtypes, restype):
        self.name = name
        self.argtypes = argtypes
        self.restype = restype
        self._function = None

    def _resolve(self):
        function = getattr(load_library(), self.name)
        function.argtypes = self.argtypes
        function.restype = self.restype
        self._function = function
        return function

    def __call__(self, *args):
        function = self._function
        if function is None:
            function = self._resolve()
        return function(*args)

    def __repr__(self):
        return "<microtrain native function %s>" % self.name


def _bind(name, argtypes, restype):
    return _LazyFunction(name, argtypes, restype)


_p_int32 = ctypes.POINTER(ctypes.c_int32)
_p_int64 = ctypes.POINTER(ctypes.c_int64)
_p_float = ctypes.POINTER(ctypes.c_float)

# --------------------------------------------------------------------------
# Bindings, in header order
# --------------------------------------------------------------------------

# const char *mt_status_str(int status);
mt_status_str = _bind("mt_status_str", [ctypes.c_int], ctypes.c_char_p)

# uint32_t mt_abi_version(void);
mt_abi_version = _bind("mt_abi_version", [], ctypes.c_uint32)

# size_t mt_struct_size(int which);
mt_struct_size = _bind("mt_struct_size", [ctypes.c_int], ctypes.c_size_t)

# mt_status mt_model_check(const void *image, size_t image_bytes, mt_model_info *info);
mt_model_check = _bind(
    "mt_model_check",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(mt_model_info)],
    ctypes.c_int,
)

# mt_status mt_model_tensor(const void *image, size_t image_bytes, int32_t index,
#                           mt_tensor_info *info);
mt_model_tensor = _bind(
    "mt_model_tensor",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.POINTER(mt_tensor_info)],
    ctypes.c_int,
)

# mt_status mt_model_io(const void *image, size_t image_bytes, int32_t is_output,
#                       int32_t position, int32_t *tensor_index);
mt_model_io = _bind(
    "mt_model_io",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, _p_int32],
    ctypes.c_int,
)

# void mt_train_config_init(mt_train_config *cfg);
mt_train_config_init = _bind("mt_train_config_init", [ctypes.POINTER(mt_train_config)], None)

# mt_status mt_plan(const void *image, size_t image_bytes, const mt_train_config *cfg,
#                   mt_memory_plan *plan);
mt_plan = _bind(
    "mt_plan",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(mt_train_config),
     ctypes.POINTER(mt_memory_plan)],
    ctypes.c_int,
)

# mt_status mt_session_init(mt_session **session, const void *image, size_t image_bytes,
#                           const mt_train_config *cfg, void *arena, size_t arena_bytes);
mt_session_init = _bind(
    "mt_session_init",
    [ctypes.POINTER(mt_session_p), ctypes.c_void_p, ctypes.c_size_t,
     ctypes.POINTER(mt_train_config), ctypes.c_void_p, ctypes.c_size_t],
    ctypes.c_int,
)

# mt_status mt_session_plan(const mt_session *s, mt_memory_plan *plan);
mt_session_plan = _bind(
    "mt_session_plan", [mt_session_p, ctypes.POINTER(mt_memory_plan)], ctypes.c_int
)

# mt_status mt_session_input(mt_session *s, int32_t position, float **data, int32_t *count);
mt_session_input = _bind(
    "mt_session_input",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(_p_float), _p_int32],
    ctypes.c_int,
)

# mt_status mt_session_output(const mt_session *s, int32_t position, const float **data,
#                             int32_t *count);
mt_session_output = _bind(
    "mt_session_output",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(_p_float), _p_int32],
    ctypes.c_int,
)

# mt_status mt_session_target(mt_session *s, void **data, int32_t *bytes);
mt_session_target = _bind(
    "mt_session_target",
    [mt_session_p, ctypes.POINTER(ctypes.c_void_p), _p_int32],
    ctypes.c_int,
)

# mt_status mt_session_train_step(mt_session *s, int32_t n, float *loss);
mt_session_train_step = _bind(
    "mt_session_train_step", [mt_session_p, ctypes.c_int32, _p_float], ctypes.c_int
)

# mt_status mt_session_zero_grad(mt_session *s);
mt_session_zero_grad = _bind("mt_session_zero_grad", [mt_session_p], ctypes.c_int)

# mt_status mt_session_accumulate(mt_session *s, int32_t n, float *loss);
mt_session_accumulate = _bind(
    "mt_session_accumulate", [mt_session_p, ctypes.c_int32, _p_float], ctypes.c_int
)

# mt_status mt_session_optimizer_step(mt_session *s);
mt_session_optimizer_step = _bind("mt_session_optimizer_step", [mt_session_p], ctypes.c_int)

# mt_status mt_session_eval_step(mt_session *s, int32_t n, float *loss);
mt_session_eval_step = _bind(
    "mt_session_eval_step", [mt_session_p, ctypes.c_int32, _p_float], ctypes.c_int
)

# mt_status mt_session_infer(mt_session *s, int32_t n);
mt_session_infer = _bind("mt_session_infer", [mt_session_p, ctypes.c_int32], ctypes.c_int)

# mt_status mt_session_set_learning_rate(mt_session *s, float learning_rate);
mt_session_set_learning_rate = _bind(
    "mt_session_set_learning_rate", [mt_session_p, ctypes.c_float], ctypes.c_int
)

# mt_status mt_session_get_learning_rate(const mt_session *s, float *learning_rate);
mt_session_get_learning_rate = _bind(
    "mt_session_get_learning_rate", [mt_session_p, _p_float], ctypes.c_int
)

# mt_status mt_session_get_base_learning_rate(const mt_session *s, float *learning_rate);
mt_session_get_base_learning_rate = _bind(
    "mt_session_get_base_learning_rate", [mt_session_p, _p_float], ctypes.c_int
)

# mt_status mt_session_counters(const mt_session *s, int64_t *step, int64_t *epoch);
mt_session_counters = _bind(
    "mt_session_counters", [mt_session_p, _p_int64, _p_int64], ctypes.c_int
)

# mt_status mt_session_numeric_errors(const mt_session *s, int64_t *count);
mt_session_numeric_errors = _bind(
    "mt_session_numeric_errors", [mt_session_p, _p_int64], ctypes.c_int
)

# mt_status mt_session_set_epoch(mt_session *s, int64_t epoch);
mt_session_set_epoch = _bind("mt_session_set_epoch", [mt_session_p, ctypes.c_int64], ctypes.c_int)

# mt_status mt_session_param_count(const mt_session *s, int32_t *count);
mt_session_param_count = _bind("mt_session_param_count", [mt_session_p, _p_int32], ctypes.c_int)

# mt_status mt_session_param(mt_session *s, int32_t position, mt_param_info *info);
mt_session_param = _bind(
    "mt_session_param",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(mt_param_info)],
    ctypes.c_int,
)

# mt_status mt_checkpoint_bytes(const mt_session *s, int32_t include_optimizer,
#                               const mt_property *properties, int32_t num_properties,
#                               size_t *bytes);
mt_checkpoint_bytes = _bind(
    "mt_checkpoint_bytes",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(mt_property), ctypes.c_int32,
     ctypes.POINTER(ctypes.c_size_t)],
    ctypes.c_int,
)

# mt_status mt_checkpoint_save(const mt_session *s, int32_t include_optimizer,
#                              const mt_property *properties, int32_t num_properties,
#                              mt_write_fn write, void *user);
mt_checkpoint_save = _bind(
    "mt_checkpoint_save",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(mt_property), ctypes.c_int32, mt_write_fn,
     ctypes.c_void_p],
    ctypes.c_int,
)

# mt_status mt_checkpoint_load(mt_session *s, size_t checkpoint_bytes, mt_read_fn read,
#                              void *user, mt_property_fn on_property, void *property_user);
mt_checkpoint_load = _bind(
    "mt_checkpoint_load",
    [mt_session_p, ctypes.c_size_t, mt_read_fn, ctypes.c_void_p, mt_property_fn,
     ctypes.c_void_p],
    ctypes.c_int,
)

# mt_status mt_checkpoint_save_buffer(const mt_session *s, int32_t include_optimizer,
#                                     const mt_property *properties, int32_t num_properties,
#                                     void *buffer, size_t capacity, size_t *written);
mt_checkpoint_save_buffer = _bind(
    "mt_checkpoint_save_buffer",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(mt_property), ctypes.c_int32, ctypes.c_void_p,
     ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)],
    ctypes.c_int,
)

# mt_status mt_checkpoint_load_buffer(mt_session *s, const void *checkpoint, size_t checkpoint_bytes,
#                                     mt_property_fn on_property, void *property_user);
mt_checkpoint_load_buffer = _bind(
    "mt_checkpoint_load_buffer",
    [mt_session_p, ctypes.c_void_p, ctypes.c_size_t, mt_property_fn, ctypes.c_void_p],
    ctypes.c_int,
)

# mt_status mt_session_export_image(const mt_session *s, mt_write_fn write, void *user);
mt_session_export_image = _bind(
    "mt_session_export_image", [mt_session_p, mt_write_fn, ctypes.c_void_p], ctypes.c_int
)

# mt_status mt_session_export_image_buffer(const mt_session *s, void *buffer, size_t capacity,
#                                          size_t *written);
mt_session_export_image_buffer = _bind(
    "mt_session_export_image_buffer",
    [mt_session_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)],
    ctypes.c_int,
)

# mt_status mt_plan_buffers(const void *image, size_t image_bytes, const mt_train_config *cfg,
#                           mt_buffer_fn report, void *user);
mt_plan_buffers = _bind(
    "mt_plan_buffers",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(mt_train_config), mt_buffer_fn, ctypes.c_void_p],
    ctypes.c_int,
)

# uint32_t mt_crc32_update(uint32_t crc, const void *data, size_t bytes);
mt_crc32_update = _bind("mt_crc32_update", [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t],
                        ctypes.c_uint32)

ALL_FUNCTIONS = (
    mt_status_str, mt_crc32_update, mt_abi_version, mt_struct_size, mt_model_check, mt_model_tensor, mt_model_io,
    mt_train_config_init, mt_plan, mt_plan_buffers, mt_session_init, mt_session_plan, mt_session_input,
    mt_session_output, mt_session_target, mt_session_train_step, mt_session_zero_grad,
    mt_session_accumulate, mt_session_optimizer_step, mt_session_eval_step, mt_session_infer,
    mt_session_set_learning_rate, mt_session_get_learning_rate, mt_session_get_base_learning_rate,
    mt_session_counters, mt_session_numeric_errors, mt_session_set_epoch, mt_session_param_count,
    mt_session_param, mt_checkpoint_bytes, mt_checkpoint_save, mt_checkpoint_load,
    mt_checkpoint_save_buffer, mt_checkpoint_load_buffer, mt_session_export_image,
    mt_session_export_image_buffer,
)


def status_text(status):
    """mt_status_str(status) as a Python string, with the enum name appended."""
    text = mt_status_str(status)
    message = text.decode("utf-8", "replace") if text is not None else "unknown status"
    name = STATUS_NAMES.get(status)
    return message if name is None else "%s [%s]" % (message, name)


def _check(status, function=None):
    """Return ``status`` if it is MT_OK (or positive); raise MicrotrainError if negative."""
    if status < 0:
        raise MicrotrainError(status, status_text(status), function)
    return status
