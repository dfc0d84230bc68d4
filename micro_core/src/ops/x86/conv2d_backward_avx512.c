/*
 * AVX-512 sibling of the Conv2D backward (ops/conv2d.c): the input gradient, the weight
 * gradient and the bias gradient; conv2d_x86.h says what it shares with the forward.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/conv2d_x86.h"
#include "ops/x86/conv2d_avx2_native.h"

#if MT_X86_KERNELS
/* Input gradient columns held on the stack: 4 pixels of up to COL_K floats (8 KiB). Larger
 * K goes one pixel at a time in chunks of COL_K (one pixel's taps reach distinct dx
 * elements, so their order among themselves does not matter; across pixels it does). */
#define COL_PIX 4
#define COL_K 512
/* vectors of columns per block, and weight-gradient taps per block: 16 ymm registers (the
 * AVX2 build) hold a quarter of what 32 zmm do */
#ifdef MT_X86_SHIM_AVX2
#define COL_VECS 1
#define DW_TAPS 6
#else
#define COL_VECS 4
#define DW_TAPS 16
#endif

/* col[j][c0 + ·] = Σ_oc dy[o_j, oc]·W[oc, k0 + c0 + ·] over 16·nv columns, from 0 in ascending
 * oc; count and nv are constants where it is inlined (accumulators in registers) */
MT_AVX512_INLINE void column_block(const float *const *dyp, uint32_t count, const float *w, uint32_t OC, uint32_t K,
                                   uint32_t k0, uint32_t kn, uint32_t c0, uint32_t nv, float (*col)[COL_K])
{
    __m512 acc[COL_PIX][4];
    __mmask16 mask[4] = {0, 0, 0, 0};
    for (uint32_t v = 0; v < nv; ++v) {
        mask[v] = mt_lanes(kn - c0 - 16 * v);
        for (uint32_t j = 0; j < count; ++j) acc[j][v] = _mm512_setzero_ps();
    }
    for (uint32_t oc = 0; oc < OC; ++oc) {
        __m512 wv[4];
        for (uint32_t v = 0; v < nv; ++v) wv[v] = _mm512_maskz_loadu_ps(mask[v], w + (size_t)oc * K + k0 + c0 + 16 * v);
        for (uint32_t j = 0; j < count; ++j) {
            const __m512 d = _mm512_set1_ps(dyp[j][oc]);
            for (uint32_t v = 0; v < nv; ++v) acc[j][v] = mt_mac(acc[j][v], d, wv[v]);
        }
    }
    for (uint32_t j = 0; j < count; ++j)
        for (uint32_t v = 0; v < nv; ++v) _mm512_mask_storeu_ps(&col[j][c0 + 16 * v], mask[v], acc[j][v]);
}

/* col[j][k - k0] = Σ_oc dy[o_j, oc]·W[oc, k] for k in [k0, k0 + kn), from 0 in ascending oc */
MT_AVX512_INLINE void columns(const float *const *dyp, uint32_t count, const float *w, uint32_t OC, uint32_t K,
                              uint32_t k0, uint32_t kn, float (*col)[COL_K])
{
    for (uint32_t c0 = 0; c0 < kn; c0 += 16 * COL_VECS) {
        const uint32_t nv = mt_min_u32(COL_VECS, (kn - c0 + 15) / 16);
        if (count == COL_PIX) {
            if (nv == 4) column_block(dyp, COL_PIX, w, OC, K, k0, kn, c0, 4, col);
            else if (nv == 1) column_block(dyp, COL_PIX, w, OC, K, k0, kn, c0, 1, col);
            else if (nv == 2) column_block(dyp, COL_PIX, w, OC, K, k0, kn, c0, 2, col);
            else column_block(dyp, COL_PIX, w, OC, K, k0, kn, c0, 3, col);
        } else {
            for (uint32_t j = 0; j < count; ++j) { /* nv a constant in each call: sums in registers */
                if (nv == 4) column_block(dyp + j, 1, w, OC, K, k0, kn, c0, 4, col + j);
                else if (nv == 1) column_block(dyp + j, 1, w, OC, K, k0, kn, c0, 1, col + j);
                else if (nv == 2) column_block(dyp + j, 1, w, OC, K, k0, kn, c0, 2, col + j);
                else column_block(dyp + j, 1, w, OC, K, k0, kn, c0, 3, col + j);
            }
        }
    }
}

