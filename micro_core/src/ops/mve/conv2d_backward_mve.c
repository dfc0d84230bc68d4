/*
 * Helium sibling of the Conv2D backward (ops/conv2d.c) for one-channel layers with a 3-wide
 * window at stride 1 along W, SAME or VALID (a grayscale image's first layer); other layers
 * run the portable sibling (ops/portable/conv2d_portable.c). ops/mve/mve.h says how the kernels keep
 * the reference's bits.
 *
 * The activation's derivative and the bias gradient are mt_activation_bias_f32_backward_mve's one pass; the input
 * gradient (where wanted) is the portable sibling's. The weight gradient keeps every sum of
 * the reference, Σ_{b, oh, ow in bounds} dz[b, oh, ow, oc]·x[b, ih, iw] from +0 in ascending
 * (b, oh, ow), each term a fused multiply-add (mt_fma.h), then added to dW[oc, kh, kw]: lanes
 * across four output channels (dz's [.., oc..oc+3] is one vector), eight channels a pass. For
 * output row (b, oh) and kernel row kh in bounds, dz[ow] meets x[ow - PL + kw] for kw = 0, 1,
 * 2: a window of three x values slides along the row in general-purpose registers (each loaded
 * once, VFMA broadcasts it to the lanes) and the kernel row's sums take a term each. Inside the
 * row a pixel costs an LDR of x, two VLDRW of dz, six VFMA and a pointer addition: 10
 * instructions for 24 MACs (and a loop turn every three pixels). Eight channels a pass run
 * the whole batch in one naked function (conv2d_c1_dw_rows_mve.h); a last pass of four, the
 * same slide in C (cws_row, the row's ends (SAME) in C). The sums wait on the stack between
 * rows (a float stored and reloaded is the same float).
 * Before dW is written, a flushed subnormal or a NaN sends the channels to the reference's
 * scalar sums.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include <string.h>

#include "mt_fma.h"
#include "ops/mve/conv2d_c1_dw_rows_mve.h"
#include "ops/mve/mve_flags.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#define CWS_KH 5 /* kernel rows at most: 3·CWS_KH·2 sums wait on the stack */

/* one pixel inside the row: x[ow - PL + kw] in xa, xb, xc (xc loaded here into the register
 * of x[ow - PL - 1]) times dz[ow, oc..oc + 3] into a0..a2 and, G = 2, dz[ow, oc + 4..] into b0..b2 */
#define CWS_STEP(xa, xb, xc)                                                                                       \
    "ldr %[" xc "], [%[px]], #4\n\t"                                                                             \
    "vldrw.u32 q7, [%[pd]]\n\t"                                                                                  \
    "vfma.f32 %q[a0], q7, %[" xa "]\n\t"                                                                          \
    "vfma.f32 %q[a1], q7, %[" xb "]\n\t"                                                                          \
    "vfma.f32 %q[a2], q7, %[" xc "]\n\t"                                                                          \
    ".if %c[G] == 2\n\t"                                                                                         \
    "vldrw.u32 q7, [%[pd], #16]\n\t"                                                                             \
    "vfma.f32 %q[b0], q7, %[" xa "]\n\t"                                                                          \
    "vfma.f32 %q[b1], q7, %[" xb "]\n\t"                                                                          \
    "vfma.f32 %q[b2], q7, %[" xc "]\n\t"                                                                          \
    ".endif\n\t"                                                                                                 \
    "add %[pd], %[ds]\n\t"

/* a = fma(d0, x, a) (and b = fma(d1, x, b), G = 2): one tap's term */
#define CWS_TERM(a, b, xv)                                                                                        \
    do {                                                                                                          \
        a = vfmaq_n_f32(a, d0, xv);                                                                               \
        if (G == 2) b = vfmaq_n_f32(b, d1, xv);                                                                   \
    } while (0)

/* kernel row kh's sums over one output row, s[kw] (and s[3 + kw], G = 2), held in registers
 * throughout: dz at dz[b, oh, 0, oc], x at x[b, ih, 0] */
