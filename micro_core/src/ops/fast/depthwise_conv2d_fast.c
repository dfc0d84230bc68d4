/*
 * Portable siblings of the DepthwiseConv2D kernels (ops/depthwise_conv2d.c): the same sums in
 * the same order, so the same bits (tests/core/test_kernel_siblings.c), for scalar FPUs. The
 * in-bounds taps of each output are found once (mt_spatial_tap_range), and 4 channels (8 for
 * the gradients where C allows) go side by side so the tap arithmetic is shared. The input
 * gradient is gathered per input pixel: dx[i] += dz[o]·W[tap] over the outputs o that read
 * pixel i, in ascending o, which is the order the reference adds them in (it visits outputs
 * in order and each output reads a pixel through one tap at most), with dx[i] held in a
 * register instead of loaded and stored per term.
 */
#include "ops/fast/fast.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_SCALAR_SIBLINGS

void mt_op_depthwise_conv2d_f32_forward_fast(const float *x, const float *w, const float *bias, float *y,
                                             uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C, wrow = (size_t)g->KW * C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            uint32_t kh0, kh1;
            mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                uint32_t kw0, kw1;
                mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                const float *x0 = x + (((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W +
                                       (ow * g->SW + kw0 - g->PL)) * C;
                const float *w0 = w + (size_t)kh0 * wrow + (size_t)kw0 * C;
                uint32_t c = 0;
                for (; c + 4 <= C; c += 4) {
                    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
                    for (uint32_t kh = kh0; kh < kh1; ++kh) {
                        const float *xp = x0 + (kh - kh0) * row + c, *wp = w0 + (kh - kh0) * wrow + c;
                        for (uint32_t kw = kw0; kw < kw1; ++kw, xp += C, wp += C)
                            a0 += xp[0] * wp[0], a1 += xp[1] * wp[1], a2 += xp[2] * wp[2], a3 += xp[3] * wp[3];
                    }
                    if (bias) a0 += bias[c], a1 += bias[c + 1], a2 += bias[c + 2], a3 += bias[c + 3];
                    yp[c] = a0, yp[c + 1] = a1, yp[c + 2] = a2, yp[c + 3] = a3;
                }
                for (; c < C; ++c) {
                    float a = 0.0f;
                    for (uint32_t kh = kh0; kh < kh1; ++kh) {
                        const float *xp = x0 + (kh - kh0) * row + c, *wp = w0 + (kh - kh0) * wrow + c;
                        for (uint32_t kw = kw0; kw < kw1; ++kw, xp += C, wp += C) a += *xp * *wp;
                    }
                    yp[c] = bias ? a + bias[c] : a;
                }
            }
        }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * C);
}

/* dx[b, ih, iw, c..c+n) += Σ over the outputs reading it, in ascending order, of dz·W */
static void input_grad_pixel(const float *dy, const float *w, float *dxp, uint32_t b, uint32_t ih, uint32_t iw,
                             uint32_t c, uint32_t n, const mt_spatial *g)
{
    const uint32_t C = g->C;
    float a[4];
    for (uint32_t j = 0; j < n; ++j) a[j] = dxp[c + j];
    /* oh ascending is kh descending: ih = oh·SH + kh - PT (32-bit: image sizes are far below 2^31) */
    for (uint32_t kh = g->KH; kh-- > 0;) {
        const int32_t vh = (int32_t)(ih + g->PT) - (int32_t)kh;
        if (vh < 0 || (g->SH != 1 && (uint32_t)vh % g->SH != 0)) continue;
        const uint32_t oh = g->SH == 1 ? (uint32_t)vh : (uint32_t)vh / g->SH;
        if (oh >= g->OH) continue;
        const float *drow = dy + ((size_t)b * g->OH + oh) * g->OW * C + c;
        const float *vrow = w + (size_t)kh * g->KW * C + c;
        for (uint32_t kw = g->KW; kw-- > 0;) {
            const int32_t vw = (int32_t)(iw + g->PL) - (int32_t)kw;
            if (vw < 0 || (g->SW != 1 && (uint32_t)vw % g->SW != 0)) continue;
            const uint32_t ow = g->SW == 1 ? (uint32_t)vw : (uint32_t)vw / g->SW;
            if (ow >= g->OW) continue;
            const float *d = drow + (size_t)ow * C, *v = vrow + (size_t)kw * C;
            if (n == 4) a[0] += d[0] * v[0], a[1] += d[1] * v[1], a[2] += d[2] * v[2], a[3] += d[3] * v[3];
            else
                for (uint32_t j = 0; j < n; ++j) a[j] += d[j] * v[j];
        }
    }
    for (uint32_t j = 0; j < n; ++j) dxp[c + j] = a[j];
}

void mt_op_depthwise_conv2d_f32_backward_fast(const float *x, const float *w, const float *y, float *dy,
                                              float *dx, float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    mt_fused_activation_backward(g->activation, y, dy, (size_t)B * g->OH * g->OW * C);
    if (dx)
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t ih = 0; ih < g->H; ++ih)
                for (uint32_t iw = 0; iw < g->W; ++iw) {
                    float *dxp = dx + (((size_t)b * g->H + ih) * g->W + iw) * C;
                    for (uint32_t c = 0; c < C; c += 4)
                        input_grad_pixel(dy, w, dxp, b, ih, iw, c, C - c < 4 ? C - c : 4, g);
                }
    if (dw) {
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1;
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                const size_t xs = (size_t)g->SW * C;
                for (uint32_t c = 0; c < C;) {
                    const uint32_t n = C - c >= 8 ? 8 : (C - c >= 4 ? 4 : 1);
                    float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
                    for (uint32_t b = 0; b < B; ++b)
                        for (uint32_t oh = oh0; oh < oh1; ++oh) {
                            const uint32_t ih = oh * g->SH + kh - g->PT, iw = ow0 * g->SW + kw - g->PL;
                            const float *d = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * C + c;
                            const float *xp = x + (((size_t)b * g->H + ih) * g->W + iw) * C + c;
                            if (n == 8) {
                                float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];
                                for (uint32_t ow = ow0; ow < ow1; ++ow, d += C, xp += xs) {
                                    a0 += d[0] * xp[0], a1 += d[1] * xp[1], a2 += d[2] * xp[2], a3 += d[3] * xp[3];
                                    a4 += d[4] * xp[4], a5 += d[5] * xp[5], a6 += d[6] * xp[6], a7 += d[7] * xp[7];
                                }
                                a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7;
                            } else {
                                for (uint32_t ow = ow0; ow < ow1; ++ow, d += C, xp += xs)
                                    for (uint32_t j = 0; j < n; ++j) a[j] += d[j] * xp[j];
                            }
                        }
                    float *o = dw + ((size_t)kh * g->KW + kw) * C + c;
                    for (uint32_t j = 0; j < n; ++j) o[j] += a[j];
                    c += n;
                }
            }
    }
    if (dbias) mt_op_bias_f32_backward(dy, dbias, (size_t)B * g->OH * g->OW, C);
}
#else
typedef int mt_depthwise_conv2d_fast_unused; /* ISO C: a translation unit is not empty */
#endif
