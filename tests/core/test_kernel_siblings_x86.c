/*
 * The x86-64 columns of the kernel table (select/x86_64.h) against the references, bit for bit,
 * at every level the CPU has (AVX-512 and AVX2, or AVX2 alone), on the edges of their own:
 * Dense (dense, behind a ReLU, at every offset from a cache line), exp, the SGD and Adam
 * updates and their guards, ReLU and the all-finite test. Every column's cases, the x86 ones
 * included, run in test_kernel_siblings.c. A build without x86 kernels has nothing to run here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "microtrain.h"
#include "mt_math.h"
#include "mt_test.h"
#include "ops/kernel.h"
#include "ops/ops.h"
#include "ops/x86/x86.h"
#include "optimizers.h"
#include "select/tables.h"
#include "siblings_util.h"

#if MT_X86_KERNELS
/* the column under test */
static const mt_kernel_table *k86;

#define CANARY 16 /* floats past an x86 kernel's output that it must leave alone */

/* n floats, then CANARY of a pattern no kernel writes */
static float *with_canary(size_t n)
{
    float *v = malloc(sizeof(float) * (n + CANARY));
    for (size_t i = 0; i < CANARY; ++i) v[n + i] = -1234.5f;
    return v;
}

static int canary_intact(const float *v, size_t n)
{
    for (size_t i = 0; i < CANARY; ++i)
        if (v[n + i] != -1234.5f) return 0;
    return 1;
}

/* How check_dense_x86's dy looks: random; behind a ReLU (about half ±0 of both signs, a row
 * and a column all -0 or +0, a NaN that must count); behind a ReLU with an infinity in x and
 * one in W, which a skipped term would have turned into NaN (the AVX2 build's sparse blocks
 * must not skip then), and no NaN in dy: where two NaNs meet in a sum, which one comes out
 * depends on the operands' order in the add, which the compilers take as commutative; behind a
 * ReLU with tiny values (±1e-25) in some units of dy, some inputs of x and some columns of W,
 * so that fused terms underflow and sums end -0 or +0 by the skipped terms, added to gradients
 * that hold -0 (which another op's fused accumulation can leave): the sparse blocks must sum
 * again each sum that ends -0 (avx512.h's mt_resum_negative_zeros) */
enum { DY_DENSE, DY_RELU, DY_RELU_INF, DY_RELU_TINY };

static float tiny(void)
{
    return mt_test_uniform(-1.0f, 1.0f) < 0.0f ? -1e-25f : 1e-25f;
}

static void relu_like(float *dy, uint32_t B, uint32_t U, int with_nan)
{
    for (size_t k = 0; k < (size_t)B * U; ++k)
        if (mt_test_uniform(0.0f, 1.0f) < 0.5f) dy[k] = mt_test_uniform(-1.0f, 1.0f) < 0.0f ? -0.0f : 0.0f;
    for (uint32_t u = 0; u < U; ++u) dy[(size_t)(B / 2) * U + u] = 0.0f; /* a row of the batch */
    for (uint32_t b = 0; b < B; ++b) dy[(size_t)b * U + U / 2] = -0.0f; /* a unit */
    if (with_nan && B * U > 2) dy[(size_t)B * U - 1] = NAN;
}

/* the first float of p (16 floats to spare) on a 64-byte line */
static float *on_a_line(float *p)
{
    return p + (64u - (uintptr_t)p % 64u) % 64u / sizeof(float);
}

/* x and w start `shift` floats past a 64-byte line (the arena aligns tensors to 16 bytes; the
 * AVX-512 sparse gradients start their full blocks on a line of the operand they stream) */
