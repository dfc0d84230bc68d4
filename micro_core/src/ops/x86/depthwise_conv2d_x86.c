/*
 * AVX-512 siblings of the DepthwiseConv2D kernels (ops/depthwise_conv2d.c); ops/x86/x86.h
 * says how they keep the reference's bits. Every sum here runs within one channel, so the
 * lanes simply run across sixteen consecutive channels, in the reference's order.
 */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/spatial.h"
#include "ops/x86/avx512.h"

/* y[b,oh,ow,c] = act(Σ_{in-bounds kh,kw} x[tap, c]·W[kh,kw,c] + b[c]), by ascending kh, kw */
MT_AVX512 void mt_op_depthwise_conv2d_f32_forward_avx512(const float *x, const float *w, const float *bias, float *y,
                                                         uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                for (uint32_t c0 = 0; c0 < C; c0 += 16) {
                    const __mmask16 m = mt_lanes(C - c0);
                    __m512 acc = zero;
                    for (uint32_t kh = 0; kh < g->KH; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0;
                            const float *wp = w + ((size_t)kh * g->KW + kw) * C + c0;
                            acc = mt_mac(acc, _mm512_maskz_loadu_ps(m, xp), _mm512_maskz_loadu_ps(m, wp));
                        }
                    }
                    if (bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, bias + c0));
                    if (g->activation != MT_FUSED_NONE) {
                        acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(acc, zero, _CMP_LT_OQ), zero);
                        if (g->activation == MT_FUSED_RELU6)
                            acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(acc, six, _CMP_GT_OQ), six);
                    }
                    _mm512_mask_storeu_ps(yp + c0, m, acc);
                }
            }
}

/* dW[kh, kw, c0 + ·] += Σ_o dz[o, ·]·x[tap, ·] over the outputs [oh0, oh1) x [ow0, ow1) in
 * order, nv vectors of channels (a constant where inlined: the sums stay in registers) */
MT_AVX512_INLINE void weight_block(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g,
                                   uint32_t kh, uint32_t kw, uint32_t oh0, uint32_t oh1, uint32_t ow0, uint32_t ow1,
                                   uint32_t c0, uint32_t nv)
{
    const uint32_t C = g->C;
    __m512 acc[4];
    __mmask16 mask[4] = {0, 0, 0, 0};
    for (uint32_t v = 0; v < nv; ++v) {
        mask[v] = mt_lanes(C - c0 - 16 * v);
        acc[v] = _mm512_setzero_ps();
    }
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = oh0; oh < oh1; ++oh) {
            const uint32_t ih = oh * g->SH + kh - g->PT;
            const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * C + c0;
            const float *xp = x + (((size_t)b * g->H + ih) * g->W + ow0 * g->SW + kw - g->PL) * C + c0;
            for (uint32_t ow = ow0; ow < ow1; ++ow, dyp += C, xp += (size_t)g->SW * C)
                for (uint32_t v = 0; v < nv; ++v)
                    acc[v] = mt_mac(acc[v], _mm512_maskz_loadu_ps(mask[v], dyp + 16 * v),
                                    _mm512_maskz_loadu_ps(mask[v], xp + 16 * v));
        }
    float *o = dw + ((size_t)kh * g->KW + kw) * C + c0;
    for (uint32_t v = 0; v < nv; ++v)
        _mm512_mask_storeu_ps(o + 16 * v, mask[v], _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], o + 16 * v), acc[v]));
}

/*
 * dx[tap, c] += dz[o, c]·W[kh,kw,c] for each output o in order and its in-bounds taps;
 * dW[kh,kw,c] += Σ_o dz[o, c]·x[tap, c] (from 0 in output order); db[c] += Σ_o dz[o, c].
 */
MT_AVX512 void mt_op_depthwise_conv2d_f32_backward_avx512(const float *x, const float *w, const float *y, float *dy,
                                                          float *dx, float *dw, float *dbias, uint32_t B,
                                                          const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t outputs = (size_t)B * g->OH * g->OW;
    mt_fused_activation_backward_avx512(g->activation, y, dy, outputs * C);
    if (dx) {
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh)
                for (uint32_t ow = 0; ow < g->OW; ++ow) {
                    const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                    for (uint32_t kh = 0; kh < g->KH; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C;
                            const float *wp = w + ((size_t)kh * g->KW + kw) * C;
                            /* whole 16- and 8-lane vectors where they fit: the next output adds to
                             * the same pixels, and masked stores do not forward to masked loads */
                            uint32_t c0 = 0;
                            for (; c0 + 16 <= C; c0 += 16)
                                _mm512_storeu_ps(dxp + c0, mt_mac(_mm512_loadu_ps(dxp + c0), _mm512_loadu_ps(dyp + c0),
                                                                  _mm512_loadu_ps(wp + c0)));
                            for (; c0 + 8 <= C; c0 += 8)
                                _mm256_storeu_ps(dxp + c0,
                                                 _mm256_add_ps(_mm256_loadu_ps(dxp + c0),
                                                               _mm256_mul_ps(_mm256_loadu_ps(dyp + c0), _mm256_loadu_ps(wp + c0))));
                            for (; c0 < C; ++c0) dxp[c0] += dyp[c0] * wp[c0];
                        }
                    }
                }
    }
    if (dw) {
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1; /* the outputs whose tap (kh, kw) is in bounds */
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                for (uint32_t c0 = 0; c0 < C; c0 += 64) {
                    const uint32_t nv = mt_min_u32(4, (C - c0 + 15) / 16);
                    if (nv == 1) weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 1);
                    else if (nv == 2) weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 2);
                    else if (nv == 3) weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 3);
                    else weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 4);
                }
            }
    }
    if (dbias) mt_op_bias_f32_backward_avx512(dy, dbias, outputs, C);
}
#else
typedef int mt_depthwise_x86_unused; /* ISO C: a translation unit is not empty */
#endif