/* dx[tap pixel, c] += col[(kh·KW + kw)·C + c] for every in-bounds tap of output (oh, ow) */
MT_AVX512_INLINE void scatter_all(float *dxs, const float *col, uint32_t oh, uint32_t ow, const mt_spatial *g)
{
    const uint32_t C = g->C;
    int32_t ih, iw;
    MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
        float *d = dxs + ((size_t)ih * g->W + (uint32_t)iw) * C;
        const float *s = col + ((size_t)kh * g->KW + kw) * C;
        uint32_t i = 0;
        /* whole vectors where they fit: the next output adds to the same pixels, and a
         * masked store does not forward to the masked load that follows it */
        for (; i + 16 <= C; i += 16)
            _mm512_storeu_ps(d + i, _mm512_add_ps(_mm512_loadu_ps(d + i), _mm512_loadu_ps(s + i)));
        for (; i + 8 <= C; i += 8)
            _mm256_storeu_ps(d + i, _mm256_add_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(s + i)));
        for (; i < C; ++i) d[i] += s[i];
    }
}

/* dx[tap pixel, c] += col[k - k0] for the in-bounds taps of output (oh, ow), k in [k0, k0+kn) */
MT_AVX512_INLINE void scatter(float *dxs, const float *col, uint32_t oh, uint32_t ow, uint32_t k0, uint32_t kn,
                              const mt_spatial *g)
{
    const uint32_t C = g->C;
    for (uint32_t k = k0; k < k0 + kn;) {
        const uint32_t tap = k / C, c = k % C, cn = mt_min_u32(C - c, k0 + kn - k);
        const int32_t ih = mt_spatial_tap(oh, tap / g->KW, g->SH, g->PT, g->H);
        const int32_t iw = mt_spatial_tap(ow, tap % g->KW, g->SW, g->PL, g->W);
        if (ih >= 0 && iw >= 0) {
            float *d = dxs + ((size_t)ih * g->W + (uint32_t)iw) * C + c;
            const float *s = col + (k - k0);
            for (uint32_t i = 0; i < cn; i += 16) {
                const __mmask16 m = mt_lanes(cn - i);
                _mm512_mask_storeu_ps(d + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + i),
                                                              _mm512_maskz_loadu_ps(m, s + i)));
            }
        }
        k += cn;
    }
}

/* dx += the columns of the `count` outputs ow0.. of row oh, whose taps are all inside: each
 * input position they reach is loaded once, gets their contributions in output order (one
 * output's taps reach distinct positions, so per position that is the reference's order), and
 * is stored once */
MT_AVX512_INLINE void scatter_row_group(float *dxs, float (*col)[COL_K], uint32_t count, uint32_t oh, uint32_t ow0,
                                        const mt_spatial *g)
{
    const uint32_t C = g->C, first = ow0 * g->SW, end = (ow0 + count - 1) * g->SW + g->KW;
    for (uint32_t kh = 0; kh < g->KH; ++kh) {
        const uint32_t ih = oh * g->SH + kh - g->PT;
        for (uint32_t cpos = first; cpos < end; ++cpos) { /* cpos = iw + PL */
            const float *src[COL_PIX];
            uint32_t n = 0;
            for (uint32_t j = 0; j < count; ++j) {
                const uint32_t o = (ow0 + j) * g->SW;
                if (cpos >= o && cpos - o < g->KW) src[n++] = col[j] + ((size_t)kh * g->KW + (cpos - o)) * C;
            }
            float *d = dxs + ((size_t)ih * g->W + (cpos - g->PL)) * C;
            uint32_t i = 0;
            for (; i + 16 <= C; i += 16) {
                __m512 v = _mm512_loadu_ps(d + i);
                for (uint32_t e = 0; e < n; ++e) v = _mm512_add_ps(v, _mm512_loadu_ps(src[e] + i));
                _mm512_storeu_ps(d + i, v);
            }
            for (; i + 8 <= C; i += 8) {
                __m256 v = _mm256_loadu_ps(d + i);
                for (uint32_t e = 0; e < n; ++e) v = _mm256_add_ps(v, _mm256_loadu_ps(src[e] + i));
                _mm256_storeu_ps(d + i, v);
            }
            for (; i < C; ++i) {
                float v = d[i];
                for (uint32_t e = 0; e < n; ++e) v += src[e][i];
                d[i] = v;
            }
        }
    }
}

