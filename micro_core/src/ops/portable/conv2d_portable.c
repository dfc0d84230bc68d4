/*
 * Portable siblings of the Conv2D kernels (ops/conv2d.c): the same sums in the same order,
 * so the same bits (tests/core/test_kernel_siblings.c), arranged for scalar FPUs (Cortex-M,
 * ARM Linux, WebAssembly, x86-64 without AVX-512). Two facts make them fast:
 *   - for one kernel row kh, the in-bounds taps (kw, c) of an output are one contiguous run in
 *     the input row, in W's row (oc, kh) and in dx's row: the loops run along it, with the
 *     in-bounds range found once per output (mt_spatial_tap_range) instead of tested per term;
 *   - blocks of independent sums share each load: 4 output pixels x 4 output channels forward,
 *     8 (or 4) input positions for the input gradient, 4 output channels x 4 channels (or 8
 *     output channels) for the weight gradient. Each sum still adds its terms one by one in
 *     the reference's order (kh, kw, c ascending forward; outputs in order for the gradients),
 *     each term fused as the reference's (s = mt_fmaf(a, b, s), a and b in its order).
 */
#include "mt_fma.h"
#include "select/kernels.h"
#include "ops/dsp/conv2d_dsp.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_PORTABLE_F32_KERNELS

/* four sums' next terms, each fused as the reference's: aj = mt_fmaf(s, vj, aj) */
#define MAC4(a, s, v0, v1, v2, v3)                                                              \
    (a##0 = mt_fmaf((s), (v0), a##0), a##1 = mt_fmaf((s), (v1), a##1),                            \
     a##2 = mt_fmaf((s), (v2), a##2), a##3 = mt_fmaf((s), (v3), a##3))
/* the same with the operands the other way round: aj = mt_fmaf(vj, s, aj) */
#define MAC4_BY(a, s, v0, v1, v2, v3)                                                           \
    (a##0 = mt_fmaf((v0), (s), a##0), a##1 = mt_fmaf((v1), (s), a##1),                            \
     a##2 = mt_fmaf((v2), (s), a##2), a##3 = mt_fmaf((v3), (s), a##3))

/* out[j·os] (j < 4) = act-less result: acc + bias */
static void put4(float *out, size_t os, float a0, float a1, float a2, float a3, const float *bias, uint32_t lanes)
{
    if (bias) a0 += bias[0], a1 += bias[lanes > 1], a2 += bias[lanes > 2 ? 2 : 0], a3 += bias[lanes > 3 ? 3 : 0];
    out[0] = a0;
    if (lanes > 1) out[os] = a1;
    if (lanes > 2) out[2 * os] = a2;
    if (lanes > 3) out[3 * os] = a3;
}

/* Forward of `pixels` (4 or 1) outputs in a row, input positions xp (first tap of the run),
 * `run` taps (kw, c) per kernel row from kh0 to kh1, output channels oc..oc+3 */
static void forward_block(const float *xp, size_t row, size_t pixel, uint32_t pixels, const float *wp, size_t K,
                          size_t wrow, uint32_t kh0, uint32_t kh1, uint32_t run, float *yp, size_t ys,
                          const float *bias, uint32_t lanes)
{
    const float *w1 = wp + (lanes > 1 ? K : 0), *w2 = wp + (lanes > 2 ? 2 * K : 0), *w3 = wp + (lanes > 3 ? 3 * K : 0);
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
    float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f, d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    for (uint32_t kh = kh0; kh < kh1; ++kh) {
        const float *x0 = xp + (kh - kh0) * row;
        const size_t o = (size_t)kh * wrow;
        if (pixels == 4) {
            const float *x1 = x0 + pixel, *x2 = x1 + pixel, *x3 = x2 + pixel;
#if MT_VFP_DOT
            float s[16] = {a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3};
            if (run) mt_vfp_dot4x4(x0, x1, x2, x3, wp + o, w1 + o, w2 + o, w3 + o, run, s);
            a0 = s[0], a1 = s[1], a2 = s[2], a3 = s[3], b0 = s[4], b1 = s[5], b2 = s[6], b3 = s[7];
            c0 = s[8], c1 = s[9], c2 = s[10], c3 = s[11], d0 = s[12], d1 = s[13], d2 = s[14], d3 = s[15];
#else
            for (uint32_t t = 0; t < run; ++t) {
                const float v0 = wp[o + t], v1 = w1[o + t], v2 = w2[o + t], v3 = w3[o + t];
                MAC4(a, x0[t], v0, v1, v2, v3);
                MAC4(b, x1[t], v0, v1, v2, v3);
                MAC4(c, x2[t], v0, v1, v2, v3);
                MAC4(d, x3[t], v0, v1, v2, v3);
            }
#endif
        } else {
            for (uint32_t t = 0; t < run; ++t) MAC4(a, x0[t], wp[o + t], w1[o + t], w2[o + t], w3[o + t]);
        }
    }
    put4(yp, 1, a0, a1, a2, a3, bias, lanes);
    if (pixels == 4) {
        put4(yp + ys, 1, b0, b1, b2, b3, bias, lanes);
        put4(yp + 2 * ys, 1, c0, c1, c2, c3, bias, lanes);
        put4(yp + 3 * ys, 1, d0, d1, d2, d3, bias, lanes);
    }
}

/* y[p, oc] = Σ_{in-bounds kh,kw; c} x·W[oc,kh,kw,c] (+ b[oc]), then the activation */
void mt_op_conv2d_f32_forward_portable(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                       const mt_spatial *g)
{
    const uint32_t C = g->C, OC = g->OC, K = g->KH * g->KW * C;
#if MT_VFP_CONV_C1 && MT_MVE_KERNELS
    /* the M55: the copy its Helium forward calls too (dsp/conv2d_dsp.c), one in the firmware */
    if (mt_conv2d_c1_forward_dsp(x, w, bias, y, B, g)) return;
#elif MT_VFP_CONV_C1
    if (mt_vfp_conv2d_c1_forward(x, w, bias, y, B, g)) return; /* dsp/conv2d_dsp.h, inlined */
#endif
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            uint32_t kh0, kh1;
            mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
            for (uint32_t ow = 0; ow < g->OW;) {
                uint32_t kw0, kw1, last0, last1;
                mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                uint32_t pixels = 1;
                if (ow + 4 <= g->OW && kw0 == 0 && kw1 == g->KW) {
                    mt_spatial_tap_range(ow + 3, g->SW, g->PL, g->KW, g->W, &last0, &last1);
                    if (last0 == 0 && last1 == g->KW) pixels = 4;
                }
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * OC;
                if (kh1 > kh0 && kw1 > kw0) {
                    const uint32_t ih = oh * g->SH + kh0 - g->PT, iw = ow * g->SW + kw0 - g->PL;
                    const float *xp = x + (((size_t)b * g->H + ih) * g->W + iw) * C;
                    for (uint32_t oc = 0; oc < OC; oc += 4)
                        forward_block(xp, (size_t)g->W * C, (size_t)g->SW * C, pixels,
                                      w + (size_t)oc * K + (size_t)kw0 * C, K, (size_t)g->KW * C, kh0, kh1,
                                      (kw1 - kw0) * C, yp + oc, OC, bias ? bias + oc : NULL,
                                      OC - oc < 4 ? OC - oc : 4);
                } else { /* every tap in the padding: the sum of nothing, plus the bias */
                    for (uint32_t oc = 0; oc < OC; ++oc) yp[oc] = bias ? 0.0f + bias[oc] : 0.0f;
                }
                ow += pixels;
            }
        }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * g->OC);
}

