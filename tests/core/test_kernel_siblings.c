/*
 * The kernel table's float rows on the host: every column this machine runs (x86-64: AVX-512
 * and AVX2 where the CPU has them, and the portable column; elsewhere its one column), each
 * kernel that is not its row's reference beside it, every output bit equal.
 *
 * First the sibling cases the device runs (boards/app/siblings_*.c, walked by mt_sib_walk: a
 * row added to select/kernels.def is tested here and on every board without a list to edit),
 * whose number of checks per column is exact, so a case that stops running fails; then the
 * host's own sweeps: random shapes and data, gradients that start non-zero (backward
 * accumulates), NULL gradients skipped alike. The x86 columns' own edges (cache-line offsets,
 * canaries, the guards' shortcuts): test_kernel_siblings_x86.c; the int8 rows:
 * test_int8_siblings.c.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_levels_util.h"
#include "microtrain.h"
#include "mt_math.h"
#include "mt_test.h"
#include "ops/kernel.h"
#include "ops/ops.h"
#include "ops/spatial.h"
#include "select/tables.h"
#include "siblings.h"
#include "siblings_util.h"

/* The checks of the device's cases a column's float rows make (every row whose kernel is not
 * the reference): exact, so a case lost or skipped fails. A new case changes them here and in
 * tests/boards/test_board_siblings.py. */
static const struct {
    const char *column;
    unsigned checks;
} expected[] = {{"avx512", 2067}, {"avx2", 2067}, {"portable", 1397}};

static void report_failure(const char *column, const char *kernel, const char *what)
{
    printf("FAILED: column %s, %s: %s\n", column, kernel, what);
}

static void report_row(const char *column, const char *kernel, unsigned passed, unsigned failed)
{
    printf("  %s %s: %u passed, %u failed\n", column, kernel, passed, failed);
}

/* dense backward against the reference (U not a multiple of 4 too), all gradients and some */
static void check_dense_backward(const mt_kernel_table *k, uint32_t B, uint32_t I, uint32_t U, unsigned seed)
{
    mt_test_seed(seed);
    float *x = malloc(sizeof(float) * B * I), *w = malloc(sizeof(float) * U * I);
    float *dy = malloc(sizeof(float) * B * U);
    float *dx[2], *dw[2], *db[2];
    for (int j = 0; j < 2; j++) {
        dx[j] = malloc(sizeof(float) * B * I), dw[j] = malloc(sizeof(float) * U * I);
        db[j] = malloc(sizeof(float) * U);
    }
    fill(x, (size_t)B * I, 2.0f), fill(w, (size_t)U * I, 1.0f), fill(dy, (size_t)B * U, 1.5f);
    fill(dx[0], (size_t)B * I, 0.5f), fill(dw[0], (size_t)U * I, 0.5f), fill(db[0], U, 0.5f);
    memcpy(dx[1], dx[0], sizeof(float) * B * I), memcpy(dw[1], dw[0], sizeof(float) * U * I);
    memcpy(db[1], db[0], sizeof(float) * U);

    mt_op_dense_f32_backward_ref(x, w, dy, dx[0], dw[0], db[0], B, I, U, 0);
    k->dense_f32_backward(x, w, dy, dx[1], dw[1], db[1], B, I, U, 0);
    CHECK(same_bits(dx[0], dx[1], (size_t)B * I));
    CHECK(same_bits(dw[0], dw[1], (size_t)U * I));
    CHECK(same_bits(db[0], db[1], U));

    /* only some gradients wanted: the others stay untouched in both */
    mt_op_dense_f32_backward_ref(x, w, dy, NULL, dw[0], NULL, B, I, U, 0);
    k->dense_f32_backward(x, w, dy, NULL, dw[1], NULL, B, I, U, 0);
    mt_op_dense_f32_backward_ref(x, w, dy, dx[0], NULL, NULL, B, I, U, 0);
    k->dense_f32_backward(x, w, dy, dx[1], NULL, NULL, B, I, U, 0);
    CHECK(same_bits(dx[0], dx[1], (size_t)B * I));
    CHECK(same_bits(dw[0], dw[1], (size_t)U * I));
    CHECK(same_bits(db[0], db[1], U));

    for (int j = 0; j < 2; j++) free(dx[j]), free(dw[j]), free(db[j]);
    free(x), free(w), free(dy);
}

