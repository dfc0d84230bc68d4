/*
 * The portable siblings of the Dense reference kernels (ops/dense.c): the same sums in the
 * same order, so the same bits on every target (the sibling tests hold them to it), arranged
 * for scalar FPUs; on the FPv4/FPv5 Cortex-M cores their blocks are the scalar FPU's assembly
 * (ops/dsp/dense_dsp.h, dot_dsp.h). Glossary as in ops/ops.h.
 */
#include <string.h>

#include "microtrain.h"
#include "mt_fma.h"
#include "ops/dsp/dense_dsp.h"
#include "ops/ops.h"

#if MT_PORTABLE_F32_KERNELS && !MT_MVE_KERNELS /* the Helium column runs ops/mve/dense_mve.c instead */
/*
 * Register blocking for scalar FPUs (Cortex-M4F/M7/M33 execute ~1.4 to 2.7 instructions per
 * MAC here instead of ~5 to 9): a 4 x 4 block of independent sums, each still adding its terms
 * one by one in the reference's order, each term a fused multiply-add as the reference's
 * (s = mt_fmaf(g, m, s), its operands in the reference's order), so every load feeds four
 * multiply-adds (the forward's blocks in assembly there, dense_dsp.h). The remainders run the
 * same sums one row or one unit at a time.
 */
