/*
 * The AVX2 build of the x86 kernels (ops/x86/x86.h): the 16-lane AVX-512 vocabulary they are
 * written in — __m512, __m512i, __mmask16 and the _mm512_* intrinsics they use — given by
 * pairs of 8-lane AVX2 vectors. Included by avx512.h, only when MT_X86_SHIM_AVX2 is defined
 * (ops/x86/<name>_avx2.c), after <immintrin.h>.
 *
 * Why the bits stay the reference's: every operation here is the same IEEE operation on the
 * same lane (lanes 0..7 in .lo, 8..15 in .hi) — VADDPS/VMULPS/VSUBPS/VDIVPS/VSQRTPS and the
 * fused VFMADD are correctly rounded at either width, comparisons and conversions are defined per lane, and
 * the rest only moves bits. A __mmask16 stays a 16-bit integer; a masked load or store turns
 * it into two lane masks for VMASKMOVPS, which like AVX-512 masking neither reads nor faults
 * on a masked-off lane. Only speed differs: 16 ymm registers hold half of what 32 zmm do, so
 * the kernels pick smaller blocks under MT_X86_SHIM_AVX2.
 */
#ifndef MT_OPS_X86_AVX2_SHIM_H
#define MT_OPS_X86_AVX2_SHIM_H

#define MT_SHIM static inline __attribute__((target("avx2,fma"), always_inline))

typedef struct {
    __m256 lo, hi;
} mt_v16;
typedef struct {
    __m256i lo, hi;
} mt_v16i;
typedef struct {
    __m256d lo, hi;
} mt_v16d;

/* lane j all ones where bit j of bits is set (j < 8) */
MT_SHIM __m256i mt_shim_lanes8(unsigned bits)
{
    const __m256i pos = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), pos), pos);
}

MT_SHIM __mmask16 mt_shim_bits(__m256 lo, __m256 hi)
{
    return (__mmask16)((unsigned)_mm256_movemask_ps(lo) | ((unsigned)_mm256_movemask_ps(hi) << 8));
}

MT_SHIM __mmask16 mt_shim_bitsi(__m256i lo, __m256i hi)
{
    return mt_shim_bits(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi));
}

MT_SHIM mt_v16 mt_shim_pair(__m256 lo, __m256 hi)
{
    mt_v16 r = {lo, hi};
    return r;
}

MT_SHIM mt_v16i mt_shim_pairi(__m256i lo, __m256i hi)
{
    mt_v16i r = {lo, hi};
    return r;
}

MT_SHIM mt_v16 mt_shim_setzero_ps(void)
{
    return mt_shim_pair(_mm256_setzero_ps(), _mm256_setzero_ps());
}

MT_SHIM mt_v16 mt_shim_set1_ps(float f)
{
    return mt_shim_pair(_mm256_set1_ps(f), _mm256_set1_ps(f));
}

MT_SHIM mt_v16 mt_shim_loadu_ps(const void *p)
{
    const float *f = (const float *)p;
    return mt_shim_pair(_mm256_loadu_ps(f), _mm256_loadu_ps(f + 8));
}

MT_SHIM void mt_shim_storeu_ps(void *p, mt_v16 v)
{
    float *f = (float *)p;
    _mm256_storeu_ps(f, v.lo), _mm256_storeu_ps(f + 8, v.hi);
}

/* 8 lanes under mask bits (< 256): all of them and none are plain (VMASKMOVPS is slow on
 * some cores, AMD's stores above all) */
MT_SHIM __m256 mt_shim_maskz_load8(unsigned bits, const float *f)
{
    if (bits == 0xFFu) return _mm256_loadu_ps(f);
    if (bits == 0u) return _mm256_setzero_ps();
    return _mm256_maskload_ps(f, mt_shim_lanes8(bits));
}

MT_SHIM void mt_shim_mask_store8(float *f, unsigned bits, __m256 v)
{
    if (bits == 0xFFu) _mm256_storeu_ps(f, v);
    else if (bits != 0u) _mm256_maskstore_ps(f, mt_shim_lanes8(bits), v);
}

MT_SHIM mt_v16 mt_shim_maskz_loadu_ps(__mmask16 m, const void *p)
{
    const float *f = (const float *)p;
    return mt_shim_pair(mt_shim_maskz_load8(m & 0xFFu, f), mt_shim_maskz_load8((unsigned)m >> 8, f + 8));
}