/* One non-finite value a row of x (v[0..n-1]), the one at `which` mod their count: the others
 * become 1. Every term x·0 of a sum then meets at most one kind of NaN, where a row with a NaN
 * and an infinity (0·inf: the CPU's default NaN) made two kinds meet in one sum, and which one
 * comes out depends on the compiled order of the adds (README), GCC's and clang's differ. */
static void one_non_finite(float *v, uint32_t n, uint32_t which)
{
    uint32_t count = 0, seen = 0;
    for (uint32_t i = 0; i < n; ++i) count += !mt_isfinitef(v[i]);
    for (uint32_t i = 0; i < n; ++i)
        if (!mt_isfinitef(v[i]) && seen++ != which % count) v[i] = 1.0f;
}

/* dense forward with a fused activation against the reference, random data with edge values
 * spliced in (odd seeds): W picks x[b, u mod I] exactly (other terms are 0·x), so y meets 6
 * exactly, its neighbours, NaN of either sign, infinities and FLT_MAX (and NaN where an
 * infinity meets a 0 weight, one non-finite x a row, each in turn across rows); -0 in x and in
 * the bias (a sum from 0 is never -0) */
static void check_dense_forward(const mt_kernel_table *k, uint32_t B, uint32_t I, uint32_t U, uint32_t act,
                                int with_bias, unsigned seed)
{
    static const float edges[] = {6.0f, -6.0f, 6.0000005f, 5.9999995f, -0.0f, 0.0f, 7.0f, -1.0f,
                                  NAN, -NAN, 1.0f, 0.5f, 3.0f, -3.0f, INFINITY, -INFINITY,
                                  FLT_MAX, -FLT_MAX, 1e-45f, -1e-45f, 1e-39f, -2.0f, 5.0f, 6.5f};
    mt_test_seed(seed);
    float *x = malloc(sizeof(float) * B * I), *w = malloc(sizeof(float) * U * I);
    float *bias = malloc(sizeof(float) * U), *y0 = malloc(sizeof(float) * B * U);
    float *y1 = malloc(sizeof(float) * B * U);
    fill(x, (size_t)B * I, 8.0f), fill(w, (size_t)U * I, 1.0f), fill(bias, U, 0.5f);
    for (size_t j = 0; j < (size_t)B * I && (seed & 1u); ++j) x[j] = edges[j % (sizeof edges / sizeof edges[0])];
    for (uint32_t b = 0; b < B && (seed & 1u); ++b) one_non_finite(x + (size_t)b * I, I, b / 3u);
    for (uint32_t u = 0; u < U && (seed & 1u); ++u)
        for (uint32_t i = 0; i < I; ++i) w[(size_t)u * I + i] = i == u % I ? 1.0f : 0.0f;
    if (with_bias && U > 1) bias[0] = -0.0f, bias[1] = 0.0f;
    mt_op_dense_f32_forward_ref(x, w, with_bias ? bias : NULL, y0, B, I, U, act);
    k->dense_f32_forward(x, w, with_bias ? bias : NULL, y1, B, I, U, act);
    CHECK(same_bits(y0, y1, (size_t)B * U));
    free(x), free(w), free(bias), free(y0), free(y1);
}

/* geometry of a convolution or pool from its sizes (TFLite padding) */
static mt_spatial geometry(uint32_t H, uint32_t W, uint32_t C, uint32_t OC, uint32_t K, uint32_t S,
                           uint32_t padding, uint32_t activation)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = H, g.W = W, g.C = C, g.OC = OC, g.KH = K, g.KW = K > 1 ? K - (K & 1u ? 0u : 1u) : 1u;
    g.SH = S, g.SW = S == 1 ? 1 : S - 1, g.activation = activation;
    mt_spatial_axis(H, g.KH, g.SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(W, g.KW, g.SW, padding, &g.OW, &g.PL);
    return g;
}

enum { CONV, DEPTHWISE, MAXPOOL };

