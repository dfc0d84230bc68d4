/*
 * mt_expf (mt_math.c) on sixteen lanes: the same float operations in the same order, so
 * the same bits (tests/core/test_kernel_siblings.c sweeps it against mt_expf). Lanes whose
 * argument is NaN, infinite or outside the range where 2^n is a normal float are left to the
 * scalar function; the rest take the vector path. Softmax and the softmax
 * cross-entropy call it a row at a time (ops/x86/x86.h).
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "mt_math.h"
#include "ops/x86/avx512.h"

MT_AVX512 void MT_X86_NAME(mt_expf_shifted)(const float *x, float m, float *out, uint32_t n)
{
    for (uint32_t j0 = 0; j0 < n; j0 += 16) {
        const uint32_t c = mt_min_u32(16, n - j0);
        const __mmask16 lanes = mt_lanes(c);
        const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, x + j0), _mm512_set1_ps(m));
        /* n = (int)(fn ± 0.5), fn = v / ln 2 (truncation toward zero, as the cast) */
        const __m512 fn = _mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f));
        const __mmask16 nonneg = _mm512_cmp_ps_mask(fn, _mm512_setzero_ps(), _CMP_GE_OQ);
        const __m512 half = _mm512_mask_blend_ps(nonneg, _mm512_set1_ps(-0.5f), _mm512_set1_ps(0.5f));
        const __m512i k = _mm512_cvttps_epi32(_mm512_add_ps(fn, half));
        /* the scalar function's ordinary path is -126 <= n <= 127 (2^n a normal float): that
         * excludes its early returns (v > 88.72283935546875 gives n >= 128, v < -103.972084
         * n <= -150) and NaN and infinities (the conversion gives INT_MIN) */
        const __mmask16 in_range = lanes & _mm512_cmpge_epi32_mask(k, _mm512_set1_epi32(-126)) &
                                   _mm512_cmple_epi32_mask(k, _mm512_set1_epi32(127));
        const __m512 kf = _mm512_cvtepi32_ps(k);
        __m512 r = _mm512_sub_ps(v, _mm512_mul_ps(kf, _mm512_set1_ps(0.693359375f)));
        r = _mm512_sub_ps(r, _mm512_mul_ps(kf, _mm512_set1_ps(-2.12194440e-4f)));
        __m512 p;
        MT_EXPF_SERIES(p, r, _mm512_add_ps, _mm512_mul_ps, _mm512_set1_ps);
        const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23));
        _mm512_mask_storeu_ps(out + j0, in_range, _mm512_mul_ps(p, scale));
        for (__mmask16 rest = lanes & (__mmask16)~in_range; rest; rest &= (__mmask16)(rest - 1)) {
            const uint32_t j = (uint32_t)__builtin_ctz(rest);
            out[j0 + j] = mt_expf(x[j0 + j] - m);
        }
    }
}
#else
typedef int mt_exp_x86_unused; /* ISO C: a translation unit is not empty */
#endif
