/*
 * The sibling tests' walk over a column of the kernel table (siblings.h): the rows whose kernel
 * is not the reference, each row's cases, their counts. Shared by the device's sibling firmware
 * (siblings.c) and the host's tests; it holds the table as data (select/tables.h), so it links
 * with a core that has every op and keeps the reference kernels.
 */
#include <string.h>

#include "select/tables.h"
#include "siblings.h"

static uint32_t rng = 12345u;
static unsigned passed_now, failed_now;
static const mt_sib_reporter *reporter;
static const char *column_now, *kernel_now;

float mt_sib_uniform(float scale)
{
    rng = rng * 1664525u + 1013904223u;
    return ((float)(rng >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
}

void mt_sib_fill(float *v, size_t n, float scale)
{
    for (size_t i = 0; i < n; ++i) v[i] = mt_sib_uniform(scale);
}

int mt_sib_same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

void mt_sib_check(int ok, const char *what)
{
    if (ok) {
        ++passed_now;
        return;
    }
    ++failed_now;
    if (reporter && reporter->failure) reporter->failure(column_now, kernel_now, what);
}

/* A row's slot name contains `only` (every row when only is NULL). */
static int wanted(const char *slot, const char *only)
{
    return only == NULL || strstr(slot, only) != NULL;
}

void mt_sib_walk(const mt_kernel_table *column, const char *only, const mt_sib_reporter *report,
                 unsigned *passed, unsigned *failed)
{
    reporter = report, column_now = column->column;
#define MT_KERNEL_ROW(slot)                                                                             \
    if (column->slot != mt_kernel_reference.slot && wanted(#slot, only)) {                             \
        passed_now = failed_now = 0, kernel_now = column->slot##_name;                                 \
        mt_sib_case_##slot(column);                                                                     \
        if (report && report->row) report->row(column_now, kernel_now, passed_now, failed_now);        \
        *passed += passed_now, *failed += failed_now;                                                   \
    }
#define MT_KERNEL_VOID(slot, base, params, args, columns) MT_KERNEL_ROW(slot)
#define MT_KERNEL_INT(slot, base, params, args, columns) MT_KERNEL_ROW(slot)
#include "select/kernels.def"
#undef MT_KERNEL_VOID
#undef MT_KERNEL_INT
#undef MT_KERNEL_ROW
    reporter = NULL;
}