static void check_dense_x86_at(uint32_t B, uint32_t I, uint32_t U, unsigned seed, int dy_kind, uint32_t shift)
{
    mt_test_seed(seed);
    const size_t nx = (size_t)B * I, nw = (size_t)U * I, ny = (size_t)B * U;
    float *x_block = malloc(sizeof(float) * (nx + 32)), *w_block = malloc(sizeof(float) * (nw + 32));
    float *x = on_a_line(x_block) + shift, *w = on_a_line(w_block) + shift, *bias = malloc(sizeof(float) * U);
    float *dy = malloc(sizeof(float) * ny), *y0 = malloc(sizeof(float) * ny), *y1 = with_canary(ny);
    fill(x, nx, 2.0f), fill(w, nw, 1.0f), fill(bias, U, 0.5f), fill(dy, ny, 1.5f);
    if (dy_kind != DY_DENSE) relu_like(dy, B, U, dy_kind == DY_RELU);
    if (dy_kind == DY_RELU_INF) x[nx / 3] = INFINITY, w[nw / 2] = -INFINITY;
    if (dy_kind == DY_RELU_TINY) {
        for (size_t k = 0; k < ny; ++k)
            if (k % U % 3 == 1 && dy[k] != 0.0f) dy[k] = tiny();
        for (size_t k = 0; k < nx; ++k)
            if (k % I % 3 != 0) x[k] = tiny();
        for (size_t k = 0; k < nw; ++k)
            if (k % I % 3 != 0) w[k] = tiny();
    }
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
        mt_op_dense_f32_forward_ref(x, w, with_bias ? bias : NULL, y0, B, I, U, MT_FUSED_NONE);
        k86->dense_f32_forward(x, w, with_bias ? bias : NULL, y1, B, I, U, MT_FUSED_NONE);
        CHECK(same_bits(y0, y1, ny) && canary_intact(y1, ny));
    }
    float *dx0 = malloc(sizeof(float) * nx), *dw0 = malloc(sizeof(float) * nw), *db0 = malloc(sizeof(float) * U);
    fill(dx0, nx, 0.5f), fill(dw0, nw, 0.5f), fill(db0, U, 0.5f);
    if (dy_kind == DY_RELU_TINY) {
        for (size_t k = 0; k < nx; ++k) dx0[k] = -0.0f;
        for (size_t k = 0; k < nw; ++k) dw0[k] = -0.0f;
    }
    float *dx1 = with_canary(nx), *dw1 = with_canary(nw), *db1 = with_canary(U);
    memcpy(dx1, dx0, sizeof(float) * nx), memcpy(dw1, dw0, sizeof(float) * nw), memcpy(db1, db0, sizeof(float) * U);
    mt_op_dense_f32_backward_ref(x, w, dy, dx0, dw0, db0, B, I, U, 0);
    k86->dense_f32_backward(x, w, dy, dx1, dw1, db1, B, I, U, 0);
    CHECK(same_bits(dx0, dx1, nx) && canary_intact(dx1, nx));
    CHECK(same_bits(dw0, dw1, nw) && canary_intact(dw1, nw));
    CHECK(same_bits(db0, db1, U) && canary_intact(db1, U));
    mt_op_dense_f32_backward_ref(x, w, dy, NULL, dw0, NULL, B, I, U, 0);
    k86->dense_f32_backward(x, w, dy, NULL, dw1, NULL, B, I, U, 0);
    CHECK(same_bits(dw0, dw1, nw));
    /* dw_zero: what the reference adds to a zeroed dW, whatever dW held */
    memset(dw0, 0, sizeof(float) * nw), fill(dw1, nw, 7.0f);
    mt_op_dense_f32_backward_ref(x, w, dy, dx0, dw0, NULL, B, I, U, 0);
    k86->dense_f32_backward(x, w, dy, dx1, dw1, NULL, B, I, U, 1);
    CHECK(same_bits(dx0, dx1, nx));
    CHECK(same_bits(dw0, dw1, nw) && canary_intact(dw1, nw));
    free(x_block), free(w_block), free(bias), free(dy), free(y0), free(y1);
    free(dx0), free(dw0), free(db0), free(dx1), free(dw1), free(db1);
}

static void check_dense_x86(uint32_t B, uint32_t I, uint32_t U, unsigned seed, int dy_kind)
{
    check_dense_x86_at(B, I, U, seed, dy_kind, 0u);
}

/* mt_expf_shifted_ref's x86 kernel against mt_expf, bit for bit: a sweep of exponents, the edges of
 * the vector path (overflow, 2^n at the normal range's ends, subnormal results, underflow to
 * 0), NaN and infinities, with shifts m and lengths that leave partial vectors */
