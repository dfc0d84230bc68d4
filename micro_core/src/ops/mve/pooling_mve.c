/*
 * Helium siblings of the MaxPool2D kernels (ops/pooling.c); ops/mve/mve.h says how the
 * kernels keep the reference's bits. Lanes run across four channels (NHWC: a tap's channels
 * are contiguous), a window's in-bounds taps found once per output (mt_spatial_tap_range).
 * Nothing is computed, only compared and copied, so MVE's default NaN never shows; but its
 * comparisons flush subnormal inputs (1e-39 == 2e-39 there), so a comparison that met one
 * (FPSCR.IDC) sends the op (forward) or the window (backward) to scalar code. Channels
 * C >= 4; the last vector of channels C - 4 .. C - 1 may overlap the one before and keeps its
 * lanes below skip out.
 */
#include "ops/mve/mve.h"
#include "ops/mve/pooling_2x2_mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/mve/mve_flags.h"
#include "ops/ops.h"
#include "ops/spatial.h"

/* the offsets (in floats) of a window's in-bounds taps from x[b, 0, 0, 0], in the reference's order
 * (kh, then kw ascending); returns how many */
static uint32_t window_taps(const mt_spatial *g, uint32_t oh, uint32_t ow, uint32_t *off)
{
    uint32_t kh0, kh1, kw0, kw1, n = 0;
    mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
    for (uint32_t kh = kh0; kh < kh1; ++kh)
        for (uint32_t kw = kw0; kw < kw1; ++kw)
            off[n++] = ((oh * g->SH + kh - g->PT) * g->W + ow * g->SW + kw - g->PL) * g->C;
    return n;
}

#define POOL_TAPS 64 /* windows of at most this many taps; larger ones run the portable sibling */
#define POOL_HELIUM(g) ((g)->C >= 4 && (g)->KH * (g)->KW <= POOL_TAPS)
/* pooling_2x2_mve.h's layers: 2 x 2 windows at stride 2, all inside, whole vectors of channels */
#define POOL_2X2(g) (mt_spatial_windows_2x2(g) && (g)->OH && (g)->OW && (g)->C && (g)->C % 4 == 0)

/* pooling_2x2_mve.h's row of image b, output row oh, from output pixel ow on */
static mt_mve_pool_row pool_row(const float *x, float *dx, const float *y, const float *dy, uint32_t b, uint32_t oh,
                                uint32_t ow, const mt_spatial *g)
{
    const size_t in = (((size_t)b * g->H + 2 * oh) * g->W + 2 * ow) * g->C;
    const size_t out = (((size_t)b * g->OH + oh) * g->OW + ow) * g->C;
    mt_mve_pool_row r = {x + in, dx ? dx + in : NULL, y + out, dy ? dy + out : NULL, g->W * g->C * 4u, g->C * 4u,
                         g->OW - ow, g->C / 4};
    return r;
}

/*
 * y = the reference's maximum: the first tap, then each next tap v replaces m when v > m or v
 * is a NaN. So m stays when v is not a NaN and v <= m or m is a NaN: VCMP EQ of v with itself,
 * then in a VPT block VCMP LE (true for an unordered pair), then VPSEL; in assembly, as the
 * compiler moved the predicate through core registers. A window's taps are found once for all
 * rows of the batch.
 */
static inline __attribute__((always_inline)) float32x4_t max_of_taps(const float *p, const uint32_t *off, uint32_t n)
{
    float32x4_t m = vld1q_f32(p + off[0]);
    for (uint32_t t = 1; t < n; ++t) {
        const float *q = p + off[t];
        __asm("vldrw.u32 q7, [%[q]]\n\t"
              "vcmp.f32 eq, q7, q7\n\t"
              "vpst\n\t"
              "vcmpt.f32 le, q7, %q[m]\n\t"
              "vpsel %q[m], %q[m], q7\n"
              : [m] "+w"(m)
              : [q] "r"(q)
              : "q7", "p0", "memory");
    }
    return m;
}

void mt_op_max_pool2d_f32_forward_mve(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C;
    if (!POOL_HELIUM(g)) {
        mt_op_max_pool2d_f32_forward_portable(x, y, B, g);
        return;
    }
    uint32_t off[POOL_TAPS];
    const size_t xs = (size_t)g->H * g->W * C, ys = (size_t)g->OH * g->OW * C;
    mt_mve_flags_clear();
    if (POOL_2X2(g))
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                const mt_mve_pool_row r = pool_row(x, NULL, y, NULL, b, oh, 0, g); /* y is written */
                mt_mve_max_pool_row(&r);
            }
    else
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow) {
                const uint32_t n = window_taps(g, oh, ow, off);
                float *yo = y + ((size_t)oh * g->OW + ow) * C;
                for (uint32_t b = 0; b < B; ++b, yo += ys)
                    for (uint32_t c4 = 0; c4 < C; c4 += 4) {
                        const uint32_t c = c4 + 4 > C ? C - 4 : c4;
                        const float32x4_t m = n ? max_of_taps(x + (size_t)b * xs + c, off, n) : vdupq_n_f32(0.0f);
                        if (c == c4) vst1q_f32(yo + c, m);
                        else vstrwq_p_f32(yo + c, m, (mve_pred16_t)~vctp32q(c4 - c));
                    }
            }
    const float32x4_t none = vdupq_n_f32(0.0f); /* every result is stored: the clobber orders them */
    if (mt_mve_flushed(none, none, none, none)) mt_op_max_pool2d_f32_forward_portable(x, y, B, g);
}

