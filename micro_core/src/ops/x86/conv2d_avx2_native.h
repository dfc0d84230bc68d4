/*
 * Conv2D kernels of the AVX2 build alone, in native 8-lane AVX2 (included by conv2d_avx512.c and
 * conv2d_backward_avx512.c when MT_X86_SHIM_AVX2 is defined), where the 16-lane kernels over the
 * shim need more than 16 ymm registers.
 *
 * One-channel layers (C = 1, SW = 1, OC <= 8, K <= 16: a first layer on one-channel images),
 * forward and weight gradient. The AVX-512 build pairs neighbouring pixels (or taps) in one
 * 16-lane vector so that 8 channels do not leave half of it idle; an 8-lane ymm is exactly one
 * pixel's channels, so this build needs no pairing: each output channel is a lane of its own,
 * written in native AVX2 (over the shim a pair of pixels took two ymm per sum and the sums no
 * longer fitted in 16 registers). The arithmetic is the reference's, lane by lane: each sum
 * from 0 in its order (forward: taps k ascending, then the bias; weight gradient: outputs in
 * order), one fused multiply-add per term, taps in the padding skipped.
 */
#ifndef MT_OPS_X86_CONV2D_AVX2_H
#define MT_OPS_X86_CONV2D_AVX2_H

#include "ops/x86/conv2d_x86.h"

#if MT_X86_KERNELS && defined(MT_X86_SHIM_AVX2)
#define ONE8_PIX 8 /* pixels a forward block: 8 sums, a tap, a broadcast and a product */

/* -1 in the first n of 8 lanes (channels past OC are neither read nor written) */
MT_AVX512_INLINE __m256i one8_lanes(uint32_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* lanes oc < OC: src[oc·step], the others 0 */
MT_AVX512_INLINE __m256 one8_gather(const float *src, size_t step, uint32_t OC)
{
    float lane[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (uint32_t oc = 0; src && oc < OC; ++oc) lane[oc] = src[oc * step];
    return _mm256_loadu_ps(lane);
}

MT_AVX512_INLINE __m256 one8_load(const float *p, uint32_t OC, __m256i om)
{
    return OC == 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, om);
}

/* the sum + bias, then the fused activation as the reference's v < 0 ? 0 (v > 6 ? 6) */
MT_AVX512_INLINE void one8_store(float *p, __m256 v, const __m256 *bias, uint32_t activation, uint32_t OC, __m256i om)
{
    if (bias) v = _mm256_add_ps(v, *bias);
    if (activation != MT_FUSED_NONE) {
        const __m256 zero = _mm256_setzero_ps(), six = _mm256_set1_ps(6.0f);
        v = _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
        if (activation == MT_FUSED_RELU6) v = _mm256_blendv_ps(v, six, _mm256_cmp_ps(v, six, _CMP_GT_OQ));
    }
    if (OC == 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, om, v);
}

/* n (a constant where inlined) pixels from xp whose taps are all inside: y = act(Σ_k x·W + b) */
MT_AVX512_INLINE void one8_forward_run(const float *xp, const ptrdiff_t *off, const __m256 *t, uint32_t K, float *yp,
                                      uint32_t OC, __m256i om, uint32_t n, const __m256 *bias, uint32_t activation)
{
    __m256 acc[ONE8_PIX];
    for (uint32_t j = 0; j < n; ++j) acc[j] = _mm256_setzero_ps();
    for (uint32_t k = 0; k < K; ++k) {
        const __m256 tk = t[k];
        const float *xk = xp + off[k];
        __asm__("" : "+r"(xk)); /* one pointer, the pixels at displacements (GCC kept n of them on the stack) */
        for (uint32_t j = 0; j < n; ++j) acc[j] = _mm256_fmadd_ps(tk, _mm256_broadcast_ss(xk + j), acc[j]);
    }
    for (uint32_t j = 0; j < n; ++j) one8_store(yp + (size_t)j * OC, acc[j], bias, activation, OC, om);
}

MT_AVX512 static inline void conv_forward_one_channel8(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                                const mt_spatial *g)
{
    const uint32_t K = g->KH * g->KW, OC = g->OC, all = (uint32_t)mt_lanes(K);
    const __m256i om = one8_lanes(OC);
    __m256 t[16];
    for (uint32_t k = 0; k < K; ++k) t[k] = one8_gather(w + k, K, OC); /* W is [OC, K] */
    const __m256 bv = one8_gather(bias, 1, OC), *bp = bias ? &bv : NULL;
    taps16 tb;
    taps16_init(&tb, g, 0, K);
    int32_t lo, hi; /* the pixels of a row whose taps are all inside horizontally */
    taps16_row_inside(&tb, g, &lo, &hi);
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            const int32_t ih = (int32_t)(oh * g->SH);
            const uint32_t rows = axis_bits(ih, tb.dh, K, g->H);
            const float *xrow = x + ((size_t)b * g->H + (uint32_t)ih) * g->W;
            float *yrow = y + ((size_t)b * g->OH + oh) * g->OW * OC;
            for (uint32_t ow = 0; ow < g->OW;) {
                const int32_t left = hi - (int32_t)ow;
                const int col_in = (int32_t)ow >= lo && left > 0;
                float *yp = yrow + (size_t)ow * OC;
                if (rows == all && col_in) { /* ONE8_PIX, 4, 2 or 1 pixels: constants, sums in registers */
                    const uint32_t n = left >= ONE8_PIX ? ONE8_PIX : left >= 4 ? 4 : left >= 2 ? 2 : 1;
                    if (n == ONE8_PIX) one8_forward_run(xrow + ow, tb.off, t, K, yp, OC, om, ONE8_PIX, bp, g->activation);
                    else if (n == 4) one8_forward_run(xrow + ow, tb.off, t, K, yp, OC, om, 4, bp, g->activation);
                    else if (n == 2) one8_forward_run(xrow + ow, tb.off, t, K, yp, OC, om, 2, bp, g->activation);
                    else one8_forward_run(xrow + ow, tb.off, t, K, yp, OC, om, 1, bp, g->activation);
                    ow += n;
                    continue;
                }
                const uint32_t valid = rows & (col_in ? all : axis_bits((int32_t)ow, tb.dw, K, g->W));
                __m256 acc = _mm256_setzero_ps();
                for (uint32_t k = 0; k < K; ++k) /* the taps in the padding skipped */
                    if (valid >> k & 1u)
                        acc = _mm256_fmadd_ps(t[k], _mm256_broadcast_ss(xrow + ow + tb.off[k]), acc);
                one8_store(yp, acc, bp, g->activation, OC, om);
                ++ow;
            }
        }
}

