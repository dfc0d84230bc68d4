/*
 * AVX-512 siblings of the Conv2D kernels (ops/conv2d.c); ops/x86/x86.h says how they keep
 * the reference's bits. Conv2D is Dense over image patches: with k = (kh, kw, c) and
 * K = KH·KW·C, W is [OC, K] (OHWI), and the output pixel p reads x at tap k, or nothing when
 * the tap falls in the padding (the reference skips it, and so does every path here).
 */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include <string.h>

#include "ops/spatial.h"
#include "ops/x86/avx512.h"

/* Sixteen consecutive k: where each reads relative to the input position (oh·SH, ow·SW). */
typedef struct taps16 {
    uint32_t n;
    int32_t dh[16], dw[16];    /* kh - PT, kw - PL */
    ptrdiff_t off[16];         /* (dh·W + dw)·C + c, in floats */
    int32_t dh_min, dh_max, dw_min, dw_max;
} taps16;

static void taps16_init(taps16 *t, const mt_spatial *g, uint32_t k0, uint32_t n)
{
    t->n = n;
    t->dh_min = t->dw_min = INT32_MAX;
    t->dh_max = t->dw_max = INT32_MIN;
    for (uint32_t k = n; k < 16; ++k) t->dh[k] = t->dw[k] = 0, t->off[k] = 0;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t kk = k0 + k, c = kk % g->C, tap = kk / g->C;
        t->dh[k] = (int32_t)(tap / g->KW) - (int32_t)g->PT;
        t->dw[k] = (int32_t)(tap % g->KW) - (int32_t)g->PL;
        t->off[k] = ((ptrdiff_t)t->dh[k] * g->W + t->dw[k]) * (ptrdiff_t)g->C + c;
        if (t->dh[k] < t->dh_min) t->dh_min = t->dh[k];
        if (t->dh[k] > t->dh_max) t->dh_max = t->dh[k];
        if (t->dw[k] < t->dw_min) t->dw_min = t->dw[k];
        if (t->dw[k] > t->dw_max) t->dw_max = t->dw[k];
    }
}

static inline int inside(int32_t v, uint32_t size)
{
    return v >= 0 && (uint32_t)v < size;
}

/* Bit k: tap k of `t` is in bounds for the input position (ih, iw). */
static uint32_t taps16_valid(const taps16 *t, int32_t ih, int32_t iw, const mt_spatial *g)
{
    uint32_t bits = 0;
    for (uint32_t k = 0; k < t->n; ++k)
        if (inside(ih + t->dh[k], g->H) && inside(iw + t->dw[k], g->W)) bits |= 1u << k;
    return bits;
}

MT_AVX512_INLINE __m512 activate(__m512 v, uint32_t activation)
{
    if (activation == MT_FUSED_NONE) return v;
    const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
    if (activation == MT_FUSED_RELU6) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, six, _CMP_GT_OQ), six);
    return v;
}

/* ---- forward: y[p, oc] = act(Σ_k x[p, k]·W[oc, k] + b[oc]), lanes across oc ---- */

#define FWD_PIX 8
#define FWD_TAPS 256 /* taps per pass: their transposed W (16 KiB) sits on the stack */

/* A pass over taps [k0, k0 + kn) of W's rows oc0..: t[k] lanes oc = W[oc0 + oc, k0 + k], and
 * each block of 16 taps' offsets and extents */
typedef struct fwd_pass {
    uint32_t kn, blocks;
    __m512 t[FWD_TAPS];
    taps16 tb[FWD_TAPS / 16];
} fwd_pass;

/* `count` pixels whose inside taps are the same, mask[block] (a row's pixels inside horizontally,
 * or a column's pixels inside vertically), xi + j·xs the index of pixel j's (oh·SH, ow·SW):
 * acc[j] (the partial sums) += those taps of the pass, k ascending; count is a constant where
 * it is inlined (the sums stay in registers) */
