/*
 * The int8 pools (ops/pooling_s8.c): MAX_POOL2D_S8 against the window's maximum and
 * AVERAGE_POOL2D_S8 against the in-bounds mean rounded half away from zero (exact integer
 * arithmetic), VALID and SAME; MEAN's reference (mt_op_mean_s8_forward_ref) against TFLite's
 * formula; their backward (ops/quant_grad.h): the max pool's and average pool's as the float
 * pools' bit for bit, Mean's mask against the real mean in double, and Mean's input gradient
 * as a broadcast into a pointwise Conv2D against the whole buffer's path. Their siblings: the kernel
 * table's int8 cases (boards/app/siblings_s8.c, run by tests/core/test_int8_siblings.c);
 * LiteRT's own kernels: tests/ops/test_pooling_s8.py.
 */
#include <stdint.h>
#include <stdlib.h>

#include "int8_gradcheck_util.h"
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

/* ---- the backward (ops/quant_grad.h): the float pools' ------------------------------------ */

/* MAX_POOL2D_S8 routes dy to each window's first maximum as the float max pool does on the
 * dequantized values (the same order: a positive scale keeps it), bit for bit, VALID and SAME;
 * AVERAGE_POOL2D_S8, through its adapter, as the float average pool */
static void check_pools_backward(void)
{
    static int8_t x[MAXE];
    static float xf[MAXE], dy[MAXE], dx[MAXE], dx_f32[MAXE];
    mt_spatial g;
    for (int same = 0; same <= 1; ++same) {
        if (!make_geom(&g, 5, 6, 3, 3, 3, 2, 2, 2, same, MT_FUSED_NONE)) return;
        const uint32_t B = 2, I = B * g.H * g.W * g.C, N = B * g.OH * g.OW * g.C;
        fill_s8(x, (int)I, -128, -120); /* narrow: ties inside windows, routed to the first */
        for (uint32_t i = 0; i < I; ++i) xf[i] = 0.25f * (float)((int32_t)x[i] + 3); /* dequantized: same order */
        fill(dy, (int)N, -1.0f, 1.0f);
        fill(dx, (int)I, -0.5f, 0.5f);
        memcpy(dx_f32, dx, I * sizeof(float));
        static float y_f32[MAXE];
        mt_op_max_pool2d_f32_forward_ref(xf, y_f32, B, &g);
        mt_op_max_pool2d_s8_backward(x, dy, dx, B, &g);
        mt_op_max_pool2d_f32_backward_ref(xf, y_f32, dy, dx_f32, B, &g);
        int differ = 0;
        for (uint32_t i = 0; i < I; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
        CHECK_EQ_INT(differ, 0); /* the float max pool's first maximum, bit for bit */
    }
    /* average: the float pool's backward (an int8 average never leaves int8: nothing is cut),
     * reached through the op's adapter */
    static mt_tensor_rt t[2];
    mt_op_desc op;
    memset(&op, 0, sizeof op);
    memset(t, 0, sizeof t);
    op.type = MT_OP_AVERAGE_POOL2D_S8, op.num_inputs = 1, op.num_outputs = 1, op.inputs[0] = 0, op.outputs[0] = 1;
    op.params[0] = 3u | 3u << 16, op.params[1] = 2u | 2u << 16, op.params[2] = MT_PADDING_SAME;
    t[0].dims[0] = 5, t[0].dims[1] = 6, t[0].dims[2] = 3, t[0].count = 90;
    t[1].dims[0] = 3, t[1].dims[1] = 3, t[1].dims[2] = 3, t[1].count = 27;
    t[0].data = (const float *)(const void *)x, t[0].grad = dx;
    t[1].grad = dy;
    if (!make_geom(&g, 5, 6, 3, 3, 3, 3, 2, 2, 1, MT_FUSED_NONE)) return;
    fill(dy, 2 * 27, -1.0f, 1.0f);
    fill(dx, 2 * 90, -0.5f, 0.5f);
    memcpy(dx_f32, dx, 2 * 90 * sizeof(float));
    mt_op_kernel_for(MT_OP_AVERAGE_POOL2D_S8)->backward(&op, t, 2, NULL);
    mt_op_average_pool2d_f32_backward(dy, dx_f32, 2, &g);
    int differ = 0;
    for (uint32_t i = 0; i < 180; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
    CHECK_EQ_INT(differ, 0);
}

/* MEAN_S8: the mask against the real mean computed in double away from the bounds, then the
 * float global average pool's backward on the masked dy, bit for bit */
static void check_mean_backward(void)
{
    enum { B = 2, P = 4, C = 16 };
    static int8_t x[B * P * C];
    static float dy[B * C], r[B * C], dx[B * P * C], dx_f32[B * P * C];
    const int32_t zx = 6, zy = -3;
    const double ratio = 6.0; /* sx / sy: many means saturate */
    int32_t multiplier, shift;
    quantize_multiplier(ratio, &multiplier, &shift);
    fill_s8(x, B * P * C, -128, 127);
    fill(r, B * C, -1.0f, 1.0f);
    memcpy(dy, r, sizeof dy);
    memset(dx, 0, sizeof dx);
    memset(dx_f32, 0, sizeof dx_f32);
    const uint32_t zero_points = (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8;
    mt_op_mean_s8_backward(x, dy, dx, B, P, C, zero_points, multiplier, shift, 0);
    int checked = 0, cut = 0, wrong = 0;
    for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c) {
            double sum = 0.0;
            for (int p = 0; p < P; ++p) sum += x[(b * P + p) * C + c] - zx;
            const double v = sum / P * ratio + zy; /* the real value before rounding and clamp */
            if ((v > -129.5 && v < -126.5) || (v > 125.5 && v < 128.5)) continue; /* too near a bound */
            const int passes = v >= -126.5 && v <= 125.5;
            ++checked, cut += !passes;
            wrong += dy[b * C + c] != (passes ? r[b * C + c] : 0.0f);
        }
    printf("  mean_s8: %d of %d checked away from the bounds, %d cut\n", checked, B * C, cut);
    CHECK(checked >= B * C / 2 && cut > 0 && cut < checked);
    CHECK_EQ_INT(wrong, 0);
    mt_op_global_average_pool_f32_backward(dy, dx_f32, B, P, C); /* the float pool's, on the masked dy */
    int differ = 0;
    for (int i = 0; i < B * P * C; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
    CHECK_EQ_INT(differ, 0);
}

/* MEAN_S8 after a pointwise CONV2D_S8 (MobileNetV2's Conv_1 and its pool) whose input gradient
 * is planned as a broadcast (plan_lifetimes.c, mt_plan_grad_broadcast): the Mean writes dx [B, C]
 * once for its P pixels, and the convolution's backward expands it where it reads it. Against
 * the whole buffer's path (the Mean's dx [B, P, C], the convolution's mt_op_conv2d_s8_backward),
 * bit for bit: the broadcast equals every pixel's element, and the convolution's dx and db, each
 * added to nonzero values, are the same bits. P = 12, no power of two, so a planted fault of
 * the scale (dv · (1/P) instead of dv / P) changes some of them; B·P = 24 pixels make the
 * backward's blocks of 4 pixels cross samples. */
static void check_mean_broadcast(void)
{
    enum { B = 2, H = 3, W = 4, P = H * W, C = 8, OC = 40 };
    static layer l;
    static int8_t y[B * P * OC];
    static float dm[B * OC], dm_b[B * OC], dy[B * P * OC], g[B * OC], fault[B * OC];
    static float dx[B * P * C], dx_b[B * P * C], dx_f[B * P * C], db[OC], db_b[OC], db_f[OC];
    static float work[(MT_BROADCAST_PIXELS + 1) * OC]; /* mt_q_broadcast_work_floats(OC), exactly */
    l.B = B;
    CHECK_EQ_INT((int)mt_q_broadcast_work_floats(OC), (MT_BROADCAST_PIXELS + 1) * OC);
    if (!make_geom(&l.g, H, W, C, OC, 1, 1, 1, 1, 0, MT_FUSED_NONE)) return;
    make_layer(&l, LAYER_CONV2D);
    forward_s8(&l, y, LO, HI); /* its clamp cuts some outputs (the mask) */
    const uint32_t packed = packed_of(l.zx, l.zy, LO, HI);
    int32_t multiplier, shift;
    quantize_multiplier(3.0, &multiplier, &shift); /* sy / s_mean: some means saturate too */
    const uint32_t zero_points = (uint32_t)(uint8_t)l.zy | (uint32_t)(uint8_t)(-2) << 8;
    fill(dm, B * OC, -1.0f, 1.0f);
    memcpy(dm_b, dm, sizeof dm);
    fill(dx, B * P * C, -0.5f, 0.5f);
    fill(db, OC, -0.5f, 0.5f);
    memcpy(dx_b, dx, sizeof dx), memcpy(dx_f, dx, sizeof dx);
    memcpy(db_b, db, sizeof db), memcpy(db_f, db, sizeof db);
    /* the whole buffer, zeroed before the Mean (its first writer), then the convolution */
    memset(dy, 0, sizeof dy);
    mt_op_mean_s8_backward(y, dm, dy, B, P, OC, zero_points, multiplier, shift, 0);
    memset(g, 0, sizeof g);
    mt_op_mean_s8_backward(y, dm_b, g, B, P, OC, zero_points, multiplier, shift, 1);
    int spread = 0;
    for (int i = 0; i < B * P * OC; ++i) spread += memcmp(&dy[i], &g[(i / (P * OC)) * OC + i % OC], sizeof(float)) != 0;
    CHECK_EQ_INT(spread, 0); /* each pixel's element of the whole buffer is the broadcast's */
    for (int i = 0; i < B * OC; ++i) fault[i] = dm_b[i] * (1.0f / (float)P); /* planted: another rounding */
    const mt_q_grads d = {dx, NULL, db, l.sx}, d_b = {dx_b, NULL, db_b, l.sx}, d_f = {dx_f, NULL, db_f, l.sx};
    mt_op_conv2d_s8_backward(l.x, l.w, l.sw, l.bias, l.rq, dy, &d, B, &l.g, packed);
    mt_op_conv2d_s8_broadcast_backward(l.x, l.w, l.sw, l.bias, l.rq, g, &d_b, B, P, C, OC, packed, work);
    mt_op_conv2d_s8_broadcast_backward(l.x, l.w, l.sw, l.bias, l.rq, fault, &d_f, B, P, C, OC, packed, work);
    int cut = 0, differ = 0, planted = 0;
    for (int i = 0; i < B * P * OC; ++i) cut += dy[i] == 0.0f && g[(i / (P * OC)) * OC + i % OC] != 0.0f;
    for (int i = 0; i < B * P * C; ++i) {
        differ += memcmp(&dx[i], &dx_b[i], sizeof(float)) != 0;
        planted += memcmp(&dx[i], &dx_f[i], sizeof(float)) != 0;
    }
    for (int i = 0; i < OC; ++i) {
        differ += memcmp(&db[i], &db_b[i], sizeof(float)) != 0;
        planted += memcmp(&db[i], &db_f[i], sizeof(float)) != 0;
    }
    printf("  mean_s8 broadcast into conv2d_s8: %d of %d outputs masked, %d of dx and db differ; "
           "planted 1/P scale: %d differ\n", cut, B * P * OC, differ, planted);
    CHECK(cut > 0);
    CHECK_EQ_INT(differ, 0);
    CHECK(planted > 0);
}

int main(void)
{
    test_mean();
    mt_test_seed(20240613u);
    test_pools_s8(2, 6, 6, 3, 2, 2, 0);
    test_pools_s8(2, 7, 5, 4, 3, 2, 1); /* SAME: edge windows count fewer elements */
    test_pools_s8(1, 5, 5, 2, 3, 1, 1);
    /* where the generator stood when one program ran every int8 op's backward: each case
     * draws the numbers it always did */
    mt_test_seed(1725254612u);
    check_pools_backward();
    check_mean_backward();
    check_mean_broadcast();
    return MT_TEST_END();
}