static void check_exp_x86(void)
{
    static const float edges[] = {0.0f, -0.0f, 88.72283935546875f, 88.7228394f, 88.0f, 88.5f, 87.9f,
                                  -87.33654f, -87.4f, -88.0f, -100.0f, -103.972084f, -103.97209f, -104.0f,
                                  1e-30f, -1e-30f, 0.5f, -0.5f, 0.34657359f, -0.34657359f};
    float x[61], out[61];
    int bad = 0;
    for (uint32_t step = 0; step < 4000; ++step) {
        for (uint32_t j = 0; j < 61; ++j) x[j] = -110.0f + (float)(step * 61 + j) * (200.0f / (4000.0f * 61.0f));
        k86->expf_shifted_f32(x, 0.0f, out, 61);
        for (uint32_t j = 0; j < 61; ++j) bad += !same_bits(&out[j], &(float){mt_expf(x[j])}, 1);
    }
    for (size_t j = 0; j < sizeof edges / sizeof edges[0]; ++j) x[j] = edges[j];
    x[20] = NAN, x[21] = -NAN, x[22] = INFINITY, x[23] = -INFINITY;
    for (uint32_t n = 1; n <= 24; ++n)
        for (int shift = 0; shift < 3; ++shift) {
            const float m = shift == 0 ? 0.0f : (shift == 1 ? 1.5f : -2.25f);
            k86->expf_shifted_f32(x, m, out, n);
            for (uint32_t j = 0; j < n; ++j) bad += !same_bits(&out[j], &(float){mt_expf(x[j] - m)}, 1);
        }
    CHECK(bad == 0);
}

/* The x86 Adam guard decides most lanes without the update's divisions (a bound proves
 * them finite), and the plain configuration (no decay) most tensors by its whole-tensor
 * limits: it must still answer as the reference guard where a bound or a limit fails, finite
 * or not: weights near FLT_MAX, m far above eps (finite, and overflowing), v < 0, eps = 0,
 * g past its limit, in a whole block or in the tail */
static void check_adam_guard_edges(void)
{
    enum { N = 37 };
    static const float cases[][5] = {/* w, g, m, v, eps */
                                     {3.0e38f, -1.0f, 0.0f, 0.0f, 1e-8f},  {3.3e38f, -1e3f, -1e3f, 1e-30f, 1e-8f},
                                     {1.0f, 1.0f, 1e30f, 0.0f, 1e-8f},     {1.0f, 1.0f, 1e25f, 1e38f, 1e-8f},
                                     {1.0f, 1.0f, 0.5f, -1.0f, 1e-8f},     {1.0f, 0.0f, 0.0f, 0.0f, 0.0f},
                                     {1.0f, 1.0f, 0.5f, 0.25f, 0.0f},      {-3.4e38f, 1.0f, 1.0f, 1.0f, 1e-8f},
                                     {1.0f, 1.0f, 3e38f, 0.0f, 1e-8f},     {3.4e38f, -1.0f, -1e29f, 0.0f, 1e-8f},
                                     {1.0f, 1e30f, 0.0f, 0.0f, 1e-8f},     {1.0f, -3e38f, 1.0f, 1.0f, 1e-8f},
                                     {1.0f, 1.0f, 1.0f, -0.0f, 1e-8f},     {8.6e37f, 1.0f, 1.0f, 1.0f, 1e-8f},
                                     {1.0f, NAN, 1.0f, 1.0f, 1e-8f},       {1.0f, 1.0f, 1.0f, 4.3e37f, 1e-8f}};
    const mt_proximal none = {NULL, 0.0f};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (size_t at = 0; at < N; at += 12) {
            float w[N], g[N], s[2 * N];
            fill(w, N, 1.0f), fill(g, N, 1.0f), fill(s, 2 * N, 0.1f);
            for (size_t i = 0; i < N; ++i) s[N + i] = s[N + i] * s[N + i];
            w[at] = cases[c][0], g[at] = cases[c][1], s[at] = cases[c][2], s[N + at] = cases[c][3];
            for (int variant = 0; variant < 3; ++variant) { /* Adam, AdamW with decay, plain Adam */
                const float wd = variant < 2 ? 0.01f : 0.0f;
                CHECK_EQ_INT(k86->adam_update_is_finite_f32(w, g, s, s + N, N, 0.01f, 0.9f, 0.999f, cases[c][4], wd,
                                                            variant == 1, 0.81, 0.998, 1.0f, none),
                             mt_adam_update_is_finite_f32_ref(w, g, s, s + N, N, 0.01f, 0.9f, 0.999f, cases[c][4], wd,
                                                              variant == 1, 0.81, 0.998, 1.0f, none));
            }
        }
}

