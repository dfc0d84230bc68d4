/*
 * Helium siblings of the DepthwiseConv2D gradients (ops/depthwise_conv2d.c); ops/mve/mve.h says
 * how they keep the reference's bits, depthwise_mve.h what they share with the forward. Lanes
 * run across four channels, each lane its own channel's sum. With stride 1 along W and a 3-wide
 * window both gradients go by kernel rows along the image rows (dws_*, dxs_*; for 8 and 16
 * channels the weight gradient's rows in naked functions, depthwise_dw_rows_mve.h, and at stride
 * 1 both ways the input gradient by the forward's blocks, depthwise_blocks_mve.h); otherwise the
 * weight gradient goes a tap at a time (dw_tap) at stride 1 along W, and the portable sibling
 * takes the rest.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "mt_fma.h"
#include "ops/mve/depthwise_blocks_mve.h"
#include "ops/mve/depthwise_dw_rows_mve.h"
#include "ops/mve/depthwise_mve.h"

/* dW[kh, kw, j] += the reference's sum for j in [lo, hi): Σ_{b, oh, ow in bounds} dz·x from +0 in
 * ascending (b, oh, ow), each term fused (mt_fmaf), on the scalar FPU (a block Helium cannot
 * give the bits of) */
static void dw_reference_tap(const float *x, const float *dy, float *dw, const mt_spatial *g, uint32_t B, uint32_t kh,
                             uint32_t kw, uint32_t lo, uint32_t hi)
{
    const uint32_t C = g->C;
    uint32_t oh0, oh1, ow0, ow1;
    mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
    mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
    for (uint32_t j = lo; j < hi; ++j) {
        float acc = 0.0f;
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = oh0; oh < oh1; ++oh)
                for (uint32_t ow = ow0; ow < ow1; ++ow)
                    acc = mt_fmaf(
                        dy[(((size_t)b * g->OH + oh) * g->OW + ow) * C + j],
                        x[(((size_t)b * g->H + oh * g->SH + kh - g->PT) * g->W + ow * g->SW + kw - g->PL) * C + j], acc);
        dw[((size_t)kh * g->KW + kw) * C + j] += acc;
    }
}

/* dW[kh, kw, c..] += Σ_{b, oh, ow in bounds} dz·x of one tap, from +0 in ascending (b, oh, ow),
 * G vectors of channels from c (the first's lanes below skip not stored); SW = 1, so a row of
 * dz and of x are both runs of C floats per pixel (dw_taps). A flushed subnormal or a NaN sends
 * the block to the reference's scalar sums before anything is stored. */
static inline __attribute__((always_inline)) void dw_tap(const float *x, const float *dy, float *dw,
                                                         const mt_spatial *g, uint32_t B, uint32_t kh, uint32_t kw,
                                                         uint32_t oh0, uint32_t oh1, uint32_t ow0, uint32_t ow1,
                                                         uint32_t c, uint32_t skip, const uint32_t G)
{
    const uint32_t C = g->C, cols = ow1 - ow0, extra = (C - 4 * G) * (uint32_t)sizeof(float);
    float32x4_t s[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    if (cols)
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = oh0; oh < oh1; ++oh) {
                const float *dz = dy + (((size_t)b * g->OH + oh) * g->OW + ow0) * C + c;
                const float *xr = x + (((size_t)b * g->H + oh * g->SH + kh - g->PT) * g->W + ow0 + kw - g->PL) * C + c;
                if (extra) dw_taps(dz, dz, xr, cols, extra, G, 1, 1, s);
                else dw_taps(dz, dz, xr, cols, 0, G, 1, 0, s);
            }
    float *o = dw + ((size_t)kh * g->KW + kw) * C + c;
    for (uint32_t j = 0; j < G; ++j) s[j] = vaddq_f32(vld1q_f32(o + 4 * j), s[j]);
    for (uint32_t j = G; j < 4; ++j) s[j] = s[0];
    if (mt_mve_flushed(s[0], s[1], s[2], s[3]) || mt_mve_nan(s[0], s[1], s[2], s[3])) {
        dw_reference_tap(x, dy, dw, g, B, kh, kw, c + skip, c + 4 * G);
        mt_mve_flags_clear();
        return;
    }
    const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip);
    for (uint32_t j = 0; j < G; ++j) {
        if (j == 0 && skip) vstrwq_p_f32(o, s[0], p);
        else vst1q_f32(o + 4 * j, s[j]);
    }
}