MT_SHIM mt_v16i mt_shim_maskz_loadu_epi32(__mmask16 m, const void *p)
{
    const int *q = (const int *)p;
    return mt_shim_pairi(_mm256_maskload_epi32(q, mt_shim_lanes8(m & 0xFFu)),
                         _mm256_maskload_epi32(q + 8, mt_shim_lanes8(m >> 8)));
}

MT_SHIM void mt_shim_mask_storeu_ps(void *p, __mmask16 m, mt_v16 v)
{
    float *f = (float *)p;
    mt_shim_mask_store8(f, m & 0xFFu, v.lo);
    mt_shim_mask_store8(f + 8, (unsigned)m >> 8, v.hi);
}

#define MT_SHIM_BINARY(name, op)                                                                                 \
    MT_SHIM mt_v16 mt_shim_##name(mt_v16 a, mt_v16 b)                                                            \
    {                                                                                                            \
        return mt_shim_pair(op(a.lo, b.lo), op(a.hi, b.hi));                                                     \
    }
MT_SHIM_BINARY(add_ps, _mm256_add_ps)
MT_SHIM_BINARY(sub_ps, _mm256_sub_ps)
MT_SHIM_BINARY(mul_ps, _mm256_mul_ps)
MT_SHIM_BINARY(div_ps, _mm256_div_ps)
#undef MT_SHIM_BINARY

MT_SHIM mt_v16 mt_shim_sqrt_ps(mt_v16 a)
{
    return mt_shim_pair(_mm256_sqrt_ps(a.lo), _mm256_sqrt_ps(a.hi));
}

MT_SHIM mt_v16 mt_shim_abs_ps(mt_v16 a)
{
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    return mt_shim_pair(_mm256_and_ps(a.lo, magnitude), _mm256_and_ps(a.hi, magnitude));
}

/* lanes of a where k is set, else src's */
MT_SHIM mt_v16 mt_shim_mask_mov_ps(mt_v16 src, __mmask16 k, mt_v16 a)
{
    return mt_shim_pair(_mm256_blendv_ps(src.lo, a.lo, _mm256_castsi256_ps(mt_shim_lanes8(k & 0xFFu))),
                        _mm256_blendv_ps(src.hi, a.hi, _mm256_castsi256_ps(mt_shim_lanes8(k >> 8))));
}

MT_SHIM mt_v16 mt_shim_mask_add_ps(mt_v16 src, __mmask16 k, mt_v16 a, mt_v16 b)
{
    return mt_shim_mask_mov_ps(src, k, mt_shim_add_ps(a, b));
}

/* a·b + c fused (VFMADD, rounded once: the same bits at either width) */
MT_SHIM mt_v16 mt_shim_fmadd_ps(mt_v16 a, mt_v16 b, mt_v16 c)
{
    return mt_shim_pair(_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi));
}

/* a·b + c where k is set, else c's lanes */
MT_SHIM mt_v16 mt_shim_mask3_fmadd_ps(mt_v16 a, mt_v16 b, mt_v16 c, __mmask16 k)
{
    return mt_shim_mask_mov_ps(c, k, mt_shim_fmadd_ps(a, b, c));
}

/* lanes of b where k is set, else a's */
MT_SHIM mt_v16 mt_shim_mask_blend_ps(__mmask16 k, mt_v16 a, mt_v16 b)
{
    return mt_shim_mask_mov_ps(a, k, b);
}

/* the predicate is an immediate, so a macro: each operand evaluated once */
#define mt_shim_cmp_ps_mask(a, b, predicate)                                                                     \
    __extension__({                                                                                              \
        const mt_v16 mt_shim_a_ = (a), mt_shim_b_ = (b);                                                         \
        mt_shim_bits(_mm256_cmp_ps(mt_shim_a_.lo, mt_shim_b_.lo, predicate),                                     \
                     _mm256_cmp_ps(mt_shim_a_.hi, mt_shim_b_.hi, predicate));                                    \
    })

MT_SHIM mt_v16i mt_shim_set1_epi32(int v)
{
    return mt_shim_pairi(_mm256_set1_epi32(v), _mm256_set1_epi32(v));
}

/* _mm512_set_epi32's order: the first argument is lane 15 */
#define mt_shim_set_epi32(e15, e14, e13, e12, e11, e10, e9, e8, e7, e6, e5, e4, e3, e2, e1, e0)                   \
    mt_shim_pairi(_mm256_set_epi32(e7, e6, e5, e4, e3, e2, e1, e0), _mm256_set_epi32(e15, e14, e13, e12, e11, e10, e9, e8))

