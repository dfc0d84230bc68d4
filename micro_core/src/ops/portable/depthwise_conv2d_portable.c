/*
 * Portable siblings of the DepthwiseConv2D kernels (ops/depthwise_conv2d.c): the same sums in
 * the same order, so the same bits (tests/core/test_kernel_siblings.c), for scalar FPUs.
 * Each of the three products is a set of runs (mt_dw_run, depthwise_conv2d_dsp.h): pixels side by
 * side in a row whose taps are the same rectangle, each pixel's sum over the rectangle's
 * rows and columns in order, channels side by side (8 in assembly on the Cortex-M FPU cores,
 * 4 in C elsewhere and for the last channels). Each term is fused as the reference's, s =
 * fma(a, b, s) with a and b in its order (mt_fmaf; VFMA in the assembly). NHWC puts the
 * channels of a tap in one contiguous block of x, W, dy and dx alike.
 *   - forward: y[o] = Σ_{kh, kw in bounds} x·W, + bias, ReLU fused (the reference's act(acc +
 *     bias) per element); the outputs of a row whose every column tap is in bounds are one run;
 *   - input gradient, gathered per input pixel: dx[i] = fma(dz[o], W[tap], dx[i]) over the
 *     outputs o that read pixel i, in ascending o, which is the order the reference fuses them
 *     into dx in (it visits outputs in order and each output reads a pixel through one tap at
 *     most): rows are oh ascending (kh descending), columns ow ascending (kw descending), dx[i]
 *     held in registers (loaded first: MT_DW_LOAD);
 *   - weight gradient: per tap, Σ over b, oh, ow in bounds of dz·x from +0, then dW += it;
 *   - ReLU's derivative and the bias gradient in one pass over dy.
 */
#include <stddef.h>

#include "mt_fma.h"
#include "select/kernels.h"
#include "ops/dsp/depthwise_conv2d_dsp.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_PORTABLE_F32_KERNELS

#if defined(__GNUC__)
#define MT_DW_NOINLINE __attribute__((noinline)) /* run_all's loop keeps its registers */
#else
#define MT_DW_NOINLINE
#endif

/* A run's sums for channels [0, n), n <= 4, in C (the arithmetic of depthwise_conv2d_dsp.h). Offsets
 * instead of pointers: a row's last step may point outside the tensor. */
MT_DW_NOINLINE static void run_c(const mt_dw_run *r, uint32_t n)
{
    const char *a = (const char *)r->a, *b = (const char *)r->b;
    char *d = (char *)r->dst;
    ptrdiff_t pa = 0, pb = 0, pd = 0;
    for (uint32_t l = 0; l < r->lines; ++l, pa += r->la, pd += r->ld) {
        for (uint32_t p = 0; p < r->pixels; ++p, pa += r->ap, pb += r->bp, pd += r->dstep) {
            float *dst = (float *)(d + pd), s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (r->flags & MT_DW_LOAD)
                for (uint32_t j = 0; j < n; ++j) s[j] = dst[j];
            ptrdiff_t oa = pa, ob = pb;
            for (uint32_t i = 0; i < r->rows; ++i, oa += r->ar, ob += r->br) {
                float s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
                for (uint32_t t = 0; t < r->cols; ++t, oa += r->at, ob += r->bt) {
                    const float *u = (const float *)(a + oa), *v = (const float *)(b + ob);
                    if (n == 4) {
                        s0 = mt_fmaf(u[0], v[0], s0), s1 = mt_fmaf(u[1], v[1], s1);
                        s2 = mt_fmaf(u[2], v[2], s2), s3 = mt_fmaf(u[3], v[3], s3);
                    } else {
                        s0 = mt_fmaf(u[0], v[0], s0);
                        if (n > 1) s1 = mt_fmaf(u[1], v[1], s1);
                        if (n > 2) s2 = mt_fmaf(u[2], v[2], s2);
                    }
                }
                s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
            }
            for (uint32_t j = 0; j < n; ++j) {
                float v = r->bias ? s[j] + r->bias[j] : s[j];
                dst[j] = (r->flags & MT_DW_RELU) && v < 0.0f ? 0.0f : v;
            }
        }
    }
}

/* The run on channels [0, C): 8 at a time in assembly where there is, 4 at a time in C. With
 * dw, each block's sums start at +0 and are then added to dw (the weight gradient's sums).
 * Leaves r->a, r->b and r->dst moved (the callers set them per run). */