static inline __attribute__((always_inline)) void cws_row(const float *dz, const float *x, int32_t OC, int32_t W,
                                                          const int32_t PL, float32x4_t *s, const uint32_t G)
{
    float32x4_t a0 = s[0], a1 = s[1], a2 = s[2], b0 = s[3], b1 = s[4], b2 = s[5], d0, d1 = vdupq_n_f32(0.0f);
    int32_t ow = 0;
    if (PL == 1) { /* output 0: taps kw = 1, 2 */
        d0 = vld1q_f32(dz);
        if (G == 2) d1 = vld1q_f32(dz + 4);
        CWS_TERM(a1, b1, x[0]);
        CWS_TERM(a2, b2, x[1]);
        ow = 1;
    }
    const int32_t inside = W - 2; /* outputs ow .. ow + W - 3 read three pixels */
    const uint32_t triples = (uint32_t)inside / 3;
    if (triples) {
        const float *pd = dz + ow * OC, *px = x + ow - PL + 2;
        uint32_t x0, x1, x2 = 0;
        memcpy(&x0, x + ow - PL, sizeof x0), memcpy(&x1, x + ow - PL + 1, sizeof x1);
        __asm volatile("wls lr, %[n], 2f\n"
                       "1:\n\t" CWS_STEP("x0", "x1", "x2") CWS_STEP("x1", "x2", "x0") CWS_STEP("x2", "x0", "x1")
                       "le lr, 1b\n"
                       "2:\n"
                       : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [b0] "+w"(b0), [b1] "+w"(b1), [b2] "+w"(b2),
                         [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [pd] "+r"(pd), [px] "+r"(px)
                       : [n] "r"(triples), [ds] "r"(OC * (int32_t)sizeof(float)), [G] "n"(G)
                       : "q7", "lr", "memory");
        ow += 3 * (int32_t)triples;
    }
    for (const int32_t end = PL + inside; ow < end; ++ow) {
        const float *xp = x + ow - PL;
        d0 = vld1q_f32(dz + ow * OC);
        if (G == 2) d1 = vld1q_f32(dz + ow * OC + 4);
        CWS_TERM(a0, b0, xp[0]);
        CWS_TERM(a1, b1, xp[1]);
        CWS_TERM(a2, b2, xp[2]);
    }
    if (PL == 1) { /* output W - 1: taps kw = 0, 1 */
        d0 = vld1q_f32(dz + ow * OC);
        if (G == 2) d1 = vld1q_f32(dz + ow * OC + 4);
        CWS_TERM(a0, b0, x[W - 2]);
        CWS_TERM(a1, b1, x[W - 1]);
    }
    s[0] = a0, s[1] = a1, s[2] = a2, s[3] = b0, s[4] = b1, s[5] = b2;
}

/* dW[oc, ·, ·] += the reference's sums, oc in [lo, hi) (one input channel), each term fused */
static void conv_reference_sums(const float *x, const float *dy, float *dw, uint32_t B, const mt_spatial *g,
                                uint32_t lo, uint32_t hi)
{
    for (uint32_t oc = lo; oc < hi; ++oc)
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw) {
                uint32_t oh0, oh1, ow0, ow1;
                float acc = 0.0f;
                mt_spatial_in_bounds(g->OH, kh, g->SH, g->PT, g->H, &oh0, &oh1);
                mt_spatial_in_bounds(g->OW, kw, g->SW, g->PL, g->W, &ow0, &ow1);
                for (uint32_t b = 0; b < B; ++b)
                    for (uint32_t oh = oh0; oh < oh1; ++oh)
                        for (uint32_t ow = ow0; ow < ow1; ++ow)
                            acc = mt_fmaf(dy[(((size_t)b * g->OH + oh) * g->OW + ow) * g->OC + oc],
                                          x[((size_t)b * g->H + oh * g->SH + kh - g->PT) * g->W + ow + kw - g->PL],
                                          acc);
                dw[((size_t)oc * g->KH + kh) * g->KW + kw] += acc;
            }
}

