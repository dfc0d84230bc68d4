/*
 * AVX-512 siblings of the DepthwiseConv2D kernels (ops/depthwise_conv2d.c); ops/x86/x86.h
 * says how they keep the reference's bits. Every sum here runs within one channel, so the
 * lanes simply run across sixteen consecutive channels, in the reference's order.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/spatial.h"
#include "ops/x86/avx512.h"

MT_AVX512_INLINE __m512 activate(__m512 acc, uint32_t activation)
{
    const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    if (activation != MT_FUSED_NONE) {
        acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(acc, zero, _CMP_LT_OQ), zero);
        if (activation == MT_FUSED_RELU6) acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(acc, six, _CMP_GT_OQ), six);
    }
    return acc;
}

/* inside pixels of the forward together, and the 3 x 3 weight gradient's taps a pass: 16 ymm
 * registers (the AVX2 build) hold half of what 32 zmm do */
#ifdef MT_X86_SHIM_AVX2
#define DW_PIX 6
#define DW_KH_SPLIT 2 /* kernel rows 0..1, then 2: six sums, then three */
#else
#define DW_PIX 8
#define DW_KH_SPLIT 3 /* all nine sums in one pass */
#endif

/* n pixels of one row whose taps are all inside (pixel j at xp + j·xs, its output at
 * yp + j·C): every tap by ascending kh, kw for sixteen channels c0.. at a time; n is a
 * constant where it is inlined, so the n sums are in flight together */
MT_AVX512_INLINE void forward_inside(const float *xp, size_t xs, const float *w, const float *bias, float *yp,
                                     uint32_t n, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C;
    for (uint32_t c0 = 0; c0 < C; c0 += 16) {
        const __mmask16 m = mt_lanes(C - c0);
        __m512 acc[DW_PIX];
        for (uint32_t j = 0; j < n; ++j) acc[j] = _mm512_setzero_ps();
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                const __m512 wv = _mm512_maskz_loadu_ps(m, w + ((size_t)kh * g->KW + kw) * C + c0);
                const float *xt = xp + kh * row + (size_t)kw * C + c0;
                for (uint32_t j = 0; j < n; ++j) acc[j] = mt_mac(acc[j], _mm512_maskz_loadu_ps(m, xt + j * xs), wv);
            }
        for (uint32_t j = 0; j < n; ++j) {
            __m512 v = acc[j];
            if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + c0));
            _mm512_mask_storeu_ps(yp + (size_t)j * C + c0, m, activate(v, g->activation));
        }
    }
}

/* y[b,oh,ow,c] = act(Σ_{in-bounds kh,kw} x[tap, c]·W[kh,kw,c] + b[c]), by ascending kh, kw:
 * the pixels whose window is inside up to DW_PIX at a time, the others one by one with their
 * taps checked */
MT_AVX512 void MT_X86_NAME(mt_op_depthwise_conv2d_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                                         uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    uint32_t lo, hi, row_lo, row_hi; /* the windows wholly inside: rows [row_lo, row_hi) x [lo, hi) */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
    mt_spatial_window_inside(g->OH, g->SH, g->PT, g->KH, g->H, &row_lo, &row_hi);
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW;) {
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                if (oh >= row_lo && oh < row_hi && ow >= lo && ow < hi) {
                    const float *xp = x + (((size_t)b * g->H + oh * g->SH - g->PT) * g->W + ow * g->SW - g->PL) * C;
                    const size_t xs = (size_t)g->SW * C;
                    const uint32_t n = hi - ow >= DW_PIX ? DW_PIX : (hi - ow >= 4 ? 4 : 1);
                    if (n == DW_PIX) forward_inside(xp, xs, w, bias, yp, DW_PIX, g);
                    else if (n == 4) forward_inside(xp, xs, w, bias, yp, 4, g);
                    else forward_inside(xp, xs, w, bias, yp, 1, g);
                    ow += n;
                    continue;
                }
                for (uint32_t c0 = 0; c0 < C; c0 += 16) {
                    const __mmask16 m = mt_lanes(C - c0);
                    __m512 acc = _mm512_setzero_ps();
                    int32_t ih, iw;
                    MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                        const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0;
                        const float *wp = w + ((size_t)kh * g->KW + kw) * C + c0;
                        acc = mt_mac(acc, _mm512_maskz_loadu_ps(m, xp), _mm512_maskz_loadu_ps(m, wp));
                    }
                    if (bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, bias + c0));
                    _mm512_mask_storeu_ps(yp + c0, m, activate(acc, g->activation));
                }
                ++ow;
            }
}