/* dx row [0, n) += Σ_oc d[oc]·W[oc, ·] along a run, from 0 in ascending oc: 8, 4 or 1 wide */
static void input_grad_run(const float *d, uint32_t OC, const float *wp, size_t K, float *dxp, uint32_t n)
{
    uint32_t t = 0;
    for (; t + 8 <= n; t += 8) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
        const float *v = wp + t;
        for (uint32_t oc = 0; oc < OC; ++oc, v += K) {
            const float s = d[oc];
            MAC4(a, s, v[0], v[1], v[2], v[3]);
            MAC4(b, s, v[4], v[5], v[6], v[7]);
        }
        float *o = dxp + t;
        o[0] += a0, o[1] += a1, o[2] += a2, o[3] += a3, o[4] += b0, o[5] += b1, o[6] += b2, o[7] += b3;
    }
    for (; t + 4 <= n; t += 4) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        const float *v = wp + t;
        for (uint32_t oc = 0; oc < OC; ++oc, v += K) MAC4(a, d[oc], v[0], v[1], v[2], v[3]);
        float *o = dxp + t;
        o[0] += a0, o[1] += a1, o[2] += a2, o[3] += a3;
    }
    for (; t < n; ++t) {
        float a = 0.0f;
        const float *v = wp + t;
        for (uint32_t oc = 0; oc < OC; ++oc, v += K) a = mt_fmaf(d[oc], *v, a);
        dxp[t] += a;
    }
}