/* a spatial op's kernels in the column against its reference, forward and backward */
static void check_spatial(const mt_kernel_table *k, int kind, const mt_spatial *g, uint32_t B, unsigned seed,
                          int with_bias)
{
    mt_test_seed(seed);
    const uint32_t C = g->C, OC = kind == CONV ? g->OC : C;
    const size_t nx = (size_t)B * g->H * g->W * C, ny = (size_t)B * g->OH * g->OW * OC;
    const size_t nw = kind == CONV ? (size_t)OC * g->KH * g->KW * C : (size_t)g->KH * g->KW * C;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw), *bias = malloc(sizeof(float) * OC);
    float *y0 = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * ny), *dy0 = malloc(sizeof(float) * ny);
    fill(x, nx, 2.0f), fill(w, nw, 1.0f), fill(bias, OC, 0.5f), fill(dy0, ny, 1.5f);
    if (kind == MAXPOOL) /* ties and NaNs: the routing rule must match too */
        for (size_t i = 0; i < nx; i += 7) x[i] = i % 21 == 0 ? NAN : 1.0f;
    const float *b = with_bias ? bias : NULL;
    if (kind == CONV) {
        mt_op_conv2d_f32_forward_ref(x, w, b, y0, B, g);
        k->conv2d_f32_forward(x, w, b, y1, B, g);
    } else if (kind == DEPTHWISE) {
        mt_op_depthwise_conv2d_f32_forward_ref(x, w, b, y0, B, g);
        k->depthwise_conv2d_f32_forward(x, w, b, y1, B, g);
    } else {
        mt_op_max_pool2d_f32_forward_ref(x, y0, B, g);
        k->max_pool2d_f32_forward(x, y1, B, g);
    }
    CHECK(same_bits(y0, y1, ny));
    float *dx0 = malloc(sizeof(float) * nx), *dw0 = malloc(sizeof(float) * nw), *db0 = malloc(sizeof(float) * OC);
    fill(dx0, nx, 0.5f), fill(dw0, nw, 0.5f), fill(db0, OC, 0.5f);
    float *dx1 = copy_of(dx0, nx), *dw1 = copy_of(dw0, nw), *db1 = copy_of(db0, OC), *dy1 = copy_of(dy0, ny);
    if (kind == CONV) {
        mt_op_conv2d_f32_backward_ref(x, w, y0, dy0, dx0, dw0, db0, B, g);
        k->conv2d_f32_backward(x, w, y0, dy1, dx1, dw1, db1, B, g);
    } else if (kind == DEPTHWISE) {
        mt_op_depthwise_conv2d_f32_backward_ref(x, w, y0, dy0, dx0, dw0, db0, B, g);
        k->depthwise_conv2d_f32_backward(x, w, y0, dy1, dx1, dw1, db1, B, g);
    } else {
        mt_op_max_pool2d_f32_backward_ref(x, y0, dy0, dx0, B, g);
        k->max_pool2d_f32_backward(x, y0, dy1, dx1, B, g);
    }
    CHECK(same_bits(dy0, dy1, ny)); /* masked in place by the activation's derivative */
    CHECK(same_bits(dx0, dx1, nx));
    CHECK(same_bits(dw0, dw1, nw));
    CHECK(same_bits(db0, db1, OC));
    free(x), free(w), free(bias), free(y0), free(y1), free(dy0), free(dy1);
    free(dx0), free(dw0), free(db0), free(dx1), free(dw1), free(db1);
}

/* Conv2D 1 x 1 / stride 1 runs as Dense over the pixels (ops/conv2d.c): the column's Dense with
 * the activation, its activation derivative and bias gradient, then Dense's backward, have the
 * reference Conv2D's bits */