MT_SHIM mt_v16i mt_shim_and_si512(mt_v16i a, mt_v16i b)
{
    return mt_shim_pairi(_mm256_and_si256(a.lo, b.lo), _mm256_and_si256(a.hi, b.hi));
}

MT_SHIM mt_v16i mt_shim_add_epi32(mt_v16i a, mt_v16i b)
{
    return mt_shim_pairi(_mm256_add_epi32(a.lo, b.lo), _mm256_add_epi32(a.hi, b.hi));
}

MT_SHIM mt_v16i mt_shim_max_epu32(mt_v16i a, mt_v16i b)
{
    return mt_shim_pairi(_mm256_max_epu32(a.lo, b.lo), _mm256_max_epu32(a.hi, b.hi));
}

#define mt_shim_slli_epi32(a, count)                                                                             \
    __extension__({                                                                                              \
        const mt_v16i mt_shim_s_ = (a);                                                                          \
        mt_shim_pairi(_mm256_slli_epi32(mt_shim_s_.lo, count), _mm256_slli_epi32(mt_shim_s_.hi, count));         \
    })

MT_SHIM mt_v16i mt_shim_castps_si512(mt_v16 a)
{
    return mt_shim_pairi(_mm256_castps_si256(a.lo), _mm256_castps_si256(a.hi));
}

MT_SHIM mt_v16 mt_shim_castsi512_ps(mt_v16i a)
{
    return mt_shim_pair(_mm256_castsi256_ps(a.lo), _mm256_castsi256_ps(a.hi));
}

MT_SHIM mt_v16d mt_shim_set1_pd(double d)
{
    mt_v16d r = {_mm256_set1_pd(d), _mm256_set1_pd(d)};
    return r;
}

MT_SHIM mt_v16 mt_shim_castpd_ps(mt_v16d a)
{
    return mt_shim_pair(_mm256_castpd_ps(a.lo), _mm256_castpd_ps(a.hi));
}

/* truncation toward 0; out of range (and NaN) gives 0x80000000 at either width */
MT_SHIM mt_v16i mt_shim_cvttps_epi32(mt_v16 a)
{
    return mt_shim_pairi(_mm256_cvttps_epi32(a.lo), _mm256_cvttps_epi32(a.hi));
}

MT_SHIM mt_v16 mt_shim_cvtepi32_ps(mt_v16i a)
{
    return mt_shim_pair(_mm256_cvtepi32_ps(a.lo), _mm256_cvtepi32_ps(a.hi));
}

MT_SHIM __mmask16 mt_shim_cmpge_epi32_mask(mt_v16i a, mt_v16i b) /* a >= b: not b > a */
{
    return (__mmask16) ~mt_shim_bitsi(_mm256_cmpgt_epi32(b.lo, a.lo), _mm256_cmpgt_epi32(b.hi, a.hi));
}

MT_SHIM __mmask16 mt_shim_cmple_epi32_mask(mt_v16i a, mt_v16i b) /* a <= b: not a > b */
{
    return (__mmask16) ~mt_shim_bitsi(_mm256_cmpgt_epi32(a.lo, b.lo), _mm256_cmpgt_epi32(a.hi, b.hi));
}

MT_SHIM __mmask16 mt_shim_mask_cmpeq_epi32_mask(__mmask16 k, mt_v16i a, mt_v16i b)
{
    return (__mmask16)(k & mt_shim_bitsi(_mm256_cmpeq_epi32(a.lo, b.lo), _mm256_cmpeq_epi32(a.hi, b.hi)));
}

/* lane i = a[idx[i] mod 16]: each half permuted from both halves of a, bit 3 of the index
 * choosing which */
MT_SHIM mt_v16 mt_shim_permutexvar_ps(mt_v16i idx, mt_v16 a)
{
    __m256 r[2];
    const __m256i half[2] = {idx.lo, idx.hi};
    for (int h = 0; h < 2; ++h) {
        const __m256 from_hi = _mm256_castsi256_ps(_mm256_slli_epi32(half[h], 28)); /* bit 3 to the sign */
        r[h] = _mm256_blendv_ps(_mm256_permutevar8x32_ps(a.lo, half[h]), _mm256_permutevar8x32_ps(a.hi, half[h]),
                                from_hi);
    }
    return mt_shim_pair(r[0], r[1]);
}