MT_AVX512 static void conv_backward_dx(const float *w, const float *dy, float *dx, uint32_t B, const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW * g->C, P = g->OH * g->OW;
    float col[COL_PIX][COL_K] __attribute__((aligned(64)));
    const uint32_t group = 1;
    uint32_t lo, hi, row_lo, row_hi; /* the outputs whose taps are all inside: [row_lo, row_hi) x [lo, hi) */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
    mt_spatial_window_inside(g->OH, g->SH, g->PT, g->KH, g->H, &row_lo, &row_hi);
#ifdef MT_X86_SHIM_AVX2
    const int dx8 = conv8_fits(g);
#endif
    for (uint32_t b = 0; b < B && K <= COL_K; ++b) { /* output rows in order, up to 4 outputs at a time */
        float *dxs = dx + (size_t)b * g->H * g->W * g->C;
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW;) {
#ifdef MT_X86_SHIM_AVX2
                if (dx8 && oh >= row_lo && oh < row_hi && ow >= lo && ow + DX8_PIX <= hi) {
                    dx8_group(w, dy, dx, b, oh, ow, g);
                    ow += DX8_PIX;
                    continue;
                }
#endif
                const int run = oh >= row_lo && oh < row_hi && ow >= lo && ow + COL_PIX <= hi;
                uint32_t count = 1;
                if (run) count = COL_PIX;
                else /* up to the next run of inside outputs or the row's end */
                    while (count < COL_PIX && ow + count < g->OW && !(oh >= row_lo && oh < row_hi && ow + count == lo))
                        ++count;
                const float *dyp[COL_PIX];
                for (uint32_t j = 0; j < count; ++j) dyp[j] = dy + (((size_t)b * g->OH + oh) * g->OW + ow + j) * g->OC;
                columns(dyp, count, w, g->OC, K, 0, K, col);
                if (run) scatter_row_group(dxs, col, COL_PIX, oh, ow, g);
                else
                    for (uint32_t j = 0; j < count; ++j) scatter_all(dxs, col[j], oh, ow + j, g);
                ow += count;
            }
    }
    for (uint32_t b = 0; b < B && K > COL_K; ++b) { /* one output at a time, COL_K taps at a time */
        float *dxs = dx + (size_t)b * g->H * g->W * g->C;
        for (uint32_t p0 = 0; p0 < P; p0 += group) {
            const uint32_t count = mt_min_u32(group, P - p0);
            const float *dyp[COL_PIX];
            for (uint32_t j = 0; j < count; ++j) dyp[j] = dy + ((size_t)b * P + p0 + j) * g->OC;
            for (uint32_t k0 = 0; k0 < K; k0 += COL_K) {
                const uint32_t kn = mt_min_u32(COL_K, K - k0);
                columns(dyp, count, w, g->OC, K, k0, kn, col);
                uint32_t oh = p0 / g->OW, ow = p0 % g->OW;
                for (uint32_t j = 0; j < count; ++j) { /* in output order */
                    scatter(dxs, col[j], oh, ow, k0, kn, g);
                    if (++ow == g->OW) ow = 0, ++oh;
                }
            }
        }
    }
}

#ifndef MT_X86_SHIM_AVX2 /* the AVX2 build: conv2d_avx2_native.h */
/*
 * dW of the one-channel layers above (C = 1, SW = 1, OC <= 8, K <= 16). A sum runs over the
 * outputs in order, so pixels cannot share a vector here; taps can: within a kernel row, taps
 * kw and kw + 1 read neighbouring inputs, and lane 2·oc + j of group (kh, kw) accumulates
 * tap kw + j (one 64-bit broadcast of x, dy[o, oc] in both lanes of oc). A row's last tap
 * when KW is odd is a group of its own (odd lanes masked off).
 */