static void check_pointwise_as_dense(const mt_kernel_table *k, uint32_t B, uint32_t H, uint32_t W, uint32_t C,
                                     uint32_t OC, uint32_t act, unsigned seed)
{
    mt_test_seed(seed);
    mt_spatial g = geometry(H, W, C, OC, 1, 1, MT_PADDING_VALID, act);
    const size_t P = (size_t)B * H * W, nx = P * C, ny = P * OC, nw = (size_t)OC * C;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw), *b = malloc(sizeof(float) * OC);
    float *y0 = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * ny), *dy0 = malloc(sizeof(float) * ny);
    fill(x, nx, 2.0f), fill(w, nw, 1.0f), fill(b, OC, 0.5f), fill(dy0, ny, 1.5f);
    mt_op_conv2d_f32_forward_ref(x, w, b, y0, B, &g);
    k->dense_f32_forward(x, w, b, y1, (uint32_t)P, C, OC, act);
    CHECK(same_bits(y0, y1, ny));
    float *dx0 = malloc(sizeof(float) * nx), *dw0 = malloc(sizeof(float) * nw), *db0 = malloc(sizeof(float) * OC);
    fill(dx0, nx, 0.5f), fill(dw0, nw, 0.5f), fill(db0, OC, 0.5f);
    float *dx1 = copy_of(dx0, nx), *dw1 = copy_of(dw0, nw), *db1 = copy_of(db0, OC), *dy1 = copy_of(dy0, ny);
    mt_op_conv2d_f32_backward_ref(x, w, y0, dy0, dx0, dw0, db0, B, &g);
    k->activation_bias_f32_backward(act, y0, dy1, db1, P, OC);
    k->dense_f32_backward(x, w, dy1, dx1, dw1, NULL, (uint32_t)P, C, OC, 0);
    CHECK(same_bits(dx0, dx1, nx) && same_bits(dw0, dw1, nw) && same_bits(db0, db1, OC) && same_bits(dy0, dy1, ny));
    free(x), free(w), free(b), free(y0), free(y1), free(dy0), free(dy1);
    free(dx0), free(dw0), free(db0), free(dx1), free(dw1), free(db1);
}

static const uint32_t spatial_cases[][8] = { /* H, W, C, OC, K, S, padding, activation */
    {8, 8, 1, 8, 3, 1, MT_PADDING_SAME, MT_FUSED_RELU},   {14, 14, 8, 16, 3, 1, MT_PADDING_SAME, MT_FUSED_NONE},
    {7, 9, 3, 5, 3, 2, MT_PADDING_SAME, MT_FUSED_RELU6},  {6, 6, 20, 33, 1, 1, MT_PADDING_VALID, MT_FUSED_RELU},
    {9, 7, 17, 18, 4, 2, MT_PADDING_VALID, MT_FUSED_NONE}, {5, 5, 40, 3, 5, 1, MT_PADDING_SAME, MT_FUSED_RELU},
    {16, 16, 24, 24, 3, 2, MT_PADDING_SAME, MT_FUSED_RELU6}, {4, 4, 70, 2, 3, 1, MT_PADDING_SAME, MT_FUSED_NONE},
    /* one input channel, <= 8 output channels: the x86 two-pixels-per-vector paths */
    {28, 28, 1, 8, 3, 1, MT_PADDING_SAME, MT_FUSED_RELU}, {11, 13, 1, 5, 3, 1, MT_PADDING_VALID, MT_FUSED_RELU6},
    {9, 24, 1, 7, 4, 1, MT_PADDING_SAME, MT_FUSED_NONE},  {7, 40, 1, 8, 3, 2, MT_PADDING_SAME, MT_FUSED_RELU},
    /* 3-wide, stride 1 along the row, channels a multiple of 8: the AVX2 input gradient by kernel
     * rows (4 x 3 kernels, VALID, two blocks of 8 channels; 3 x 3 SAME on 8) */
    {9, 11, 16, 6, 4, 1, MT_PADDING_VALID, MT_FUSED_RELU}, {10, 12, 8, 3, 3, 1, MT_PADDING_SAME, MT_FUSED_NONE}};

/* square pools (geometry() makes even windows one column narrower): H, W, C, K, S, padding */
static const uint32_t pool_cases[][6] = {
    {28, 28, 8, 2, 2, MT_PADDING_VALID}, {14, 14, 16, 2, 2, MT_PADDING_VALID}, {7, 9, 20, 2, 2, MT_PADDING_SAME},
    {9, 9, 3, 2, 1, MT_PADDING_VALID},   {8, 10, 24, 3, 2, MT_PADDING_SAME},
    /* 2 x 2 at stride 2 with every window inside (pooling_portable.c's fixed taps): odd sizes under
     * VALID, even ones under SAME, channels not a multiple of 4 */
    {7, 9, 3, 2, 2, MT_PADDING_VALID},   {8, 6, 5, 2, 2, MT_PADDING_SAME}};

