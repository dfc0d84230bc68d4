/*
 * The kernel table as data, for the sibling tests (boards/app/siblings_walk.c; the core never
 * includes it): this build's columns, each a struct with every row's kernel and its name, in
 * select/kernels.def's order, and the reference column they are held to. Static, in the test
 * that includes it; it names every kernel, so it links with a core that has every op.
 *
 *   mt_kernel_columns[0 .. MT_KERNEL_COLUMNS)   on x86-64 the avx512, avx2 and portable
 *                                                columns (x86_level: the level each needs in
 *                                                force); elsewhere this target's one column
 *   mt_kernel_reference                          every row's _ref
 * (The struct, mt_kernel_table, is select/kernels.h's.)
 */
#ifndef MT_SELECT_TABLES_H
#define MT_SELECT_TABLES_H

#include "select/kernels.h"

#define MT_KERNEL_STR_(x) #x
#define MT_KERNEL_STR(x) MT_KERNEL_STR_(x)
/* a column's initializer: every row's kernel of the column that `pick` reads, and its name */
#define MT_KERNEL_VOID(slot, base, params, args, columns)                                                   \
    MT_KERNEL_CELL(MT_TABLE_PICK, base, columns), MT_KERNEL_STR(MT_KERNEL_CELL(MT_TABLE_PICK, base, columns)),
#define MT_KERNEL_INT MT_KERNEL_VOID

#if MT_X86_KERNELS
#define MT_TABLE_PICK MT_PICK_AVX512
static const mt_kernel_table mt_kernel_column_avx512 = {"avx512", MT_X86_AVX512,
#include "select/kernels.def"
};
#undef MT_TABLE_PICK
#define MT_TABLE_PICK MT_PICK_AVX2
static const mt_kernel_table mt_kernel_column_avx2 = {"avx2", MT_X86_AVX2,
#include "select/kernels.def"
};
#undef MT_TABLE_PICK
#define MT_TABLE_PICK MT_PICK_PORTABLE
static const mt_kernel_table mt_kernel_column_portable = {"portable", MT_X86_PORTABLE,
#include "select/kernels.def"
};
#undef MT_TABLE_PICK
static const mt_kernel_table *const mt_kernel_columns[] = {&mt_kernel_column_avx512, &mt_kernel_column_avx2,
                                                           &mt_kernel_column_portable};
#else
#define MT_TABLE_PICK MT_KERNEL_PICK
static const mt_kernel_table mt_kernel_column_target = {MT_KERNEL_COLUMN, 0,
#include "select/kernels.def"
};
#undef MT_TABLE_PICK
static const mt_kernel_table *const mt_kernel_columns[] = {&mt_kernel_column_target};
#endif
#define MT_KERNEL_COLUMNS (sizeof mt_kernel_columns / sizeof mt_kernel_columns[0])
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT

#define MT_KERNEL_VOID(slot, base, params, args, columns) base##_ref, #base "_ref",
#define MT_KERNEL_INT MT_KERNEL_VOID
static const mt_kernel_table mt_kernel_reference = {"ref", 0,
#include "select/kernels.def"
};
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT

#endif /* MT_SELECT_TABLES_H */