/* n pixels from xp (all taps inside): acc[i] += dy[o, ·] (both lanes of each oc) · x at the
 * group's taps, o in order; groups, first and pairs are constants where it is inlined */
MT_AVX512_INLINE void dw_pairs_run(const float *xp, const ptrdiff_t *off, const float *dyp, uint32_t OC, uint32_t n,
                                   const uint32_t *first, const int *pairs, uint32_t groups, __m512 *acc)
{
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __mmask16 om = mt_lanes(OC), even = 0x5555;
    __m512 a[16];
    ptrdiff_t o[16];
    for (uint32_t i = 0; i < groups; ++i) a[i] = acc[i], o[i] = off[first[i]];
    for (uint32_t p = 0; p < n; ++p, ++xp, dyp += OC) {
        const __m512 d = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(om, dyp));
        for (uint32_t i = 0; i < groups; ++i) {
            if (pairs[i]) a[i] = mt_mac(a[i], d, pair_of(xp + o[i]));
            else a[i] = _mm512_mask3_fmadd_ps(d, _mm512_set1_ps(xp[o[i]]), a[i], even);
        }
    }
    for (uint32_t i = 0; i < groups; ++i) acc[i] = a[i];
}

MT_AVX512_INLINE void dw_one_channel(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g,
                                    uint32_t KH, uint32_t KW)
{
    const uint32_t K = KH * KW, OC = g->OC, all = (uint32_t)mt_lanes(K);
    const __mmask16 om = mt_lanes(OC), even = 0x5555, odd = 0xAAAA;
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    taps16 tb;
    taps16_init(&tb, g, 0, K);
    uint32_t first[16], groups = 0; /* group i: taps first[i] and, when pairs[i], first[i] + 1 */
    int pairs[16];
    for (uint32_t kh = 0; kh < KH; ++kh)
        for (uint32_t kw = 0; kw < KW; kw += 2)
            first[groups] = kh * KW + kw, pairs[groups++] = kw + 1 < KW;
    int32_t lo, hi;
    taps16_row_inside(&tb, g, &lo, &hi);
    __m512 acc[16];
    for (uint32_t i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            const int32_t ih = (int32_t)(oh * g->SH);
            const uint32_t rows = axis_bits(ih, tb.dh, K, g->H);
            const float *xrow = x + ((size_t)b * g->H + (uint32_t)ih) * g->W;
            const float *dyrow = dy + ((size_t)b * g->OH + oh) * g->OW * OC;
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                const float *xp = xrow + ow;
                const int col_in = (int32_t)ow >= lo && (int32_t)ow < hi;
                if (rows == all && col_in) { /* a run of inside pixels, the sums in registers */
                    const uint32_t n = (uint32_t)(hi - (int32_t)ow);
                    dw_pairs_run(xp, tb.off, dyrow + (size_t)ow * OC, OC, n, first, pairs, groups, acc);
                    ow += n - 1;
                    continue;
                }
                const uint32_t valid = rows & (col_in ? all : axis_bits((int32_t)ow, tb.dw, K, g->W));
                const __m512 d = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(om, dyrow + (size_t)ow * OC));
                for (uint32_t i = 0; i < groups; ++i)
                    for (uint32_t j = 0; j <= (uint32_t)pairs[i]; ++j) {
                        const uint32_t k = first[i] + j;
                        if (valid >> k & 1u)
                            acc[i] = _mm512_mask3_fmadd_ps(d, _mm512_set1_ps(xp[tb.off[k]]), acc[i], j ? odd : even);
                    }
            }
        }
    for (uint32_t i = 0; i < groups; ++i) {
        float lane[16];
        _mm512_storeu_ps(lane, acc[i]);
        for (uint32_t oc = 0; oc < OC; ++oc)
            for (uint32_t j = 0; j <= (uint32_t)pairs[i]; ++j) {
                float *o = dw + (size_t)oc * K + first[i] + j;
                *o = *o + lane[2 * oc + j];
            }
    }
}

