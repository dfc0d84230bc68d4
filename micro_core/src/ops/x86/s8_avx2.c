/*
 * AVX2 forms of the int8 siblings' inner products, run requantization (ops/portable/s8_dot.h) and
 * depthwise interior pixels (ops/portable/conv_s8_portable.c), chosen at run time
 * where the CPU has AVX2 (mt_x86_vector(); the AVX-512 CPUs take them too: int8 sums need no
 * wider lanes to keep their bits). Integer sums are exact in any order, so the bytes are the
 * portable kernels' (tests/core/test_int8_siblings.c runs the cases at every level the CPU
 * has). One build: nothing here depends on the vector width of the float kernels.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include <immintrin.h>
#include <string.h>

#include "ops/x86/s8_avx2.h"

#define MT_AVX2 __attribute__((target("avx2")))
#define MT_AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))

/* The four int32 sums of a, b, c, d (eight lanes each), in lanes 0..3 */
MT_AVX2_INLINE __m128i sums4(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    const __m256i abcd = _mm256_hadd_epi32(ab, cd); /* per 128-bit half: a, b, c, d partial sums */
    return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

/* 16 int8 at p, sign-extended to int16 */
MT_AVX2_INLINE __m256i widen16(const int8_t *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* a += the eight pair sums of x's and w's 16 int16 products (VPMADDWD: |a pair| <= 2·128²) */
MT_AVX2_INLINE __m256i madd(__m256i a, __m256i x, __m256i w)
{
    return _mm256_add_epi32(a, _mm256_madd_epi16(x, w));
}

/*
 * acc[4·j + r] = start[r] + Σ_{i<D} W[r, i]·x[j·D + i]: two pixels at a time, each 16 inputs
 * sign-extended to int16 once (VPMOVSXBW) and VPMADDWD against each row's 16 weights (one
 * weight row read for both pixels): pairs of products summed into eight int32 lanes, which
 * wrap as the portable sums do. The last D mod 16 inputs are one more such step whose
 * weight lanes outside the tail are 0 (below). The lanes' totals are summed horizontally at
 * the pixel's end.
 */
MT_AVX2 void mt_s8_dot4_pixels_avx2(const int8_t *x, const int8_t *w, size_t D, uint32_t n, const int32_t start[4],
                                    int32_t *acc)
{
    const size_t whole = D & ~(size_t)15, tail = D - whole;
    const __m128i s = _mm_loadu_si128((const __m128i *)(const void *)start);
    const int8_t *w1 = w + D, *w2 = w + 2 * D, *w3 = w + 3 * D;
    /* The tail step: a row of 16 or more reads x's and each weight row's last 16 bytes, the
     * weights' first 16 - tail lanes masked to 0 (those inputs' terms are already in). A
     * shorter row reads 16 bytes from x's start where the call's pixels still hold that
     * many (the lanes past D are the next pixel's, against weights padded with zeros), else
     * a copy; its weight rows are copied once a call. No read passes the rows given. */
    static const int8_t lanes_from[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    const size_t back = whole ? 16 - tail : 0; /* x's tail vector starts this far before the tail */
    __m256i t0, t1, t2, t3;
    int8_t xt[2][16] = {{0}};
    if (whole) {
        const __m128i keep = _mm_loadu_si128((const __m128i *)(const void *)(lanes_from + tail));
#define S8_TAIL(row) \
    _mm256_cvtepi8_epi16(_mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)((row) + D - 16)), keep))
        t0 = S8_TAIL(w), t1 = S8_TAIL(w1), t2 = S8_TAIL(w2), t3 = S8_TAIL(w3);
#undef S8_TAIL
    } else {
        int8_t wt[4][16] = {{0}};
        for (uint32_t r = 0; r < 4; ++r) memcpy(wt[r], w + r * D, tail);
        t0 = widen16(wt[0]), t1 = widen16(wt[1]), t2 = widen16(wt[2]), t3 = widen16(wt[3]);
    }
    const size_t held = (size_t)n * D; /* bytes of x from the first pixel on */
    uint32_t j = 0;
    for (; j + 2 <= n; j += 2, x += 2 * D, acc += 8) {
        const int8_t *y = x + D; /* the second pixel */
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (size_t i = 0; i < whole; i += 16) {
            const __m256i xa = widen16(x + i), xb = widen16(y + i);
            __m256i wv = widen16(w + i);
            a0 = madd(a0, xa, wv), b0 = madd(b0, xb, wv);
            wv = widen16(w1 + i);
            a1 = madd(a1, xa, wv), b1 = madd(b1, xb, wv);
            wv = widen16(w2 + i);
            a2 = madd(a2, xa, wv), b2 = madd(b2, xb, wv);
            wv = widen16(w3 + i);
            a3 = madd(a3, xa, wv), b3 = madd(b3, xb, wv);
        }
        if (tail) {
            const int8_t *xs = x + whole - back, *ys = y + whole - back;
            if (!whole && held - (size_t)(j + 1) * D < 16) /* y (and maybe x) within 16 bytes of the end */
                memcpy(xt[0], x, tail), memcpy(xt[1], y, tail), xs = xt[0], ys = xt[1];
            const __m256i xa = widen16(xs), xb = widen16(ys);
            a0 = madd(a0, xa, t0), b0 = madd(b0, xb, t0), a1 = madd(a1, xa, t1), b1 = madd(b1, xb, t1);
            a2 = madd(a2, xa, t2), b2 = madd(b2, xb, t2), a3 = madd(a3, xa, t3), b3 = madd(b3, xb, t3);
        }
        _mm_storeu_si128((__m128i *)(void *)acc, _mm_add_epi32(s, sums4(a0, a1, a2, a3)));
        _mm_storeu_si128((__m128i *)(void *)(acc + 4), _mm_add_epi32(s, sums4(b0, b1, b2, b3)));
    }
    if (j < n) { /* an odd last pixel */
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        for (size_t i = 0; i < whole; i += 16) {
            const __m256i xa = widen16(x + i);
            a0 = madd(a0, xa, widen16(w + i)), a1 = madd(a1, xa, widen16(w1 + i));
            a2 = madd(a2, xa, widen16(w2 + i)), a3 = madd(a3, xa, widen16(w3 + i));
        }
        if (tail) {
            const int8_t *xs = x + whole - back;
            if (!whole) memcpy(xt[0], x, tail), xs = xt[0]; /* the call's last pixel */
            const __m256i xa = widen16(xs);
            a0 = madd(a0, xa, t0), a1 = madd(a1, xa, t1), a2 = madd(a2, xa, t2), a3 = madd(a3, xa, t3);
        }
        _mm_storeu_si128((__m128i *)(void *)acc, _mm_add_epi32(s, sums4(a0, a1, a2, a3)));
    }
}

