"""Raw 1:1 ctypes bindings of micro_core/include/microtrain.h.

Layer one of the facade (CONTRIBUTING.md, "Python"): nothing here owns memory or
hides a C call. Each binding carries its C prototype as a comment, with
argtypes/restype that mirror it. The owner of the memory is ``ctypes_backend.Backend``.

The shared library is loaded on the first call of any binding, so that the
pure-Python parts of the package (model builder, image writer, metrics) work
without it. Where it comes from, in order:

  1. the environment variable ``MICROTRAIN_LIB`` (a path to libmicrotrain.so);
  2. ``libmicrotrain.so`` (``.dylib``, ``.dll``) in the package folder, as
     ``pip install .`` ships it.

At load the library's ABI version and the size of every public struct are
compared with the mirrors below; a mismatch raises instead of corrupting memory.
"""

import ctypes
import os
import sys
import threading

from ..errors import MicrotrainError
from ._native_types import *  # noqa: F401,F403 - the constants and structs are part of this API
from ._native_types import (STRUCT_MIRRORS, STATUS_NAMES, mt_session_p, mt_model_info,
                            mt_tensor_info, mt_op_info, mt_train_config, mt_memory_plan,
                            mt_param_info, mt_property, mt_error_detail,
                            mt_write_fn, mt_read_fn, mt_property_fn, mt_buffer_fn)

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


def resolve(lazy):
    """The ctypes function behind a binding (bound now if it was not yet): what a hot loop
    calls directly, without the lazy wrapper's indirection."""
    return lazy._function if lazy._function is not None else lazy._resolve()


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

# const char *mt_op_name(int32_t op_type);
mt_op_name = _bind("mt_op_name", [ctypes.c_int32], ctypes.c_char_p)

# int32_t mt_op_built(int32_t op_type);
mt_op_built = _bind("mt_op_built", [ctypes.c_int32], ctypes.c_int32)

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

# mt_status mt_model_op(const void *image, size_t image_bytes, int32_t index, mt_op_info *info);
mt_model_op = _bind(
    "mt_model_op",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.POINTER(mt_op_info)],
    ctypes.c_int,
)

# mt_status mt_model_tensors(const void *image, size_t image_bytes, int32_t first, int32_t count,
#                            mt_tensor_info *infos);
mt_model_tensors = _bind(
    "mt_model_tensors",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(mt_tensor_info)],
    ctypes.c_int,
)

# mt_status mt_model_ops(const void *image, size_t image_bytes, int32_t first, int32_t count,
#                        mt_op_info *infos);
mt_model_ops = _bind(
    "mt_model_ops",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(mt_op_info)],
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

# mt_status mt_model_diagnose(const void *image, size_t image_bytes, const mt_train_config *cfg,
#                             mt_error_detail *detail);
mt_model_diagnose = _bind(
    "mt_model_diagnose",
    [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(mt_train_config),
     ctypes.POINTER(mt_error_detail)],
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

# mt_status mt_session_init_from_plan(mt_session **session, const mt_memory_plan *plan,
#                                     const mt_train_config *cfg, void *arena, size_t arena_bytes);
mt_session_init_from_plan = _bind(
    "mt_session_init_from_plan",
    [ctypes.POINTER(mt_session_p), ctypes.POINTER(mt_memory_plan), ctypes.POINTER(mt_train_config),
     ctypes.c_void_p, ctypes.c_size_t],
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

# mt_status mt_session_io(const mt_session *s, int32_t is_output, int32_t position,
#                         mt_tensor_info *info);
mt_session_io = _bind(
    "mt_session_io",
    [mt_session_p, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(mt_tensor_info)],
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

# mt_status mt_session_train_step_rows(mt_session *s, int32_t n, const float *const *inputs,
#                                      float *loss);
mt_session_train_step_rows = _bind(
    "mt_session_train_step_rows",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p), _p_float],
    ctypes.c_int,
)

# mt_status mt_session_eval_step_rows(mt_session *s, int32_t n, const float *const *inputs,
#                                     float *loss);
mt_session_eval_step_rows = _bind(
    "mt_session_eval_step_rows",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p), _p_float],
    ctypes.c_int,
)

# mt_status mt_session_infer_rows(mt_session *s, int32_t n, const float *const *inputs);
mt_session_infer_rows = _bind(
    "mt_session_infer_rows", [mt_session_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)],
    ctypes.c_int,
)

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

# mt_status mt_session_set_reference(mt_session *s);
mt_session_set_reference = _bind("mt_session_set_reference", [mt_session_p], ctypes.c_int)

# mt_status mt_session_counters(const mt_session *s, int64_t *step, int64_t *epoch);
mt_session_counters = _bind(
    "mt_session_counters", [mt_session_p, _p_int64, _p_int64], ctypes.c_int
)

# mt_status mt_session_last_error(const mt_session *s, mt_error_detail *detail);
mt_session_last_error = _bind(
    "mt_session_last_error", [mt_session_p, ctypes.POINTER(mt_error_detail)], ctypes.c_int
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

# mt_status mt_session_qparam_count(const mt_session *s, int32_t *count);
mt_session_qparam_count = _bind("mt_session_qparam_count", [mt_session_p, _p_int32], ctypes.c_int)

# mt_status mt_session_qparam(mt_session *s, int32_t position, mt_param_info *info);
mt_session_qparam = _bind(
    "mt_session_qparam",
    [mt_session_p, ctypes.c_int32, ctypes.POINTER(mt_param_info)],
    ctypes.c_int,
)

# mt_status mt_session_qparam_written(mt_session *s, int32_t position);
mt_session_qparam_written = _bind("mt_session_qparam_written", [mt_session_p, ctypes.c_int32],
                                  ctypes.c_int)

# mt_status mt_session_weights_crc32(const mt_session *s, uint32_t *crc);
mt_session_weights_crc32 = _bind("mt_session_weights_crc32",
                                 [mt_session_p, ctypes.POINTER(ctypes.c_uint32)], ctypes.c_int)

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
    mt_status_str, mt_crc32_update, mt_abi_version, mt_struct_size, mt_op_name, mt_op_built,
    mt_model_check, mt_model_tensor, mt_model_op, mt_model_tensors, mt_model_ops, mt_model_io,
    mt_model_diagnose,
    mt_train_config_init, mt_plan, mt_plan_buffers, mt_session_init_from_plan, mt_session_init,
    mt_session_plan, mt_session_input, mt_session_io, mt_session_output, mt_session_target, mt_session_train_step,
    mt_session_zero_grad, mt_session_accumulate, mt_session_optimizer_step, mt_session_eval_step,
    mt_session_infer, mt_session_train_step_rows, mt_session_eval_step_rows,
    mt_session_infer_rows, mt_session_last_error, mt_session_set_learning_rate,
    mt_session_get_learning_rate, mt_session_get_base_learning_rate, mt_session_set_reference,
    mt_session_counters,
    mt_session_numeric_errors, mt_session_set_epoch, mt_session_param_count, mt_session_param,
    mt_session_qparam_count, mt_session_qparam, mt_session_qparam_written, mt_session_weights_crc32,
    mt_checkpoint_bytes, mt_checkpoint_save, mt_checkpoint_load, mt_checkpoint_save_buffer,
    mt_checkpoint_load_buffer, mt_session_export_image, mt_session_export_image_buffer,
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