/* The x86 SGD guard against the reference guard with one value that is, or makes, a
 * non-finite one, in a whole block and in the tail: w + lr·g overflowing, NaN and infinite
 * w, g and momentum buffers, a momentum buffer that overflows; with and without momentum */
static void check_sgd_guard_edges(void)
{
    enum { N = 37 };
    static const float cases[][3] = {/* w, g, buf */
                                     {3.4e38f, -1e38f, 0.0f}, {-3.4e38f, 1e38f, 0.0f}, {NAN, 1.0f, 0.0f},
                                     {1.0f, -NAN, 0.0f},      {INFINITY, 0.0f, 0.0f},  {1.0f, 1.0f, 3.0e38f},
                                     {1.0f, 3.0e38f, 3.0e38f}, {1.0f, 1.0f, -INFINITY}, {1.0f, 1.0f, NAN},
                                     {3.4e38f, -1e36f, 0.0f}};
    const mt_proximal none = {NULL, 0.0f};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (size_t at = 0; at < N; at += 12) {
            float w[N], g[N], buf[N];
            fill(w, N, 1.0f), fill(g, N, 1.0f), fill(buf, N, 0.1f);
            w[at] = cases[c][0], g[at] = cases[c][1], buf[at] = cases[c][2];
            for (int momentum = 0; momentum < 2; ++momentum)
                CHECK_EQ_INT(
                    k86->sgd_update_is_finite_f32(w, g, buf, N, 0.1f, momentum ? 0.9f : 0.0f, 0.0f, 0.25f, none),
                    mt_sgd_update_is_finite_f32_ref(w, g, buf, N, 0.1f, momentum ? 0.9f : 0.0f, 0.0f, 0.25f, none));
        }
}

/* The x86 optimizers and guards against the reference: w, g and the state `shift` floats past a
 * 64-byte line (the x86 loops start their whole blocks on w's line, a masked head before), an
 * infinity in g at bad_at (< N) that the guards must refuse, wherever it falls */
static void check_optimizers_x86_at(size_t N, unsigned seed, uint32_t shift, size_t bad_at)
{
    mt_test_seed(seed);
    float *w0 = malloc(sizeof(float) * N), *s0 = malloc(sizeof(float) * 2 * N);
    float *g_block = malloc(sizeof(float) * (N + 32)), *g = on_a_line(g_block) + shift;
    fill(w0, N, 1.0f), fill(g, N, 1.0f), fill(s0, 2 * N, 0.1f);
    for (size_t i = 0; i < N; ++i) s0[N + i] = s0[N + i] * s0[N + i]; /* v >= 0 */
    const mt_proximal none = {NULL, 0.0f};
    if (bad_at < N) g[bad_at] = INFINITY;
    for (int variant = 0; variant < 6; ++variant) {
        float *w1 = copy_of(w0, N), *s1 = copy_of(s0, 2 * N);
        float *w_block = malloc(sizeof(float) * (N + 32)), *s_block = malloc(sizeof(float) * (2 * N + 32));
        float *w2 = on_a_line(w_block) + shift, *s2 = on_a_line(s_block) + shift;
        memcpy(w2, w0, sizeof(float) * N), memcpy(s2, s0, sizeof(float) * 2 * N);
        const float wd = variant & 1 ? 0.01f : 0.0f;
        if (variant < 2) {
            CHECK_EQ_INT(k86->sgd_update_is_finite_f32(w2, g, s2, N, 0.1f, variant ? 0.9f : 0.0f, wd, 0.25f, none),
                         mt_sgd_update_is_finite_f32_ref(w1, g, s1, N, 0.1f, variant ? 0.9f : 0.0f, wd, 0.25f, none));
            mt_sgd_update_f32_ref(w1, g, s1, N, 0.1f, variant ? 0.9f : 0.0f, wd, 0.25f, none);
            k86->sgd_update_f32(w2, g, s2, N, 0.1f, variant ? 0.9f : 0.0f, wd, 0.25f, none);
        } else {
            const float beta1 = variant >= 4 ? 0.3f : 0.9f;
            CHECK_EQ_INT(k86->adam_update_is_finite_f32(w2, g, s2, s2 + N, N, 0.01f, beta1, 0.999f, 1e-8f, wd,
                                                        variant == 5, 0.81, 0.998, 0.5f, none),
                         mt_adam_update_is_finite_f32_ref(w1, g, s1, s1 + N, N, 0.01f, beta1, 0.999f, 1e-8f, wd,
                                                          variant == 5, 0.81, 0.998, 0.5f, none));
            mt_adam_update_f32_ref(w1, g, s1, s1 + N, N, 0.01f, beta1, 0.999f, 1e-8f, wd, variant == 5, 0.81, 0.998, 0.5f,
                                   none);
            k86->adam_update_f32(w2, g, s2, s2 + N, N, 0.01f, beta1, 0.999f, 1e-8f, wd, variant == 5, 0.81, 0.998,
                                 0.5f, none);
        }
        CHECK(same_bits(w1, w2, N));
        CHECK(same_bits(s1, s2, 2 * N));
        free(w1), free(s1), free(w_block), free(s_block);
    }
    free(w0), free(g_block), free(s0);
}