/* n pixels from xp whose taps are all inside: acc[k] += dy[o, ·]·x[o at tap k], o in order
 * (K a constant where inlined: the sums stay in registers) */
MT_AVX512_INLINE void one8_dw_run(const float *xp, const ptrdiff_t *off, const float *dyp, uint32_t OC, __m256i om,
                                 uint32_t n, __m256 *acc, uint32_t K)
{
    __m256 a[16];
    for (uint32_t k = 0; k < K; ++k) a[k] = acc[k];
    for (uint32_t p = 0; p < n; ++p, dyp += OC) {
        const __m256 d = one8_load(dyp, OC, om);
        for (uint32_t k = 0; k < K; ++k) a[k] = _mm256_fmadd_ps(d, _mm256_broadcast_ss(xp + p + off[k]), a[k]);
    }
    for (uint32_t k = 0; k < K; ++k) acc[k] = a[k];
}

/* dW[oc, k] += Σ_o dy[o, oc]·x[o at tap k] over the in-bounds taps, from 0 in output order */
MT_AVX512_INLINE void one8_dw(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g, uint32_t K)
{
    const uint32_t OC = g->OC, all = (uint32_t)mt_lanes(K);
    const __m256i om = one8_lanes(OC);
    taps16 tb;
    taps16_init(&tb, g, 0, K);
    int32_t lo, hi;
    taps16_row_inside(&tb, g, &lo, &hi);
    __m256 acc[16];
    for (uint32_t k = 0; k < K; ++k) acc[k] = _mm256_setzero_ps();
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            const int32_t ih = (int32_t)(oh * g->SH);
            const uint32_t rows = axis_bits(ih, tb.dh, K, g->H);
            const float *xrow = x + ((size_t)b * g->H + (uint32_t)ih) * g->W;
            const float *dyrow = dy + ((size_t)b * g->OH + oh) * g->OW * OC;
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                const int col_in = (int32_t)ow >= lo && (int32_t)ow < hi;
                if (rows == all && col_in) { /* a run of inside pixels */
                    const uint32_t n = (uint32_t)(hi - (int32_t)ow);
                    one8_dw_run(xrow + ow, tb.off, dyrow + (size_t)ow * OC, OC, om, n, acc, K);
                    ow += n - 1;
                    continue;
                }
                const uint32_t valid = rows & (col_in ? all : axis_bits((int32_t)ow, tb.dw, K, g->W));
                const __m256 d = one8_load(dyrow + (size_t)ow * OC, OC, om);
                for (uint32_t k = 0; k < K; ++k)
                    if (valid >> k & 1u)
                        acc[k] = _mm256_fmadd_ps(d, _mm256_broadcast_ss(xrow + ow + tb.off[k]), acc[k]);
            }
        }
    for (uint32_t k = 0; k < K; ++k) {
        float lane[8];
        _mm256_storeu_ps(lane, acc[k]);
        for (uint32_t oc = 0; oc < OC; ++oc) {
            float *o = dw + (size_t)oc * K + k;
            *o = *o + lane[oc];
        }
    }
}