/* dW[oc.., kh, kw, c..] += Σ_o dy[o, oc]·x[tap(o), c] over the outputs o whose tap (kh, kw)
 * is in bounds, in output order: 4 output channels x 4 channels, or 8 (4, 1) output channels
 * x 1 channel */
static void weight_grad_tap(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g,
                            uint32_t kh, uint32_t kw)
{
    const uint32_t C = g->C, OC = g->OC, K = g->KH * g->KW * C;
    uint32_t oh0, oh1, ow0, ow1;
    mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
    mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
    const size_t tap = ((size_t)kh * g->KW + kw) * C, xs = (size_t)g->SW * C;
    for (uint32_t oc = 0; oc < OC;) {
        const uint32_t wide = C % 4 == 0 ? 4 : (OC - oc >= 8 ? 8 : (OC - oc >= 4 ? 4 : 1));
        const uint32_t ocn = C % 4 == 0 ? (OC - oc >= 4 ? 4 : 1) : wide;
        for (uint32_t c = 0; c < C; c += (ocn == 4 && C % 4 == 0) ? 4 : 1) {
            const uint32_t cn = (ocn == 4 && C % 4 == 0) ? 4 : 1;
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
            float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f, d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
            uint32_t batches = B; /* the C loop's, unless the assembly took them */
#if MT_VFP_CONV
            if ((cn == 4 || ocn == 8) && oh1 > oh0 && ow1 > ow0) { /* the same sums, rows in assembly */
                float s[16] = {0.0f};
                const uint32_t n = ow1 - ow0, rowx = g->SH * g->W * C;
                for (uint32_t b = 0; b < B; ++b) {
                    const uint32_t ih = oh0 * g->SH + kh - g->PT, iw = ow0 * g->SW + kw - g->PL;
                    const uint32_t p[8] = {
                        (uint32_t)(uintptr_t)(dy + (((size_t)b * g->OH + oh0) * g->OW + ow0) * OC + oc),
                        (uint32_t)(uintptr_t)(x + (((size_t)b * g->H + ih) * g->W + iw) * C + c), 4u * OC,
                        4u * (uint32_t)xs, n, oh1 - oh0, 4u * (g->OW - n) * OC, 4u * (rowx - n * (uint32_t)xs)};
                    if (cn == 4) mt_vfp_rows4x4(p, s);
                    else mt_vfp_rows8x1(p, s);
                }
                a0 = s[0], a1 = s[1], a2 = s[2], a3 = s[3], b0 = s[4], b1 = s[5], b2 = s[6], b3 = s[7];
                c0 = s[8], c1 = s[9], c2 = s[10], c3 = s[11], d0 = s[12], d1 = s[13], d2 = s[14], d3 = s[15];
                batches = 0;
            }
#endif
            for (uint32_t b = 0; b < batches; ++b)
                for (uint32_t oh = oh0; oh < oh1; ++oh) {
                    const uint32_t ih = oh * g->SH + kh - g->PT, iw = ow0 * g->SW + kw - g->PL;
                    const float *dp = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * OC + oc;
                    const float *xp = x + (((size_t)b * g->H + ih) * g->W + iw) * C + c;
                    if (cn == 4) { /* a: oc, b: oc+1, c: oc+2, d: oc+3; lanes: c..c+3 */
                        for (uint32_t ow = ow0; ow < ow1; ++ow, dp += OC, xp += xs) {
                            const float v0 = xp[0], v1 = xp[1], v2 = xp[2], v3 = xp[3];
                            MAC4(a, dp[0], v0, v1, v2, v3);
                            MAC4(b, dp[1], v0, v1, v2, v3);
                            MAC4(c, dp[2], v0, v1, v2, v3);
                            MAC4(d, dp[3], v0, v1, v2, v3);
                        }
                    } else if (ocn == 8) { /* a, b: oc..oc+7; one channel (terms dy·x, as the reference) */
                        for (uint32_t ow = ow0; ow < ow1; ++ow, dp += OC, xp += xs) {
                            const float v = *xp;
                            MAC4_BY(a, v, dp[0], dp[1], dp[2], dp[3]);
                            MAC4_BY(b, v, dp[4], dp[5], dp[6], dp[7]);
                        }
                    } else if (ocn == 4) {
                        for (uint32_t ow = ow0; ow < ow1; ++ow, dp += OC, xp += xs)
                            MAC4_BY(a, *xp, dp[0], dp[1], dp[2], dp[3]);
                    } else {
                        for (uint32_t ow = ow0; ow < ow1; ++ow, dp += OC, xp += xs) a0 = mt_fmaf(*dp, *xp, a0);
                    }
                }
            float *o = dw + (size_t)oc * K + tap + c;
            if (cn == 4) {
                o[0] += a0, o[1] += a1, o[2] += a2, o[3] += a3, o += K;
                o[0] += b0, o[1] += b1, o[2] += b2, o[3] += b3, o += K;
                o[0] += c0, o[1] += c1, o[2] += c2, o[3] += c3, o += K;
                o[0] += d0, o[1] += d1, o[2] += d2, o[3] += d3;
            } else {
                const float s[8] = {a0, a1, a2, a3, b0, b1, b2, b3};
                for (uint32_t j = 0; j < ocn; ++j) o[(size_t)j * K] += s[j];
            }
        }
        oc += ocn;
    }
}

