/*
 * AVX-512 siblings of the max-pooling kernels (ops/pooling.c), lanes across consecutive
 * channels; the same comparisons in the same window order, so the same bits and the same
 * routing of the gradient (ops/x86/x86.h). A window wholly inside the input (most of them)
 * takes a path without bounds checks whose memory accesses are unmasked: 16 channels a zmm,
 * then 8 a ymm (C = 8 is common; the AVX2 build: every 8), the last few masked. Unmasked, the gradient's add is a
 * blend: a lane whose tap is not the window's maximum is stored back unchanged.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/spatial.h"
#include "ops/x86/avx512.h"

/* Whole 16-lane blocks of channels (AVX-512 only: over the AVX2 shim their compare masks are
 * emulated, so that build takes 8 channels a ymm natively) */
#ifdef MT_X86_SHIM_AVX2
#define ZMM_BLOCKS 0
#else
#define ZMM_BLOCKS 1
#endif

/* m = v where v > m or v is NaN (the reference's rule: the first in-bounds value, then those) */
MT_AVX512_INLINE __m512 max_step(__m512 m, __m512 v)
{
    return _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
}

MT_AVX512_INLINE __m256 max_step8(__m256 m, __m256 v)
{
    const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_ps(m, v, take);
}

/* The maximum of a window wholly inside: xp its first tap, row the floats between rows */
MT_AVX512_INLINE void window_max(const float *xp, float *yp, uint32_t C, size_t row, uint32_t KH, uint32_t KW)
{
    uint32_t c0 = 0;
    for (; ZMM_BLOCKS && c0 + 16 <= C; c0 += 16) {
        __m512 m = _mm512_loadu_ps(xp + c0);
        for (uint32_t kh = 0; kh < KH; ++kh)
            for (uint32_t kw = kh == 0 ? 1 : 0; kw < KW; ++kw)
                m = max_step(m, _mm512_loadu_ps(xp + kh * row + (size_t)kw * C + c0));
        _mm512_storeu_ps(yp + c0, m);
    }
    for (; c0 + 8 <= C; c0 += 8) {
        __m256 m = _mm256_loadu_ps(xp + c0);
        for (uint32_t kh = 0; kh < KH; ++kh)
            for (uint32_t kw = kh == 0 ? 1 : 0; kw < KW; ++kw)
                m = max_step8(m, _mm256_loadu_ps(xp + kh * row + (size_t)kw * C + c0));
        _mm256_storeu_ps(yp + c0, m);
    }
    if (c0 < C) {
        const __mmask16 lanes = mt_lanes(C - c0);
        __m512 m = _mm512_maskz_loadu_ps(lanes, xp + c0);
        for (uint32_t kh = 0; kh < KH; ++kh)
            for (uint32_t kw = kh == 0 ? 1 : 0; kw < KW; ++kw)
                m = max_step(m, _mm512_maskz_loadu_ps(lanes, xp + kh * row + (size_t)kw * C + c0));
        _mm512_mask_storeu_ps(yp + c0, lanes, m);
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_max_pool2d_f32_forward)(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C;
    uint32_t lo, hi, row_lo, row_hi; /* the windows wholly inside: rows [row_lo, row_hi) x [lo, hi) */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
    mt_spatial_window_inside(g->OH, g->SH, g->PT, g->KH, g->H, &row_lo, &row_hi);
    const int two = g->KH == 2 && g->KW == 2;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                if (oh >= row_lo && oh < row_hi && ow >= lo && ow < hi) {
                    const float *xp = x + (((size_t)b * g->H + oh * g->SH - g->PT) * g->W + ow * g->SW - g->PL) * C;
                    if (two) window_max(xp, yp, C, row, 2, 2); /* 2 x 2, the common pool: unrolled */
                    else window_max(xp, yp, C, row, g->KH, g->KW);
                    continue;
                }
                for (uint32_t c0 = 0; c0 < C; c0 += 16) {
                    const __mmask16 lanes = mt_lanes(C - c0);
                    int first = 1;
                    __m512 m = _mm512_setzero_ps();
                    int32_t ih, iw;
                    MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                        const __m512 v = _mm512_maskz_loadu_ps(
                            lanes, x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0);
                        m = first ? v : max_step(m, v);
                        first = 0;
                    }
                    _mm512_mask_storeu_ps(yp + c0, lanes, m);
                }
            }
}

/* Lanes where v is the window's maximum m (or NaN where m is NaN) */
MT_AVX512_INLINE __mmask16 is_max(__m512 v, __m512 m, __mmask16 m_nan)
{
    return _mm512_cmp_ps_mask(v, m, _CMP_EQ_OQ) | (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & m_nan);
}

/* dx at the first tap of a window wholly inside equal to its maximum += dy; xp, dxp its first
 * tap. No branch on the data: which tap holds the maximum is random. */