MT_AVX512_INLINE void forward_pixels(const float *x, ptrdiff_t xi, ptrdiff_t xs, const fwd_pass *fp,
                                     const uint32_t *mask, __m512 *acc, uint32_t count)
{
    __m512 a[FWD_PIX];
    for (uint32_t j = 0; j < count; ++j) a[j] = acc[j];
    for (uint32_t blk = 0; blk < fp->blocks; ++blk) {
        const taps16 *tb = &fp->tb[blk];
        const __m512 *t = fp->t + 16 * blk;
        for (uint32_t k = 0; k < tb->n; ++k) {
            if (!(mask[blk] >> k & 1u)) continue; /* a tap in the padding for all of them */
            const float *xk = x + xi + tb->off[k];
            for (uint32_t j = 0; j < count; ++j) a[j] = mt_mac(a[j], t[k], _mm512_set1_ps(xk[j * xs]));
        }
    }
    for (uint32_t j = 0; j < count; ++j) acc[j] = a[j];
}

/*
 * C = 1, stride 1 along the row, at most 8 output channels, one block of taps (a first layer
 * on one-channel images): lanes across oc alone would leave half of each vector idle, so two
 * neighbouring pixels share one, lane 2·oc + j holding pixel ow + j. Their inputs at tap k are
 * neighbours in x (one 64-bit broadcast puts x[ow + off] in the even lanes and x[ow + 1 + off]
 * in the odd ones). Each lane is still one sum from 0 over k ascending, then the bias.
 */
#define PAIRS 8

MT_AVX512_INLINE __m512 pair_of(const float *p)
{
    double d;
    memcpy(&d, p, sizeof d);
    return _mm512_castpd_ps(_mm512_set1_pd(d));
}

/* n (<= PAIRS) pairs of in-bounds pixels from xp (pixel ow) and yp (its output) */
MT_AVX512_INLINE void forward_pairs(const float *xp, const ptrdiff_t *off, const __m512 *tp, uint32_t K, float *yp,
                                    uint32_t OC, uint32_t n, const __m512 *bias, uint32_t activation)
{
    const __m512i split = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
    const __mmask16 om = mt_lanes(OC);
    __m512 acc[PAIRS];
    for (uint32_t j = 0; j < n; ++j) acc[j] = _mm512_setzero_ps();
    for (uint32_t k = 0; k < K; ++k)
        for (uint32_t j = 0; j < n; ++j) acc[j] = mt_mac(acc[j], tp[k], pair_of(xp + 2 * j + off[k]));
    for (uint32_t j = 0; j < n; ++j) {
        __m512 v = activate(bias ? _mm512_add_ps(acc[j], *bias) : acc[j], activation);
        v = _mm512_permutexvar_ps(split, v); /* pixel ow + 2j in lanes 0..7, ow + 2j + 1 in 8..15 */
        float *o = yp + (size_t)2 * j * OC;
        if (OC == 8) {
            _mm512_storeu_ps(o, v);
        } else { /* masked-off lanes touch no memory */
            _mm512_mask_storeu_ps(o, om, v);
            _mm512_mask_storeu_ps(o + OC - 8, (__mmask16)(om << 8), v);
        }
    }
}

/* Bit k: tap k (relative offset d[k] along one axis) of position pos is inside [0, size). */
static inline uint32_t axis_bits(int32_t pos, const int32_t *d, uint32_t K, uint32_t size)
{
    uint32_t bits = 0;
    for (uint32_t k = 0; k < K; ++k) bits |= (uint32_t)inside(pos + d[k], size) << k;
    return bits;
}

/* One pixel, lanes across oc: acc + Σ over the taps whose bit is set in `valid`, by k. A
 * tap outside is skipped by a masked add (the lanes keep their value); its load reads the
 * pixel's own input position instead, which is always inside. */
MT_AVX512_INLINE __m512 single_pixel(__m512 acc, const float *xp, const ptrdiff_t *off, const __m512 *t, uint32_t K,
                                     uint32_t valid)
{
    for (uint32_t k = 0; k < K; ++k) {
        const uint32_t in = valid >> k & 1u;
        const __m512 v = _mm512_set1_ps(xp[in ? off[k] : 0]);
        acc = _mm512_mask_add_ps(acc, (__mmask16)(0u - in), acc, _mm512_mul_ps(t[k], v));
    }
    return acc;
}