static void run_all(mt_dw_run *r, uint32_t C, float *dw)
{
    const float *a = r->a, *b = r->b, *bias = r->bias;
    float *d = r->dst, acc[8];
    for (uint32_t c = 0, n; c < C; c += n) {
        r->a = a + c, r->b = b + c, r->dst = dw ? acc : d + c, r->bias = bias ? bias + c : NULL;
        if (dw)
            for (uint32_t j = 0; j < 8; ++j) acc[j] = 0.0f;
        n = C - c < 4 ? C - c : 4;
#if MT_VFP_DW
        if (C - c >= 8 && r->rows && r->cols && r->pixels) n = 8, mt_vfp_dw_run(r);
        else
#endif
            run_c(r, n);
        if (dw)
            for (uint32_t j = 0; j < n; ++j) dw[c + j] += acc[j];
    }
    r->bias = bias;
}

/* [*lo, *hi): the outputs along an axis whose every tap is in bounds */
static void interior(uint32_t O, uint32_t K, uint32_t S, uint32_t P, uint32_t size, uint32_t *lo, uint32_t *hi)
{
    uint32_t e0, e1;
    mt_spatial_in_bounds(O, 0, S, P, size, lo, hi);
    mt_spatial_in_bounds(O, K - 1, S, P, size, &e0, &e1);
    *lo = e0 > *lo ? e0 : *lo, *hi = e1 < *hi ? e1 : *hi;
}

/* The outputs o, o + 1, ... (*n of them) along an axis that read the same taps [*k0, *k1):
 * the interior [lo, hi) from its first, else one */
static void segment(uint32_t o, uint32_t lo, uint32_t hi, uint32_t S, uint32_t P, uint32_t K, uint32_t size,
                    uint32_t *n, uint32_t *k0, uint32_t *k1)
{
    if (o == lo && hi > lo) *n = hi - lo, *k0 = 0, *k1 = K;
    else *n = 1, mt_spatial_tap_range(o, S, P, K, size, k0, k1);
}

void mt_op_depthwise_conv2d_f32_forward_portable(const float *x, const float *w, const float *bias, float *y,
                                                 uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const int32_t cb = (int32_t)(C * sizeof(float));
    uint32_t lh, hh, lw, hw;
    interior(g->OH, g->KH, g->SH, g->PT, g->H, &lh, &hh);
    interior(g->OW, g->KW, g->SW, g->PL, g->W, &lw, &hw);
    mt_dw_run r;
    r.at = r.bt = cb, r.ap = (int32_t)g->SW * cb, r.bp = 0, r.dstep = cb, r.bias = bias;
    r.flags = g->activation == MT_FUSED_RELU ? MT_DW_RELU : 0u;
    /* a rectangle of outputs per run: the interior, the edges' runs, the corners */
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0, nh, kh0, kh1; oh < g->OH; oh += nh) {
            segment(oh, lh, hh, g->SH, g->PT, g->KH, g->H, &nh, &kh0, &kh1);
            for (uint32_t ow = 0, nw, kw0, kw1; ow < g->OW; ow += nw) {
                segment(ow, lw, hw, g->SW, g->PL, g->KW, g->W, &nw, &kw0, &kw1);
                r.rows = kh1 - kh0, r.cols = kw1 - kw0, r.pixels = nw, r.lines = nh;
                r.ar = (int32_t)(g->W - r.cols) * cb, r.br = (int32_t)(g->KW - r.cols) * cb;
                r.la = (int32_t)(g->SH * g->W) * cb - (int32_t)nw * r.ap, r.ld = (int32_t)(g->OW - nw) * cb;
                r.a = r.rows && r.cols ? x + (((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W +
                                              ow * g->SW + kw0 - g->PL) * C
                                       : x;
                r.b = w + ((size_t)kh0 * g->KW + kw0) * C;
                r.dst = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                run_all(&r, C, NULL);
            }
        }
    if (g->activation != MT_FUSED_RELU) mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * C);
}

/* The outputs o reading input position i along an axis (o·S + k = i + P, k < K): how many,
 * the first o0 and its tap k0 (then o0 + 1 through tap k0 - S, ...) */
static uint32_t readers(uint32_t i, uint32_t K, uint32_t S, uint32_t P, uint32_t O, uint32_t *o0, uint32_t *k0)
{
    const uint32_t v = i + P, lo = v + 1 > K ? (v + 1 - K + S - 1) / S : 0;
    const uint32_t hi = v / S + 1 < O ? v / S + 1 : O;
    *o0 = lo, *k0 = v - lo * S;
    return hi > lo ? hi - lo : 0;
}

/* readers() of i, and in *n how many of i, i + S, ... read the same taps from outputs one
 * apart: those away from the edges (unclamped) do */
static uint32_t gather(uint32_t i, uint32_t K, uint32_t S, uint32_t P, uint32_t O, uint32_t size, uint32_t *n,
                       uint32_t *o0, uint32_t *k0)
{
    const uint32_t count = readers(i, K, S, P, O, o0, k0), v = i + P;
    *n = 1;
    if (count && v + 1 >= K && v / S < O) {
        const uint32_t last = S * O - 1 - P;
        *n = ((last < size - 1 ? last : size - 1) - i) / S + 1;
    }
    return count;
}

