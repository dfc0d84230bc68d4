/*
 * The sibling tests' harness (boards/app/siblings_*.c): every kernel of a column of the kernel
 * table (micro_core/src/select/kernels.def: a row a slot, a column a target) beside its row's
 * reference, on data with and without the values that optimized kernels get wrong
 * (subnormals, which Helium flushes; NaNs of either sign and payload, which it makes the default
 * NaN; signed zeros, infinities), every output bit equal. The device runs it on every board
 * (siblings.c, tests/boards/test_board_siblings.py), the host on every column it has
 * (tests/core/test_kernel_siblings.c, test_int8_siblings.c).
 *
 * mt_sib_walk runs, for each row whose kernel in the column is not the reference, the row's
 * cases, mt_sib_case_<slot>(column): one function a row, declared here from kernels.def, so a
 * row without its cases does not link. A case compares column->slot with the row's _ref
 * through mt_sib_check.
 */
#ifndef MT_BOARD_SIBLINGS_H
#define MT_BOARD_SIBLINGS_H

#include <stddef.h>
#include <stdint.h>

#include "select/kernels.h"

/* one comparison: counts a pass, or a failure that the walk reports (what: the case) */
void mt_sib_check(int ok, const char *what);
/* uniform in [-scale, scale), from the harness's own generator (the same data on every target) */
float mt_sib_uniform(float scale);
/* n values of mt_sib_uniform(scale) */
void mt_sib_fill(float *v, size_t n, float scale);
/* every bit of the n floats equal */
int mt_sib_same(const float *a, const float *b, size_t n);

/* What the walk tells its caller: a failure (with the column, the kernel and the case), and
 * each row it ran with its counts. */
typedef struct mt_sib_reporter {
    void (*failure)(const char *column, const char *kernel, const char *what);
    void (*row)(const char *column, const char *kernel, unsigned passed, unsigned failed);
} mt_sib_reporter;

/* Run the cases of the rows of `column` whose kernel is not the reference and whose slot name
 * contains `only` (NULL: every row); adds the checks to *passed and *failed. */
void mt_sib_walk(const mt_kernel_table *column, const char *only, const mt_sib_reporter *report,
                 unsigned *passed, unsigned *failed);

/* The rows' cases (siblings_dense.c, siblings_spatial.c, siblings_elementwise.c,
 * siblings_s8.c) */
#define MT_KERNEL_VOID(slot, base, params, args, columns) void mt_sib_case_##slot(const mt_kernel_table *k);
#define MT_KERNEL_INT(slot, base, params, args, columns) void mt_sib_case_##slot(const mt_kernel_table *k);
#include "select/kernels.def"
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT

#endif /* MT_BOARD_SIBLINGS_H */