/* the reference's routing of one window's dy for channels [lo, hi): dx at the first tap equal
 * to y (or the first NaN when y is one) += dy */
static void window_reference(const float *xb, const float *yo, const float *dyo, float *dxb, const uint32_t *off,
                             uint32_t n, uint32_t lo, uint32_t hi)
{
    for (uint32_t c = lo; c < hi; ++c) {
        const float m = yo[c];
        for (uint32_t t = 0; t < n; ++t) {
            const float v = xb[off[t] + c];
            if (v == m || (v != v && m != m)) {
                dxb[off[t] + c] += dyo[c];
                break;
            }
        }
    }
}

/* lane j's dy to the tap whose offset it holds, if any */
#define ROUTE(j)                                                                                                  \
    do {                                                                                                          \
        const uint32_t at_ = vgetq_lane_u32(at, j);                                                              \
        if (at_ != UINT32_MAX) dxc[at_ + (j)] += dyc[j];                                                         \
    } while (0)

/*
 * dx at each window's first tap equal to its maximum += dy. Per window and four channels the
 * taps are compared with y in descending order, each hit setting the lane's tap index, so the
 * first hit's stays; the adds are then scalar (dx += dy with the FPU's bits). A NaN maximum
 * (the reference looks for the first NaN there) or a flushed subnormal in a comparison sends
 * the window to the reference's loop.
 */
void mt_op_max_pool2d_f32_backward_mve(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                       const mt_spatial *g)
{
    const uint32_t C = g->C;
    if (!POOL_HELIUM(g)) {
        mt_op_max_pool2d_f32_backward_portable(x, y, dy, dx, B, g);
        return;
    }
    uint32_t off[POOL_TAPS];
    const size_t xs = (size_t)g->H * g->W * C, ys = (size_t)g->OH * g->OW * C;
    mt_mve_flags_clear();
    if (POOL_2X2(g)) {
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                mt_mve_pool_row r = pool_row(x, dx, y, dy, b, oh, 0, g);
                const float *dyo = r.dy;
                for (const float *at; (at = mt_mve_max_pool_row_grad(&r)) != NULL;) {
                    /* a window left unstored: its channels from there on the reference's way */
                    const uint32_t k = (uint32_t)(at - dyo) / 4 - 1, ow = k / (C / 4), c = k % (C / 4) * 4;
                    const size_t o = (size_t)b * ys + ((size_t)oh * g->OW + ow) * C;
                    const uint32_t n = window_taps(g, oh, ow, off);
                    window_reference(x + (size_t)b * xs, y + o, dy + o, dx + (size_t)b * xs, off, n, c, C);
                    mt_mve_flags_clear();
                    if (ow + 1 == g->OW) break;
                    r = pool_row(x, dx, y, dy, b, oh, ow + 1, g);
                }
            }
        return;
    }
    for (uint32_t oh = 0; oh < g->OH; ++oh)
        for (uint32_t ow = 0; ow < g->OW; ++ow) {
            const uint32_t n = window_taps(g, oh, ow, off);
            if (!n) continue;
            for (uint32_t b = 0; b < B; ++b) {
                const float *xb = x + (size_t)b * xs;
                float *dxb = dx + (size_t)b * xs;
                const size_t o = (size_t)b * ys + ((size_t)oh * g->OW + ow) * C;
                for (uint32_t c4 = 0; c4 < C; c4 += 4) {
                    const uint32_t c = c4 + 4 > C ? C - 4 : c4;
                    const float32x4_t m = vld1q_f32(y + o + c);
                    uint32x4_t at = vdupq_n_u32(UINT32_MAX); /* no tap equal: nothing routed */
                    for (uint32_t t = n; t-- > 0;) /* descending: the first equal tap's offset stays */
                        __asm("vldrw.u32 q7, [%[q]]\n\t"
                              "vcmp.f32 eq, q7, %q[m]\n\t"
                              "vdup.32 q7, %[t]\n\t"
                              "vpsel %q[at], q7, %q[at]\n"
                              : [at] "+w"(at)
                              : [q] "r"(xb + off[t] + c), [m] "w"(m), [t] "r"(off[t])
                              : "q7", "p0", "memory");
                    uint32_t fpscr;
                    __asm volatile("vmrs %0, fpscr" : "=r"(fpscr) : "w"(at) : "memory");
                    if (mt_mve_nan1(m) || (fpscr & (MT_FPSCR_IDC | MT_FPSCR_UFC))) {
                        window_reference(xb, y + o, dy + o, dxb, off, n, c4, c + 4);
                        mt_mve_flags_clear();
                        continue;
                    }
                    float *dxc = dxb + c;
                    const float *dyc = dy + o + c;
                    if (c == c4) { /* each lane's dy to its tap, in scalar code (dx += dy, the FPU's bits) */
                        ROUTE(0);
                        ROUTE(1);
                        ROUTE(2);
                        ROUTE(3);
                    } else {
                        uint32_t lanes[4];
                        vst1q_u32(lanes, at);
                        for (uint32_t j = c4 - c; j < 4; ++j)
                            if (lanes[j] != UINT32_MAX) dxc[lanes[j] + j] += dyc[j];
                    }
                }
            }
        }
}

#else
typedef int mt_pooling_mve_unused; /* ISO C: a translation unit is not empty */
#endif