/* 3 x 3 (the common case) with its groups known to the compiler, so its sums stay in registers */
MT_AVX512 static void conv_backward_dw_one_channel(const float *x, const float *dy, float *dw, uint32_t B,
                                                   const mt_spatial *g)
{
    if (g->KH == 3 && g->KW == 3) dw_one_channel(x, dy, dw, B, g, 3, 3);
    else dw_one_channel(x, dy, dw, B, g, g->KH, g->KW);
}
#endif /* !MT_X86_SHIM_AVX2 */

/* dW[oc, k] += Σ_o dy[o, oc]·x[o, k] over the in-bounds (o, k), from 0 in output order;
 * lanes across oc, DW_TAPS k at a time (16, or 6 in the AVX2 build), transposed into dW's rows at the end */
/* n pixels whose sixteen taps are all inside, the taps two runs of 8 channels (from p0 and from
 * p1; xs floats from one pixel to the next): acc[k] += dy[o, ·]·x[o, k], o in order. Plain
 * pointers and constant displacements, so all sixteen sums stay in registers. */
MT_AVX512_INLINE void dw_run(const float *p0, const float *p1, size_t xs, const float *dyp, uint32_t OC,
                             __mmask16 um, uint32_t n, __m512 *acc)
{
    __m512 a[16];
    for (uint32_t k = 0; k < 16; ++k) a[k] = acc[k];
    for (uint32_t p = 0; p < n; ++p, p0 += xs, p1 += xs, dyp += OC) {
        const __m512 d = _mm512_maskz_loadu_ps(um, dyp);
        for (uint32_t c = 0; c < 8; ++c) a[c] = mt_mac(a[c], d, _mm512_set1_ps(p0[c]));
        for (uint32_t c = 0; c < 8; ++c) a[8 + c] = mt_mac(a[8 + c], d, _mm512_set1_ps(p1[c]));
    }
    for (uint32_t k = 0; k < 16; ++k) acc[k] = a[k];
}

/* n pixels whose DW_TAPS taps are all inside (pk[k]: tap k's x at the first pixel; xs floats
 * from one pixel to the next): acc[k] += dy[o, ·]·x[o, k], o in order. The AVX2 build's run:
 * its six taps need not share a channel run, so each has a pointer of its own. */
MT_AVX512_INLINE void dw_run_taps(const float *const *pk, size_t xs, const float *dyp, uint32_t OC, __mmask16 um,
                                  uint32_t n, __m512 *acc)
{
    __m512 a[DW_TAPS];
    const float *p[DW_TAPS];
    for (uint32_t k = 0; k < DW_TAPS; ++k) a[k] = acc[k], p[k] = pk[k];
    for (size_t q = 0; q < (size_t)n * xs; q += xs, dyp += OC) {
        const __m512 d = _mm512_maskz_loadu_ps(um, dyp);
        for (uint32_t k = 0; k < DW_TAPS; ++k) a[k] = mt_mac(a[k], d, _mm512_set1_ps(p[k][q]));
    }
    for (uint32_t k = 0; k < DW_TAPS; ++k) acc[k] = a[k];
}

