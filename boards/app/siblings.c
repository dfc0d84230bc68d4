/*
 * The device's sibling test: this core's column of the kernel table (micro_core/src/select/:
 * Helium on a Cortex-M55, the portable kernels with the FPU's assembly on the M4F, M7 and M33,
 * the reference with the int8 siblings on the M3) walked row by row, each kernel that is not
 * the reference beside it on data with and without subnormals and NaNs (siblings.h: the cases
 * are the host's too). Prints the column, a line a kernel with its counts, every failure, and
 * last "siblings: N passed, M failed"; exits with M != 0. tests/boards/test_board_siblings.py
 * checks the kernels against the column and the count against the cases'.
 */
#include <stdint.h>

#include "mt_board.h"
#include "select/tables.h"
#include "siblings.h"

static void put_text(const char *s)
{
    while (*s) mt_board_putc(*s++);
}

static void put_u32(uint32_t v)
{
    char text[11];
    int n = 0;
    do text[n++] = (char)('0' + v % 10u), v /= 10u;
    while (v);
    while (n) mt_board_putc(text[--n]);
}

static void failure(const char *column, const char *kernel, const char *what)
{
    (void)column;
    put_text("FAILED: "), put_text(kernel), put_text(": "), put_text(what), mt_board_putc('\n');
}

static void row(const char *column, const char *kernel, unsigned passed, unsigned failed)
{
    (void)column;
    put_text(kernel), put_text(": "), put_u32(passed), put_text(" passed, "), put_u32(failed), put_text(" failed\n");
}

int main(void)
{
    static const mt_sib_reporter report = {failure, row};
    unsigned passed = 0, failed = 0;
    mt_board_init();
    put_text("column "), put_text(mt_kernel_columns[0]->column), mt_board_putc('\n');
    mt_sib_walk(mt_kernel_columns[0], NULL, &report, &passed, &failed);
    put_text("siblings: "), put_u32(passed), put_text(" passed, "), put_u32(failed), put_text(" failed\n");
    mt_board_exit(failed ? 1 : 0);
}
