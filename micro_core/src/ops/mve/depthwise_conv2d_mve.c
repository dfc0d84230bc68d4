/*
 * Helium siblings of the DepthwiseConv2D kernels (ops/depthwise_conv2d.c); ops/mve/mve.h says
 * how they keep the reference's bits. NHWC keeps a tap's channels contiguous in x, W, dy and
 * dx, so the lanes run across four channels, each lane its own channel's sum, every term a
 * VFMA (the reference's fused multiply-add, mt_fma.h) in the reference's order. Channels go in
 * blocks of up to four vectors (16 channels); when C is not a multiple of 4 the last vector is
 * channels C - 4 .. C - 1 (it recomputes some of the block before, the same bits) and stores
 * only its new lanes. Needs C >= 4; narrower layers run the portable siblings. With 8 or 16
 * channels and a kernel 3 wide at stride 1 along W, the forward goes by blocks of four pixels
 * in naked functions (depthwise_blocks_mve.h); other 3-wide stride-1 rows by the slides below.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/mve/depthwise_blocks_mve.h"
#include "ops/mve/depthwise_mve.h"

/* act(sum + bias) of the G vectors of channels c, c + 4, ... at y (and at y2 for P = 2), the
 * first vector's lanes below skip not stored; 1 when one of them is a NaN (nothing stored) */
static inline __attribute__((always_inline)) int dw_store(const float32x4_t *s, const float *bias, float *y,
                                                          float *y2, uint32_t c, uint32_t skip, uint32_t act,
                                                          const uint32_t G, const uint32_t P)
{
    float32x4_t v[4];
    for (uint32_t j = 0; j < G * P; ++j) {
        const uint32_t k = j % G;
        v[j] = mt_mve_finish(s[j], bias ? vld1q_f32(bias + c + 4 * k) : vdupq_n_f32(0.0f), act);
    }
    for (uint32_t j = G * P; j < 4; ++j) v[j] = v[0];
    if (mt_mve_nan(v[0], v[1], v[2], v[3])) return 1;
    const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip); /* all lanes when skip is 0 */
    for (uint32_t j = 0; j < G * P; ++j) {
        const uint32_t k = j % G;
        float *o = (j < G ? y : y2) + c + 4 * k;
        if (k == 0 && skip) vstrwq_p_f32(o, v[j], p);
        else vst1q_f32(o, v[j]);
    }
    return 0;
}

/* The outputs (b, oh, ow) and (b, oh, ow + 1) when pair (same taps), channels [c, c + 4G) (the
 * first vector's lanes below skip not stored); 1 on a NaN */