static void dw_mve(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g)
{
    const uint32_t C = g->C, full = C / 4;
    mt_mve_flags_clear();
    for (uint32_t kh = 0; kh < g->KH; ++kh)
        for (uint32_t kw = 0; kw < g->KW; ++kw) {
            uint32_t oh0, oh1, ow0, ow1, k = 0;
            mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
            mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
            for (; k + 4 <= full; k += 4) dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 4);
            switch (full - k) {
            case 3: dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 3); break;
            case 2: dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 2); break;
            case 1: dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, 4 * k, 0, 1); break;
            default: break;
            }
            if (C % 4) dw_tap(x, dy, dw, g, B, kh, kw, oh0, oh1, ow0, ow1, C - 4, 4 - C % 4, 1);
        }
}

/*
 * The weight gradient with stride 1 along W and a 3-wide window (SAME or VALID), by kernel
 * rows: for four channels and kernel row kh, the three taps' sums stay in registers over every
 * output row (b, oh) that kh reaches, in ascending order; along a row, dz[ow] meets x[ow - PL +
 * kw] for kw = 0, 1, 2, a window of three x vectors that slides one pixel a step. Inside a row a
 * pixel costs two VLDRW (the window's new x, dz), three VFMA and two pointer additions: 7
 * instructions for 12 MACs, where a tap at a time took 3 for 4 and three row setups. Each
 * tap's sum gets its terms in ascending (b, oh, ow), each fused (mt_fma.h), as the
 * reference's. The Q registers are the three sums, the window and dz (q6 is free).
 */
/* one pixel inside the row: the window xa, xb, xc = x[ow - PL .. ow - PL + 2] (xc loaded here) */
#define DWS_STEP(xa, xb, xc)                                                                                      \
    "vldrw.u32 %q[" xc "], [%[px]]\n\tadd %[px], %[cs]\n\t"                                                     \
    "vldrw.u32 q7, [%[pd]]\n\tadd %[pd], %[cs]\n\t"                                                             \
    "vfma.f32 %q[a0], q7, %q[" xa "]\n\t"                                                                        \
    "vfma.f32 %q[a1], q7, %q[" xb "]\n\t"                                                                        \
    "vfma.f32 %q[a2], q7, %q[" xc "]\n\t"

#define DWS_MAC(a, d, v) vfmaq_f32(a, d, v) /* fma(d, v, a) */

/* one output row's terms of kernel row kh into s[0..2]: dz at dz[b, oh, 0, c], x at x[b, ih, 0, c];
 * triples = (W - 2) / 3 */
static inline __attribute__((always_inline)) void dws_row(const float *dz, const float *x, int32_t C, int32_t W,
                                                          uint32_t triples, const int32_t PL, float32x4_t *s)
{
    float32x4_t a0 = s[0], a1 = s[1], a2 = s[2], xa = vld1q_f32(x), xb = vld1q_f32(x + C), d;
    int32_t ow = 0;
    if (PL == 1) { /* output 0: taps kw = 1, 2 on x[0], x[1], which start output 1's window too */
        d = vld1q_f32(dz);
        a1 = DWS_MAC(a1, d, xa), a2 = DWS_MAC(a2, d, xb);
        ow = 1;
    }
    /* outputs ow .. ow + W - 3 have all three taps; xa, xb hold x[ow - PL], x[ow - PL + 1] */
    if (triples) {
        const float *pd = dz + ow * C, *px = x + (ow - PL + 2) * C;
        float32x4_t xc;
        __asm volatile("wls lr, %[n], 2f\n"
                       "1:\n\t" DWS_STEP("xa", "xb", "xc") DWS_STEP("xb", "xc", "xa") DWS_STEP("xc", "xa", "xb")
                       "le lr, 1b\n"
                       "2:\n"
                       : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [xa] "+w"(xa), [xb] "+w"(xb), [xc] "=&w"(xc),
                         [pd] "+r"(pd), [px] "+r"(px)
                       : [n] "r"(triples), [cs] "r"(C * (int32_t)sizeof(float))
                       : "q7", "lr", "memory");
        ow += 3 * (int32_t)triples;
    }
    for (const int32_t end = PL + W - 2; ow < end; ++ow) { /* the one or two left */
        const float32x4_t xc = vld1q_f32(x + (ow - PL + 2) * C);
        d = vld1q_f32(dz + ow * C);
        a0 = DWS_MAC(a0, d, xa), a1 = DWS_MAC(a1, d, xb), a2 = DWS_MAC(a2, d, xc);
        xa = xb, xb = xc;
    }
    if (PL == 1) { /* output W - 1: taps kw = 0, 1 on x[W - 2], x[W - 1] */
        d = vld1q_f32(dz + ow * C);
        a0 = DWS_MAC(a0, d, xa), a1 = DWS_MAC(a1, d, xb);
    }
    s[0] = a0, s[1] = a1, s[2] = a2;
}