/* square pools with explicit pads (MT_PADDING_EXPLICIT): H, W, C, K, S, top, bottom, left, right */
static const uint32_t explicit_pool_cases[][9] = {
    {112, 10, 4, 3, 2, 1, 1, 1, 1}, /* ResNet's stem pool on an even size */
    {9, 9, 16, 3, 2, 0, 1, 0, 1},   /* ceil_mode's last window (SqueezeNet) */
    {6, 7, 5, 3, 1, 2, 0, 0, 2},    /* more padding before than after */
    {8, 8, 24, 2, 2, 0, 1, 1, 0}};  /* 2 x 2 at stride 2 with a partial window */

/* geometries drawn at random (sizes to 12, channels to 40, kernels to 5, strides to 3, both
 * paddings and activations; every third with whole 8-channel groups, every fifth with one
 * channel), each op on each: the fixed cases above choose the paths, these the edges */
static void check_spatial_sweep(const mt_kernel_table *k, unsigned seed0, int count)
{
    mt_test_seed(seed0);
    for (int t = 0; t < count; ++t) {
        const uint32_t H = 1u + mt_test_rand_u32() % 12u, W = 1u + mt_test_rand_u32() % 12u;
        uint32_t C = 1u + mt_test_rand_u32() % 40u;
        const uint32_t OC = 1u + mt_test_rand_u32() % 40u, K = 1u + mt_test_rand_u32() % 5u;
        const uint32_t S = 1u + mt_test_rand_u32() % 3u, padding = mt_test_rand_u32() % 2u;
        const uint32_t activation = mt_test_rand_u32() % 3u, seed = mt_test_rand_u32();
        if (t % 3 == 0) C = 8u * (1u + mt_test_rand_u32() % 4u);
        if (t % 5 == 0) C = 1u;
        const mt_spatial g = geometry(H, W, C, OC, K, S, padding ? MT_PADDING_SAME : MT_PADDING_VALID, activation);
        if (g.OH == 0 || g.OW == 0) continue; /* VALID with a kernel past the input */
        mt_spatial pool = g;
        pool.activation = MT_FUSED_NONE;
        const uint32_t B = 1u + seed % 3u;
        check_spatial(k, CONV, &g, B, seed, (int)(seed & 1u));
        check_spatial(k, DEPTHWISE, &g, B, seed + 1u, (int)(seed & 2u));
        check_spatial(k, MAXPOOL, &pool, B, seed + 2u, 0);
    }
}