MT_AVX512 static void conv_forward_one_channel(const float *x, const float *w, const float *bias, float *y,
                                               uint32_t B, const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW, OC = g->OC, all = (uint32_t)mt_lanes(K);
    const __mmask16 um = mt_lanes(OC);
    float lane[16], pair[16];
    __m512 t[16], tp[16], bv = _mm512_setzero_ps(), bp = _mm512_setzero_ps();
    for (uint32_t k = 0; k <= K; ++k) { /* k == K: the bias */
        const float *src = k < K ? w + k : bias;
        const size_t step = k < K ? K : 1;
        for (uint32_t i = 0; i < 16; ++i) lane[i] = pair[i] = 0.0f;
        for (uint32_t oc = 0; src && oc < OC; ++oc) lane[oc] = pair[2 * oc] = pair[2 * oc + 1] = src[oc * step];
        if (k < K) t[k] = _mm512_loadu_ps(lane), tp[k] = _mm512_loadu_ps(pair);
        else bv = _mm512_loadu_ps(lane), bp = _mm512_loadu_ps(pair);
    }
    taps16 tb;
    taps16_init(&tb, g, 0, K);
    const __m512 *bvp = bias ? &bv : NULL, *bpp = bias ? &bp : NULL;
    /* [lo, hi): the pixels of a row whose taps are all inside horizontally */
    const int32_t lo = -tb.dw_min > 0 ? -tb.dw_min : 0;
    const int32_t hi = (int32_t)g->W - tb.dw_max < (int32_t)g->OW ? (int32_t)g->W - tb.dw_max : (int32_t)g->OW;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            const int32_t ih = (int32_t)(oh * g->SH);
            const uint32_t rows = axis_bits(ih, tb.dh, K, g->H);
            const size_t row = ((size_t)b * g->H + (uint32_t)ih) * g->W;
            float *yrow = y + ((size_t)b * g->OH + oh) * g->OW * OC;
            for (uint32_t ow = 0; ow < g->OW;) {
                const int32_t left = hi - (int32_t)ow;
                const int col_in = (int32_t)ow >= lo && left > 0;
                if (rows == all && col_in && left >= 2) {
                    const float *xp = x + row + ow;
                    float *yp = yrow + (size_t)ow * OC;
                    uint32_t n = 1; /* 8, 4, 2 or 1 pairs: constants, so the sums stay in registers */
                    if (left >= 16) n = 8, forward_pairs(xp, tb.off, tp, K, yp, OC, 8, bpp, g->activation);
                    else if (left >= 8) n = 4, forward_pairs(xp, tb.off, tp, K, yp, OC, 4, bpp, g->activation);
                    else if (left >= 4) n = 2, forward_pairs(xp, tb.off, tp, K, yp, OC, 2, bpp, g->activation);
                    else forward_pairs(xp, tb.off, tp, K, yp, OC, 1, bpp, g->activation);
                    ow += 2 * n;
                    continue;
                }
                const uint32_t valid = rows & (col_in ? all : axis_bits((int32_t)ow, tb.dw, K, g->W));
                const __m512 acc = single_pixel(_mm512_setzero_ps(), x + row + ow, tb.off, t, K, valid);
                _mm512_mask_storeu_ps(yrow + (size_t)ow * OC, um,
                                      activate(bvp ? _mm512_add_ps(acc, *bvp) : acc, g->activation));
                ++ow;
            }
        }
}

/* y[j·ys] = the sums acc[j] (partial, or finished: + bias, then the activation) */
MT_AVX512_INLINE void store_outputs(float *yp, size_t ys, const __m512 *acc, uint32_t n, __mmask16 um, int last,
                                    const __m512 *bias, uint32_t activation)
{
    for (uint32_t j = 0; j < n; ++j) {
        __m512 v = acc[j];
        if (last) v = activate(bias ? _mm512_add_ps(v, *bias) : v, activation);
        _mm512_mask_storeu_ps(yp + j * ys, um, v);
    }
}

/* n outputs in a line (x index xi + j·xs, output yp + j·ys) whose inside taps are the same,
 * mask[block]: 8, 4 or 1 at a time */
MT_AVX512 static void forward_line(const float *x, ptrdiff_t xi, ptrdiff_t xs, float *yp, size_t ys, uint32_t n,
                                   const uint32_t *mask, const fwd_pass *fp, __mmask16 um, int first, int last,
                                   const __m512 *bias, uint32_t activation)
{
    while (n > 0) {
        __m512 acc[FWD_PIX];
        const uint32_t c = n >= 8 ? 8 : (n >= 4 ? 4 : 1);
        for (uint32_t j = 0; j < c; ++j) acc[j] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(um, yp + j * ys);
        if (c == 8) forward_pixels(x, xi, xs, fp, mask, acc, 8);
        else if (c == 4) forward_pixels(x, xi, xs, fp, mask, acc, 4);
        else forward_pixels(x, xi, xs, fp, mask, acc, 1);
        store_outputs(yp, ys, acc, c, um, last, bias, activation);
        xi += (ptrdiff_t)c * xs, yp += c * ys, n -= c;
    }
}