static void check_optimizers_x86(size_t N, unsigned seed)
{
    check_optimizers_x86_at(N, seed, 0u, (seed & 1u) && N > 2 ? N / 2 : N);
}

/* ReLU forward/backward and the all-finite guard, with signed zeros, NaN and infinities */
static void check_elementwise_x86(size_t N, unsigned seed)
{
    mt_test_seed(seed);
    float *x = malloc(sizeof(float) * N), *y0 = malloc(sizeof(float) * N), *y1 = malloc(sizeof(float) * N);
    float *dy = malloc(sizeof(float) * N), *dx0 = malloc(sizeof(float) * N);
    fill(x, N, 1.0f), fill(dy, N, 1.0f), fill(dx0, N, 1.0f);
    for (size_t i = 0; i < N; i += 5) x[i] = i % 15 == 0 ? -0.0f : (i % 10 == 0 ? NAN : 0.0f), dx0[i] = -0.0f;
    mt_op_relu_f32_forward_ref(x, y0, N);
    k86->relu_f32_forward(x, y1, N);
    CHECK(same_bits(y0, y1, N));
    float *dx1 = copy_of(dx0, N);
    mt_op_relu_f32_backward_ref(y0, dy, dx0, N);
    k86->relu_f32_backward(y0, dy, dx1, N);
    CHECK(same_bits(dx0, dx1, N));
    /* the x86 kernels' own all-finite test (ops/x86/x86.h), the column's build */
    int (*const all_finite)(const float *, size_t) =
        k86->x86_level == MT_X86_AVX512 ? mt_all_finitef_avx512 : mt_all_finitef_avx2;
    CHECK_EQ_INT(all_finite(dy, N), mt_all_finitef(dy, N));
    dy[N - 1] = INFINITY;
    CHECK_EQ_INT(all_finite(dy, N), 0);
    CHECK_EQ_INT(mt_all_finitef(dy, N), 0);
    free(x), free(y0), free(y1), free(dy), free(dx0), free(dx1);
}

