/*
 * The kernel table (select/kernels.def: a row a slot, and in each row the kernel of every
 * column, a column a target; select/target.h picks this build's). Declared here, once, from
 * each row:
 *
 *   - every kernel of the row, base_<suffix>(params): _ref (the reference, in the op's own
 *     file), _portable (ops/portable/), _dsp (ops/dsp/), _mve (ops/mve/, optimizers/),
 *     _avx512 and _avx2 (ops/x86/, optimizers/): one prototype for all of them, so a kernel
 *     whose parameters differ from its row's does not compile;
 *   - the row's entry, mt_kernel_<slot>(params): the kernel of this build's column (on
 *     x86-64, the run-time level's). The op adapters, the session and mt_math.c call these
 *     and nothing else of the kernel families; an entry is inlined, so it costs no call;
 *   - mt_kernel_table, a column as data (the sibling tests walk the columns: select/tables.h).
 *
 * A new kernel for an existing slot is its source in its family's folder and its suffix in
 * the row's columns; the sibling tests then run it (boards/app/siblings_walk.c).
 */
#ifndef MT_SELECT_KERNELS_H
#define MT_SELECT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "optimizers.h"    /* mt_proximal */
#include "select/target.h" /* MT_KERNEL_TARGET and its column's MT_KERNEL_PICK */

struct mt_spatial;

/* The columns of kernels.def's rows, in order */
#define MT_KERNEL_COLUMN_NAMES "avx512", "avx2", "mve", "dsp", "soft_float", "portable"

/* The kernel of one column: MT_KERNEL_CELL(MT_PICK_MVE, base, (avx512, ..., portable)) is
 * base_<the mve column's suffix>. */
#define MT_PICK_AVX512(base, avx512, avx2, mve, dsp, soft_float, portable) base##_##avx512
#define MT_PICK_AVX2(base, avx512, avx2, mve, dsp, soft_float, portable) base##_##avx2
#define MT_PICK_MVE(base, avx512, avx2, mve, dsp, soft_float, portable) base##_##mve
#define MT_PICK_DSP(base, avx512, avx2, mve, dsp, soft_float, portable) base##_##dsp
#define MT_PICK_SOFT_FLOAT(base, avx512, avx2, mve, dsp, soft_float, portable) base##_##soft_float
#define MT_PICK_PORTABLE(base, avx512, avx2, mve, dsp, soft_float, portable) base##_##portable
#define MT_KERNEL_UNPAREN(...) __VA_ARGS__
#define MT_KERNEL_APPLY(pick, ...) pick(__VA_ARGS__)
#define MT_KERNEL_CELL(pick, base, columns) MT_KERNEL_APPLY(pick, base, MT_KERNEL_UNPAREN columns)

#define MT_KERNEL_VARIANTS(type, base, params)                                                \
    type base##_ref params;                                                                   \
    type base##_portable params;                                                              \
    type base##_dsp params;                                                                   \
    type base##_mve params;                                                                   \
    type base##_avx512 params;                                                                \
    type base##_avx2 params;
#define MT_KERNEL_VOID(slot, base, params, args, columns) MT_KERNEL_VARIANTS(void, base, params)
#define MT_KERNEL_INT(slot, base, params, args, columns) MT_KERNEL_VARIANTS(int, base, params)
#include "select/kernels.def"
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT
#undef MT_KERNEL_VARIANTS

#if defined(__GNUC__)
#define MT_KERNEL_ENTRY static inline __attribute__((always_inline))
#else
#define MT_KERNEL_ENTRY static inline
#endif
#define MT_KERNEL_VOID(slot, base, params, args, columns)                                     \
    MT_KERNEL_ENTRY void mt_kernel_##slot params                                              \
    {                                                                                         \
        MT_KERNEL_CELL(MT_KERNEL_PICK, base, columns) args;                                   \
    }
#define MT_KERNEL_INT(slot, base, params, args, columns)                                      \
    MT_KERNEL_ENTRY int mt_kernel_##slot params                                               \
    {                                                                                         \
        return MT_KERNEL_CELL(MT_KERNEL_PICK, base, columns) args;                            \
    }
#include "select/kernels.def"
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT

/* One column of the table as data: every row's kernel and its name (the sibling tests walk the
 * columns: select/tables.h; the core itself calls the entries above) */
typedef struct mt_kernel_table {
    const char *column; /* "avx512", "avx2", "portable", "dsp", "mve", "soft_float", "ref" */
    int x86_level;      /* x86-64: the mt_x86_set_level the column's kernels take inside; else 0 */
#define MT_KERNEL_VOID(slot, base, params, args, columns) void(*slot) params; const char *slot##_name;
#define MT_KERNEL_INT(slot, base, params, args, columns) int(*slot) params; const char *slot##_name;
#include "select/kernels.def"
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT
} mt_kernel_table;

#endif /* MT_SELECT_KERNELS_H */