/* In-register 8 x 8 transpose: afterwards lane j of r[k] is what lane k of r[j] was. */
MT_SHIM void mt_shim_transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int p = 0; p < 4; ++p) {
        t[2 * p] = _mm256_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        t[2 * p + 1] = _mm256_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
    for (int g = 0; g < 2; ++g) {
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
        r[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
        r[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
    }
}

/* avx512.h's mt_transpose16 on pairs: the four 8 x 8 quarters transposed, the off-diagonal
 * ones swapped */
MT_SHIM void mt_shim_transpose16(mt_v16 r[16])
{
    __m256 q[4][8]; /* q[2·rowhalf + colhalf][row] */
    for (int j = 0; j < 8; ++j) q[0][j] = r[j].lo, q[1][j] = r[j].hi, q[2][j] = r[8 + j].lo, q[3][j] = r[8 + j].hi;
    for (int s = 0; s < 4; ++s) mt_shim_transpose8(q[s]);
    for (int j = 0; j < 8; ++j) r[j].lo = q[0][j], r[j].hi = q[2][j], r[8 + j].lo = q[1][j], r[8 + j].hi = q[3][j];
}

/* the kernels' spelling, mapped onto the pairs (the names may be macros in <immintrin.h>) */
#undef __m512
#undef __m512i
#undef __m512d
#define __m512 mt_v16
#define __m512i mt_v16i
#define __m512d mt_v16d
#undef _mm512_setzero_ps
#define _mm512_setzero_ps mt_shim_setzero_ps
#undef _mm512_set1_ps
#define _mm512_set1_ps mt_shim_set1_ps
#undef _mm512_loadu_ps
#define _mm512_loadu_ps mt_shim_loadu_ps
#undef _mm512_storeu_ps
#define _mm512_storeu_ps mt_shim_storeu_ps
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps mt_shim_maskz_loadu_ps
#undef _mm512_maskz_loadu_epi32
#define _mm512_maskz_loadu_epi32 mt_shim_maskz_loadu_epi32
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps mt_shim_mask_storeu_ps
#undef _mm512_add_ps
#define _mm512_add_ps mt_shim_add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps mt_shim_sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps mt_shim_mul_ps
#undef _mm512_div_ps
#define _mm512_div_ps mt_shim_div_ps
#undef _mm512_sqrt_ps
#define _mm512_sqrt_ps mt_shim_sqrt_ps
#undef _mm512_abs_ps
#define _mm512_abs_ps mt_shim_abs_ps
#undef _mm512_mask_mov_ps
#define _mm512_mask_mov_ps mt_shim_mask_mov_ps
#undef _mm512_mask_add_ps
#define _mm512_mask_add_ps mt_shim_mask_add_ps
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps mt_shim_fmadd_ps
#undef _mm512_mask3_fmadd_ps
#define _mm512_mask3_fmadd_ps mt_shim_mask3_fmadd_ps
#undef _mm512_mask_blend_ps
#define _mm512_mask_blend_ps mt_shim_mask_blend_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask mt_shim_cmp_ps_mask
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 mt_shim_set1_epi32
#undef _mm512_set_epi32
#define _mm512_set_epi32 mt_shim_set_epi32
#undef _mm512_and_si512
#define _mm512_and_si512 mt_shim_and_si512
#undef _mm512_add_epi32
#define _mm512_add_epi32 mt_shim_add_epi32
#undef _mm512_max_epu32
#define _mm512_max_epu32 mt_shim_max_epu32
#undef _mm512_slli_epi32
#define _mm512_slli_epi32 mt_shim_slli_epi32
#undef _mm512_castps_si512
#define _mm512_castps_si512 mt_shim_castps_si512
#undef _mm512_castsi512_ps
#define _mm512_castsi512_ps mt_shim_castsi512_ps
#undef _mm512_set1_pd
#define _mm512_set1_pd mt_shim_set1_pd
#undef _mm512_castpd_ps
#define _mm512_castpd_ps mt_shim_castpd_ps
#undef _mm512_cvttps_epi32
#define _mm512_cvttps_epi32 mt_shim_cvttps_epi32
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps mt_shim_cvtepi32_ps
#undef _mm512_cmpge_epi32_mask
#define _mm512_cmpge_epi32_mask mt_shim_cmpge_epi32_mask
#undef _mm512_cmple_epi32_mask
#define _mm512_cmple_epi32_mask mt_shim_cmple_epi32_mask
#undef _mm512_mask_cmpeq_epi32_mask
#define _mm512_mask_cmpeq_epi32_mask mt_shim_mask_cmpeq_epi32_mask
#undef _mm512_permutexvar_ps
#define _mm512_permutexvar_ps mt_shim_permutexvar_ps

#endif /* MT_OPS_X86_AVX2_SHIM_H */
