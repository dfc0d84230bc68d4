/*
 * What the AVX-512 Conv2D kernels share (conv2d_avx512.c: forward; conv2d_backward_avx512.c: the
 * gradients); ops/x86/x86.h says how they keep the reference's bits. Conv2D is Dense over
 * image patches: with k = (kh, kw, c) and K = KH·KW·C, W is [OC, K] (OHWI), and the output
 * pixel p reads x at tap k, or nothing when the tap falls in the padding (the reference skips
 * it, and so does every path here).
 */
#ifndef MT_OPS_X86_CONV2D_X86_H
#define MT_OPS_X86_CONV2D_X86_H

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

static inline void taps16_init(taps16 *t, const mt_spatial *g, uint32_t k0, uint32_t n)
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
static inline uint32_t taps16_valid(const taps16 *t, int32_t ih, int32_t iw, const mt_spatial *g)
{
    uint32_t bits = 0;
    for (uint32_t k = 0; k < t->n; ++k)
        if (inside(ih + t->dh[k], g->H) && inside(iw + t->dw[k], g->W)) bits |= 1u << k;
    return bits;
}

/* Bit k: tap k (relative offset d[k] along one axis) of position pos is inside [0, size). */
static inline uint32_t axis_bits(int32_t pos, const int32_t *d, uint32_t K, uint32_t size)
{
    uint32_t bits = 0;
    for (uint32_t k = 0; k < K; ++k) bits |= (uint32_t)inside(pos + d[k], size) << k;
    return bits;
}

/* [lo, hi): the outputs of a row (stride 1 along it) whose taps in `t` are all inside horizontally */
static inline void taps16_row_inside(const taps16 *t, const mt_spatial *g, int32_t *lo, int32_t *hi)
{
    *lo = -t->dw_min > 0 ? -t->dw_min : 0;
    *hi = (int32_t)g->W - t->dw_max < (int32_t)g->OW ? (int32_t)g->W - t->dw_max : (int32_t)g->OW;
}

/* x at p and p + 1 in every pair of lanes (one 64-bit broadcast) */
MT_AVX512_INLINE __m512 pair_of(const float *p)
{
    double d;
    memcpy(&d, p, sizeof d);
    return _mm512_castpd_ps(_mm512_set1_pd(d));
}

#endif /* MT_X86_KERNELS */
#endif /* MT_OPS_X86_CONV2D_X86_H */