/* dW by kernel rows (see above), SAME (PL = 1) or VALID (0) known where inlined; a flushed
 * subnormal or a NaN in a kernel row's sums sends its taps, for those four channels, to the
 * reference's scalar sums before they are stored */
static inline __attribute__((always_inline)) void dws_weight_grad(const float *x, const float *dy, float *dw,
                                                                  uint32_t B, const mt_spatial *g, const int32_t PL)
{
    /* the geometry in locals: the asm's memory clobber made GCC reload g's fields every row */
    const uint32_t C = g->C, W = g->W, triples = (W - 2u) / 3u;
    const size_t dz_row = (size_t)g->OW * C, x_row = (size_t)g->SH * W * C;
    const size_t dz_image = (size_t)g->OH * dz_row, x_image = (size_t)g->H * W * C;
    for (uint32_t c4 = 0; c4 < C; c4 += 4) {
        const uint32_t c = c4 + 4 > C ? C - 4 : c4, skip = c4 - c; /* the last vector may overlap */
        for (uint32_t kh = 0; kh < g->KH; ++kh) {
            uint32_t oh0, oh1;
            mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
            float32x4_t s[3] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
            if (oh0 < oh1 && B && (C == 8 || C == 16)) { /* the same rows in assembly (depthwise_dw_rows_mve.h) */
                const uint32_t rows = oh1 - oh0;
                const mt_mve_dws_rows r = {.dz = dy + oh0 * dz_row + c,
                                           .x = x + ((size_t)oh0 * g->SH + kh - g->PT) * W * C + c,
                                           .sums = s,
                                           .rows = rows,
                                           .images = B,
                                           .dzrow = (uint32_t)(dz_row * 4u),
                                           .xrow = (uint32_t)(x_row * 4u),
                                           .dzskip = (uint32_t)((dz_image - rows * dz_row) * 4u),
                                           .xskip = (uint32_t)((x_image - rows * x_row) * 4u),
                                           .triples = triples,
                                           .rem = (W - 2u) % 3u,
                                           .PL = (uint32_t)PL};
                if (C == 8) mt_mve_dws_rows_run_8(&r);
                else mt_mve_dws_rows_run_16(&r);
            } else if (oh0 < oh1) {
                const float *dz0 = dy + oh0 * dz_row + c, *x0 = x + ((size_t)oh0 * g->SH + kh - g->PT) * W * C + c;
                for (uint32_t b = 0; b < B; ++b)
                    for (uint32_t r = 0; r < oh1 - oh0; ++r)
                        dws_row(dz0 + b * dz_image + r * dz_row, x0 + b * x_image + r * x_row, (int32_t)C,
                                (int32_t)W, triples, PL, s);
            }
            float *o = dw + (size_t)kh * 3 * C + c;
            for (uint32_t kw = 0; kw < 3; ++kw) s[kw] = vaddq_f32(vld1q_f32(o + kw * C), s[kw]);
            if (mt_mve_flushed(s[0], s[1], s[2], s[2]) || mt_mve_nan(s[0], s[1], s[2], s[2])) {
                for (uint32_t kw = 0; kw < 3; ++kw) dw_reference_tap(x, dy, dw, g, B, kh, kw, c4, c + 4);
                mt_mve_flags_clear();
                continue;
            }
            const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip);
            for (uint32_t kw = 0; kw < 3; ++kw) vstrwq_p_f32(o + kw * C, s[kw], p);
        }
    }
}

static int dw_slides(const mt_spatial *g)
{
    return mt_mve_row_slides(g, 3u);
}

__attribute__((noinline)) static void dw_by_slides(const float *x, const float *dy, float *dw, uint32_t B,
                                                   const mt_spatial *g)
{
    mt_mve_flags_clear();
    if (g->PL == 1) dws_weight_grad(x, dy, dw, B, g, 1);
    else dws_weight_grad(x, dy, dw, B, g, 0);
}

