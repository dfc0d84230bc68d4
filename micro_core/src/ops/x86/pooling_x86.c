/*
 * AVX-512 siblings of the max-pooling kernels (ops/pooling.c), lanes across sixteen
 * consecutive channels; the same comparisons in the same window order, so the same bits
 * and the same routing of the gradient (ops/x86/x86.h).
 */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/spatial.h"
#include "ops/x86/avx512.h"

/* m = the first in-bounds value, then v wherever v > m or v is NaN (the reference's rule) */
MT_AVX512 void mt_op_max_pool2d_f32_forward_avx512(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow)
                for (uint32_t c0 = 0; c0 < C; c0 += 16) {
                    const __mmask16 lanes = mt_lanes(C - c0);
                    uint32_t kh0, kh1, kw0, kw1;
                    mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
                    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                    if (kh0 == 0 && kw0 == 0 && kh1 == g->KH && kw1 == g->KW) { /* the whole window inside */
                        const float *xp = x + (((size_t)b * g->H + oh * g->SH - g->PT) * g->W + ow * g->SW - g->PL) * C + c0;
                        __m512 m = _mm512_maskz_loadu_ps(lanes, xp);
                        for (uint32_t kh = 0; kh < g->KH; ++kh, xp += (size_t)g->W * C)
                            for (uint32_t kw = kh == 0 ? 1 : 0; kw < g->KW; ++kw) {
                                const __m512 v = _mm512_maskz_loadu_ps(lanes, xp + (size_t)kw * C);
                                m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) |
                                                              _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
                            }
                        _mm512_mask_storeu_ps(y + (((size_t)b * g->OH + oh) * g->OW + ow) * C + c0, lanes, m);
                        continue;
                    }
                    int first = 1;
                    __m512 m = _mm512_setzero_ps();
                    for (uint32_t kh = 0; kh < g->KH; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const __m512 v = _mm512_maskz_loadu_ps(
                                lanes, x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0);
                            if (first) {
                                m = v;
                                first = 0;
                            } else {
                                const __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) |
                                                       _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                                m = _mm512_mask_mov_ps(m, take, v);
                            }
                        }
                    }
                    _mm512_mask_storeu_ps(y + (((size_t)b * g->OH + oh) * g->OW + ow) * C + c0, lanes, m);
                }
}

/* dx at the window's first tap equal to the maximum (or NaN where the maximum is) += dy */
MT_AVX512 void mt_op_max_pool2d_f32_backward_avx512(const float *x, const float *y, const float *dy, float *dx,
                                                    uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow)
                for (uint32_t c0 = 0; c0 < C; c0 += 16) {
                    const __mmask16 lanes = mt_lanes(C - c0);
                    const size_t o = (((size_t)b * g->OH + oh) * g->OW + ow) * C + c0;
                    const __m512 m = _mm512_maskz_loadu_ps(lanes, y + o), d = _mm512_maskz_loadu_ps(lanes, dy + o);
                    const __mmask16 m_nan = _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
                    __mmask16 open = lanes; /* lanes whose tap is not found yet */
                    uint32_t kh0, kh1, kw0, kw1;
                    mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
                    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                    if (kh0 == 0 && kw0 == 0 && kh1 == g->KH && kw1 == g->KW) { /* the whole window inside */
                        float *dxr = dx + (((size_t)b * g->H + oh * g->SH - g->PT) * g->W + ow * g->SW - g->PL) * C + c0;
                        const float *xr = x + (dxr - dx);
                        /* no branch on the data: which tap holds the maximum is random, and a
                         * store under an empty mask writes nothing */
                        for (uint32_t kh = 0; kh < g->KH; ++kh, xr += (size_t)g->W * C, dxr += (size_t)g->W * C)
                            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                                const __m512 v = _mm512_maskz_loadu_ps(lanes, xr + (size_t)kw * C);
                                const __mmask16 hit = open & (_mm512_cmp_ps_mask(v, m, _CMP_EQ_OQ) |
                                                              (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & m_nan));
                                float *dp = dxr + (size_t)kw * C;
                                _mm512_mask_storeu_ps(dp, hit, _mm512_add_ps(_mm512_maskz_loadu_ps(hit, dp), d));
                                open &= (__mmask16)~hit;
                            }
                        continue;
                    }
                    for (uint32_t kh = 0; kh < g->KH && open; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW && open; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const size_t i = (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0;
                            const __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
                            const __mmask16 hit = open & (_mm512_cmp_ps_mask(v, m, _CMP_EQ_OQ) |
                                                          (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & m_nan));
                            if (hit) _mm512_mask_storeu_ps(dx + i, hit, _mm512_add_ps(_mm512_maskz_loadu_ps(hit, dx + i), d));
                            open &= (__mmask16)~hit;
                        }
                    }
                }
}
#else
typedef int mt_pooling_x86_unused; /* ISO C: a translation unit is not empty */
#endif