/* an x86 column (AVX-512 or AVX2) against the reference */
static void check_x86_column(const mt_kernel_table *k)
{
    k86 = k;
    static const uint32_t dense[][3] = {{1, 1, 1},  {3, 5, 2},   {32, 16, 32}, {1, 16, 32}, {32, 784, 128},
                                        {7, 33, 17}, {9, 100, 40}, {2, 257, 3},  {16, 64, 10}, {11, 48, 24}, {12, 24, 9},
                                        {13, 70, 50}, {4, 40, 30}, {5, 130, 22},  /* partial third and fourth vectors */
                                        {3, 95, 8},   {4, 57, 6},  {2, 28, 3}}; /* AVX2 dW: a last block 25-31 wide */
    for (size_t s = 0; s < sizeof dense / sizeof dense[0]; s++)
        check_dense_x86(dense[s][0], dense[s][1], dense[s][2], 500u + (unsigned)s, DY_DENSE);
    /* behind a ReLU: 64 terms and past them, 64 units and past them, 96 columns and past them */
    static const uint32_t relu[][3] = {{32, 784, 128}, {64, 200, 70}, {65, 100, 20}, {9, 100, 40}, {5, 130, 22},
                                       {2, 257, 3},    {16, 96, 64},  {3, 95, 8},    {1, 192, 1}, {40, 300, 65}};
    for (size_t s = 0; s < sizeof relu / sizeof relu[0]; s++)
        for (int kind = DY_RELU; kind <= DY_RELU_TINY; ++kind)
            check_dense_x86(relu[s][0], relu[s][1], relu[s][2], 550u + (unsigned)s, kind);
    /* every offset from a 64-byte line a 16-byte aligned tensor can have, and odd ones, with
     * widths whose rows all share it (multiples of 16: MLP 784-128-10's; one full block and
     * none; 272 = one full block after any head; 288 with at most 64 units, so that the input
     * gradient's blocks run too) and one whose rows do not */
    static const uint32_t shifted[][3] = {{32, 784, 128}, {16, 256, 20}, {9, 272, 70}, {12, 288, 40},
                                          {5, 240, 3},    {7, 300, 9}};
    for (size_t s = 0; s < sizeof shifted / sizeof shifted[0]; s++)
        for (uint32_t shift = 1; shift < 16; ++shift)
            check_dense_x86_at(shifted[s][0], shifted[s][1], shifted[s][2], 580u + (unsigned)s, DY_RELU, shift);
    /* every input count to 200 (the column blocks' edges: a bug lived at I mod 32 in 25..31),
     * batches and units to 70 drawn at random, each kind of dy */
    mt_test_seed(77u);
    for (uint32_t I = 1; I <= 200; ++I)
        for (int kind = DY_DENSE; kind <= DY_RELU_TINY; ++kind) {
            const uint32_t B = 1u + mt_test_rand_u32() % 70u, U = 1u + mt_test_rand_u32() % 70u;
            check_dense_x86(B, I, U, 1000u + 3u * I + (unsigned)kind, kind);
        }
    check_exp_x86();
    check_adam_guard_edges();
    check_sgd_guard_edges();
    for (size_t n = 1; n < 70; n += 13) check_optimizers_x86(n, 40u + (unsigned)n);
    for (size_t n = 16; n <= 64; n += 16) check_optimizers_x86(n, 40u + (unsigned)n); /* no tail block */
    /* every offset from a line, the infinity in the head, the first whole block or the tail;
     * from 1024 elements the loops peel a head (mt_stream_head), below they do not */
    static const size_t lengths[] = {5, 100, 1023, 1024, 2077};
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; ++l)
        for (uint32_t shift = 0; shift < 16; ++shift) {
            const size_t N = lengths[l], bad[] = {N, 0, 16 - shift - 1, 16 - shift, N - 1};
            for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k)
                check_optimizers_x86_at(N, 90u + shift, shift, bad[k] < N ? bad[k] : N);
        }
    for (size_t n = 1; n < 90; n += 11) check_elementwise_x86(n, 60u + (unsigned)n);
}

/* every x86 column whose level this CPU has (AVX-512 and AVX2, or AVX2 alone) */
static void check_x86(void)
{
    const int cpu = mt_x86_cpu_level();
    if (cpu < MT_X86_AVX2) {
        printf("test_kernel_siblings_x86: this CPU has neither AVX-512F nor AVX2: no x86 kernel was run\n");
        return;
    }
    if (cpu < MT_X86_AVX512)
        printf("test_kernel_siblings_x86: this CPU has no AVX-512F: the AVX2 build of the x86 kernels was run\n");
    for (size_t c = 0; c < MT_KERNEL_COLUMNS; ++c)
        if (mt_kernel_columns[c]->x86_level >= MT_X86_AVX2 && mt_kernel_columns[c]->x86_level <= cpu)
            check_x86_column(mt_kernel_columns[c]);
    /* the dispatch can be forced to each level the CPU has, and back */
    CHECK_EQ_INT(mt_x86_set_level(MT_X86_AVX2), MT_X86_AVX2);
    CHECK_EQ_INT(mt_x86_set_level(MT_X86_PORTABLE), MT_X86_PORTABLE);
    CHECK_EQ_INT(mt_x86_set_level(-1), mt_x86_cpu_level());
}
#endif /* MT_X86_KERNELS */

int main(void)
{
#if MT_X86_KERNELS
    check_x86();
#else
    printf("test_kernel_siblings_x86: this build has no x86 kernels\n");
#endif
    return MT_TEST_END();
}
