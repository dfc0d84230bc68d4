/*
 * AVX-512 sibling of the Conv2D forward (ops/conv2d.c); conv2d_x86.h says what the pieces
 * share, conv2d_backward_avx512.c holds the gradients.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/x86/conv2d_x86.h"
#include "ops/x86/conv2d_avx2_native.h"

MT_AVX512_INLINE __m512 activate(__m512 v, uint32_t activation)
{
    if (activation == MT_FUSED_NONE) return v;
    const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
    if (activation == MT_FUSED_RELU6) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, six, _CMP_GT_OQ), six);
    return v;
}

/* ---- forward: y[p, oc] = act(Σ_k x[p, k]·W[oc, k] + b[oc]), lanes across oc ---- */

#ifdef MT_X86_SHIM_AVX2 /* 16 ymm registers: six pixels' sums (12 registers) */
#define FWD_PIX 6
#else
#define FWD_PIX 8
#endif
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
#ifndef MT_X86_SHIM_AVX2 /* the AVX2 build: conv2d_avx2_native.h */
#define PAIRS 8


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

/* One pixel, lanes across oc: acc + Σ over the taps whose bit is set in `valid`, by k. A
 * tap outside is skipped by a masked add (the lanes keep their value); its load reads the
 * pixel's own input position instead, which is always inside. */
MT_AVX512_INLINE __m512 single_pixel(__m512 acc, const float *xp, const ptrdiff_t *off, const __m512 *t, uint32_t K,
                                     uint32_t valid)
{
    for (uint32_t k = 0; k < K; ++k) {
        const uint32_t in = valid >> k & 1u;
        const __m512 v = _mm512_set1_ps(xp[in ? off[k] : 0]);
        acc = _mm512_mask3_fmadd_ps(t[k], v, acc, (__mmask16)(0u - in));
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
    int32_t lo, hi; /* the pixels of a row whose taps are all inside horizontally */
    taps16_row_inside(&tb, g, &lo, &hi);
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
                    uint32_t n = 1; /* PAIRS, 4, 2 or 1 pairs: constants, so the sums stay in registers */
                    if (left >= 2 * PAIRS) n = PAIRS, forward_pairs(xp, tb.off, tp, K, yp, OC, PAIRS, bpp, g->activation);
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
#endif /* !MT_X86_SHIM_AVX2 */

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
 * mask[block]: FWD_PIX, 4 or 1 at a time */
MT_AVX512 static void forward_line(const float *x, ptrdiff_t xi, ptrdiff_t xs, float *yp, size_t ys, uint32_t n,
                                   const uint32_t *mask, const fwd_pass *fp, __mmask16 um, int first, int last,
                                   const __m512 *bias, uint32_t activation)
{
    while (n > 0) {
        __m512 acc[FWD_PIX];
        const uint32_t c = n >= FWD_PIX ? FWD_PIX : (n >= 4 ? 4 : 1);
        for (uint32_t j = 0; j < c; ++j) acc[j] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(um, yp + j * ys);
        if (c == FWD_PIX) forward_pixels(x, xi, xs, fp, mask, acc, FWD_PIX);
        else if (c == 4) forward_pixels(x, xi, xs, fp, mask, acc, 4);
        else forward_pixels(x, xi, xs, fp, mask, acc, 1);
        store_outputs(yp, ys, acc, c, um, last, bias, activation);
        xi += (ptrdiff_t)c * xs, yp += c * ys, n -= c;
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_conv2d_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                               uint32_t B, const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW * g->C;
    if (g->C == 1 && g->SW == 1 && g->OC <= 8 && K <= 16) {
#ifdef MT_X86_SHIM_AVX2
        conv_forward_one_channel8(x, w, bias, y, B, g);
#else
        conv_forward_one_channel(x, w, bias, y, B, g);
#endif
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

#else
typedef int mt_conv2d_x86_unused; /* ISO C: a translation unit is not empty */
#endif