/* dz = dy·[y > 0] in place and dbias += Σ_p dz (ReLU's derivative and the bias gradient) */
static void relu_bias_backward(const float *y, float *dy, float *dbias, size_t P, uint32_t C)
{
    for (uint32_t c = 0, n; c < C; c += n) {
        float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        n = C - c < 8 ? C - c : 8;
#if MT_VFP_DW
        if (n == 8 && P) mt_vfp_dw_relu_bias(y + c, dy + c, (uint32_t)P, C * (uint32_t)sizeof(float), s);
        else
#endif
            for (uint32_t j = 0; j < n; ++j)
                for (size_t p = 0; p < P; ++p) {
                    float *d = dy + p * C + c + j;
                    if (!(y[p * C + c + j] > 0.0f)) *d = 0.0f;
                    s[j] += *d;
                }
        for (uint32_t j = 0; j < n; ++j) dbias[c + j] += s[j];
    }
}

void mt_op_depthwise_conv2d_f32_backward_portable(const float *x, const float *w, const float *y, float *dy,
                                                  float *dx, float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const int32_t cb = (int32_t)(C * sizeof(float));
    const size_t P = (size_t)B * g->OH * g->OW;
    if (g->activation == MT_FUSED_RELU && dbias) relu_bias_backward(y, dy, dbias, P, C);
    else {
        mt_fused_activation_backward(g->activation, y, dy, P * C);
        if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, P, C);
    }
    mt_dw_run r;
    r.bias = NULL, r.flags = MT_DW_LOAD;
    if (dx) {
        r.at = cb, r.bt = -(int32_t)g->SW * cb, r.ap = cb, r.bp = 0, r.dstep = (int32_t)g->SW * cb;
        /* each residue of ih mod SH and of iw mod SW in turn: along it, the pixels away from
         * the edges read the same taps, from outputs one apart: one run */
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t ih0 = 0; ih0 < g->SH && ih0 < g->H; ++ih0)
                for (uint32_t ih = ih0, nh, oh0, kh0; ih < g->H; ih += g->SH * nh) {
                    if (!(r.rows = gather(ih, g->KH, g->SH, g->PT, g->OH, g->H, &nh, &oh0, &kh0))) continue;
                    for (uint32_t iw0 = 0; iw0 < g->SW && iw0 < g->W; ++iw0)
                        for (uint32_t iw = iw0, nw, ow0, kw0; iw < g->W; iw += g->SW * nw) {
                            if (!(r.cols = gather(iw, g->KW, g->SW, g->PL, g->OW, g->W, &nw, &ow0, &kw0))) continue;
                            r.pixels = nw, r.lines = nh;
                            r.ar = (int32_t)(g->OW - r.cols) * cb;
                            r.br = -(int32_t)(g->SH * g->KW) * cb - (int32_t)r.cols * r.bt;
                            r.la = (int32_t)(g->OW - nw) * cb, r.ld = (int32_t)(g->SH * g->W) * cb - (int32_t)nw * r.dstep;
                            r.a = dy + (((size_t)b * g->OH + oh0) * g->OW + ow0) * C;
                            r.b = w + ((size_t)kh0 * g->KW + kw0) * C;
                            r.dst = dx + (((size_t)b * g->H + ih) * g->W + iw) * C;
                            run_all(&r, C, NULL);
                        }
                }
    }
    if (dw) {
        r.at = cb, r.bt = (int32_t)g->SW * cb, r.ap = (int32_t)(g->OH * g->OW) * cb;
        r.bp = (int32_t)(g->H * g->W) * cb, r.dstep = 0, r.pixels = B, r.lines = 1, r.la = r.ld = 0;
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1;
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                r.rows = oh1 - oh0, r.cols = ow1 - ow0;
                r.ar = (int32_t)(g->OW - r.cols) * cb, r.br = (int32_t)(g->SH * g->W) * cb - (int32_t)r.cols * r.bt;
                r.a = r.rows && r.cols ? dy + ((size_t)oh0 * g->OW + ow0) * C : dy;
                r.b = r.rows && r.cols ? x + ((size_t)(oh0 * g->SH + kh - g->PT) * g->W + ow0 * g->SW + kw - g->PL) * C
                                       : x;
                r.dst = dw + ((size_t)kh * g->KW + kw) * C;
                run_all(&r, C, r.dst);
            }
    }
}
#else
typedef int mt_depthwise_conv2d_portable_unused; /* ISO C: a translation unit is not empty */
#endif