/* the host's sweeps on one column */
static void check_column_sweeps(const mt_kernel_table *k, unsigned level)
{
    static const uint32_t shapes[][3] = {{1, 1, 1}, {3, 5, 2}, {16, 64, 32}, {7, 33, 10}, {64, 100, 17},
                                         {2, 257, 3}, {5, 1, 9}, {4, 8, 4}, {3, 6, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (unsigned seed = 1; seed <= 3; seed++) {
            check_dense_backward(k, shapes[s][0], shapes[s][1], shapes[s][2], seed * 101u + (unsigned)s);
            check_dense_forward(k, shapes[s][0], shapes[s][1], shapes[s][2], MT_FUSED_NONE, (int)(seed & 1u),
                                seed * 7u + (unsigned)s + 1u);
        }
    static const uint32_t act_shapes[][3] = {{16, 8, 16}, {9, 5, 6}, {4, 1, 4}, {6, 3, 9}, {8, 0, 4}, {3, 7, 5}};
    for (size_t s = 0; s < sizeof act_shapes / sizeof act_shapes[0]; s++)
        for (unsigned seed = 1; seed <= 4; seed++)
            for (uint32_t act = MT_FUSED_NONE; act <= MT_FUSED_RELU6; act++)
                check_dense_forward(k, act_shapes[s][0], act_shapes[s][1], act_shapes[s][2], act, (int)(seed & 2u),
                                    seed * 13u + (unsigned)s);
    check_pointwise_as_dense(k, 2, 5, 3, 24, 17, MT_FUSED_RELU6, 61u + level);
    check_pointwise_as_dense(k, 3, 4, 4, 8, 16, MT_FUSED_NONE, 71u + level);
    check_pointwise_as_dense(k, 1, 2, 2, 3, 2, MT_FUSED_RELU, 81u + level);
    check_pointwise_as_dense(k, 16, 8, 8, 8, 16, MT_FUSED_RELU, 91u + level); /* the CNN's op 2 */
    check_pointwise_as_dense(k, 2, 3, 5, 7, 12, MT_FUSED_RELU6, 95u + level);
    check_spatial_sweep(k, 4242u + level, 400);
    for (size_t s = 0; s < sizeof pool_cases / sizeof pool_cases[0]; s++) {
        const uint32_t *v = pool_cases[s];
        mt_spatial pool;
        memset(&pool, 0, sizeof pool);
        pool.H = v[0], pool.W = v[1], pool.C = pool.OC = v[2], pool.KH = pool.KW = v[3], pool.SH = pool.SW = v[4];
        mt_spatial_axis(pool.H, pool.KH, pool.SH, v[5], &pool.OH, &pool.PT);
        mt_spatial_axis(pool.W, pool.KW, pool.SW, v[5], &pool.OW, &pool.PL);
        check_spatial(k, MAXPOOL, &pool, 3, 950u + (unsigned)s, 0);
    }
    for (size_t s = 0; s < sizeof explicit_pool_cases / sizeof explicit_pool_cases[0]; s++) {
        const uint32_t *v = explicit_pool_cases[s];
        mt_spatial pool;
        memset(&pool, 0, sizeof pool);
        pool.H = v[0], pool.W = v[1], pool.C = pool.OC = v[2], pool.KH = pool.KW = v[3], pool.SH = pool.SW = v[4];
        pool.PT = v[5], pool.PL = v[7];
        CHECK_STATUS(mt_spatial_explicit_axis(pool.H, pool.KH, pool.SH, v[5], v[6], &pool.OH), MT_OK);
        CHECK_STATUS(mt_spatial_explicit_axis(pool.W, pool.KW, pool.SW, v[7], v[8], &pool.OW), MT_OK);
        check_spatial(k, MAXPOOL, &pool, 2, 980u + (unsigned)s, 0);
    }
    for (size_t s = 0; s < sizeof spatial_cases / sizeof spatial_cases[0]; s++) {
        const uint32_t *v = spatial_cases[s];
        const mt_spatial g = geometry(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        mt_spatial pool = g;
        pool.activation = MT_FUSED_NONE;
        for (unsigned seed = 1; seed <= 2; ++seed) {
            check_spatial(k, CONV, &g, seed, 700u + 10u * (unsigned)s + seed, (int)(seed & 1u));
            check_spatial(k, DEPTHWISE, &g, seed + 1, 800u + 10u * (unsigned)s + seed, (int)(seed & 1u));
            check_spatial(k, MAXPOOL, &pool, seed, 900u + 10u * (unsigned)s + seed, 0);
        }
    }
}

int main(void)
{
    static const mt_sib_reporter report = {report_failure, report_row};
    CHECK_EQ_INT(mt_op_dense_f32_scratch_bytes(16, 64, 32), 64 * sizeof(float));
    for (size_t c = 0; c < MT_KERNEL_COLUMNS; ++c) {
        const mt_kernel_table *k = mt_kernel_columns[c];
        if (!use_kernel_level(k->x86_level)) {
            printf("test_kernel_siblings: this CPU cannot run the %s column\n", k->column);
            continue;
        }
        unsigned passed = 0, failed = 0, want = 0;
        mt_sib_walk(k, "f32", &report, &passed, &failed);
        for (size_t e = 0; e < sizeof expected / sizeof expected[0]; ++e)
            if (strcmp(expected[e].column, k->column) == 0) want = expected[e].checks;
        printf("test_kernel_siblings: column %s, the device's cases: %u passed, %u failed\n", k->column, passed,
               failed);
        CHECK_EQ_INT(failed, 0);
        CHECK_EQ_INT(passed, want);
        check_column_sweeps(k, (unsigned)k->x86_level);
    }
    use_cpu_kernel_level();
    return MT_TEST_END();
}