/* 3 x 3 (the common case) with K known to the compiler */
MT_AVX512 static inline void conv_backward_dw_one_channel8(const float *x, const float *dy, float *dw, uint32_t B,
                                                    const mt_spatial *g)
{
    if (g->KH == 3 && g->KW == 3) one8_dw(x, dy, dw, B, g, 9);
    else one8_dw(x, dy, dw, B, g, g->KH * g->KW);
}

/*
 * The input gradient of 3-wide, stride-1 layers with a multiple of 8 channels, DX8_PIX outputs
 * (oh, ow0 + j) at a time whose taps are all inside: per kernel row kh and 8 channels from cb,
 * a[j][kw] = Σ_oc dy[o_j, oc]·W[oc, kh, kw, cb..cb+7] from 0 in ascending oc (the reference's
 * column sum), each W row loaded once for the DX8_PIX outputs (3·DX8_PIX sums, three W rows, a
 * broadcast and a product: 14 registers), then dx[ih, ow0 + q - PL] += a[j][q - j] for the five
 * positions q, j ascending. One output's taps reach distinct positions, and outputs arrive in
 * output order, so every dx element gets its columns in the reference's order.
 */
#define DX8_PIX 3

MT_AVX512_INLINE void dx8_row(const float *dyp, const float *w, float *dxp, uint32_t OC, uint32_t C, size_t K)
{
    /* named sums (an array indexed in the scatter below was kept in memory) */
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00, a12 = a00, a20 = a00, a21 = a00,
           a22 = a00;
    for (uint32_t oc = 0; oc < OC; ++oc, w += K) {
        const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + C), w2 = _mm256_loadu_ps(w + 2 * (size_t)C);
        __m256 d = _mm256_broadcast_ss(dyp + oc);
        a00 = _mm256_fmadd_ps(d, w0, a00);
        a01 = _mm256_fmadd_ps(d, w1, a01);
        a02 = _mm256_fmadd_ps(d, w2, a02);
        d = _mm256_broadcast_ss(dyp + OC + oc);
        a10 = _mm256_fmadd_ps(d, w0, a10);
        a11 = _mm256_fmadd_ps(d, w1, a11);
        a12 = _mm256_fmadd_ps(d, w2, a12);
        d = _mm256_broadcast_ss(dyp + 2 * (size_t)OC + oc);
        a20 = _mm256_fmadd_ps(d, w0, a20);
        a21 = _mm256_fmadd_ps(d, w1, a21);
        a22 = _mm256_fmadd_ps(d, w2, a22);
    }
    /* position q = j + kw gets a[j][kw], j ascending */
    const size_t c2 = 2 * (size_t)C;
    _mm256_storeu_ps(dxp, _mm256_add_ps(_mm256_loadu_ps(dxp), a00));
    _mm256_storeu_ps(dxp + C, _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(dxp + C), a01), a10));
    _mm256_storeu_ps(dxp + c2, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(dxp + c2), a02), a11), a20));
    _mm256_storeu_ps(dxp + c2 + C, _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(dxp + c2 + C), a12), a21));
    _mm256_storeu_ps(dxp + 2 * c2, _mm256_add_ps(_mm256_loadu_ps(dxp + 2 * c2), a22));
}

/* the DX8_PIX outputs from (oh, ow) of image b: dx8_row for every kernel row and 8 channels */
MT_AVX512_INLINE void dx8_group(const float *w, const float *dy, float *dx, uint32_t b, uint32_t oh, uint32_t ow,
                                const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t K = (size_t)g->KH * 3 * C;
    const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
    for (uint32_t kh = 0; kh < g->KH; ++kh) {
        const uint32_t ih = oh * g->SH + kh - g->PT;
        float *dxp = dx + (((size_t)b * g->H + ih) * g->W + (ow - g->PL)) * C;
        for (uint32_t cb = 0; cb < C; cb += 8) dx8_row(dyp, w + (size_t)kh * 3 * C + cb, dxp + cb, g->OC, C, K);
    }
}

/* the layers of dx8_group and dw8 */
static inline int conv8_fits(const mt_spatial *g)
{
    return g->KW == 3 && g->SW == 1 && g->C % 8 == 0;
}

