/*
 * What the x86 kernels of several ops share, built with each of them whichever ops MT_OPS
 * selects (ops/x86/x86.h declares them, for both builds): the bias gradient, the all-finite
 * test and the fused activations, and from those the activation_bias_f32_backward slot of the
 * kernel table (a pointwise Conv2D's dz and bias gradient). Compiles to nothing off x86-64.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/spatial.h"
#include "ops/x86/avx512.h"

/* dbias[c0 + ·] += Σ_p dy[p, c0 + ·] over nv vectors of channels; nv is a constant where it
 * is inlined, so the sums stay in registers (one chain per channel, in ascending p) */
MT_AVX512_INLINE void bias_block(const float *dy, float *dbias, size_t P, uint32_t C, uint32_t c0, uint32_t nv)
{
    __m512 acc[4];
    __mmask16 mask[4] = {0, 0, 0, 0};
    for (uint32_t v = 0; v < nv; ++v) {
        mask[v] = mt_lanes(C - c0 - 16 * v);
        acc[v] = _mm512_setzero_ps();
    }
    const float *row = dy + c0;
    for (size_t p = 0; p < P; ++p, row += C)
        for (uint32_t v = 0; v < nv; ++v) acc[v] = _mm512_add_ps(acc[v], _mm512_maskz_loadu_ps(mask[v], row + 16 * v));
    for (uint32_t v = 0; v < nv; ++v) {
        float *o = dbias + c0 + 16 * v;
        _mm512_mask_storeu_ps(o, mask[v], _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], o), acc[v]));
    }
}

/* dbias[c] += Σ_p dy[p, c], each sum from 0 in ascending p; lanes: 16 consecutive c */
MT_AVX512 void MT_X86_NAME(mt_op_bias_f32_backward)(const float *dy, float *dbias, size_t P, uint32_t C)
{
    uint32_t c0 = 0;
    for (; c0 + 64 <= C; c0 += 64) bias_block(dy, dbias, P, C, c0, 4);
    if (C - c0 > 32) bias_block(dy, dbias, P, C, c0, (C - c0 + 15) / 16 == 4 ? 4 : 3);
    else if (C - c0 > 16) bias_block(dy, dbias, P, C, c0, 2);
    else if (C > c0) bias_block(dy, dbias, P, C, c0, 1);
}

/* mt_all_finitef: no element has the all-ones exponent of an infinity or NaN */
MT_AVX512 int MT_X86_NAME(mt_all_finitef)(const float *x, size_t n)
{
    const __m512i exponent = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = mt_lanes((uint32_t)(n - i < 16 ? n - i : 16));
        const __m512i v = _mm512_and_si512(_mm512_maskz_loadu_epi32(m, x + i), exponent);
        bad |= _mm512_mask_cmpeq_epi32_mask(m, v, exponent);
    }
    return bad == 0;
}

/* y = max(y, 0) with NaN kept (the reference's y < 0 ? 0 : y), then min(·, 6) for ReLU6 */
MT_AVX512 void MT_X86_NAME(mt_fused_activation_forward)(uint32_t activation, float *y, size_t N)
{
    if (activation == MT_FUSED_NONE) return;
    const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    for (size_t i = 0; i < N; i += 16) {
        const __mmask16 m = mt_lanes((uint32_t)(N - i < 16 ? N - i : 16));
        __m512 v = _mm512_maskz_loadu_ps(m, y + i);
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
        if (activation == MT_FUSED_RELU6) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, six, _CMP_GT_OQ), six);
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* dy = 0 where the activation's derivative is 0: not (y > 0 and, for ReLU6, y < 6) */
MT_AVX512 void MT_X86_NAME(mt_fused_activation_backward)(uint32_t activation, const float *y, float *dy, size_t N)
{
    if (activation == MT_FUSED_NONE) return;
    const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    for (size_t i = 0; i < N; i += 16) {
        const __mmask16 m = mt_lanes((uint32_t)(N - i < 16 ? N - i : 16));
        const __m512 v = _mm512_maskz_loadu_ps(m, y + i);
        __mmask16 pass = _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ);
        if (activation == MT_FUSED_RELU6) pass &= _mm512_cmp_ps_mask(v, six, _CMP_LT_OQ);
        /* every lane stored (a passing one with its own bits): a store under the data's mask
         * is slow on some cores */
        _mm512_mask_storeu_ps(dy + i, m, _mm512_mask_mov_ps(zero, pass, _mm512_maskz_loadu_ps(m, dy + i)));
    }
}

/* dz = dy·act'(y) in place, then dbias += Σ_p dz (select/kernels.def) */
MT_AVX512 void MT_X86_NAME(mt_activation_bias_f32_backward)(uint32_t act, const float *y, float *dy, float *dbias,
                                                             size_t P, uint32_t C)
{
    MT_X86_NAME(mt_fused_activation_backward)(act, y, dy, P * C);
    if (dbias) MT_X86_NAME(mt_op_bias_f32_backward)(dy, dbias, P, C);
}
#else
typedef int mt_gradient_x86_unused; /* ISO C: a translation unit is not empty */
#endif