/*
 * The input gradient with stride 1 along W and a 3-wide window (SAME or VALID): the reference
 * adds each term dz·W straight into dx, visiting the outputs in order, so an input element
 * gets its terms in ascending (oh, ow): kernel rows in descending kh, and within one, kw = 2,
 * then 1, then 0. One input row and four channels at a time, a pass per kernel row that
 * reaches it, in that order: along the output row, dz[ow] adds its three terms to input pixels
 * ow - PL + kw, kw = 0 first (that pixel's last term of the pass: its sum is stored), then 1,
 * then 2 (that pixel's first: its sum is loaded). The sums go to a buffer of the row (the first
 * pass reads dx, the others the buffer), and only when the row is done, with no flushed
 * subnormal and no NaN, are they copied to dx; else the row's elements are computed in scalar
 * code from dx, which is untouched. Every term is fused into its sum, as the reference's
 * dx = fma(dz, W, dx) (mt_fma.h). Inside a row a pixel costs three VFMA, 8 instructions for
 * 12 MACs (7 in the passes that read the buffer).
 */
#define DXS_W 64 /* the widest input row: its buffer (DXS_W x 4 floats, 1 KiB) is on the stack */
/* the narrowest row the slides take: a row's ends, passes and copy cost a fixed part, which the
 * scalar assembly does not pay. arm_ops.py's layer, backward, on 8-wide rows: 2.23 instructions
 * per MAC against 2.62 with the scalar assembly (before the passes were listed once a row and
 * the 64-bit division went: 2.83, when the scalar assembly won below 12); 2.00, 1.84 and 1.77
 * on 12, 16 and 32 (with the tap-at-a-time weight gradient of the time; all with a VMUL and a
 * VADD a term, before fused terms took 3 instructions off every pixel of the slides and none
 * off the scalar assembly's). Narrower rows were not measured. */
#define DXS_MIN_W 8

/* one output pixel inside the row: o is the input pixel whose pass ends here (kw = 0: wl), m the
 * next, then o's register starts the one after (kw = 2: wf), from [pn] */
#define DXS_STEP(o, m)                                                                                            \
    "vldrw.u32 q7, [%[pd]]\n\tadd %[pd], %[ds]\n\t"                                                              \
    "vfma.f32 %q[" o "], q7, %q[wl]\n\t"                                                                        \
    "vstrw.32 %q[" o "], [%[py]], #16\n\t"                                                                        \
    ".if %c[from_dx]\n\tvldrw.u32 %q[" o "], [%[pn]]\n\tadd %[pn], %[ns]\n\t"                                   \
    ".else\n\tvldrw.u32 %q[" o "], [%[pn]], #16\n\t.endif\n\t"                                                    \
    "vfma.f32 %q[" m "], q7, %q[w1]\n\t"                                                                        \
    "vfma.f32 %q[" o "], q7, %q[wf]\n\t"

#define DXS_SRC(i) vld1q_f32(src + (i) * ss)
#define DXS_MAC(a, v, wk) vfmaq_f32(a, v, wk) /* fma(v, wk, a) */

/* one kernel row's terms for an input row and four channels: dz at dz[b, oh, 0, c] (stride C),
 * the sums so far at src (stride ss: C in dx, 4 in buf), the new ones to buf; W at W[kh, 0, c] */