/*
 * The weight gradient of the same layers: dW[oc, kh, kw, cb..cb+7] = Σ_o dy[o, oc]·x[o at (kh,
 * kw), cb..cb+7], one kernel row kh, 8 channels from cb and NJ (4, 2 or 1) output channels
 * from oc0 a pass. The lanes run across the channels, so the three taps of the row are 24
 * neighbouring floats of x and each output pixel needs 3 loads of x and NJ broadcasts of dy
 * for 3·NJ sums (the 16-lane kernel: two loads of dy and six broadcasts of x for six taps).
 * Every output in order, taps in the padding skipped: each sum is the reference's chain.
 */
#define DW8_NJ 3

/* a[j][kw] += dy[o, oc0 + j]·x at tap kw, for the taps whose bit is set in `valid` (row: the
 * input row's 8 channels at column 0; iw: tap 0's column, -1 when it is in the padding; tap 0
 * inside, the run passes row = tap 0 and iw = 0) */
MT_AVX512_INLINE void dw8_pixel(__m256 (*a)[3], const float *row, int32_t iw, const float *dyp, uint32_t C,
                                uint32_t NJ, uint32_t valid)
{
#pragma GCC unroll 3
    for (uint32_t kw = 0; kw < 3; ++kw) {
        if (!(valid >> kw & 1u)) continue;
        const __m256 v = _mm256_loadu_ps(row + (ptrdiff_t)(iw + (int32_t)kw) * (ptrdiff_t)C);
#pragma GCC unroll 4
        for (uint32_t j = 0; j < NJ; ++j) a[j][kw] = _mm256_fmadd_ps(_mm256_broadcast_ss(dyp + j), v, a[j][kw]);
    }
}

MT_AVX512_INLINE void dw8_pass(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g,
                               uint32_t kh, uint32_t cb, uint32_t oc0, uint32_t NJ, uint32_t lo, uint32_t hi)
{
    const uint32_t C = g->C, OC = g->OC;
    __m256 a[DW8_NJ][3];
#pragma GCC unroll 4
    for (uint32_t j = 0; j < NJ; ++j) a[j][0] = a[j][1] = a[j][2] = _mm256_setzero_ps();
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            const int32_t ih = (int32_t)(oh * g->SH + kh) - (int32_t)g->PT;
            if (!inside(ih, g->H)) continue; /* the kernel row in the padding: no term */
            const float *xrow = x + (((size_t)b * g->H + (uint32_t)ih) * g->W) * C + cb;
            const float *dyp = dy + ((size_t)b * g->OH + oh) * g->OW * OC + oc0;
            for (uint32_t ow = 0; ow < g->OW; ++ow, dyp += OC) {
                if (ow == lo) { /* the outputs whose three taps are inside */
                    for (const float *xp = xrow + (size_t)(ow - g->PL) * C; ow < hi; ++ow, xp += C, dyp += OC)
                        dw8_pixel(a, xp, 0, dyp, C, NJ, 7u);
                    if (ow == g->OW) break;
                }
                const int32_t iw = (int32_t)ow - (int32_t)g->PL;
                const uint32_t valid = (uint32_t)inside(iw, g->W) | (uint32_t)inside(iw + 1, g->W) << 1 |
                                       (uint32_t)inside(iw + 2, g->W) << 2;
                dw8_pixel(a, xrow, iw, dyp, C, NJ, valid);
            }
        }
    const size_t K = (size_t)g->KH * 3 * C;
#pragma GCC unroll 4
    for (uint32_t j = 0; j < NJ; ++j)
#pragma GCC unroll 3
        for (uint32_t kw = 0; kw < 3; ++kw) {
            float *o = dw + (oc0 + j) * K + ((size_t)kh * 3 + kw) * C + cb;
            _mm256_storeu_ps(o, _mm256_add_ps(_mm256_loadu_ps(o), a[j][kw]));
        }
}

MT_AVX512 static inline void dw8(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g)
{
    uint32_t lo, hi; /* [lo, hi): the outputs of a row whose three taps are inside */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
    if (hi <= lo) lo = hi = g->OW; /* none: every output checks its taps */
    for (uint32_t kh = 0; kh < g->KH; ++kh)
        for (uint32_t cb = 0; cb < g->C; cb += 8) {
            uint32_t oc0 = 0;
            for (; oc0 + DW8_NJ <= g->OC; oc0 += DW8_NJ) dw8_pass(x, dy, dw, B, g, kh, cb, oc0, DW8_NJ, lo, hi);
            if (oc0 + 2 == g->OC) dw8_pass(x, dy, dw, B, g, kh, cb, oc0, 2, lo, hi);
            else if (oc0 < g->OC) dw8_pass(x, dy, dw, B, g, kh, cb, oc0, 1, lo, hi);
        }
}

#endif /* MT_X86_KERNELS && MT_X86_SHIM_AVX2 */
#endif /* MT_OPS_X86_CONV2D_AVX2_H */