MT_AVX512 static void conv_backward_dw(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW * g->C;
#ifdef MT_X86_SHIM_AVX2
    if (conv8_fits(g)) {
        dw8(x, dy, dw, B, g);
        return;
    }
#endif
    if (g->C == 1 && g->SW == 1 && g->OC <= 8 && K <= 16) {
#ifdef MT_X86_SHIM_AVX2
        conv_backward_dw_one_channel8(x, dy, dw, B, g);
#else
        conv_backward_dw_one_channel(x, dy, dw, B, g);
#endif
        return;
    }
    for (uint32_t oc0 = 0; oc0 < g->OC; oc0 += 16) {
        const uint32_t un = mt_min_u32(16, g->OC - oc0);
        const __mmask16 um = mt_lanes(un);
        for (uint32_t k0 = 0; k0 < K; k0 += DW_TAPS) {
            const uint32_t kn = mt_min_u32(DW_TAPS, K - k0);
            taps16 tb;
            taps16_init(&tb, g, k0, kn);
            __m512 acc[16];
            for (uint32_t k = 0; k < 16; ++k) acc[k] = _mm512_setzero_ps();
            const uint32_t all = (uint32_t)mt_lanes(kn);
            /* C a multiple of 8: the block is two runs of 8 channels, each within one tap */
            const int runs8 = DW_TAPS == 16 && kn == 16 && g->C % 8 == 0;
            uint32_t lo = 0, hi; /* [lo, hi): the outputs whose taps are all inside horizontally */
            while (lo < g->OW && !(inside((int32_t)(lo * g->SW) + tb.dw_min, g->W) &&
                                   inside((int32_t)(lo * g->SW) + tb.dw_max, g->W)))
                ++lo;
            for (hi = lo; hi < g->OW && inside((int32_t)(hi * g->SW) + tb.dw_max, g->W);) ++hi;
            for (uint32_t b = 0; b < B; ++b)
                for (uint32_t oh = 0; oh < g->OH; ++oh) {
                    const int32_t ih = (int32_t)(oh * g->SH);
                    const int rows_in = inside(ih + tb.dh_min, g->H) && inside(ih + tb.dh_max, g->H);
                    const size_t row = ((size_t)b * g->H + (uint32_t)ih) * g->W;
                    const float *dyrow = dy + ((size_t)b * g->OH + oh) * g->OW * g->OC + oc0;
                    for (uint32_t ow = 0; ow < g->OW; ++ow) {
                        const int32_t iw = (int32_t)(ow * g->SW);
                        const ptrdiff_t base = ((ptrdiff_t)row + iw) * (ptrdiff_t)g->C;
                        if (runs8 && rows_in && ow == lo && hi > lo) {
                            const float *xp = x + base;
                            dw_run(xp + tb.off[0], xp + tb.off[8], (size_t)g->SW * g->C, dyrow + (size_t)ow * g->OC,
                                   g->OC, um, hi - lo, acc);
                            ow = hi - 1;
                            continue;
                        }
                        if (DW_TAPS < 16 && kn == DW_TAPS && rows_in && ow == lo && hi > lo) {
                            const float *pk[DW_TAPS];
                            for (uint32_t k = 0; k < DW_TAPS; ++k) pk[k] = x + base + tb.off[k];
                            dw_run_taps(pk, (size_t)g->SW * g->C, dyrow + (size_t)ow * g->OC, g->OC, um, hi - lo, acc);
                            ow = hi - 1;
                            continue;
                        }
                        const __m512 d = _mm512_maskz_loadu_ps(um, dyrow + (size_t)ow * g->OC);
                        const uint32_t valid =
                            rows_in && inside(iw + tb.dw_min, g->W) && inside(iw + tb.dw_max, g->W)
                                ? all : taps16_valid(&tb, ih, iw, g);
                        /* DW_TAPS named accumulators in registers; k >= kn is never valid */
#pragma GCC unroll 16
                        for (uint32_t k = 0; k < DW_TAPS; ++k)
                            if (valid >> k & 1u) acc[k] = mt_mac(acc[k], d, _mm512_set1_ps(x[base + tb.off[k]]));
                    }
                }
            mt_transpose16(acc); /* acc[r] lane k: the sum of (oc0 + r, k0 + k) */
            const __mmask16 km = mt_lanes(kn);
            for (uint32_t r = 0; r < un; ++r) {
                float *o = dw + (size_t)(oc0 + r) * K + k0;
                _mm512_mask_storeu_ps(o, km, _mm512_add_ps(_mm512_maskz_loadu_ps(km, o), acc[r]));
            }
        }
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_conv2d_f32_backward)(const float *x, const float *w, const float *y, float *dy, float *dx,
                                                float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const size_t outputs = (size_t)B * g->OH * g->OW;
    MT_X86_NAME(mt_fused_activation_backward)(g->activation, y, dy, outputs * g->OC);
    if (dx) conv_backward_dx(w, dy, dx, B, g);
    if (dw) conv_backward_dw(x, dy, dw, B, g);
    if (dbias) MT_X86_NAME(mt_op_bias_f32_backward)(dy, dbias, outputs, g->OC);
}
#else
typedef int mt_conv2d_backward_x86_unused; /* ISO C: a translation unit is not empty */
#endif