static inline __attribute__((always_inline)) void dxs_pass(const float *dz, const float *src, int32_t ss, float *buf,
                                                           const float *wr, int32_t C, int32_t W, const int32_t PL,
                                                           const int from_dx)
{
    const float32x4_t w0 = vld1q_f32(wr), w1 = vld1q_f32(wr + C), w2 = vld1q_f32(wr + 2 * C);
    float32x4_t d = vld1q_f32(dz), o, m;
    if (PL == 1) { /* dz[0]: input 0's kw = 1 term (its first), input 1's kw = 2 */
        o = DXS_MAC(DXS_SRC(0), d, w1);
        m = DXS_MAC(DXS_SRC(1), d, w2);
    } else { /* VALID: dz[0] is input 0's only term (kw = 0), input 1's first (1), input 2's (2) */
        vst1q_f32(buf, DXS_MAC(DXS_SRC(0), d, w0));
        o = DXS_MAC(DXS_SRC(1), d, w1);
        m = DXS_MAC(DXS_SRC(2), d, w2);
    }
    int32_t ow = 1;
    const int32_t inside = PL == 1 ? W - 2 : W - 3; /* outputs 1 .. inside */
    if (inside & 1) {
        d = vld1q_f32(dz + ow * C);
        const float32x4_t n = DXS_MAC(DXS_SRC(ow - PL + 2), d, w2);
        vst1q_f32(buf + (ow - PL) * 4, DXS_MAC(o, d, w0));
        o = DXS_MAC(m, d, w1), m = n, ++ow;
    }
    if (inside > 1) {
        const float *pd = dz + ow * C, *pn = src + (ow - PL + 2) * ss;
        float *py = buf + (ow - PL) * 4;
        __asm volatile("wls lr, %[n], 2f\n"
                       "1:\n\t" DXS_STEP("o", "m") DXS_STEP("m", "o") "le lr, 1b\n"
                       "2:\n"
                       : [o] "+w"(o), [m] "+w"(m), [pd] "+r"(pd), [py] "+r"(py), [pn] "+r"(pn)
                       : [n] "r"((uint32_t)inside / 2), [ds] "r"(C * (int32_t)sizeof(float)),
                         [ns] "r"(ss * (int32_t)sizeof(float)), [wl] "w"(w0), [w1] "w"(w1), [wf] "w"(w2),
                         [from_dx] "n"(from_dx)
                       : "q7", "lr", "memory");
        ow += inside & ~1;
    }
    if (PL == 1) { /* dz[W - 1]: input W - 2's last term (kw = 0), input W - 1's (kw = 1) */
        d = vld1q_f32(dz + ow * C);
        vst1q_f32(buf + (W - 2) * 4, DXS_MAC(o, d, w0));
        vst1q_f32(buf + (W - 1) * 4, DXS_MAC(m, d, w1));
    } else {
        vst1q_f32(buf + (W - 2) * 4, o);
        vst1q_f32(buf + (W - 1) * 4, m);
    }
}

/* The output row oh whose kernel row kh reaches input row ih (oh·SH + kh - PT = ih), or -1:
 * in 32 bits (with int64_t, t % SH was a call of __aeabi_ldivmod on every pass, about 35K
 * instructions of the benchmark CNN's step) */
static inline int32_t dz_row_of(const mt_spatial *g, uint32_t ih, uint32_t kh)
{
    if (ih + g->PT < kh) return -1;
    const uint32_t t = ih + g->PT - kh;
    if (g->SH != 1 && t % g->SH) return -1;
    const uint32_t oh = g->SH == 1 ? t : t / g->SH;
    return oh < g->OH ? (int32_t)oh : -1;
}

/* dx[b, ih, iw, j] for iw in [iw0, iw1) and j in [lo, hi), the reference's terms in its order,
 * each fused into dx */
static void dx_reference_row(const float *w, const float *dz, float *dx, const mt_spatial *g, uint32_t b, uint32_t ih,
                             uint32_t iw0, uint32_t iw1, uint32_t lo, uint32_t hi)
{
    const uint32_t C = g->C;
    for (uint32_t iw = iw0; iw < iw1; ++iw)
        for (uint32_t j = lo; j < hi; ++j) {
            float *v = dx + (((size_t)b * g->H + ih) * g->W + iw) * C + j;
            for (uint32_t kh = g->KH; kh-- > 0;) { /* ascending oh */
                const int32_t row = dz_row_of(g, ih, kh);
                if (row < 0) continue;
                const uint32_t oh = (uint32_t)row;
                for (uint32_t kw = 3; kw-- > 0;) { /* ascending ow */
                    const int64_t ow = (int64_t)iw + g->PL - kw;
                    if (ow < 0 || ow >= g->OW) continue;
                    *v = mt_fmaf(dz[(((size_t)b * g->OH + oh) * g->OW + (uint32_t)ow) * C + j],
                                 w[((size_t)kh * 3 + kw) * C + j], *v);
                }
            }
        }
}

#define DXS_KH 8 /* the tallest kernel the slides take: a row's passes are listed first */

static int dx_slides(const mt_spatial *g)
{
    return mt_mve_row_slides(g, DXS_MIN_W) && g->W <= DXS_W && g->KH <= DXS_KH;
}

/* dx by slides, SAME (PL = 1) or VALID (0) known where inlined. An input row's passes (the
 * kernel rows that reach it, in ascending oh) are listed once for all its channels: per four
 * channels, the passes, the check and the copy. (Computed per four channels, with the
 * padding's branches in every pass, the bookkeeping took about as many instructions as the
 * 8-wide rows' sums.) */