/* the weight gradient of G vectors of output channels from oc (see above) */
static inline __attribute__((always_inline)) void conv_weight_grad_block(const float *x, const float *dy, float *dw,
                                                                         uint32_t B, const mt_spatial *g, uint32_t oc,
                                                                         const uint32_t G, const int32_t PL)
{
    const uint32_t taps = g->KH * 3;
    /* the geometry in locals: from g, in memory, the asm's memory clobber made GCC reload it every row */
    const int32_t OC = (int32_t)g->OC, W = (int32_t)g->W;
    const uint32_t OH = g->OH, OW = g->OW, H = g->H, SH = g->SH, PT = g->PT, KH = g->KH;
    float32x4_t sum[CWS_KH * 3 * 2];
    for (uint32_t t = 0; t < 2 * taps; ++t) sum[t] = vdupq_n_f32(0.0f);
    mt_mve_flags_clear();
    if (G == 2) { /* the same loops in assembly (conv2d_c1_dw_rows_mve.h) */
        const mt_mve_cws_rows r = {.dz = dy + oc, .x = x, .xstep = (uint32_t)W * 4u, .sums = sum, .KH = KH, .H = H,
                                   .rowstep = OW * (uint32_t)OC * 4u, .SH = SH, .OH = OH, .neg_pt = -(int32_t)PT,
                                   .ih0 = -(int32_t)PT, .oh_left = OH, .images = B, .ximage = H * (uint32_t)W * 4u,
                                   .ds = (uint32_t)OC * 4u, .triples = ((uint32_t)W - 2u) / 3u,
                                   .rem = ((uint32_t)W - 2u) % 3u, .PL = (uint32_t)PL};
        if (B && OH) mt_mve_cws_rows_run(&r);
    } else
        for (uint32_t b = 0; b < B; ++b) /* (b, oh) ascending: each sum's terms in the reference's order */
            for (uint32_t oh = 0; oh < OH; ++oh) {
                uint32_t kh0, kh1;
                mt_spatial_tap_range(oh, SH, PT, KH, H, &kh0, &kh1);
                const float *dz = dy + ((size_t)b * OH + oh) * OW * (size_t)OC + oc;
                for (uint32_t kh = kh0; kh < kh1; ++kh)
                    cws_row(dz, x + ((size_t)b * H + oh * SH + kh - PT) * (size_t)W, OC, W, PL, sum + 6 * kh, G);
            }
    /* dW[oc + lane, kh, kw] sit taps apart: a gather and a scatter per tap and vector */
    const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0, 1), taps);
    uint32x4_t worst = vdupq_n_u32(0);
    for (uint32_t kh = 0; kh < g->KH; ++kh)
        for (uint32_t kw = 0; kw < 3; ++kw)
            for (uint32_t j = 0; j < G; ++j) {
                float32x4_t *v = &sum[6 * kh + 3 * j + kw];
                const float *at = dw + (size_t)(oc + 4 * j) * taps + 3 * kh + kw;
                *v = vaddq_f32(vldrwq_gather_shifted_offset_f32(at, offs), *v);
                worst = mt_mve_magnitudes(worst, *v);
            }
    if (mt_mve_flushed(sum[0], sum[1], sum[2], sum[3]) || mt_mve_magnitudes_nan(worst)) {
        conv_reference_sums(x, dy, dw, B, g, oc, oc + 4 * G);
        return;
    }
    for (uint32_t kh = 0; kh < g->KH; ++kh)
        for (uint32_t kw = 0; kw < 3; ++kw)
            for (uint32_t j = 0; j < G; ++j)
                vstrwq_scatter_shifted_offset_f32(dw + (size_t)(oc + 4 * j) * taps + 3 * kh + kw, offs,
                                                  sum[6 * kh + 3 * j + kw]);
}

/* The slides apply: one input channel, output channels in whole vectors, a 3-wide window at
 * stride 1 along W, SAME or VALID, at most CWS_KH kernel rows */
static int conv_slides(const mt_spatial *g)
{
    return g->C == 1 && g->OC >= 4 && g->OC % 4 == 0 && g->KH <= CWS_KH && mt_mve_row_slides(g, 3);
}

void mt_op_conv2d_f32_backward_mve(const float *x, const float *w, const float *y, float *dy, float *dx, float *dw,
                                   float *dbias, uint32_t B, const mt_spatial *g)
{
    if (!conv_slides(g)) {
        mt_op_conv2d_f32_backward_portable(x, w, y, dy, dx, dw, dbias, B, g);
        return;
    }
    mt_activation_bias_f32_backward_mve(g->activation, y, dy, dbias, (size_t)B * g->OH * g->OW, g->OC);
    if (dx) {
        mt_spatial h = *g;
        h.activation = MT_FUSED_NONE; /* dy is dz now */
        mt_op_conv2d_f32_backward_portable(x, w, y, dy, dx, NULL, NULL, B, &h);
    }
    if (!dw) return;
    uint32_t oc = 0;
    if (g->PL == 1) { /* the padding known where inlined: cws_row's ends compiled for it */
        for (; oc + 8 <= g->OC; oc += 8) conv_weight_grad_block(x, dy, dw, B, g, oc, 2, 1);
        if (oc < g->OC) conv_weight_grad_block(x, dy, dw, B, g, oc, 1, 1);
    } else {
        for (; oc + 8 <= g->OC; oc += 8) conv_weight_grad_block(x, dy, dw, B, g, oc, 2, 0);
        if (oc < g->OC) conv_weight_grad_block(x, dy, dw, B, g, oc, 1, 0);
    }
}

#else
typedef int mt_conv2d_backward_mve_unused; /* ISO C: a translation unit is not empty */
#endif