/* dW[kh, kw, c0 + ·] += Σ_o dz[o, ·]·x[tap, ·] over the outputs [oh0, oh1) x [ow0, ow1) in
 * order, nv vectors of channels (a constant where inlined: the sums stay in registers) */
MT_AVX512_INLINE void weight_block(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g,
                                   uint32_t kh, uint32_t kw, uint32_t oh0, uint32_t oh1, uint32_t ow0, uint32_t ow1,
                                   uint32_t c0, uint32_t nv)
{
    const uint32_t C = g->C;
    __m512 acc[4];
    __mmask16 mask[4] = {0, 0, 0, 0};
    for (uint32_t v = 0; v < nv; ++v) {
        mask[v] = mt_lanes(C - c0 - 16 * v);
        acc[v] = _mm512_setzero_ps();
    }
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = oh0; oh < oh1; ++oh) {
            const uint32_t ih = oh * g->SH + kh - g->PT;
            const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * C + c0;
            const float *xp = x + (((size_t)b * g->H + ih) * g->W + ow0 * g->SW + kw - g->PL) * C + c0;
            for (uint32_t ow = ow0; ow < ow1; ++ow, dyp += C, xp += (size_t)g->SW * C)
                for (uint32_t v = 0; v < nv; ++v)
                    acc[v] = mt_mac(acc[v], _mm512_maskz_loadu_ps(mask[v], dyp + 16 * v),
                                    _mm512_maskz_loadu_ps(mask[v], xp + 16 * v));
        }
    float *o = dw + ((size_t)kh * g->KW + kw) * C + c0;
    for (uint32_t v = 0; v < nv; ++v)
        _mm512_mask_storeu_ps(o + 16 * v, mask[v], _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], o + 16 * v), acc[v]));
}

/* v += a·b over a channel chunk: 16 lanes, 8, or one float (p, q, r: the chunk's start) */
#define DW_CHUNKS(C, body16, body8, body1)                                                          \
    do {                                                                                            \
        uint32_t c0_ = 0;                                                                           \
        for (; c0_ + 16 <= (C); c0_ += 16) body16;                                                  \
        for (; c0_ + 8 <= (C); c0_ += 8) body8;                                                     \
        for (; c0_ < (C); ++c0_) body1;                                                             \
    } while (0)

/* dx += the contributions of the n outputs ow0.. of row oh, whose windows are inside: each
 * input position they reach is loaded once, gets their dz·W in output order (one output's
 * taps reach distinct positions, so per position that is the reference's order), and is
 * stored once. dxs: the sample's dx; dyp: output ow0's dz. */
MT_AVX512_INLINE void input_grad_group(float *dxs, const float *dyp, const float *w, uint32_t n, uint32_t oh,
                                       uint32_t ow0, const mt_spatial *g)
{
    const uint32_t C = g->C, first = ow0 * g->SW, end = (ow0 + n - 1) * g->SW + g->KW;
    for (uint32_t kh = 0; kh < g->KH; ++kh) {
        const uint32_t ih = oh * g->SH + kh - g->PT;
        for (uint32_t cpos = first; cpos < end; ++cpos) { /* cpos = iw + PL */
            const float *dz[8], *wt[8];
            uint32_t k = 0;
            for (uint32_t j = 0; j < n; ++j) {
                const uint32_t o = (ow0 + j) * g->SW;
                if (cpos >= o && cpos - o < g->KW)
                    dz[k] = dyp + (size_t)j * C, wt[k++] = w + ((size_t)kh * g->KW + (cpos - o)) * C;
            }
            float *d = dxs + ((size_t)ih * g->W + (cpos - g->PL)) * C;
            DW_CHUNKS(C,
                      {
                          __m512 v = _mm512_loadu_ps(d + c0_);
                          for (uint32_t e = 0; e < k; ++e)
                              v = mt_mac(v, _mm512_loadu_ps(dz[e] + c0_), _mm512_loadu_ps(wt[e] + c0_));
                          _mm512_storeu_ps(d + c0_, v);
                      },
                      {
                          __m256 v = _mm256_loadu_ps(d + c0_);
                          for (uint32_t e = 0; e < k; ++e)
                              v = _mm256_fmadd_ps(_mm256_loadu_ps(dz[e] + c0_), _mm256_loadu_ps(wt[e] + c0_), v);
                          _mm256_storeu_ps(d + c0_, v);
                      },
                      {
                          float v = d[c0_];
                          for (uint32_t e = 0; e < k; ++e) v = mt_fmaf(dz[e][c0_], wt[e][c0_], v);
                          d[c0_] = v;
                      });
        }
    }
}

