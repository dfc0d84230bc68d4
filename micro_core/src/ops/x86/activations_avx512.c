/*
 * ReLU (ops/activations.c) in AVX-512's sixteen lanes, and over the shim in AVX2's: the
 * reference's comparisons element by element, so the same bits. Compiles to nothing off x86-64.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/x86/avx512.h"

/* ReLU (activations.c): y = x < 0 ? 0 : x;  dx += dy where y > 0 (elsewhere dx keeps its bits) */
MT_AVX512 void MT_X86_NAME(mt_op_relu_f32_forward)(const float *x, float *y, size_t N)
{
    const __m512 zero = _mm512_setzero_ps();
    for (size_t i = 0; i < N; i += 16) {
        const __mmask16 m = mt_lanes((uint32_t)(N - i < 16 ? N - i : 16));
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero));
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_relu_f32_backward)(const float *y, const float *dy, float *dx, size_t N)
{
    const __m512 zero = _mm512_setzero_ps();
    for (size_t i = 0; i < N; i += 16) { /* lanes that do not pass store dx's own bits back */
        const __mmask16 m = mt_lanes((uint32_t)(N - i < 16 ? N - i : 16));
        const __mmask16 pass = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, y + i), zero, _CMP_GT_OQ);
        const __m512 d = _mm512_maskz_loadu_ps(m, dx + i);
        _mm512_mask_storeu_ps(dx + i, m, _mm512_mask_add_ps(d, pass, d, _mm512_maskz_loadu_ps(m, dy + i)));
    }
}
#else
typedef int mt_activations_x86_unused; /* ISO C: a translation unit is not empty */
#endif