/*
 * dx[tap pixel, c] += Σ_oc dz[o, oc]·W[oc, kh, kw, c]   (per output o in order, per tap)
 * dW[oc, kh, kw, c] += Σ_o dz[o, oc]·x[tap pixel, c]    (o over the in-bounds outputs, in order)
 */
void mt_op_conv2d_f32_backward_portable(const float *x, const float *w, const float *y, float *dy, float *dx,
                                        float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C, OC = g->OC, K = g->KH * g->KW * C;
    const size_t P = (size_t)B * g->OH * g->OW;
#if MT_VFP_CONV
    if (g->activation == MT_FUSED_RELU && OC % 8 == 0 && P) { /* mask and bias sums in one pass */
        for (uint32_t oc = 0; oc < OC; oc += 8) {
            float s[8] = {0.0f};
            mt_vfp_relu_mask_sum8(y + oc, dy + oc, 4u * OC, (uint32_t)P, s);
            if (dbias)
                for (uint32_t j = 0; j < 8; ++j) dbias[oc + j] += s[j];
        }
        dbias = NULL;
    } else
#endif
        mt_fused_activation_backward(g->activation, y, dy, P * OC);
    if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, P, OC);
    if (dx) {
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                uint32_t kh0, kh1;
                mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
                for (uint32_t ow = 0; ow < g->OW; ++ow) {
                    uint32_t kw0, kw1;
                    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                    if (kw1 <= kw0) continue;
                    const float *d = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * OC;
                    const uint32_t iw = ow * g->SW + kw0 - g->PL;
                    for (uint32_t kh = kh0; kh < kh1; ++kh) {
                        const uint32_t ih = oh * g->SH + kh - g->PT;
                        input_grad_run(d, OC, w + ((size_t)kh * g->KW + kw0) * C, K,
                                       dx + (((size_t)b * g->H + ih) * g->W + iw) * C, (kw1 - kw0) * C);
                    }
                }
            }
    }
    if (dw)
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) weight_grad_tap(x, dy, dw, B, g, kh, kw);
}
#else
typedef int mt_conv2d_portable_unused; /* ISO C: a translation unit is not empty */
#endif