/* One output's dx += dz·W at its in-bounds taps (an output whose window is not inside) */
MT_AVX512_INLINE void input_grad_one(float *dxs, const float *dyp, const float *w, uint32_t oh, uint32_t ow,
                                     const mt_spatial *g)
{
    const uint32_t C = g->C;
    int32_t ih, iw;
    MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
        float *d = dxs + ((size_t)ih * g->W + (uint32_t)iw) * C;
        const float *wp = w + ((size_t)kh * g->KW + kw) * C;
        /* whole 16- and 8-lane vectors: the next output adds to the same pixels, and
         * masked stores do not forward to masked loads */
        DW_CHUNKS(C,
                  _mm512_storeu_ps(d + c0_, mt_mac(_mm512_loadu_ps(d + c0_), _mm512_loadu_ps(dyp + c0_),
                                                   _mm512_loadu_ps(wp + c0_))),
                  _mm256_storeu_ps(d + c0_, _mm256_fmadd_ps(_mm256_loadu_ps(dyp + c0_), _mm256_loadu_ps(wp + c0_), _mm256_loadu_ps(d + c0_))),
                  d[c0_] = mt_fmaf(dyp[c0_], wp[c0_], d[c0_]));
    }
}

/* n outputs of a row whose 3 x 3 windows are inside (output j's window at xp + j·xs, its dz
 * at dyp + j·C): acc[3·kh + kw] += dz·x at that tap for kernel rows [kh0, kh1), the outputs
 * in order; those sums in registers (kh0, kh1 constants where it is inlined) */
MT_AVX512_INLINE void weight_run9(const float *xp, size_t xs, size_t row, const float *dyp, uint32_t C, __mmask16 m,
                                  uint32_t n, __m512 *acc, uint32_t kh0, uint32_t kh1)
{
    __m512 a[9];
    for (uint32_t t = 3 * kh0; t < 3 * kh1; ++t) a[t] = acc[t];
    for (uint32_t p = 0; p < n; ++p, xp += xs, dyp += C) {
        const __m512 d = _mm512_maskz_loadu_ps(m, dyp);
        for (uint32_t kh = kh0; kh < kh1; ++kh)
            for (uint32_t kw = 0; kw < 3; ++kw)
                a[3 * kh + kw] = mt_mac(a[3 * kh + kw], d, _mm512_maskz_loadu_ps(m, xp + kh * row + (size_t)kw * C));
    }
    for (uint32_t t = 3 * kh0; t < 3 * kh1; ++t) acc[t] = a[t];
}

/* dW of a 3 x 3 window, sixteen channels at a time: the nine taps' sums together over one
 * pass of the outputs in order (each tap's sum skips the outputs where it is outside, as the
 * reference's per-tap loop does), then added to dW */