#define MAC4(a, s, v0, v1, v2, v3)                                                              \
    (a##0 = mt_fmaf((s), (v0), a##0), a##1 = mt_fmaf((s), (v1), a##1),                            \
     a##2 = mt_fmaf((s), (v2), a##2), a##3 = mt_fmaf((s), (v3), a##3))

/* mt_fused_activation_forward on one value */
static inline float act1(float v, uint32_t act)
{
    if (act == MT_FUSED_NONE) return v;
    v = v < 0.0f ? 0.0f : v; /* NaN passes through */
    return act == MT_FUSED_RELU6 && v > 6.0f ? 6.0f : v;
}

#if !MT_VFP_DOT
/* y rows r0..r3 (x rows x0..x3), units u..u+3 (W rows w0..w3): 16 sums over i, + bias, act */
static void forward_4x4(const float *x0, uint32_t I, const float *w0, const float *bias, float *y, uint32_t U,
                        uint32_t act)
{
    const float *x1 = x0 + I, *x2 = x1 + I, *x3 = x2 + I;
    const float *w1 = w0 + I, *w2 = w1 + I, *w3 = w2 + I;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
    float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f, d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    for (uint32_t i = 0; i < I; ++i) {
        const float v0 = w0[i], v1 = w1[i], v2 = w2[i], v3 = w3[i];
        MAC4(a, x0[i], v0, v1, v2, v3);
        MAC4(b, x1[i], v0, v1, v2, v3);
        MAC4(c, x2[i], v0, v1, v2, v3);
        MAC4(d, x3[i], v0, v1, v2, v3);
    }
    float *y1 = y + U, *y2 = y1 + U, *y3 = y2 + U;
    if (bias) {
        const float e0 = bias[0], e1 = bias[1], e2 = bias[2], e3 = bias[3];
        a0 += e0, a1 += e1, a2 += e2, a3 += e3, b0 += e0, b1 += e1, b2 += e2, b3 += e3;
        c0 += e0, c1 += e1, c2 += e2, c3 += e3, d0 += e0, d1 += e1, d2 += e2, d3 += e3;
    }
    y[0] = act1(a0, act), y[1] = act1(a1, act), y[2] = act1(a2, act), y[3] = act1(a3, act);
    y1[0] = act1(b0, act), y1[1] = act1(b1, act), y1[2] = act1(b2, act), y1[3] = act1(b3, act);
    y2[0] = act1(c0, act), y2[1] = act1(c1, act), y2[2] = act1(c2, act), y2[3] = act1(c3, act);
    y3[0] = act1(d0, act), y3[1] = act1(d1, act), y3[2] = act1(d2, act), y3[3] = act1(d3, act);
}
#endif

/* one unit for four rows: y[r·U] = act(Σ_i x_r[i]·w[i] + bias[0]), x_r = x0 + r·I */
static __attribute__((noinline)) void forward_4x1(const float *x0, uint32_t I, const float *w, const float *bias,
                                                  float *y, uint32_t U, uint32_t act)
{
    const float *x1 = x0 + I, *x2 = x1 + I, *x3 = x2 + I;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (uint32_t i = 0; i < I; ++i) {
        const float v = w[i];
        a0 = mt_fmaf(x0[i], v, a0), a1 = mt_fmaf(x1[i], v, a1), a2 = mt_fmaf(x2[i], v, a2), a3 = mt_fmaf(x3[i], v, a3);
    }
    if (bias) a0 += *bias, a1 += *bias, a2 += *bias, a3 += *bias;
    y[0] = act1(a0, act), y[U] = act1(a1, act), y[2 * U] = act1(a2, act), y[3 * U] = act1(a3, act);
}

/* four units for one row: y[j] = act(Σ_i x[i]·w_j[i] + bias[j]), w_j = w0 + j·I */
static __attribute__((noinline)) void forward_1x4(const float *x, uint32_t I, const float *w0, const float *bias,
                                                  float *y, uint32_t act)
{
    const float *w1 = w0 + I, *w2 = w1 + I, *w3 = w2 + I;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (uint32_t i = 0; i < I; ++i) MAC4(a, x[i], w0[i], w1[i], w2[i], w3[i]);
    if (bias) a0 += bias[0], a1 += bias[1], a2 += bias[2], a3 += bias[3];
    y[0] = act1(a0, act), y[1] = act1(a1, act), y[2] = act1(a2, act), y[3] = act1(a3, act);
}

/*
 * The same sums as mt_op_dense_f32_forward_ref, bit for bit: each y[b,u] adds its terms by
 * ascending i from 0 and then the bias; 4 rows x 4 units at a time (on an FPv4/FPv5 core one
 * assembly call per four rows, dense_dsp.h), then one unit or one row at a time. Then act as
 * mt_fused_activation_forward, on each y as it is stored.
 */
void mt_op_dense_f32_forward_portable(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                      uint32_t I, uint32_t U, uint32_t act)
{
    uint32_t b = 0;
#if MT_VFP_DOT
    mt_vfp_rows blk;
    blk.w = w, blk.bias = bias, blk.I = I, blk.act = act, blk.ystride = U * (uint32_t)sizeof(float);
    blk.blocks = U / 4;
#endif
    for (; b + 4 <= B; b += 4) {
        const float *xb = x + (size_t)b * I;
        float *yb = y + (size_t)b * U;
        uint32_t u = 0;
#if MT_VFP_DOT
        blk.x[0] = xb, blk.x[1] = xb + I, blk.x[2] = xb + 2 * I, blk.x[3] = xb + 3 * I, blk.y = yb;
        if (U >= 4) mt_vfp_dense_rows(&blk);
        u = U & ~3u;
#else
        for (; u + 4 <= U; u += 4) forward_4x4(xb, I, w + (size_t)u * I, bias ? bias + u : NULL, yb + u, U, act);
#endif
        for (; u < U; ++u) forward_4x1(xb, I, w + (size_t)u * I, bias ? bias + u : NULL, yb + u, U, act);
    }
    for (; b < B; ++b) {
        const float *xb = x + (size_t)b * I;
        float *yb = y + (size_t)b * U;
        uint32_t u = 0;
        for (; u + 4 <= U; u += 4) forward_1x4(xb, I, w + (size_t)u * I, bias ? bias + u : NULL, yb + u, act);
        for (; u < U; ++u) { /* one unit for one row */
            const float *wu = w + (size_t)u * I;
            float a = 0.0f;
            for (uint32_t i = 0; i < I; ++i) a = mt_fmaf(xb[i], wu[i], a);
            yb[u] = act1(bias ? a + bias[u] : a, act);
        }
    }
}

/*
 * Blocks of the weight and input gradients: out[r·os + j] += Σ_k g[r·gs + k·gk]·m[k·ms + j],
 * each sum from 0 by ascending k (dx: rows b, g = dy rows, m = W; dW: rows u, g = dy columns,
 * m = x rows). Three shapes keep the pointers in registers on a Cortex-M: 4 x 4 with the four
 * g values side by side (dW: gs = 1), 4 x 4 with four g rows (dx), 1 x 4 for leftover rows.
 */
#define ACC16 float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f, \
    c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f, d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f
#define STORE16(out, os)                                                                                  \
    do {                                                                                                  \
        float *o1 = (out) + (os), *o2 = o1 + (os), *o3 = o2 + (os);                                       \
        (out)[0] += a0, (out)[1] += a1, (out)[2] += a2, (out)[3] += a3;                                   \
        o1[0] += b0, o1[1] += b1, o1[2] += b2, o1[3] += b3, o2[0] += c0, o2[1] += c1, o2[2] += c2;       \
        o2[3] += c3, o3[0] += d0, o3[1] += d1, o3[2] += d2, o3[3] += d3;                                  \
    } while (0)

static void grad_4x4_side(const float *g, size_t gk, const float *m, size_t ms, uint32_t K, float *out, size_t os)
{
#if MT_VFP_DOT
    if (K == 0) return;
    float s[16] = {0.0f};
    mt_vfp_outer4x4(g, (uint32_t)gk, m, (uint32_t)ms, K, s);
    for (uint32_t r = 0; r < 4; ++r)
        for (uint32_t j = 0; j < 4; ++j) out[r * os + j] += s[4 * r + j];
#else
    ACC16;
    for (uint32_t k = 0; k < K; ++k, g += gk, m += ms) {
        const float v0 = m[0], v1 = m[1], v2 = m[2], v3 = m[3];
        MAC4(a, g[0], v0, v1, v2, v3);
        MAC4(b, g[1], v0, v1, v2, v3);
        MAC4(c, g[2], v0, v1, v2, v3);
        MAC4(d, g[3], v0, v1, v2, v3);
    }
    STORE16(out, os);
#endif
}

static void grad_4x4_rows(const float *g, size_t gs, const float *m, size_t ms, uint32_t K, float *out, size_t os)
{
    const float *g1 = g + gs, *g2 = g1 + gs, *g3 = g2 + gs;
    ACC16;
    for (uint32_t k = 0; k < K; ++k, m += ms) {
        const float v0 = m[0], v1 = m[1], v2 = m[2], v3 = m[3];
        const float e0 = *g++, e1 = *g1++, e2 = *g2++, e3 = *g3++;
        MAC4(a, e0, v0, v1, v2, v3);
        MAC4(b, e1, v0, v1, v2, v3);
        MAC4(c, e2, v0, v1, v2, v3);
        MAC4(d, e3, v0, v1, v2, v3);
    }
    STORE16(out, os);
}

static void grad_1x4(const float *g, size_t gk, const float *m, size_t ms, uint32_t K, float *out)
{
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (uint32_t k = 0; k < K; ++k, g += gk, m += ms) MAC4(a, *g, m[0], m[1], m[2], m[3]);
    out[0] += a0, out[1] += a1, out[2] += a2, out[3] += a3;
}

static void grad_1x1(const float *g, size_t gk, const float *m, size_t ms, uint32_t K, float *out)
{
    float a = 0.0f;
    for (uint32_t k = 0; k < K; ++k, g += gk, m += ms) a = mt_fmaf(*g, *m, a);
    *out += a;
}

/* out[R x C] += the block sums above: 4 x 4 where it fits, 1 x 4 and 1 x 1 at the edges;
 * gk is 1 (dx) or gs is 1 (dW) */
static void grad_blocked(const float *g, size_t gs, size_t gk, const float *m, size_t ms, uint32_t K, float *out,
                         size_t os, uint32_t R, uint32_t C)
{
    uint32_t r = 0;
    for (; r + 4 <= R; r += 4) {
        uint32_t c = 0;
        for (; c + 4 <= C; c += 4) {
            if (gs == 1) grad_4x4_side(g + r, gk, m + c, ms, K, out + r * os + c, os);
            else grad_4x4_rows(g + r * gs, gs, m + c, ms, K, out + r * os + c, os);
        }
        for (uint32_t rr = r; rr < r + 4; ++rr)
            for (uint32_t cc = c; cc < C; ++cc) grad_1x1(g + rr * gs, gk, m + cc, ms, K, out + rr * os + cc);
    }
    for (; r < R; ++r) {
        uint32_t c = 0;
        for (; c + 4 <= C; c += 4) grad_1x4(g + r * gs, gk, m + c, ms, K, out + r * os + c);
        for (; c < C; ++c) grad_1x1(g + r * gs, gk, m + c, ms, K, out + r * os + c);
    }
}

#if MT_VFP_DOT
/*
 * dW behind a ReLU (FPU cores): dW[u, i] += Σ_b dy[b, u]·x[b, i] by rows u of 16 columns,
 * skipping the terms whose dy is ±0 (mt_vfp_sparse_row: the same bits in dW when x is
 * finite), the columns past the last 16 by
 * the dense blocks. A 16-column step costs 26 instructions a term that counts and 7 one
 * skipped, against the 4 x 4 blocks' 22 for every term: it pays from about a fifth of dy ±0,
 * so it runs where a quarter of dy's first two rows is ±0 and x is finite, on layers with
 * B·I >= 512 (the digits MLP's first layer from random weights, M4F: 40.4K -> 32.7K; its
 * 16 -> 10 layer, whose dy a softmax makes, skips the sample). Rows of 8 columns (34 a term
 * per 16 MACs) would pay only past 3/5: a pointwise Conv2D's 8 channels keep the dense
 * blocks. 0 when it did not run (nothing written).
 */
static int weight_grad_skipping_zeros(const float *x, const float *dy, float *dw, uint32_t B, uint32_t I, uint32_t U)
{
    const uint32_t wide = I / 16u * 16u;
    if (wide == 0 || B * I < 512u) return 0; /* the sample below stays under 2 % of the dense blocks' work */
    const uint32_t sampled = (B < 2u ? B : 2u) * U; /* the first rows tell a ReLU's zeros */
    uint32_t zeros = 0;
    for (uint32_t k = 0; k < sampled; ++k) {
        uint32_t bits;
        memcpy(&bits, dy + k, sizeof bits);
        zeros += (bits << 1) == 0u;
    }
    if (zeros * 4u < sampled || !mt_vfp_all_finite(x, B * I)) return 0;
    float s[16];
    for (uint32_t u = 0; u < U; ++u) {
        float *dwu = dw + (size_t)u * I;
        for (uint32_t i = 0; i < wide; i += 16) {
            mt_vfp_sparse_row(dy + u, U, x + i, I, B, s);
            for (uint32_t j = 0; j < 16; ++j) dwu[i + j] += s[j];
        }
    }
    if (wide < I) grad_blocked(dy, 1, U, x + wide, I, B, dw + wide, I, U, I - wide);
    return 1;
}
#endif

/*
 * The same sums as mt_op_dense_f32_backward_ref, element for element and in the same order
 * (each starts at 0 and adds its terms by ascending u or b, then is added to the gradient),
 * so the bits are the same:
 *   dx[b, i] += Σ_u dy[b, u]·W[u, i]   rows b, columns i, terms u
 *   dW[u, i] += Σ_b dy[b, u]·x[b, i]   rows u, columns i, terms b  (dW zeroed first: dw_zero)
 */
void mt_op_dense_f32_backward_portable(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                       float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero)
{
    if (dw && dw_zero) memset(dw, 0, (size_t)U * I * sizeof(float));
    if (dx) grad_blocked(dy, U, 1, w, I, U, dx, I, B, I);
#if MT_VFP_DOT
    if (dw && !weight_grad_skipping_zeros(x, dy, dw, B, I, U))
#else
    if (dw)
#endif
        grad_blocked(dy, 1, U, x, I, B, dw, I, U, I);
    if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, B, U);
}
#else
typedef int mt_dense_portable_unused; /* ISO C: a translation unit is not empty */
#endif /* MT_PORTABLE_F32_KERNELS && !MT_MVE_KERNELS */
