/*
 * Helpers of the x86 kernels (included by ops/x86/ *_avx512.c only, inside MT_X86_KERNELS), which
 * are written in AVX-512's 16-lane vocabulary and built twice (ops/x86/x86.h): for AVX-512F,
 * and with MT_X86_SHIM_AVX2 defined (ops/x86/<name>_avx2.c) for AVX2 over avx2_shim.h.
 * MT_X86_NAME(name) is a kernel's exported name in the build at hand: name_avx512 or name_avx2.
 */
#ifndef MT_OPS_X86_AVX512_H
#define MT_OPS_X86_AVX512_H

#include <immintrin.h>

#include "mt_fma.h"

#ifdef MT_X86_SHIM_AVX2
#include "ops/x86/avx2_shim.h"
#define MT_X86_NAME(name) name##_avx2
#define MT_AVX512 __attribute__((target("avx2,fma")))
#define MT_AVX512_INLINE static inline __attribute__((target("avx2,fma"), always_inline))
#else
#define MT_X86_NAME(name) name##_avx512
#define MT_AVX512 __attribute__((target("avx512f,fma")))
#define MT_AVX512_INLINE static inline __attribute__((target("avx512f,fma"), always_inline))
#endif

/* The first n of 16 lanes (n >= 16: all). */
MT_AVX512_INLINE __mmask16 mt_lanes(uint32_t n)
{
    return n >= 16u ? (__mmask16)0xFFFFu : (__mmask16)((1u << n) - 1u);
}

/* The elements of p before its first 64-byte line, at most n (< 16). The arena aligns tensors
 * to 16 bytes only; a loop that starts its whole blocks there loads each from one cache line,
 * where a load across two lines costs two (a head block under a mask takes the ones before). */
MT_AVX512_INLINE uint32_t mt_to_line(const float *p, size_t n)
{
    const size_t k = (64u - (uintptr_t)p % 64u) % 64u / sizeof(float);
    return (uint32_t)(k < n ? k : n);
}

/* The head a streaming loop over n elements at p peels: mt_to_line's for a long one, none for
 * a short one, whose extra masked block would cost more than its lines save (the tiny MLP's
 * step: +3%) */
MT_AVX512_INLINE uint32_t mt_stream_head(const float *p, size_t n)
{
    return n >= 1024u ? mt_to_line(p, n) : 0u;
}

MT_AVX512_INLINE uint32_t mt_min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* In-register 16 x 16 transpose: afterwards lane j of r[k] is what lane k of r[j] was. */
#ifdef MT_X86_SHIM_AVX2
#define mt_transpose16 mt_shim_transpose16
#else
MT_AVX512_INLINE void mt_transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int p = 0; p < 8; ++p) {
        t[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
    /* u[4g + k]: rows 4g..4g+3 at column 4L + k of 128-bit lane L */
    for (int g = 0; g < 4; ++g) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
        const __m512 x44 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44);
        const __m512 xee = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xEE);
        const __m512 y44 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
        const __m512 yee = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xEE);
        r[k] = _mm512_shuffle_f32x4(x44, y44, 0x88);
        r[4 + k] = _mm512_shuffle_f32x4(x44, y44, 0xDD);
        r[8 + k] = _mm512_shuffle_f32x4(xee, yee, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(xee, yee, 0xDD);
    }
}
#endif

/* Whether a group of rn rows of a Dense gradient takes the sparse blocks (dense_avx512.c,
 * dense_avx2_native.h): the terms that count (the set bits of masks) are at most eighths / 8 of its
 * J x rn, and m (J rows of I floats) holds no infinity or NaN, looked at once a call
 * (*m_finite: -1 not yet, then the answer) */
MT_AVX512_INLINE int mt_sparse_pays(const uint64_t *masks, uint32_t rn, uint32_t J, uint32_t eighths, const float *m,
                                    uint32_t I, int *m_finite)
{
    uint64_t counted = 0;
    for (uint32_t r = 0; r < rn; ++r) counted += (uint64_t)__builtin_popcountll(masks[r]);
    if (counted * 8u > (uint64_t)J * rn * eighths) return 0;
    if (*m_finite < 0) *m_finite = MT_X86_NAME(mt_all_finitef)(m, (size_t)J * I);
    return *m_finite;
}

/*
 * The sparse blocks' one exception (dense_avx512.c, dense_avx2_native.h): a sum that skips the terms
 * g·m with g = ±0 (m finite) has the full sum's bits unless it ends -0. A fused term rounds to
 * -0 when its exact value a·b + s lies in (-2^-150, 0), and from such a -0 a skipped term's
 * +0 makes the full sum +0 (-0 + +0 = +0) where the skipping one stays -0; elsewhere the two
 * sums hold the same value (s + ±0 = s for every other s), and from a -0 of one and +0 of the
 * other a counted term gives both the same bits or stays zero. So only sums that end -0 are
 * summed again, over all J terms in order, in sums[k] for the lanes k of `lanes`; rare (it
 * takes an underflow), hence out of line.
 */
static MT_AVX512 __attribute__((noinline, cold, unused)) void mt_resum_negative_zeros(float *sums, unsigned lanes,
                                                                                   const float *g, size_t gj,
                                                                                   const float *m, uint32_t I,
                                                                                   uint32_t J)
{
    for (uint32_t k = 0; lanes; ++k, lanes >>= 1) {
        if (!(lanes & 1u)) continue;
        float s = 0.0f;
        for (uint32_t j = 0; j < J; ++j) s = mt_fmaf(g[(size_t)j * gj], m[(size_t)j * I + k], s);
        sums[k] = s;
    }
}

/* The lanes of v whose bits are -0's */
MT_AVX512_INLINE __mmask16 mt_negative_zero_lanes(__m512 v)
{
    return _mm512_mask_cmpeq_epi32_mask(mt_lanes(16), _mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u));
}

/* acc + a·b as the reference writes it (mt_fma.h): one fused multiply-add, rounded once. */
MT_AVX512_INLINE __m512 mt_mac(__m512 acc, __m512 a, __m512 b)
{
    return _mm512_fmadd_ps(a, b, acc);
}

#endif /* MT_OPS_X86_AVX512_H */
