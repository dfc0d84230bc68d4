/*
 * Portable siblings of the max-pooling kernels (ops/pooling.c): the same comparisons in the
 * same window order, so the same bits and the same routing of the gradient
 * (tests/core/test_kernel_siblings.c). The reference recomputes the window's geometry (64-bit
 * tap arithmetic, the index products) for every channel and tap; here the in-bounds taps of
 * an output are found once (mt_spatial_tap_range) and the channels, contiguous in NHWC, go
 * along them: four maxima side by side forward, one channel's first maximum at a time back.
 */
#include <stddef.h>

#include "select/kernels.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_PORTABLE_F32_KERNELS

/* the reference's rule: m = the first in-bounds value, then v wherever v > m or v is NaN.
 * Written as !(v <= m) (v > m, or either is NaN) and then, rarely, m not NaN or v NaN: the
 * same choice, with one comparison where v <= m (taking the first value again changes
 * nothing, so the loops may start from it or after it) */
#define MT_MAX_TAKE(m, v)                                                                        \
    do {                                                                                         \
        const float v_ = (v);                                                                    \
        if (!(v_ <= (m)) && ((m) == (m) || v_ != v_)) (m) = v_;                                  \
    } while (0)

/* The first in-bounds input of output (b, oh, ow) and its tap rectangle; 0 when the window
 * has no tap inside (the reference then writes +0 and routes nothing) */
static const float *window(const float *x, uint32_t b, uint32_t oh, uint32_t ow, const mt_spatial *g, uint32_t *rows,
                           uint32_t *cols)
{
    uint32_t kh0, kh1, kw0, kw1;
    mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
    *rows = kh1 - kh0, *cols = kw1 - kw0;
    if (!*rows || !*cols) return NULL;
    return x + (((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W + ow * g->SW + kw0 - g->PL) * g->C;
}

/* the first input of output (b, oh, ow) of a mt_spatial_windows_2x2 layer; its taps are x0,
 * x0 + C, x0 + row, x0 + row + C */
static const float *window_2x2(const float *x, uint32_t b, uint32_t oh, uint32_t ow, const mt_spatial *g)
{
    return x + (((size_t)b * g->H + 2 * oh) * g->W + 2 * ow) * g->C;
}

static void max_pool_2x2_forward(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow, y += C) {
                const float *p = window_2x2(x, b, oh, ow, g);
                for (uint32_t c = 0; c < C; ++c, ++p) { /* the taps in order */
                    float m = p[0];
                    MT_MAX_TAKE(m, p[C]);
                    MT_MAX_TAKE(m, p[row]);
                    MT_MAX_TAKE(m, p[row + C]);
                    y[c] = m;
                }
            }
}

void mt_op_max_pool2d_f32_forward_portable(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C;
    if (mt_spatial_windows_2x2(g)) {
        max_pool_2x2_forward(x, y, B, g);
        return;
    }
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow, y += C) {
                uint32_t rows, cols, c = 0;
                const float *x0 = window(x, b, oh, ow, g, &rows, &cols);
                if (!x0) {
                    for (; c < C; ++c) y[c] = 0.0f;
                    continue;
                }
                for (; c + 4 <= C; c += 4) {
                    float m0 = x0[c], m1 = x0[c + 1], m2 = x0[c + 2], m3 = x0[c + 3];
                    const float *xr = x0 + c;
                    for (uint32_t i = 0; i < rows; ++i, xr += row) /* from the second tap */
                        for (const float *xp = xr + (i ? 0 : C), *e = xr + (size_t)cols * C; xp < e; xp += C) {
                            MT_MAX_TAKE(m0, xp[0]);
                            MT_MAX_TAKE(m1, xp[1]);
                            MT_MAX_TAKE(m2, xp[2]);
                            MT_MAX_TAKE(m3, xp[3]);
                        }
                    y[c] = m0, y[c + 1] = m1, y[c + 2] = m2, y[c + 3] = m3;
                }
                for (; c < C; ++c) {
                    float m = x0[c];
                    const float *xr = x0 + c;
                    for (uint32_t i = 0; i < rows; ++i, xr += row)
                        for (const float *xp = xr + (i ? 0 : C), *e = xr + (size_t)cols * C; xp < e; xp += C)
                            MT_MAX_TAKE(m, *xp);
                    y[c] = m;
                }
            }
}

/* The window's first tap (rows of span floats from p, one every C) equal to m, or NaN where m
 * is; NULL when none is */
static const float *first_max(const float *p, size_t row, uint32_t C, uint32_t rows, size_t span, float m)
{
    for (uint32_t i = 0; i < rows; ++i, p += row)
        if (m == m) { /* the usual case: one comparison per tap */
            for (const float *q = p, *e = p + span; q < e; q += C)
                if (*q == m) return q;
        } else
            for (const float *q = p, *e = p + span; q < e; q += C)
                if (*q != *q) return q;
    return NULL;
}

/* dx at the window's first tap equal to the maximum (or NaN where the maximum is) += dy */
void mt_op_max_pool2d_f32_backward_portable(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                            const mt_spatial *g)
{
    const uint32_t C = g->C;
    const size_t row = (size_t)g->W * C;
    if (mt_spatial_windows_2x2(g)) { /* the four taps in order, without first_max's loops */
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh)
                for (uint32_t ow = 0; ow < g->OW; ++ow, y += C, dy += C) {
                    const float *x0 = window_2x2(x, b, oh, ow, g);
                    for (uint32_t c = 0; c < C; ++c) {
                        const float *p = x0 + c;
                        const float m = y[c];
                        /* no tap equal: m is a NaN, and first_max finds the first NaN */
                        const float *q = p[0] == m         ? p
                                         : p[C] == m       ? p + C
                                         : p[row] == m     ? p + row
                                         : p[row + C] == m ? p + row + C
                                                           : first_max(p, row, C, 2, 2 * (size_t)C, m);
                        if (q) dx[q - x] += dy[c];
                    }
                }
        return;
    }
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow, y += C, dy += C) {
                uint32_t rows, cols;
                const float *x0 = window(x, b, oh, ow, g, &rows, &cols);
                if (!x0) continue;
                const size_t span = (size_t)cols * C;
                for (uint32_t c = 0; c < C; ++c) {
                    const float *q = first_max(x0 + c, row, C, rows, span, y[c]);
                    if (q) dx[q - x] += dy[c];
                }
            }
}
#else
typedef int mt_pooling_portable_unused; /* ISO C: a translation unit is not empty */
#endif