MT_AVX512_INLINE void window_route(const float *xp, float *dxp, const float *yp, const float *dyp, uint32_t C,
                                   size_t row, uint32_t KH, uint32_t KW)
{
    uint32_t c0 = 0;
    for (; ZMM_BLOCKS && c0 + 16 <= C; c0 += 16) {
        const __m512 m = _mm512_loadu_ps(yp + c0), d = _mm512_loadu_ps(dyp + c0);
        const __mmask16 m_nan = _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
        __mmask16 open = 0xFFFF; /* lanes whose tap is not found yet */
        for (uint32_t kh = 0; kh < KH; ++kh)
            for (uint32_t kw = 0; kw < KW; ++kw) {
                const size_t i = kh * row + (size_t)kw * C + c0;
                const __mmask16 hit = open & is_max(_mm512_loadu_ps(xp + i), m, m_nan);
                const __m512 v = _mm512_loadu_ps(dxp + i);
                _mm512_storeu_ps(dxp + i, _mm512_mask_add_ps(v, hit, v, d));
                open &= (__mmask16)~hit;
            }
    }
    for (; c0 + 8 <= C; c0 += 8) {
        const __m256 m = _mm256_loadu_ps(yp + c0), d = _mm256_loadu_ps(dyp + c0);
        const __m256 m_nan = _mm256_cmp_ps(m, m, _CMP_UNORD_Q);
        __m256 open = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (uint32_t kh = 0; kh < KH; ++kh)
            for (uint32_t kw = 0; kw < KW; ++kw) {
                const size_t i = kh * row + (size_t)kw * C + c0;
                const __m256 v = _mm256_loadu_ps(xp + i);
                const __m256 eq = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_EQ_OQ),
                                               _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), m_nan));
                const __m256 hit = _mm256_and_ps(open, eq), t = _mm256_loadu_ps(dxp + i);
                _mm256_storeu_ps(dxp + i, _mm256_blendv_ps(t, _mm256_add_ps(t, d), hit));
                open = _mm256_andnot_ps(hit, open);
            }
    }
    if (c0 < C) {
        const __mmask16 lanes = mt_lanes(C - c0);
        const __m512 m = _mm512_maskz_loadu_ps(lanes, yp + c0), d = _mm512_maskz_loadu_ps(lanes, dyp + c0);
        const __mmask16 m_nan = _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
        __mmask16 open = lanes;
        for (uint32_t kh = 0; kh < KH; ++kh)
            for (uint32_t kw = 0; kw < KW; ++kw) {
                const size_t i = kh * row + (size_t)kw * C + c0;
                const __mmask16 hit = open & is_max(_mm512_maskz_loadu_ps(lanes, xp + i), m, m_nan);
                float *dp = dxp + i; /* the lanes not hit store their own bits back: a store under
                                      * the data's mask is slow on some cores */
                const __m512 t = _mm512_maskz_loadu_ps(lanes, dp);
                if (hit) _mm512_mask_storeu_ps(dp, lanes, _mm512_mask_add_ps(t, hit, t, d));
                open &= (__mmask16)~hit;
            }
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_max_pool2d_f32_backward)(const float *x, const float *y, const float *dy, float *dx,
                                                    uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C;
    uint32_t lo, hi, row_lo, row_hi;
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
    mt_spatial_window_inside(g->OH, g->SH, g->PT, g->KH, g->H, &row_lo, &row_hi);
    const int two = g->KH == 2 && g->KW == 2;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                const size_t o = (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                if (oh >= row_lo && oh < row_hi && ow >= lo && ow < hi) {
                    const size_t i = (((size_t)b * g->H + oh * g->SH - g->PT) * g->W + ow * g->SW - g->PL) * C;
                    if (two) window_route(x + i, dx + i, y + o, dy + o, C, row, 2, 2);
                    else window_route(x + i, dx + i, y + o, dy + o, C, row, g->KH, g->KW);
                    continue;
                }
                for (uint32_t c0 = 0; c0 < C; c0 += 16) {
                    const __mmask16 lanes = mt_lanes(C - c0);
                    const __m512 m = _mm512_maskz_loadu_ps(lanes, y + o + c0), d = _mm512_maskz_loadu_ps(lanes, dy + o + c0);
                    const __mmask16 m_nan = _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
                    __mmask16 open = lanes;
                    for (uint32_t kh = 0; kh < g->KH && open; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < g->KW && open; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const size_t i = (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0;
                            const __mmask16 hit = open & is_max(_mm512_maskz_loadu_ps(lanes, x + i), m, m_nan);
                            if (hit) { /* the lanes not hit store their own bits back (as above) */
                                const __m512 t = _mm512_maskz_loadu_ps(lanes, dx + i);
                                _mm512_mask_storeu_ps(dx + i, lanes, _mm512_mask_add_ps(t, hit, t, d));
                            }
                            open &= (__mmask16)~hit;
                        }
                    }
                }
            }
}
#else
typedef int mt_pooling_x86_unused; /* ISO C: a translation unit is not empty */
#endif
