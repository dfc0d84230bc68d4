/*
 * Op type -> kernel, generated from microtrain_ops.def: a table indexed by the op's code.
 * Adding an op: its kernel file in ops/ and one row in the .def.
 *
 * Which ops have a kernel: CMake's MT_OPS list compiles only the selected ops' sources and
 * generates mt_ops_config.h, which defines MT_OP_BUILT_<NAME> to 1 or 0 for every op of
 * the .def (micro_core/cmake/microtrain_ops.cmake); the build passes MT_OPS_CONFIG to say
 * the header is there. A build that does not use CMake (a MicroPython micropython.mk that
 * compiles every .c, a vendor IDE project) defines neither and gets every op.
 */
#include <stddef.h>

#include "ops/kernel.h"

#ifdef MT_OPS_CONFIG
#include "mt_ops_config.h"
#define MT_BUILT(NAME) MT_OP_BUILT_##NAME
#else
#define MT_BUILT(NAME) 1
#endif

#define MT_OP(code, NAME, name, source) extern const mt_op_kernel mt_kernel_##name;
#include "microtrain_ops.def"
#undef MT_OP

typedef struct op_entry {
    const char *name;            /* NULL: no op has this code */
    const mt_op_kernel *kernel;  /* NULL: not in this build */
} op_entry;

/* An op left out of the build is `0 ? &mt_kernel_x : NULL` in a constant initializer: the
 * compiler folds it to NULL and emits no reference, so the kernel need not be linked. */
static const op_entry op_table[] = {
#define MT_OP(code, NAME, name, source) [code] = {#name, MT_BUILT(NAME) ? &mt_kernel_##name : NULL},
#include "microtrain_ops.def"
#undef MT_OP
};

#define OP_TABLE_SIZE (sizeof op_table / sizeof op_table[0])

const mt_op_kernel *mt_op_kernel_for(uint32_t type)
{
    return type < OP_TABLE_SIZE ? op_table[type].kernel : NULL;
}

/* Ops whose weight gradient can be computed in blocks of output rows (kernel.h); the same
 * folding as above leaves an op out of the build unreferenced. */
extern const mt_weight_tiling mt_weight_tiling_dense, mt_weight_tiling_conv2d, mt_weight_tiling_conv2d_s8,
    mt_weight_tiling_dense_s8;
static const mt_weight_tiling *const tiling_table[] = {
    [MT_OP_DENSE] = MT_BUILT(DENSE) ? &mt_weight_tiling_dense : NULL,
    [MT_OP_CONV2D] = MT_BUILT(CONV2D) ? &mt_weight_tiling_conv2d : NULL,
    /* an int8 layer trained in place (its update: ops/qas.c's, a tile at a time) */
    [MT_OP_CONV2D_S8] = MT_BUILT(CONV2D_S8) ? &mt_weight_tiling_conv2d_s8 : NULL,
    [MT_OP_DENSE_S8] = MT_BUILT(DENSE_S8) ? &mt_weight_tiling_dense_s8 : NULL,
};

const mt_weight_tiling *mt_weight_tiling_for(uint32_t type)
{
    return type < sizeof tiling_table / sizeof tiling_table[0] ? tiling_table[type] : NULL;
}

const char *mt_op_name(int32_t op_type)
{
    return op_type >= 0 && (uint32_t)op_type < OP_TABLE_SIZE ? op_table[op_type].name : NULL;
}

int32_t mt_op_built(int32_t op_type)
{
    return op_type >= 0 && mt_op_kernel_for((uint32_t)op_type) != NULL;
}
