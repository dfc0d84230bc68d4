/*
 * The int8 pools (ops/pooling_s8.c): MAX_POOL2D_S8 against the window's maximum and
 * AVERAGE_POOL2D_S8 against the in-bounds mean rounded half away from zero (exact integer
 * arithmetic), VALID and SAME; MEAN's reference (mt_op_mean_s8_forward_ref) against TFLite's
 * formula. Its siblings: the kernel table's int8 cases
 * (boards/app/siblings_s8.c, run by tests/core/test_int8_siblings.c); LiteRT's own kernels:
 * tests/ops/test_pooling_s8.py.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gradcheck_util.h"
#include "ops/quant.h"
#include "select/kernels.h"

/* The windows of g over x, each in-bounds element once: the maximum, and the sum's mean with
 * ties away from zero, round(s / n) = sign(s) · floor((2|s| + n) / 2n). */
static void test_pools_s8(int B, int H, int W, int C, int K, int S, int same)
{
    mt_spatial g;
    if (!make_geom(&g, H, W, C, C, K, K, S, S, same, 0)) return;
    const int nx = B * H * W * C, ny = B * (int)(g.OH * g.OW) * C;
    int8_t *x = malloc((size_t)nx), *ymax = malloc((size_t)ny), *yavg = malloc((size_t)ny);
    for (int i = 0; i < nx; i++) x[i] = (int8_t)(mt_test_rand_u32() >> 24);
    mt_op_max_pool2d_s8_forward(x, ymax, (uint32_t)B, &g);
    mt_op_average_pool2d_s8_forward(x, yavg, (uint32_t)B, &g);
    int bad_max = 0, bad_avg = 0, ties = 0;
    for (int b = 0, k = 0; b < B; b++)
        for (int oh = 0; oh < (int)g.OH; oh++)
            for (int ow = 0; ow < (int)g.OW; ow++)
                for (int c = 0; c < C; c++, k++) {
                    int best = -129, sum = 0, n = 0;
                    for (int ih = oh * S - (int)g.PT; ih < oh * S - (int)g.PT + K; ih++)
                        for (int iw = ow * S - (int)g.PL; iw < ow * S - (int)g.PL + K; iw++) {
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            const int v = x[((b * H + ih) * W + iw) * C + c];
                            best = v > best ? v : best, sum += v, n++;
                        }
                    const int mag = (2 * abs(sum) + n) / (2 * n);
                    ties += 2 * (abs(sum) % n) == n;
                    bad_max += ymax[k] != best;
                    bad_avg += yavg[k] != (sum < 0 ? -mag : mag);
                }
    CHECK_EQ_INT(bad_max, 0);
    CHECK_EQ_INT(bad_avg, 0);
    CHECK(K == 1 || ties > 0); /* sums at x.5 of their count: the rounding is exercised */
    free(x), free(ymax), free(yavg);
}

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
    mt_test_seed(20240613u);
    test_pools_s8(2, 6, 6, 3, 2, 2, 0);
    test_pools_s8(2, 7, 5, 4, 3, 2, 1); /* SAME: edge windows count fewer elements */
    test_pools_s8(1, 5, 5, 2, 3, 1, 1);
    return MT_TEST_END();
}
