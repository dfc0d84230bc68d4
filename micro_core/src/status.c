/* Status names and ABI facts the bindings check at load time. */
#include "microtrain.h"

const char *mt_status_str(int status)
{
    switch (status) {
    case MT_OK: return "ok";
    case MT_ERR_BAD_ARGUMENT: return "bad argument";
    case MT_ERR_BAD_MODEL: return "corrupt or inconsistent model image";
    case MT_ERR_SHAPE: return "tensor shape or dtype does not fit";
    case MT_ERR_STATE: return "call not valid in the session's current state";
    case MT_ERR_UNSUPPORTED: return "not supported by this build";
    case MT_ERR_ARENA_TOO_SMALL: return "arena too small";
    case MT_ERR_NUMERIC: return "NaN or infinite loss, gradient or update; step refused";
    case MT_ERR_BAD_CHECKPOINT: return "corrupt, truncated or unknown checkpoint";
    case MT_ERR_CHECKPOINT_MISMATCH: return "checkpoint belongs to another model, optimizer or trained set";
    case MT_ERR_IO: return "storage read or write failed";
    default: return "unknown status";
    }
}

uint32_t mt_abi_version(void)
{
    return MT_ABI_VERSION;
}

size_t mt_struct_size(int which)
{
    switch (which) {
    case 0: return sizeof(mt_train_config);
    case 1: return sizeof(mt_memory_plan);
    case 2: return sizeof(mt_tensor_info);
    case 3: return sizeof(mt_model_info);
    case 4: return sizeof(mt_param_info);
    case 5: return sizeof(mt_property);
    case 6: return sizeof(mt_buffer_info);
    case 7: return sizeof(mt_op_info);
    case 8: return sizeof(mt_error_detail);
    default: return 0;
    }
}
