"""Constants, struct mirrors and callback types of micro_core/include/microtrain.h.

The data half of the raw bindings (``_native`` imports all of it): every ``#define``, enum
value and public struct the Python side needs, mirrored field for field. ``_native.check_abi``
compares each struct's size with ``mt_struct_size()`` when the library loads, and
tests/test_native_bindings.py compares the values with the header.
"""

import ctypes

from .. import ops as _ops

# --------------------------------------------------------------------------
# Constants mirrored from microtrain.h
# --------------------------------------------------------------------------

MT_ABI_VERSION = 11
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
MT_DTYPE_I8 = 3

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
MT_STRUCT_OP_INFO = 7
MT_STRUCT_ERROR_DETAIL = 8

# --------------------------------------------------------------------------
# Struct mirrors
# --------------------------------------------------------------------------


class mt_error_detail(ctypes.Structure):
    _fields_ = [
        ("status", ctypes.c_int32),        # the failure described; MT_OK when there is none
        ("op_index", ctypes.c_int32),      # the op it concerns, or -1
        ("op_type", ctypes.c_int32),       # that op's mt_op_type (as stored), or 0
        ("tensor_index", ctypes.c_int32),  # the tensor it concerns, or -1
    ]


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
        ("data_offset", ctypes.c_int32),  # CONST: its data's byte offset in the image, else -1
    ]


class mt_op_info(ctypes.Structure):
    _fields_ = [
        ("index", ctypes.c_int32),
        ("type", ctypes.c_int32),         # mt_op_type (microtrain.ops)
        ("num_inputs", ctypes.c_int32),
        ("num_outputs", ctypes.c_int32),
        ("inputs", ctypes.c_int32 * 4),   # tensor indices, -1: absent optional input / unused
        ("outputs", ctypes.c_int32 * 2),  # tensor indices, -1: unused
        ("params", ctypes.c_uint32 * 4),
        ("layer", ctypes.c_int32),        # the op's layer (its own index in a version 1 image)
        ("reserved", ctypes.c_int32),
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
        # FedProx's μ: updates add μ·(w − w_ref) to the gradient (0 = off); w_ref in the arena
        ("proximal_mu", ctypes.c_float),
    ]


class mt_memory_plan(ctypes.Structure):
    _fields_ = [
        ("total_bytes", ctypes.c_size_t),
        ("metadata_bytes", ctypes.c_size_t),
        ("weight_bytes", ctypes.c_size_t),
        ("gradient_bytes", ctypes.c_size_t),
        ("optimizer_bytes", ctypes.c_size_t),
        ("reference_bytes", ctypes.c_size_t),   # the proximal term's copy of trained weights
        ("activation_bytes", ctypes.c_size_t),
        ("activation_grad_bytes", ctypes.c_size_t),
        ("io_bytes", ctypes.c_size_t),
        ("scratch_bytes", ctypes.c_size_t),
        ("reuse_bytes", ctypes.c_size_t),
        ("lower_bound_bytes", ctypes.c_size_t),
        ("num_trained_params", ctypes.c_int32),
        ("first_trained_op", ctypes.c_int32),
        ("fused_update", ctypes.c_int32),
        ("placement_order", ctypes.c_int32),  # the greedy order kept (0 size .. 3 start)
        ("int8_activation_bytes", ctypes.c_size_t),
        # the binding: what mt_session_init_from_plan() checks before it trusts the plan
        ("image", ctypes.c_void_p),
        ("image_bytes", ctypes.c_size_t),
        ("image_tables_crc32", ctypes.c_uint32),
        ("config_crc32", ctypes.c_uint32),
        ("abi_version", ctypes.c_uint32),
        ("seal", ctypes.c_uint32),
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
MT_BUFFER_REFERENCE = 7
BUFFER_KIND_NAMES = {
    MT_BUFFER_METADATA: "metadata", MT_BUFFER_WEIGHT: "weight", MT_BUFFER_GRADIENT: "gradient",
    MT_BUFFER_OPTIMIZER: "optimizer", MT_BUFFER_ACTIVATION: "activation",
    MT_BUFFER_TARGET: "target", MT_BUFFER_SCRATCH: "scratch", MT_BUFFER_REFERENCE: "reference",
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
    MT_STRUCT_OP_INFO: mt_op_info,
    MT_STRUCT_ERROR_DETAIL: mt_error_detail,
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
