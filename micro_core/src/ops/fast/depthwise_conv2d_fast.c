/*
 * Portable siblings of the DepthwiseConv2D kernels (ops/depthwise_conv2d.c): the same sums
 * in the same order, so the same bits (tests/core/test_kernel_siblings.c), for scalar FPUs:
 * four channels side by side share the tap arithmetic, and each tap's in-bounds outputs are
 * found once (mt_spatial_in_bounds) instead of tested per term.
 */
#include "ops/fast/fast.h"
#include "ops/ops.h"
#include "ops/spatial.h"

void mt_op_depthwise_conv2d_f32_forward_fast(const float *x, const float *w, const float *bias, float *y,
                                             uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                uint32_t c = 0;
                for (; c < C; c += 4) {
                    const uint32_t lanes = C - c < 4 ? C - c : 4;
                    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    for (uint32_t kh = 0; kh < g->KH; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c;
                            const float *wp = w + ((size_t)kh * g->KW + kw) * C + c;
                            for (uint32_t j = 0; j < lanes; ++j) a[j] += xp[j] * wp[j];
                        }
                    }
                    for (uint32_t j = 0; j < lanes; ++j) yp[c + j] = bias ? a[j] + bias[c + j] : a[j];
                }
            }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * C);
}

void mt_op_depthwise_conv2d_f32_backward_fast(const float *x, const float *w, const float *y, float *dy,
                                              float *dx, float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    mt_fused_activation_backward(g->activation, y, dy, (size_t)B * g->OH * g->OW * C);
    if (dx) /* dx += dz·W term by term, in the reference's order: nothing to regroup */
        mt_op_depthwise_conv2d_f32_backward(x, w, y, dy, dx, NULL, NULL, B, &(mt_spatial){
            g->H, g->W, g->C, g->OH, g->OW, g->OC, g->KH, g->KW, g->SH, g->SW, g->PT, g->PL, MT_FUSED_NONE});
    if (dw) {
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1;
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                for (uint32_t c = 0; c < C; c += 4) {
                    const uint32_t lanes = C - c < 4 ? C - c : 4;
                    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    for (uint32_t b = 0; b < B; ++b)
                        for (uint32_t oh = oh0; oh < oh1; ++oh) {
                            const uint32_t ih = oh * g->SH + kh - g->PT;
                            const float *d = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * C + c;
                            const float *xp = x + (((size_t)b * g->H + ih) * g->W + ow0 * g->SW + kw - g->PL) * C + c;
                            for (uint32_t ow = ow0; ow < ow1; ++ow, d += C, xp += (size_t)g->SW * C)
                                for (uint32_t j = 0; j < lanes; ++j) a[j] += d[j] * xp[j];
                        }
                    float *o = dw + ((size_t)kh * g->KW + kw) * C + c;
                    for (uint32_t j = 0; j < lanes; ++j) o[j] += a[j];
                }
            }
    }
    if (dbias) mt_op_bias_f32_backward(dy, dbias, (size_t)B * g->OH * g->OW, C);
}
