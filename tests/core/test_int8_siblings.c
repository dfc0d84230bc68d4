/*
 * The kernel table's int8 rows on the host (the portable siblings, ops/portable/, in every
 * column): the device's cases (boards/app/siblings_s8.c and siblings_s8_backward.c, which every
 * board runs too) walked on
 * each column this machine has: on x86-64 the products take AVX2 (ops/x86/s8_avx2.c) in the
 * AVX-512 and AVX2 columns, C in the portable one. The number of checks is exact, so a case that
 * stops running fails.
 */
#include <stdio.h>

#include "kernel_levels_util.h"
#include "mt_test.h"
#include "select/tables.h"
#include "siblings.h"

#define S8_CHECKS 415u /* the int8 rows' checks in a column (tests/boards/test_board_siblings.py too) */

static void report_failure(const char *column, const char *kernel, const char *what)
{
    printf("FAILED: column %s, %s: %s\n", column, kernel, what);
}

int main(void)
{
    static const mt_sib_reporter report = {report_failure, NULL};
    for (size_t c = 0; c < MT_KERNEL_COLUMNS; ++c) {
        const mt_kernel_table *k = mt_kernel_columns[c];
        if (!use_kernel_level(k->x86_level)) continue;
        unsigned passed = 0, failed = 0;
        mt_sib_walk(k, "_s8_", &report, &passed, &failed);
        printf("test_int8_siblings: column %s: %u passed, %u failed\n", k->column, passed, failed);
        CHECK_EQ_INT(failed, 0);
        CHECK_EQ_INT(passed, S8_CHECKS);
    }
    use_cpu_kernel_level();
    return MT_TEST_END();
}