/*
 * The requantization of sums acc[4·j + r] (bias included) for n pixels and R <= 4 channels:
 * y[j·ys + r] = clamp(mt_q_scale(acc, q[r]) + zy, lo, hi), two pixels' four channels as the
 * eight int32 lanes of a vector, each lane with its channel's constants. mt_q_scale's two
 * forms (ops/quant.h), computed in 64-bit lanes (VPMULDQ takes the even 32-bit lanes, so the
 * odd ones are shifted down and multiplied apart), then chosen per lane:
 *   right = 0: P = (sum << left)·M + 2^30, the result P >> 31 (its low word);
 *   right = e >= 1: P = sum·M + 2^30, P += (half - [P < 0])·2^31, the result
 *     (P >> 32) >> (e - 1), arithmetic (VPSRAVD on the high words).
 * Then + zy and the clamp in int32, packed to bytes with saturation (the values are already
 * in range, so it changes nothing), and each pixel's R bytes stored.
 */
MT_AVX2 void mt_s8_requant_block_avx2(const int32_t *acc, uint32_t n, uint32_t R, const mt_q_requant q[4],
                                      mt_q_params p, int8_t *y, size_t ys)
{
    int32_t mult[8], left[8], shift[8], half[8], plain[8];
    for (uint32_t l = 0; l < 8; ++l) {
        const mt_q_requant c = q[l & 3u];
        mult[l] = c.multiplier, left[l] = c.left, shift[l] = c.right > 0 ? c.right - 1 : 0;
        half[l] = (int32_t)c.half, plain[l] = c.right == 0 ? -1 : 0;
    }
    const __m256i M = _mm256_loadu_si256((const __m256i *)(const void *)mult);
    const __m256i Mo = _mm256_srli_epi64(M, 32);
    const __m256i L = _mm256_loadu_si256((const __m256i *)(const void *)left);
    const __m256i E = _mm256_loadu_si256((const __m256i *)(const void *)shift);
    const __m256i plain_lanes = _mm256_loadu_si256((const __m256i *)(const void *)plain);
    const __m256i Hv = _mm256_loadu_si256((const __m256i *)(const void *)half);
    const __m256i He = _mm256_and_si256(Hv, _mm256_set1_epi64x(0xffffffff)), Ho = _mm256_srli_epi64(Hv, 32);
    const __m256i c30 = _mm256_set1_epi64x((long long)1 << 30), zero = _mm256_setzero_si256();
    const __m256i zy = _mm256_set1_epi32(p.y_zp), lo = _mm256_set1_epi32(p.act_min), hi = _mm256_set1_epi32(p.act_max);
    const __m256i odd = _mm256_set_epi32(-1, 0, -1, 0, -1, 0, -1, 0); /* the odd 32-bit lanes */
    for (uint32_t j = 0; j < n; j += 2, acc += 8, y += 2 * ys) {
        const __m256i a = j + 1 < n ? _mm256_loadu_si256((const __m256i *)(const void *)acc)
                                    : _mm256_inserti128_si256(zero, _mm_loadu_si128((const __m128i *)(const void *)acc), 0);
        const __m256i v = _mm256_sllv_epi32(a, L);
        const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(v, M), c30);
        const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), Mo), c30);
        /* right = 0: the low words of P >> 31, back in their lanes */
        const __m256i r0 = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(_mm256_srli_epi64(po, 31), 32),
                                              0xAA);
        /* right >= 1: P + (half - [P < 0])·2^31, its high words */
        const __m256i qe = _mm256_add_epi64(pe, _mm256_slli_epi64(_mm256_add_epi64(He, _mm256_cmpgt_epi64(zero, pe)), 31));
        const __m256i qo = _mm256_add_epi64(po, _mm256_slli_epi64(_mm256_add_epi64(Ho, _mm256_cmpgt_epi64(zero, po)), 31));
        const __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(qe, 32), _mm256_and_si256(qo, odd), 0xAA);
        const __m256i r1 = _mm256_srav_epi32(high, E);
        __m256i out = _mm256_blendv_epi8(r1, r0, plain_lanes);
        out = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(out, zy), lo), hi);
        const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(out, out), zero); /* lane halves: pixel j, j + 1 */
        const uint32_t b0 = (uint32_t)_mm256_extract_epi32(bytes, 0), b1 = (uint32_t)_mm256_extract_epi32(bytes, 4);
        memcpy(y, &b0, R);
        if (j + 1 < n) memcpy(y + ys, &b1, R);
    }
}

