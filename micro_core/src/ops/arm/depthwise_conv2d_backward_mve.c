/*
 * Helium siblings of the DepthwiseConv2D gradients (ops/depthwise_conv2d.c); ops/arm/mve.h says
 * how they keep the reference's bits, depthwise_mve.h what they share with the forward. Lanes
 * run across four channels, each lane its own channel's sum.
 */
#include "ops/arm/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2")
#include "ops/arm/depthwise_mve.h"

/* dW[kh, kw, c..] += Σ_{b, oh, ow in bounds} dz·x of one tap, from +0 in ascending (b, oh, ow),
 * G vectors of channels from c (the first's lanes below skip not stored); SW = 1, so a row of
 * dz and of x are both runs of C floats per pixel (dw_taps). A flushed subnormal or a NaN sends
 * the block to the reference's scalar sums before anything is stored. */
static inline __attribute__((always_inline)) void dw_tap(const float *x, const float *dy, float *dw,
                                                         const mt_spatial *g, uint32_t B, uint32_t kh, uint32_t kw,
                                                         uint32_t oh0, uint32_t oh1, uint32_t ow0, uint32_t ow1,
                                                         uint32_t c, uint32_t skip, const uint32_t G)
{
    const uint32_t C = g->C, cols = ow1 - ow0, extra = (C - 4 * G) * (uint32_t)sizeof(float);
    float32x4_t s[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    if (cols)
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = oh0; oh < oh1; ++oh) {
                const float *dz = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * C + c;
                const float *xr = x + (((size_t)b * g->H + oh * g->SH + kh - g->PT) * g->W + ow0 + kw - g->PL) * C + c;
                if (extra) dw_taps(dz, dz, xr, cols, extra, G, 1, 1, s);
                else dw_taps(dz, dz, xr, cols, 0, G, 1, 0, s);
            }
    float *o = dw + ((size_t)kh * g->KW + kw) * C + c;
    for (uint32_t j = 0; j < G; ++j) s[j] = vaddq_f32(vld1q_f32(o + 4 * j), s[j]);
    for (uint32_t j = G; j < 4; ++j) s[j] = s[0];
    if (mt_mve_flushed(s[0], s[1], s[2], s[3]) || mt_mve_nan(s[0], s[1], s[2], s[3])) {
        for (uint32_t j = c + skip; j < c + 4 * G; ++j) {
            float acc = 0.0f;
            for (uint32_t b = 0; b < B; ++b)
                for (uint32_t oh = oh0; oh < oh1; ++oh)
                    for (uint32_t ow = ow0; ow < ow1; ++ow)
                        acc += dy[(((size_t)b * g->OH + oh) * g->OW + ow) * C + j] *
                               x[(((size_t)b * g->H + oh * g->SH + kh - g->PT) * g->W + ow + kw - g->PL) * C + j];
            dw[((size_t)kh * g->KW + kw) * C + j] += acc;
        }
        mt_mve_flags_clear();
        return;
    }
    const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip);
    for (uint32_t j = 0; j < G; ++j) {
        if (j == 0 && skip) vstrwq_p_f32(o, s[0], p);
        else vst1q_f32(o + 4 * j, s[j]);
    }
}

static void dw_mve(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C, full = C / 4;
    mt_mve_flags_clear();
    for (uint32_t kh = 0; kh < g->KH; ++kh)
        for (uint32_t kw = 0; kw < g->KW; ++kw) {
            uint32_t oh0, oh1, ow0, ow1, k = 0;
            mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
            mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
            for (; k + 4 <= full; k += 4) dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 4);
            switch (full - k) {
            case 3: dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 3); break;
            case 2: dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 2); break;
            case 1: dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 1); break;
            default: break;
            }
            if (C % 4) dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, C - 4, 4 - C % 4, 1);
        }
}

/* The activation's derivative and dbias, and dW with stride 1 along W, in Helium; dx (and dW
 * at other strides) by the portable sibling on the masked dz */
void mt_op_depthwise_conv2d_f32_backward_mve(const float *x, const float *w, const float *y, float *dy, float *dx,
                                             float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    if (g->C < 4) {
        mt_op_depthwise_conv2d_f32_backward_fast(x, w, y, dy, dx, dw, dbias, B, g);
        return;
    }
    mt_mve_relu_bias(g->activation, y, dy, dbias, (size_t)B * g->OH * g->OW, g->C);
    mt_spatial h = *g;
    h.activation = MT_FUSED_NONE; /* dy is dz now */
    if (dx || (dw && g->SW != 1)) mt_op_depthwise_conv2d_f32_backward_fast(x, w, y, dy, dx, g->SW != 1 ? dw : NULL, NULL, B, &h);
    if (dw && g->SW == 1) dw_mve(x, dy, dw, B, g);
}

#else
typedef int mt_depthwise_conv2d_backward_mve_unused; /* ISO C: a translation unit is not empty */
#endif
