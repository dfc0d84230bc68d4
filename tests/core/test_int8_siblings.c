/*
 * The int8 siblings (ops/fast/conv_s8_fast.c, dense_s8_fast.c) compute the reference's bytes
 * on the host: the cases of boards/app/siblings_s8.c, which the device's sibling test runs on
 * every board. On x86-64 the cases run at every level the CPU has: the portable products,
 * then the AVX2 ones of ops/x86/s8_x86.c (AVX-512 CPUs take those too).
 */
#include "kernel_levels_util.h"
#include "mt_test.h"
#include "siblings_s8.h"

static void check(int ok, const char *what)
{
    mt_test_record_(ok, "siblings_s8.c", 0, what);
}

int main(void)
{
    for (int level = 0; level < MT_KERNEL_LEVELS; ++level) {
        if (!use_kernel_level(level)) continue;
        const unsigned checks = s8_sibling_cases(check);
        CHECK_EQ_INT(checks, 132); /* every case ran (the board test expects as many) */
    }
    return MT_TEST_END();
}