MT_AVX512 static void weight_grad_3x3(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C, xs = (size_t)g->SW * C;
    uint32_t lo, hi, row_lo, row_hi;
    mt_spatial_window_inside(g->OW, g->SW, g->PL, 3, g->W, &lo, &hi);
    mt_spatial_window_inside(g->OH, g->SH, g->PT, 3, g->H, &row_lo, &row_hi);
    for (uint32_t c0 = 0; c0 < C; c0 += 16) {
        const __mmask16 m = mt_lanes(C - c0);
        __m512 acc[9];
        for (uint32_t t = 0; t < 9; ++t) acc[t] = _mm512_setzero_ps();
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh)
                for (uint32_t ow = 0; ow < g->OW;) {
                    const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * C + c0;
                    if (oh >= row_lo && oh < row_hi && ow >= lo && ow < hi) {
                        const float *xp = x + (((size_t)b * g->H + oh * g->SH - g->PT) * g->W + ow * g->SW - g->PL) * C + c0;
                        /* kernel rows [0, DW_KH_SPLIT), then the rest: each tap's sum is its own,
                         * over the same outputs in the same order */
                        weight_run9(xp, xs, row, dyp, C, m, hi - ow, acc, 0, DW_KH_SPLIT);
                        if (DW_KH_SPLIT < 3) weight_run9(xp, xs, row, dyp, C, m, hi - ow, acc, DW_KH_SPLIT, 3);
                        ow = hi;
                        continue;
                    }
                    const __m512 d = _mm512_maskz_loadu_ps(m, dyp);
                    for (uint32_t kh = 0; kh < 3; ++kh) {
                        const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                        if (ih < 0) continue;
                        for (uint32_t kw = 0; kw < 3; ++kw) {
                            const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                            if (iw < 0) continue;
                            const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * C + c0;
                            acc[3 * kh + kw] = mt_mac(acc[3 * kh + kw], d, _mm512_maskz_loadu_ps(m, xp));
                        }
                    }
                    ++ow;
                }
        for (uint32_t t = 0; t < 9; ++t) {
            float *o = dw + (size_t)t * C + c0;
            _mm512_mask_storeu_ps(o, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, o), acc[t]));
        }
    }
}

/*
 * dx[tap, c] += dz[o, c]·W[kh,kw,c] for each output o in order and its in-bounds taps;
 * dW[kh,kw,c] += Σ_o dz[o, c]·x[tap, c] (from 0 in output order); db[c] += Σ_o dz[o, c].
 */
MT_AVX512 void MT_X86_NAME(mt_op_depthwise_conv2d_f32_backward)(const float *x, const float *w, const float *y, float *dy,
                                                          float *dx, float *dw, float *dbias, uint32_t B,
                                                          const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t outputs = (size_t)B * g->OH * g->OW;
    MT_X86_NAME(mt_fused_activation_backward)(g->activation, y, dy, outputs * C);
    if (dx) {
        uint32_t lo, hi, row_lo, row_hi;
        mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &lo, &hi);
        mt_spatial_window_inside(g->OH, g->SH, g->PT, g->KH, g->H, &row_lo, &row_hi);
        for (uint32_t b = 0; b < B; ++b) {
            float *dxs = dx + (size_t)b * g->H * g->W * C;
            for (uint32_t oh = 0; oh < g->OH; ++oh)
                for (uint32_t ow = 0; ow < g->OW;) { /* outputs in order */
                    const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
                    if (oh >= row_lo && oh < row_hi && ow >= lo && ow + 4 <= hi) {
                        input_grad_group(dxs, dyp, w, 4, oh, ow, g);
                        ow += 4;
                    } else {
                        input_grad_one(dxs, dyp, w, oh, ow, g);
                        ++ow;
                    }
                }
        }
    }
    if (dw && g->KH == 3 && g->KW == 3) {
        weight_grad_3x3(x, dy, dw, B, g);
    } else if (dw) {
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1; /* the outputs whose tap (kh, kw) is in bounds */
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                for (uint32_t c0 = 0; c0 < C; c0 += 64) {
                    const uint32_t nv = mt_min_u32(4, (C - c0 + 15) / 16);
                    if (nv == 1) weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 1);
                    else if (nv == 2) weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 2);
                    else if (nv == 3) weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 3);
                    else weight_block(x, dy, dw, B, g, kh, kw, oh0, oh1, ow0, ow1, c0, 4);
                }
            }
    }
    if (dbias) MT_X86_NAME(mt_op_bias_f32_backward)(dy, dbias, outputs, C);
}
#else
typedef int mt_depthwise_x86_unused; /* ISO C: a translation unit is not empty */
#endif