static inline __attribute__((always_inline)) int dw_pixels(const float *x, const float *w, const float *bias,
                                                           float *y, const mt_spatial *g, uint32_t b, uint32_t oh,
                                                           uint32_t ow, uint32_t kh0, uint32_t kh1, uint32_t kw0,
                                                           uint32_t kw1, uint32_t c, uint32_t skip, const uint32_t G,
                                                           const uint32_t P)
{
    const uint32_t C = g->C, cols = kw1 - kw0;
    float32x4_t s[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    const float *xp = x + (((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W + (ow * g->SW + kw0 - g->PL)) * C + c;
    const float *wp = w + ((size_t)kh0 * g->KW + kw0) * C + c;
    const uint32_t extra = (C - 4 * G) * (uint32_t)sizeof(float);
    if (cols)
        for (uint32_t kh = kh0; kh < kh1; ++kh, xp += (size_t)g->W * C, wp += (size_t)g->KW * C) {
            if (extra) dw_taps(xp, xp + (size_t)g->SW * C, wp, cols, extra, G, P, 1, s);
            else dw_taps(xp, xp + (size_t)g->SW * C, wp, cols, 0, G, P, 0, s);
        }
    float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
    return dw_store(s, bias, yp, yp + C, c, skip, g->activation, G, P);
}

/* the pixels of one output row, channels [c, c + 4G); 1 on a NaN */
static inline __attribute__((always_inline)) int dw_row(const float *x, const float *w, const float *bias, float *y,
                                                        const mt_spatial *g, uint32_t b, uint32_t oh, uint32_t c,
                                                        uint32_t skip, const uint32_t G)
{
    uint32_t kh0, kh1;
    mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
    for (uint32_t ow = 0; ow < g->OW;) {
        uint32_t kw0, kw1, n0, n1;
        mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
        if (G <= 2 && ow + 1 < g->OW) {
            mt_spatial_tap_range(ow + 1, g->SW, g->PL, g->KW, g->W, &n0, &n1);
            if (n0 == kw0 && n1 == kw1) {
                if (dw_pixels(x, w, bias, y, g, b, oh, ow, kh0, kh1, kw0, kw1, c, skip, G, 2)) return 1;
                ow += 2;
                continue;
            }
        }
        if (dw_pixels(x, w, bias, y, g, b, oh, ow, kh0, kh1, kw0, kw1, c, skip, G, 1)) return 1;
        ow += 1;
    }
    return 0;
}

/*
 * The forward with stride 1 along W and a 3-wide window, one kernel row at a time: "the slide".
 * For output row oh, kernel row kh and four channels, input pixel q of row oh·SH + kh - PT adds
 * x[q]·W[kh, kw] to output p = q + PL - kw, for kw = 2, then 1, then 0:
 *   kw = 2 is p's last term of this kernel row (q = p + 2 - PL, or the row's last pixel): p's
 *          sum is stored to y;
 *   kw = 0 is p's first (q = p - PL, or pixel 0): p's sum starts, from +0 in the output row's
 *          first kernel row, else from the sum the kernel row before stored in y.
 * So every output gets its terms in ascending kw within a kernel row, and the kernel rows in
 * ascending kh: the reference's order (a float stored and reloaded is the same float). Between
 * pixels two sums are live (the outputs that still wait for kw = 1 and 2, and for kw = 2), and
 * output p's sum is stored before p + 2's starts, so each lives in the register of its parity.
 * With the three weights and x that is 6 of the 8 Q registers. Inside the row a pixel costs a
 * VLDRW of x, three VFMA, the sum's VSTRW and VLDRW (a VMOV of zero in the first kernel row)
 * and three pointer additions (two in the first): 9 instructions for 12 MACs (8 in the first
 * kernel row); the row's ends go through the same step in C. The bias and the activation
 * follow in one pass per output row (dw_finish_row).
 */
typedef struct dw_slide {
    const float *x; /* x[b, ih, 0, c] */
    float *y;       /* y[b, oh, 0, c] */
    const float *w; /* W[kh, 0, c] */
    int32_t C, W;
} dw_slide; /* passed by value: in memory, the asm's memory clobbers made GCC reload it */

/* one pixel inside the row: o is the sum that ends here (output q + PL - 2), m the next one;
 * o's register then starts output q + PL */
#define SLIDE_STEP(o, m)                                                                                         \
    "vldrw.u32 q7, [%[px]]\n\tadd %[px], %[cs]\n\t"                                                              \
    "vfma.f32 %q[" o "], q7, %q[w2]\n\t"                                                                        \
    "vstrw.32 %q[" o "], [%[py]]\n\tadd %[py], %[cs]\n\t"                                                        \
    ".if %c[first]\n\tvmov.i32 %q[" o "], #0\n\t"                                                                \
    ".else\n\tvldrw.u32 %q[" o "], [%[pn]]\n\tadd %[pn], %[cs]\n\t.endif\n\t"                                    \
    "vfma.f32 %q[" m "], q7, %q[w1]\n\t"                                                                        \
    "vfma.f32 %q[" o "], q7, %q[w0]\n\t"

/* 2·pairs pixels from q inside the row (outputs q + PL - 2 .. q + PL all exist, and only the
 * first's sum ends at q); o and m: the sums of outputs q + PL - 2 and q + PL - 1, then of the
 * two after the last pixel */
static inline __attribute__((always_inline)) void slide_pairs(const dw_slide s, int32_t q, uint32_t pairs,
                                                              const int32_t PL, float32x4_t w0, float32x4_t w1,
                                                              float32x4_t w2, float32x4_t *o, float32x4_t *m,
                                                              const int first)
{
    const float *px = s.x + q * s.C;
    float *py = s.y + (q + PL - 2) * s.C;
    const float *pn = s.y + (q + PL) * s.C;
    float32x4_t a = *o, b = *m;
    __asm volatile("wls lr, %[n], 2f\n"
                   "1:\n\t" SLIDE_STEP("a", "b") SLIDE_STEP("b", "a") "le lr, 1b\n"
                   "2:\n"
                   : [a] "+w"(a), [b] "+w"(b), [px] "+r"(px), [py] "+r"(py), [pn] "+r"(pn)
                   : [n] "r"(pairs), [cs] "r"(s.C * (int32_t)sizeof(float)), [w0] "w"(w0), [w1] "w"(w1),
                     [w2] "w"(w2), [first] "n"(first)
                   : "q7", "lr", "memory");
    *o = a, *m = b;
}

#define SLIDE_SUM(p) (first ? zero : vld1q_f32(y + (p) * C)) /* output p's sum before this kernel row */
#define SLIDE_MAC(a, v, wk) vfmaq_f32(a, v, wk) /* fma(v, wk, a) */

/* pixel q inside the row in C (o, m: outputs q + PL - 2, q + PL - 1; then q + PL - 1, q + PL) */
#define SLIDE_STEP_C(q)                                                                                           \
    do {                                                                                                          \
        const float32x4_t v_ = vld1q_f32(x + (q) * C);                                                          \
        const float32x4_t n_ = SLIDE_MAC(SLIDE_SUM((q) + PL), v_, w0);                                          \
        o = SLIDE_MAC(o, v_, w2);                                                                                \
        vst1q_f32(y + ((q) + PL - 2) * C, o);                                                                   \
        o = SLIDE_MAC(m, v_, w1);                                                                                \
        m = n_;                                                                                                   \
    } while (0)

/* One kernel row's terms for one output row and four channels, PL = 1 (SAME: OW = W >= 3) or
 * PL = 0 (VALID: OW = W - 2 >= 2). The row's ends are written out (which sums start and end
 * there is fixed by PL), the pixels inside go two at a time in assembly. */
static inline __attribute__((always_inline)) void slide_row_as(const dw_slide s, const int32_t PL, const int first)
{
    const int32_t C = s.C, W = s.W;
    const float *x = s.x;
    float *y = s.y;
    const float32x4_t zero = vdupq_n_f32(0.0f), w0 = vld1q_f32(s.w), w1 = vld1q_f32(s.w + C),
                      w2 = vld1q_f32(s.w + 2 * C);
    float32x4_t o, m, v = vld1q_f32(x);
    int32_t q;
    if (PL == 1) { /* pixel 0: output 0's kw = 1 and output 1's kw = 0 terms */
        o = SLIDE_MAC(SLIDE_SUM(0), v, w1);
        m = SLIDE_MAC(SLIDE_SUM(1), v, w0);
        q = 1;
    } else { /* pixels 0 and 1: output 0's kw = 0 and 1 terms, output 1's kw = 0 */
        o = SLIDE_MAC(SLIDE_SUM(0), v, w0);
        v = vld1q_f32(x + C);
        o = SLIDE_MAC(o, v, w1);
        m = SLIDE_MAC(SLIDE_SUM(1), v, w0);
        q = 2;
    }
    const int32_t inside = W - 2 - q; /* pixels q .. W - 3 are inside */
    if (inside & 1) {
        SLIDE_STEP_C(q);
        ++q;
    }
    if (inside > 1) {
        slide_pairs(s, q, (uint32_t)inside / 2, PL, w0, w1, w2, &o, &m, first);
        q += inside & ~1;
    }
    /* pixel W - 2: inside for SAME; for VALID output W - 4 ends, W - 3 gets kw = 1 */
    if (PL == 1) {
        SLIDE_STEP_C(q);
        ++q;
    } else {
        v = vld1q_f32(x + q * C);
        o = SLIDE_MAC(o, v, w2);
        vst1q_f32(y + (q - 2) * C, o);
        m = SLIDE_MAC(m, v, w1);
        o = m, ++q;
    }
    /* pixel W - 1: the last terms of outputs W - 2 and W - 1 (SAME), of W - 3 (VALID) */
    v = vld1q_f32(x + q * C);
    o = SLIDE_MAC(o, v, w2);
    vst1q_f32(y + (q + PL - 2) * C, o);
    if (PL == 1) vst1q_f32(y + (q + PL - 1) * C, SLIDE_MAC(m, v, w1));
}

/* act(sum + bias) of one vector of channels along the row (pixel stride C), stored under pred
 * when tail; worst is raised to the lanes' |bits| before the activation (a NaN's exceed
 * +inf's). The activation is VMAXNM with +0 (and VMINNM with 6): the reference's v < 0 ? 0 : v
 * (then v > 6 ? 6) for every v but a NaN, which sends the op to the portable kernel anyway, and
 * -0, which sum + bias is only after a fused term underflowed (a sum starts at +0; a fused
 * term rounds to -0 only from a tiny negative exact value), and an underflow sets UFC, which
 * sends the op to the portable kernel. */
static inline __attribute__((always_inline)) uint32x4_t finish_vector(float *y, uint32_t OW, uint32_t C,
                                                                      float32x4_t bv, mve_pred16_t pred,
                                                                      uint32x4_t worst, const uint32_t act,
                                                                      const int tail)
{
    const float32x4_t zero = vdupq_n_f32(0.0f), six = vdupq_n_f32(6.0f);
    for (uint32_t p = 0; p < OW; ++p, y += C) {
        float32x4_t v = vaddq_f32(vld1q_f32(y), bv);
        worst = mt_mve_magnitudes(worst, v);
        if (act != MT_FUSED_NONE) v = vmaxnmq_f32(v, zero);
        if (act == MT_FUSED_RELU6) v = vminnmq_f32(v, six);
        if (tail) vstrwq_p_f32(y, v, pred);
        else vst1q_f32(y, v);
    }
    return worst;
}

/* y[b, oh, ·] = act(sum + bias), a vector of channels at a time (the last, overlapping the one
 * before when C is not a multiple of 4, stores only its new lanes) */
__attribute__((noinline)) static void dw_finish_row(float *y, const float *bias, const mt_spatial *g,
                                                    uint32x4_t *nan)
{
    const uint32_t C = g->C, act = g->activation;
    uint32x4_t worst = *nan;
    for (uint32_t c4 = 0; c4 < C; c4 += 4) {
        const uint32_t c = c4 + 4 > C ? C - 4 : c4;
        const mve_pred16_t pred = (mve_pred16_t)~vctp32q(c4 - c);
        const float32x4_t bv = bias ? vld1q_f32(bias + c) : vdupq_n_f32(0.0f);
        float *yc = y + c;
        if (c != c4) { /* the overlapping last vector */
            worst = act == MT_FUSED_RELU6 ? finish_vector(yc, g->OW, C, bv, pred, worst, MT_FUSED_RELU6, 1)
                    : act == MT_FUSED_RELU  ? finish_vector(yc, g->OW, C, bv, pred, worst, MT_FUSED_RELU, 1)
                                            : finish_vector(yc, g->OW, C, bv, pred, worst, MT_FUSED_NONE, 1);
        } else {
            worst = act == MT_FUSED_RELU6 ? finish_vector(yc, g->OW, C, bv, pred, worst, MT_FUSED_RELU6, 0)
                    : act == MT_FUSED_RELU  ? finish_vector(yc, g->OW, C, bv, pred, worst, MT_FUSED_RELU, 0)
                                            : finish_vector(yc, g->OW, C, bv, pred, worst, MT_FUSED_NONE, 0);
        }
    }
    *nan = worst;
}

#define DWB_KH 8 /* kernel rows at most for the blocks: W packed on the stack, 3·DWB_KH vectors */

/* The blocks apply (depthwise_blocks_mve.h): 8 or 16 channels, a kernel 3 wide at stride 1
 * along W, at most DWB_KH kernel rows */
static int dw_blocks(const mt_spatial *g)
{
    return (g->C == 8 || g->C == 16) && g->KW == 3 && g->SW == 1 && g->KH <= DWB_KH;
}

/* The forward by blocks of four pixels, a vector of channels at a time (its W packed, the taps
 * 16 bytes apart), each run of whole blocks in an output row one call over the batch, the
 * pixels left over dw_pixels'; 1 on a NaN result (y then holds partial results) */
static int dw_forward_blocks(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                             const mt_spatial *g)
{
    const uint32_t C = g->C, W = g->W, KH = g->KH, OW = g->OW;
    float32x4_t packed[DWB_KH * 3];
    mt_mve_dw_blocks r = {0};
    r.act = g->activation, r.images = B, r.src_image = g->H * W * C * 4u, r.dst_image = g->OH * OW * C * 4u;
    r.src_step = W * C * 4u;
    for (uint32_t c = 0; c < C; c += 4) {
        for (uint32_t t = 0; t < KH * 3; ++t) packed[t] = vld1q_f32(w + (size_t)t * C + c);
        r.bias = bias ? bias + c : NULL;
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            uint32_t kh0, kh1, kw0, kw1;
            mt_spatial_tap_range(oh, g->SH, g->PT, KH, g->H, &kh0, &kh1);
            /* image 0's kernel row kh0 (in bounds when any is) */
            const float *xr = kh1 > kh0 ? x + (size_t)(oh * g->SH + kh0 - g->PT) * W * C + c : x;
            r.rows = kh1 - kh0, r.w = packed + 3 * kh0;
            for (uint32_t ow = 0; ow < OW;) {
                const uint32_t n = kh1 > kh0 ? mt_mve_block_run(ow, g->PL, W, OW, &r.edges) : 0u;
                if (n) {
                    r.blocks = n, r.dst = y + ((size_t)oh * OW + ow) * C + c;
                    r.src = mt_mve_block_tap0(xr, ow, g->PL, C);
                    if (C == 8 ? mt_mve_dw_blocks_run_8(&r) : mt_mve_dw_blocks_run_16(&r)) return 1;
                    ow += 4 * n;
                } else { /* a pixel at a time (every pixel when no kernel row is in bounds) */
                    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, W, &kw0, &kw1);
                    for (uint32_t b = 0; b < B; ++b)
                        if (dw_pixels(x, w, bias, y, g, b, oh, ow, kh0, kh1, kw0, kw1, c, 0, 1, 1)) return 1;
                    ow += 1;
                }
            }
        }
    }
    return 0;
}

/* Channels in blocks of 8 run in the scalar FPU's assembly (depthwise_conv2d_dsp.h) with fewer
 * instructions per MAC than the Helium pixel loops below (3.66 against 4.20 on the benchmark's
 * 8-channel layer, forward, with fused terms; 3.65 against 4.30 with VMUL and VADD), but not
 * than the slides (1.96). */
#if MT_VFP_DW
#define DW_SCALAR(g) ((g)->C % 8 == 0)
#else
#define DW_SCALAR(g) 0
#endif

/* The slides apply: stride 1 along W and a 3-wide window, SAME (at least 3 columns) or VALID
 * (at least 4) */
static int dw_slides(const mt_spatial *g)
{
    return mt_mve_row_slides(g, g->PL == 0 ? 4u : 3u);
}

/* one output row's kernel rows kh0 .. kh1 - 1 for every vector of channels, SAME (PL = 1) or
 * VALID (0) known where inlined: the first kernel row starts the sums, the others add to them.
 * (A noinline slide_row taking its geometry from a struct in memory paid the loads and the
 * call on every kernel row.) */
static inline __attribute__((always_inline)) void slide_rows(float *yr, const float *xr, const float *w, int32_t C,
                                                             int32_t W, uint32_t kh0, uint32_t kh1, const int32_t PL)
{
    for (int32_t c4 = 0; c4 < C; c4 += 4) { /* a vector's rows in turn: the last may overlap */
        const int32_t c = c4 + 4 > C ? C - 4 : c4;
        dw_slide s = {xr + c, yr + c, w + (size_t)kh0 * 3 * (size_t)C + c, C, W};
        slide_row_as(s, PL, 1);
        for (uint32_t kh = kh0 + 1; kh < kh1; ++kh) {
            s.x += W * C, s.w += 3 * C;
            slide_row_as(s, PL, 0);
        }
    }
}

__attribute__((noinline)) static void slide_rows_same(float *yr, const float *xr, const float *w, int32_t C, int32_t W,
                                                      uint32_t kh0, uint32_t kh1)
{
    slide_rows(yr, xr, w, C, W, kh0, kh1, 1);
}

__attribute__((noinline)) static void slide_rows_valid(float *yr, const float *xr, const float *w, int32_t C, int32_t W,
                                                       uint32_t kh0, uint32_t kh1)
{
    slide_rows(yr, xr, w, C, W, kh0, kh1, 0);
}

/* The forward by slides (see above); 1 on a NaN result (y then holds partial results) */
static int dw_forward_slides(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                             const mt_spatial *g)
{
    const uint32_t C = g->C;
    uint32x4_t nan = vdupq_n_u32(0);
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            uint32_t kh0, kh1;
            float *yr = y + ((size_t)b * g->OH + oh) * g->OW * C;
            mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
            if (kh0 == kh1) { /* no tap in bounds: every sum is +0 */
                for (uint32_t i = 0; i < g->OW * C; ++i) yr[i] = 0.0f;
            } else {
                const float *xr = x + ((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W * C;
                if (g->PL == 1) slide_rows_same(yr, xr, w, (int32_t)C, (int32_t)g->W, kh0, kh1);
                else slide_rows_valid(yr, xr, w, (int32_t)C, (int32_t)g->W, kh0, kh1);
            }
            dw_finish_row(yr, bias, g, &nan);
        }
    return mt_mve_magnitudes_nan(nan);
}

/* y = act(Σ_{in-bounds kh, kw} x·W + b): by slides where they apply, else channels in blocks
 * of up to 16 a pixel or two at a time; a flushed subnormal or a NaN result sends the whole op
 * to the portable kernel, which overwrites y */
void mt_op_depthwise_conv2d_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                            const mt_spatial *g)
{
    const uint32_t C = g->C, full = C / 4;
    if (dw_blocks(g)) {
        mt_mve_flags_clear();
        const int nan = dw_forward_blocks(x, w, bias, y, B, g);
        const float32x4_t none = vdupq_n_f32(0.0f);
        if (nan || mt_mve_flushed(none, none, none, none))
            mt_op_depthwise_conv2d_f32_forward_portable(x, w, bias, y, B, g);
        return;
    }
    if (C < 4 || (DW_SCALAR(g) && !dw_slides(g))) {
        mt_op_depthwise_conv2d_f32_forward_portable(x, w, bias, y, B, g);
        return;
    }
    mt_mve_flags_clear();
    if (dw_slides(g)) {
        const int nan = dw_forward_slides(x, w, bias, y, B, g);
        const float32x4_t none = vdupq_n_f32(0.0f);
        if (nan || mt_mve_flushed(none, none, none, none))
            mt_op_depthwise_conv2d_f32_forward_portable(x, w, bias, y, B, g);
        return;
    }
    int nan = 0;
    for (uint32_t b = 0; b < B && !nan; ++b)
        for (uint32_t oh = 0; oh < g->OH && !nan; ++oh) {
            uint32_t k = 0;
            for (; k + 4 <= full && !nan; k += 4) nan = dw_row(x, w, bias, y, g, b, oh, 4 * k, 0, 4);
            if (nan) break;
            switch (full - k) { /* the vectors left: one block */
            case 3: nan = dw_row(x, w, bias, y, g, b, oh, 4 * k, 0, 3); break;
            case 2: nan = dw_row(x, w, bias, y, g, b, oh, 4 * k, 0, 2); break;
            case 1: nan = dw_row(x, w, bias, y, g, b, oh, 4 * k, 0, 1); break;
            default: break;
            }
            if (C % 4 && !nan) nan = dw_row(x, w, bias, y, g, b, oh, C - 4, 4 - C % 4, 1);
        }
    const float32x4_t none = vdupq_n_f32(0.0f); /* every result is stored: the clobber orders them */
    if (nan || mt_mve_flushed(none, none, none, none)) mt_op_depthwise_conv2d_f32_forward_portable(x, w, bias, y, B, g);
}

#else
typedef int mt_depthwise_conv2d_mve_unused; /* ISO C: a translation unit is not empty */
#endif