MT_AVX512 void mt_op_conv2d_f32_forward_avx512(const float *x, const float *w, const float *bias, float *y,
                                               uint32_t B, const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW * g->C;
    if (g->C == 1 && g->SW == 1 && g->OC <= 8 && K <= 16) {
        conv_forward_one_channel(x, w, bias, y, B, g);
        return;
    }
    /* [lo, hi): the outputs of a row whose taps are all inside horizontally (every pass) */
    uint32_t lo, hi, row_lo, row_hi; /* [row_lo, row_hi): the rows whose taps are all inside vertically */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
    mt_spatial_window_inside(g->OH, g->SH, g->PT, g->KH, g->H, &row_lo, &row_hi);
    fwd_pass fp __attribute__((aligned(64)));
    const ptrdiff_t xs = (ptrdiff_t)g->SW * g->C;
    for (uint32_t oc0 = 0; oc0 < g->OC; oc0 += 16) {
        const uint32_t un = mt_min_u32(16, g->OC - oc0);
        const __mmask16 um = mt_lanes(un);
        const __m512 bv = bias ? _mm512_maskz_loadu_ps(um, bias + oc0) : _mm512_setzero_ps();
        for (uint32_t p0 = 0; p0 < K; p0 += FWD_TAPS) { /* passes of up to FWD_TAPS taps */
            fp.kn = mt_min_u32(FWD_TAPS, K - p0);
            fp.blocks = (fp.kn + 15) / 16;
            for (uint32_t blk = 0; blk < fp.blocks; ++blk) {
                const uint32_t k0 = p0 + 16 * blk, kn = mt_min_u32(16, K - k0);
                const __mmask16 km = mt_lanes(kn);
                __m512 *t = fp.t + 16 * blk;
                for (uint32_t r = 0; r < 16; ++r)
                    t[r] = r < un ? _mm512_maskz_loadu_ps(km, w + (size_t)(oc0 + r) * K + k0) : _mm512_setzero_ps();
                mt_transpose16(t);
                taps16_init(&fp.tb[blk], g, k0, kn);
            }
            const int first = p0 == 0, last = p0 + fp.kn == K;
            const __m512 *bp = bias ? &bv : NULL;
            const size_t img = (size_t)g->H * g->W;
            for (uint32_t b = 0; b < B; ++b) {
                float *yimg = y + (size_t)b * g->OH * g->OW * g->OC + oc0;
                uint32_t mask[FWD_TAPS / 16];
                for (uint32_t oh = 0; oh < g->OH; ++oh) { /* each row's outputs inside horizontally */
                    const int32_t ih = (int32_t)(oh * g->SH);
                    for (uint32_t blk = 0; blk < fp.blocks; ++blk) mask[blk] = axis_bits(ih, fp.tb[blk].dh, fp.tb[blk].n, g->H);
                    const ptrdiff_t xi = (ptrdiff_t)(((size_t)b * img + (size_t)ih * g->W + lo * g->SW) * g->C);
                    forward_line(x, xi, xs, yimg + ((size_t)oh * g->OW + lo) * g->OC, g->OC, hi - lo, mask, &fp, um, first,
                                 last, bp, g->activation);
                }
                for (uint32_t ow = 0; ow < g->OW; ++ow) { /* each column outside [lo, hi), down the rows */
                    if (ow == lo) ow = hi;
                    if (ow >= g->OW) break;
                    const int32_t iw = (int32_t)(ow * g->SW);
                    for (uint32_t oh = 0; oh < g->OH;) {
                        const int32_t ih = (int32_t)(oh * g->SH);
                        uint32_t n = 1;
                        if (oh >= row_lo && oh < row_hi) n = row_hi - oh; /* rows inside vertically */
                        for (uint32_t blk = 0; blk < fp.blocks; ++blk)
                            mask[blk] = axis_bits(ih, fp.tb[blk].dh, fp.tb[blk].n, g->H) &
                                        axis_bits(iw, fp.tb[blk].dw, fp.tb[blk].n, g->W);
                        const ptrdiff_t xi = (ptrdiff_t)(((size_t)b * img + (size_t)ih * g->W + (uint32_t)iw) * g->C);
                        forward_line(x, xi, (ptrdiff_t)((size_t)g->SH * g->W * g->C), yimg + ((size_t)oh * g->OW + ow) * g->OC,
                                     (size_t)g->OW * g->OC, n, mask, &fp, um, first, last, bp, g->activation);
                        oh += n;
                    }
                }
            }
        }
    }
}

