/*
 * The int8 pools (ops/pooling_s8.c): MEAN's reference (mt_op_mean_s8_forward_ref) against
 * TFLite's formula, rounding half away from zero. Its siblings: the kernel table's int8 cases
 * (boards/app/siblings_s8.c, run by tests/core/test_int8_siblings.c); LiteRT's own kernels:
 * tests/ops/test_pooling_s8.py.
 */
#include <stdint.h>

#include "mt_test.h"
#include "ops/quant.h"
#include "select/kernels.h"

static void test_mean(void)
{
    /* 4 positions, 2 channels; sx / sy = 1 (multiplier 2^30, shift 1), zero points 0 and 0 */
    const int8_t x[8] = {1, -1, 2, -2, 3, -3, 5, -4};
    int8_t y[2];
    mt_op_mean_s8_forward_ref(x, y, 1, 4, 2, 0u, 1 << 30, 1);
    CHECK_EQ_INT(y[0], 3);  /* 11 / 4 = 2.75 */
    CHECK_EQ_INT(y[1], -3); /* -10 / 4 = -2.5: away from zero */

    /* two samples of 7 positions and 11 channels (two blocks of four and three alone) against
     * TFLite's formula written out a channel at a time, on random bytes and zero points */
    enum { B = 2, P = 7, C = 11 };
    int8_t xs[B * P * C], ys[B * C];
    uint32_t r = 77u;
    for (size_t i = 0; i < sizeof xs; ++i) r = r * 1664525u + 1013904223u, xs[i] = (int8_t)(r >> 24);
    const int32_t zx = -5, zy = 9, multiplier = 1518500250, shift = -1;
    mt_op_mean_s8_forward_ref(xs, ys, B, P, C, (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8, multiplier, shift);
    const int32_t k = 2, m = (int32_t)(((int64_t)multiplier << k) / P); /* floor(log2(7)) = 2 */
    int same = 1;
    for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c) {
            int32_t sum = 0;
            for (int p = 0; p < P; ++p) sum += xs[(b * P + p) * C + c];
            same &= ys[b * C + c] == mt_q_clamp(mt_q_multiply(sum - zx * P, m, shift - k) + zy, -128, 127);
        }
    CHECK(same);
}

int main(void)
{
    test_mean();
    return MT_TEST_END();
}
