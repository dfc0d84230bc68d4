/*
 * Portable siblings of the Conv2D kernels (ops/conv2d.c): the same sums in the same order,
 * so the same bits (tests/core/test_kernel_siblings.c), arranged for scalar FPUs (Cortex-M,
 * ARM Linux, WebAssembly and x86-64 without AVX-512): four independent sums share each
 * load (four output channels forward, four input channels for the gradients), and the
 * in-bounds outputs of each tap are found once instead of tested per term.
 */
#include "ops/fast/fast.h"
#include "ops/ops.h"
#include "ops/spatial.h"

/* y[p, oc] = Σ_{in-bounds kh,kw; c} x·W[oc,kh,kw,c] (+ b[oc]), then the activation */
void mt_op_conv2d_f32_forward_fast(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                   const mt_spatial *g)
{
    const uint32_t C = g->C, K = g->KH * g->KW * C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
                for (uint32_t oc = 0; oc < g->OC; oc += 4) {
                    const uint32_t lanes = g->OC - oc < 4 ? g->OC - oc : 4;
                    const float *w0 = w + (size_t)oc * K;
                    const float *w1 = lanes > 1 ? w0 + K : w0, *w2 = lanes > 2 ? w0 + 2 * K : w0;
                    const float *w3 = lanes > 3 ? w0 + 3 * K : w0;
                    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
                    for (uint32_t kh = 0; kh < g->KH; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C;
                            const size_t t = ((size_t)kh * g->KW + kw) * C;
                            for (uint32_t c = 0; c < C; ++c) {
                                const float xv = xp[c];
                                a0 += xv * w0[t + c];
                                a1 += xv * w1[t + c];
                                a2 += xv * w2[t + c];
                                a3 += xv * w3[t + c];
                            }
                        }
                    }
                    const float acc[4] = {a0, a1, a2, a3};
                    for (uint32_t j = 0; j < lanes; ++j) yp[oc + j] = bias ? acc[j] + bias[oc + j] : acc[j];
                }
            }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * g->OC);
}

/*
 * dx[tap pixel, c] += Σ_oc dz[o, oc]·W[oc, kh, kw, c]   (per output o in order, per tap)
 * dW[oc, kh, kw, c] += Σ_o dz[o, oc]·x[tap pixel, c]    (o over the in-bounds outputs, in order)
 */
void mt_op_conv2d_f32_backward_fast(const float *x, const float *w, const float *y, float *dy, float *dx,
                                    float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C, OC = g->OC, K = g->KH * g->KW * C;
    mt_fused_activation_backward(g->activation, y, dy, (size_t)B * g->OH * g->OW * OC);
    if (dx) {
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh)
                for (uint32_t ow = 0; ow < g->OW; ++ow) {
                    const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * OC;
                    for (uint32_t kh = 0; kh < g->KH; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C;
                            const float *wt = w + ((size_t)kh * g->KW + kw) * C;
                            uint32_t c = 0;
                            for (; c + 4 <= C; c += 4) {
                                const float *wc = wt + c;
                                float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
                                for (uint32_t oc = 0; oc < OC; ++oc, wc += K) {
                                    const float d = dyp[oc];
                                    a0 += d * wc[0];
                                    a1 += d * wc[1];
                                    a2 += d * wc[2];
                                    a3 += d * wc[3];
                                }
                                dxp[c] += a0;
                                dxp[c + 1] += a1;
                                dxp[c + 2] += a2;
                                dxp[c + 3] += a3;
                            }
                            for (; c < C; ++c) {
                                const float *wc = wt + c;
                                float a = 0.0f;
                                for (uint32_t oc = 0; oc < OC; ++oc, wc += K) a += dyp[oc] * wc[0];
                                dxp[c] += a;
                            }
                        }
                    }
                }
    }
    if (dw) {
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1;
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                const size_t t = ((size_t)kh * g->KW + kw) * C;
                for (uint32_t oc = 0; oc < OC; oc += 4) {
                    const uint32_t lanes = OC - oc < 4 ? OC - oc : 4;
                    for (uint32_t c = 0; c < C; ++c) {
                        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
                        for (uint32_t b = 0; b < B; ++b)
                            for (uint32_t oh = oh0; oh < oh1; ++oh) {
                                const uint32_t ih = oh * g->SH + kh - g->PT;
                                const float *d = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * OC + oc;
                                const float *xp = x + (((size_t)b * g->H + ih) * g->W + ow0 * g->SW + kw - g->PL) * C + c;
                                if (lanes == 4) {
                                    for (uint32_t ow = ow0; ow < ow1; ++ow, d += OC, xp += (size_t)g->SW * C) {
                                        const float xv = *xp;
                                        a0 += d[0] * xv;
                                        a1 += d[1] * xv;
                                        a2 += d[2] * xv;
                                        a3 += d[3] * xv;
                                    }
                                } else {
                                    for (uint32_t ow = ow0; ow < ow1; ++ow, d += OC, xp += (size_t)g->SW * C) {
                                        const float xv = *xp;
                                        a0 += d[0] * xv;
                                        if (lanes > 1) a1 += d[1] * xv;
                                        if (lanes > 2) a2 += d[2] * xv;
                                    }
                                }
                            }
                        const float acc[4] = {a0, a1, a2, a3};
                        for (uint32_t j = 0; j < lanes; ++j) dw[(size_t)(oc + j) * K + t + c] += acc[j];
                    }
                }
            }
    }
    if (dbias) mt_op_bias_f32_backward(dy, dbias, (size_t)B * g->OH * g->OW, OC);
}