static inline __attribute__((always_inline)) void dx_slides_rows(const float *w, const float *dz, float *dx,
                                                                 uint32_t B, const mt_spatial *g, const int32_t PL)
{
    const uint32_t C = g->C;
    const int32_t W = (int32_t)g->W;
    float buf[DXS_W * 4];
    const float *dzr[DXS_KH], *wr[DXS_KH];
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t ih = 0; ih < g->H; ++ih) {
            uint32_t passes = 0;
            for (uint32_t kh = g->KH; kh-- > 0;) { /* ascending oh */
                const int32_t oh = dz_row_of(g, ih, kh);
                if (oh < 0) continue;
                dzr[passes] = dz + (((size_t)b * g->OH + (uint32_t)oh) * g->OW) * C;
                wr[passes++] = w + (size_t)kh * 3 * C;
            }
            if (!passes) continue; /* no term reaches this row: dx keeps its values */
            float *const row = dx + (((size_t)b * g->H + ih) * g->W) * C;
            for (uint32_t c4 = 0; c4 < C; c4 += 4) {
                const uint32_t c = c4 + 4 > C ? C - 4 : c4; /* the last vector may overlap */
                mt_mve_flags_clear();
                dxs_pass(dzr[0] + c, row + c, (int32_t)C, buf, wr[0] + c, (int32_t)C, W, PL, 1);
                for (uint32_t p = 1; p < passes; ++p)
                    dxs_pass(dzr[p] + c, buf, 4, buf, wr[p] + c, (int32_t)C, W, PL, 0);
                uint32x4_t worst = vdupq_n_u32(0);
                for (int32_t i = 0; i < W; ++i) worst = mt_mve_magnitudes(worst, vld1q_f32(buf + 4 * i));
                const float32x4_t none = vdupq_n_f32(0.0f);
                if (mt_mve_magnitudes_nan(worst) || mt_mve_flushed(none, none, none, none)) {
                    dx_reference_row(w, dz, dx, g, b, ih, 0, g->W, c4, c + 4);
                    continue;
                }
                if (c == c4) { /* all four lanes new: plain stores, no predicate to set a pixel */
                    for (int32_t i = 0; i < W; ++i) vst1q_f32(row + c + (size_t)i * C, vld1q_f32(buf + 4 * i));
                    continue;
                }
                const mve_pred16_t pred = (mve_pred16_t)~vctp32q(c4 - c);
                for (int32_t i = 0; i < W; ++i) vstrwq_p_f32(row + c + (size_t)i * C, vld1q_f32(buf + 4 * i), pred);
            }
        }
}

__attribute__((noinline)) static void dx_by_slides(const float *w, const float *dz, float *dx, uint32_t B,
                                                   const mt_spatial *g)
{
    if (g->PL == 1) dx_slides_rows(w, dz, dx, B, g, 1);
    else dx_slides_rows(w, dz, dx, B, g, 0);
}

/* dx of n pixels from dxb (the address of the first's channel f->c) and channels c..c+3, the
 * reference's terms in its order (dx_reference_row) */
static void dx_fix_pixels(const mt_mve_dx_fix *f, float *dxb, uint32_t n)
{
    const mt_spatial *g = f->g;
    const uint32_t pixel = (uint32_t)((size_t)(dxb - f->dx) / g->C);
    const uint32_t b = pixel / (g->H * g->W), ih = pixel / g->W % g->H, iw = pixel % g->W;
    dx_reference_row(f->w, f->dz, f->dx, g, b, ih, iw, iw + n, f->c, f->c + 4);
}

void mt_mve_dx_block_fix(const mt_mve_dx_fix *f, float *dxb)
{
    dx_fix_pixels(f, dxb, 4);
    mt_mve_flags_clear();
}

#define DXB_KH 8 /* kernel rows at most for the blocks: the turned kernel packed on the stack */

/* dx by the forward's blocks (depthwise_blocks_mve.h): 8 or 16 channels, stride 1 both ways, a
 * 3-wide window, rows of at least DXS_MIN_W pixels (SAME or VALID) */
static int dx_blocks(const mt_spatial *g)
{
    return (g->C == 8 || g->C == 16) && g->SH == 1 && mt_mve_row_slides(g, DXS_MIN_W) && g->KH <= DXB_KH;
}