/* ---- backward ---- */

/* Input gradient columns held on the stack: 4 pixels of up to COL_K floats (8 KiB). Larger
 * K goes one pixel at a time in chunks of COL_K (one pixel's taps reach distinct dx
 * elements, so their order among themselves does not matter; across pixels it does). */
#define COL_PIX 4
#define COL_K 512

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
    for (uint32_t c0 = 0; c0 < kn; c0 += 64) {
        const uint32_t nv = mt_min_u32(4, (kn - c0 + 15) / 16);
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
    for (uint32_t kh = 0; kh < g->KH; ++kh) {
        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
        if (ih < 0) continue;
        for (uint32_t kw = 0; kw < g->KW; ++kw) {
            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
            if (iw < 0) continue;
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
    for (uint32_t b = 0; b < B && K <= COL_K; ++b) { /* output rows in order, up to 4 outputs at a time */
        float *dxs = dx + (size_t)b * g->H * g->W * g->C;
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW;) {
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
            else a[i] = _mm512_mask_add_ps(a[i], even, a[i], _mm512_mul_ps(d, _mm512_set1_ps(xp[o[i]])));
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
    const int32_t lo = -tb.dw_min > 0 ? -tb.dw_min : 0;
    const int32_t hi = (int32_t)g->W - tb.dw_max < (int32_t)g->OW ? (int32_t)g->W - tb.dw_max : (int32_t)g->OW;
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
                            acc[i] = _mm512_mask_add_ps(acc[i], j ? odd : even, acc[i],
                                                        _mm512_mul_ps(d, _mm512_set1_ps(xp[tb.off[k]])));
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

/* dW[oc, k] += Σ_o dy[o, oc]·x[o, k] over the in-bounds (o, k), from 0 in output order;
 * lanes across oc, sixteen k at a time, transposed into dW's rows at the end */
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

MT_AVX512 static void conv_backward_dw(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW * g->C;
    if (g->C == 1 && g->SW == 1 && g->OC <= 8 && K <= 16) {
        conv_backward_dw_one_channel(x, dy, dw, B, g);
        return;
    }
    for (uint32_t oc0 = 0; oc0 < g->OC; oc0 += 16) {
        const uint32_t un = mt_min_u32(16, g->OC - oc0);
        const __mmask16 um = mt_lanes(un);
        for (uint32_t k0 = 0; k0 < K; k0 += 16) {
            const uint32_t kn = mt_min_u32(16, K - k0);
            taps16 tb;
            taps16_init(&tb, g, k0, kn);
            __m512 acc[16];
            for (uint32_t k = 0; k < 16; ++k) acc[k] = _mm512_setzero_ps();
            const uint32_t all = (uint32_t)mt_lanes(kn);
            /* C a multiple of 8: the block is two runs of 8 channels, each within one tap */
            const int runs8 = kn == 16 && g->C % 8 == 0;
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
                        const __m512 d = _mm512_maskz_loadu_ps(um, dyrow + (size_t)ow * g->OC);
                        const uint32_t valid =
                            rows_in && inside(iw + tb.dw_min, g->W) && inside(iw + tb.dw_max, g->W)
                                ? all : taps16_valid(&tb, ih, iw, g);
                        /* sixteen named accumulators in registers; k >= kn is never valid */
#pragma GCC unroll 16
                        for (uint32_t k = 0; k < 16; ++k)
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

MT_AVX512 void mt_op_conv2d_f32_backward_avx512(const float *x, const float *w, const float *y, float *dy, float *dx,
                                                float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    const size_t outputs = (size_t)B * g->OH * g->OW;
    mt_fused_activation_backward_avx512(g->activation, y, dy, outputs * g->OC);
    if (dx) conv_backward_dx(w, dy, dx, B, g);
    if (dw) conv_backward_dw(x, dy, dw, B, g);
    if (dbias) mt_op_bias_f32_backward_avx512(dy, dbias, outputs, g->OC);
}
#else
typedef int mt_conv2d_x86_unused; /* ISO C: a translation unit is not empty */
#endif