/* four int8 at p, sign-extended to the int32 lanes of a vector */
MT_AVX2_INLINE __m128i widen4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtepi8_epi32(_mm_cvtsi32_si128(v));
}

/*
 * The depthwise's interior pixels (conv_s8_portable.c's dw_interior_pixels): acc[4·j + c] =
 * start[c] + Σ over the taps of W[tap, c]·x[tap, c] for four channels in the int32 lanes of
 * a 128-bit vector, n pixels step bytes apart, the first's tap 0 at x0 in each of the rows
 * in-bounds input rows (KW taps C bytes apart); w holds each tap's four weights. A tap is a
 * widening load of x, a VPMULLD by its widened weights and a VPADDD; the 3 x 3 with three
 * rows keeps its nine weight vectors in registers across the pixels.
 */
MT_AVX2 void mt_s8_dw_pixels_avx2(const int8_t *const row[3], uint32_t rows, uint32_t KW, size_t C, size_t step,
                                  const int8_t *w, const int32_t start[4], size_t x0, uint32_t n, int32_t *acc)
{
    const __m128i s = _mm_loadu_si128((const __m128i *)(const void *)start);
    if (rows == 3 && KW == 3) {
        __m128i wv[9];
        for (uint32_t t = 0; t < 9; ++t) wv[t] = widen4(w + 4 * t);
        for (uint32_t j = 0; j < n; ++j, acc += 4, x0 += step) {
            __m128i a = s;
            for (uint32_t k = 0; k < 3; ++k) {
                const int8_t *xp = row[k] + x0;
                a = _mm_add_epi32(a, _mm_mullo_epi32(widen4(xp), wv[3 * k]));
                a = _mm_add_epi32(a, _mm_mullo_epi32(widen4(xp + C), wv[3 * k + 1]));
                a = _mm_add_epi32(a, _mm_mullo_epi32(widen4(xp + 2 * C), wv[3 * k + 2]));
            }
            _mm_storeu_si128((__m128i *)(void *)acc, a);
        }
        return;
    }
    for (uint32_t j = 0; j < n; ++j, acc += 4, x0 += step) {
        __m128i a = s;
        const int8_t *wq = w;
        for (uint32_t k = 0; k < rows; ++k) {
            const int8_t *xp = row[k] + x0;
            for (uint32_t t = 0; t < KW; ++t, xp += C, wq += 4)
                a = _mm_add_epi32(a, _mm_mullo_epi32(widen4(xp), widen4(wq)));
        }
        _mm_storeu_si128((__m128i *)(void *)acc, a);
    }
}
#else
typedef int mt_s8_x86_unused; /* ISO C: a translation unit is not empty */
#endif