/* The input gradient by blocks, a vector of channels at a time; dx in place (a block is stored
 * only once tested, else recomputed by mt_mve_dx_block_fix); pixels outside blocks in scalar
 * code */
__attribute__((noinline)) static void dx_by_blocks(const float *w, const float *dz, float *dx, uint32_t B,
                                                   const mt_spatial *g)
{
    const uint32_t C = g->C, W = g->W, KH = g->KH, OW = g->OW, PTt = KH - 1 - g->PT, PLt = 2 - g->PL;
    float32x4_t packed[DXB_KH * 3];
    mt_mve_dx_fix fix = {w, dz, dx, g, 0};
    mt_mve_dw_blocks r = {0};
    r.fix = &fix, r.images = B, r.src_image = g->OH * OW * C * 4u, r.dst_image = g->H * W * C * 4u;
    r.src_step = OW * C * 4u;
    for (uint32_t c = 0; c < C; c += 4) {
        for (uint32_t a = 0; a < KH; ++a) /* the kernel turned round: rows and taps reversed */
            for (uint32_t bb = 0; bb < 3; ++bb)
                packed[a * 3 + bb] = vld1q_f32(w + ((size_t)(KH - 1 - a) * 3 + (2 - bb)) * C + c);
        fix.c = c;
        mt_mve_flags_clear();
        for (uint32_t ih = 0; ih < g->H; ++ih) {
            /* dz rows ih + a - PTt in [0, OH) reach this row */
            const uint32_t a0 = PTt > ih ? PTt - ih : 0u, a1 = g->OH + PTt - ih < KH ? g->OH + PTt - ih : KH;
            if (a1 <= a0) continue; /* no term: dx keeps its values */
            const float *zr = dz + (size_t)(ih + a0 - PTt) * OW * C + c; /* image 0 */
            r.rows = a1 - a0, r.w = packed + 3 * a0;
            for (uint32_t iw = 0; iw < W;) { /* the turned correlation: dz's row is the input, PLt before */
                float *dxp = dx + ((size_t)ih * W + iw) * C + c;
                const uint32_t n = mt_mve_block_run(iw, PLt, OW, W, &r.edges);
                if (n) {
                    r.blocks = n, r.dst = dxp, r.src = mt_mve_block_tap0(zr, iw, PLt, C);
                    if (C == 8) mt_mve_dx_blocks_run_8(&r);
                    else mt_mve_dx_blocks_run_16(&r);
                    iw += 4 * n;
                } else { /* a pixel in scalar code, in every image */
                    for (uint32_t b = 0; b < B; ++b) dx_fix_pixels(&fix, dxp + (size_t)b * g->H * W * C, 1);
                    mt_mve_flags_clear(); /* the scalar FPU's flags are FPSCR's too */
                    iw += 1;
                }
            }
        }
    }
}

/* The activation's derivative and dbias, dW with stride 1 along W and dx by blocks or slides, in Helium;
 * other dx and dW by the portable sibling on the masked dz */
void mt_op_depthwise_conv2d_f32_backward_mve(const float *x, const float *w, const float *y, float *dy, float *dx,
                                             float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    if (g->C < 4) {
        mt_op_depthwise_conv2d_f32_backward_portable(x, w, y, dy, dx, dw, dbias, B, g);
        return;
    }
    mt_activation_bias_f32_backward_mve(g->activation, y, dy, dbias, (size_t)B * g->OH * g->OW, g->C);
    mt_spatial h = *g;
    h.activation = MT_FUSED_NONE; /* dy is dz now */
    const int blocks = dx && dx_blocks(g), slides = blocks || (dx && dx_slides(g));
    if (blocks) dx_by_blocks(w, dy, dx, B, g);
    else if (slides) dx_by_slides(w, dy, dx, B, g);
    if ((dx && !slides) || (dw && g->SW != 1))
        mt_op_depthwise_conv2d_f32_backward_portable(x, w, y, dy, slides ? NULL : dx, g->SW != 1 ? dw : NULL, NULL, B,
                                                     &h);
    if (dw && dw_slides(g)) dw_by_slides(x, dy, dw, B, g);
    else if (dw && g->SW == 1) dw_mve(x, dy, dw, B, g);
}

#else
typedef int mt_depthwise_conv2d_backward_mve_unused; /* ISO C: a translation unit is not empty */
#endif
