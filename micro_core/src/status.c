/* Status names and ABI facts the bindings check at load time; abi_layout.h (generated from
 * micro_core/abi/microtrain_abi.json) checks the header against that description as this
 * file compiles. */
#include "abi_layout.h"
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
#define MT_STRUCT_SIZE_CASE(number, type) \
    case number: return sizeof(type);
        MT_ABI_STRUCTS(MT_STRUCT_SIZE_CASE)
#undef MT_STRUCT_SIZE_CASE
    default: return 0;
    }
}
