/*
 * The DepthwiseConv2D sibling's row machinery (conv_s8_portable.c's two depthwise kernels, the
 * only includer): four channels at a time (Helium: the lanes of a vector), each term
 * W·(x - zx); the pixels whose taps are all inside take the channels' weights gathered once
 * per output row and -zx·Σ W in their sums' start (dw_interior); the others' taps are found
 * per pixel (dw_sums). Each output row's sums wait for their requantization in runs of
 * MT_S8_RUN pixels (mt_s8_requant_block).
 */
#ifndef MT_OPS_PORTABLE_DEPTHWISE_S8_ROWS_H
#define MT_OPS_PORTABLE_DEPTHWISE_S8_ROWS_H

#include "ops/portable/s8_dot.h"
#include "ops/spatial.h"
/* The DSP cores' channel planes' 3 x 3 stride-1 form (dw3_*): its copies and products in
 * their instructions. Helium's 3-wide interior reads the NHWC rows by gathers instead
 * (mt_s8_dwg_run, dw_interior_pixels): its planes (the same form, in VLDRB.S32 and VMLA.S32)
 * cost 0.8M instructions more in the MobileNetV2 step, their copies and slots' bookkeeping. */
#if MT_S8_DSP
#include "ops/dsp/depthwise_s8_dsp.h"
#define MT_DW3 1
#elif MT_S8_MVE
#include "ops/mve/depthwise_s8_mve.h"
#define MT_DW3 0
#else
#define MT_DW3 0
#endif

/* The in-bounds input rows of one depthwise output row: row k (< count) at
 * base + ((first + k) mod ring)·bytes, or base + (first + k)·bytes when ring is 0 */
typedef struct dw_rows {
    const int8_t *base;
    size_t bytes;
    uint32_t first, ring, count;
} dw_rows;

/* The sums of four channels (n < 4: the lanes past n unused) of one output pixel: its taps
 * kw0..kw1 (cols of them, the first at xofs in each input row) of every in-bounds kernel row,
 * W's first at w (next kernel row wrow further), in the reference's (kh, kw) order, each
 * started from start[c] (the bias) */
#if MT_S8_DSP
/* a[c] += W[c]·(x[c] - zx) for four channels of one tap: their words of x and W, channels 0
 * and 2 (and, rotated, 1 and 3) in the int16 halves, SMLABB and SMLATT adding one each */
static inline __attribute__((always_inline)) void dw_tap(const int8_t *xp, const int8_t *wp, int16x2_t zz,
                                                         int32_t a[4])
{
    const uint32_t xw = mt_s8_word(xp), ww = mt_s8_word(wp);
    const int16x2_t xe = __ssub16(__sxtb16(xw), zz), xo = __ssub16(mt_s8_odd(xw), zz);
    const int16x2_t we = __sxtb16(ww), wo = mt_s8_odd(ww);
    a[0] = __smlabb(xe, we, a[0]), a[2] = __smlatt(xe, we, a[2]);
    a[1] = __smlabb(xo, wo, a[1]), a[3] = __smlatt(xo, wo, a[3]);
}
#endif

/* The fewest interior pixels of a call that Helium gathers (mt_s8_dwg_run, dw_interior_pixels) */
#define DW_GATHERED 8u

/* The interior pixels' form (all KW taps of each in-bounds kernel row inside): four channels'
 * weights of every tap gathered once, and their zx·Σ W folded into start (Σ W·(x - zx) =
 * Σ W·x - zx·Σ W, exact in wrapping int32 sums), so no tap subtracts zx. On the DSP cores the
 * weights are spread into int16 halves (we: channels 0, 2; wo: 1, 3): a tap is a load and two
 * SXTB16 of x, an LDRD of W and four SMLAxy. On Helium the four channels are a vector's lanes:
 * a tap is two widening byte loads, a VMUL and a VADD. Elsewhere (the M3, x86, wasm) a tap's
 * four weights are contiguous: four loads of x, four of W and four multiply-accumulates. */
#define MT_DW_TAPS 9u /* 3 x 3 kernels and smaller */

typedef struct dw_interior {
    const int8_t *row[3]; /* in-bounds kernel row k's input row (the ring resolved), at channel c */
    uint32_t rows, KW;
    size_t C, step;       /* bytes between taps, and between output pixels (SW·C) */
#if MT_S8_DSP
    uint32_t w[2 * MT_DW_TAPS]; /* a tap's two spread words */
#else
    int8_t w[4 * MT_DW_TAPS]; /* a tap's four weights */
#endif
    int32_t start[4];
#if MT_S8_MVE
    int32_t k[4][MT_DW_TAPS + 1]; /* mt_s8_dwg_run's: channel r's nine weights, then its start */
    int gathered;                 /* k made (dw_gathered_weights) */
#endif
} dw_interior;

/* One pixel's four sums, a[0..DW_SUMS-1] (the four lanes of one vector on Helium, else four
 * integers), started from d->start (dw_start), a tap's four terms added to them (x at xp, the
 * tap's weights at *wq, moved on) and stored (dw_store) */
#if MT_S8_MVE
#define DW_SUMS 1
typedef int32x4_t dw_sum; /* VMUL.I32 and VADD.I32 wrap */
typedef int8_t dw_weight;
static inline __attribute__((always_inline)) void dw_interior_tap(const int8_t *xp, const dw_weight **wq, dw_sum a[1])
{
    a[0] = vaddq_s32(a[0], vmulq_s32(vldrbq_s32(xp), vldrbq_s32(*wq)));
    *wq += 4;
}

static inline __attribute__((always_inline)) void dw_start(dw_sum a[1], const int32_t start[4])
{
    a[0] = vld1q_s32(start);
}

static inline __attribute__((always_inline)) void dw_store(int32_t *acc, const dw_sum a[1])
{
    vst1q_s32(acc, a[0]);
}
#else
#define DW_SUMS 4
#if MT_S8_DSP
typedef int32_t dw_sum;
typedef uint32_t dw_weight;
static inline __attribute__((always_inline)) void dw_interior_tap(const int8_t *xp, const dw_weight **wq, dw_sum a[4])
{
    const uint32_t xw = mt_s8_word(xp);
    const int16x2_t xe = __sxtb16(xw), xo = mt_s8_odd(xw);
    const int16x2_t we = (int16x2_t)(*wq)[0], wo = (int16x2_t)(*wq)[1];
    a[0] = __smlabb(xe, we, a[0]), a[2] = __smlatt(xe, we, a[2]);
    a[1] = __smlabb(xo, wo, a[1]), a[3] = __smlatt(xo, wo, a[3]);
    *wq += 2;
}
#else
typedef uint32_t dw_sum; /* wrapping */
typedef int8_t dw_weight;
static inline __attribute__((always_inline)) void dw_interior_tap(const int8_t *xp, const dw_weight **wq, dw_sum a[4])
{
    const int8_t *w = *wq;
    a[0] += (uint32_t)(w[0] * xp[0]), a[1] += (uint32_t)(w[1] * xp[1]);
    a[2] += (uint32_t)(w[2] * xp[2]), a[3] += (uint32_t)(w[3] * xp[3]);
    *wq += 4;
}
#endif

static inline __attribute__((always_inline)) void dw_start(dw_sum a[4], const int32_t start[4])
{
    a[0] = (dw_sum)start[0], a[1] = (dw_sum)start[1], a[2] = (dw_sum)start[2], a[3] = (dw_sum)start[3];
}

static inline __attribute__((always_inline)) void dw_store(int32_t *acc, const dw_sum a[4])
{
    acc[0] = (int32_t)a[0], acc[1] = (int32_t)a[1], acc[2] = (int32_t)a[2], acc[3] = (int32_t)a[3];
}
#endif

/* The common 3 x 3 interior holds its three rows' bases and walks one offset across the
 * pixels, the shape tested once: 6-7 % fewer instructions in the depthwise on the M7 and M33,
 * 8-9 % on Helium and 2 % on RISC-V than re-reading the rows from d at every pixel (0.3 % more
 * on the M4F, as GCC schedules for it); the M3 (Thumb-2 without the DSP extension: four sums,
 * four weights and four inputs of a tap in 13 registers) spilled its sums instead, 3-4 % more,
 * and keeps the per-pixel form */
#if defined(__arm__) && !MT_S8_DSP && !MT_S8_MVE
#define DW_WALK_ROWS 0
#else
#define DW_WALK_ROWS 1
#endif

/* acc[4·j + r] for n pixels, the first's tap 0 at offset x0 of each row. Not inlined: its
 * loops get their own registers (inlined, the sums and pointers went through the stack). The
 * common 3 x 3 with every kernel row in bounds has its nine taps unrolled. */
static __attribute__((noinline)) void dw_interior_pixels(const dw_interior *d, size_t x0, uint32_t n, int32_t *acc)
{
#if MT_X86_KERNELS
    if (mt_x86_vector()) { /* the CPU has AVX2 (ops/x86/s8_avx2.c) */
        mt_s8_dw_pixels_avx2(d->row, d->rows, d->KW, d->C, d->step, d->w, d->start, x0, n, acc);
        return;
    }
#endif
    const size_t C = d->C, step = d->step;
#if MT_S8_MVE
    /* from 8 outputs a channel's outputs as lanes, its taps gathered; a kernel row out of
     * bounds reads row 0 again by weights 0 (dw_interior_weights). Below 8 the setup of the
     * call and its channels' runs (about 90 instructions) costs about what the four-channel
     * form below saves (about 42 a pixel, where the gathers take 27) */
    if (d->gathered && n >= DW_GATHERED) {
        const int8_t *const rows[3] = {d->row[0] + x0, d->row[d->rows > 1] + x0, d->row[d->rows > 2 ? 2 : 0] + x0};
        mt_s8_dwg_pixels(rows, C, step, &d->k[0][0], n, acc);
        return;
    }
#endif
    if (DW_WALK_ROWS && d->rows == 3 && d->KW == 3) {
        const int8_t *b0 = d->row[0], *b1 = d->row[1], *b2 = d->row[2];
        for (uint32_t j = 0; j < n; ++j, acc += 4, x0 += step) {
            const int8_t *r0 = b0 + x0, *r1 = b1 + x0, *r2 = b2 + x0;
            dw_sum a[DW_SUMS];
            dw_start(a, d->start);
            const dw_weight *wq = d->w;
            dw_interior_tap(r0, &wq, a), dw_interior_tap(r0 + C, &wq, a), dw_interior_tap(r0 + 2 * C, &wq, a);
            dw_interior_tap(r1, &wq, a), dw_interior_tap(r1 + C, &wq, a), dw_interior_tap(r1 + 2 * C, &wq, a);
            dw_interior_tap(r2, &wq, a), dw_interior_tap(r2 + C, &wq, a), dw_interior_tap(r2 + 2 * C, &wq, a);
            dw_store(acc, a);
        }
        return;
    }
    for (uint32_t j = 0; j < n; ++j, acc += 4, x0 += step) {
        dw_sum a[DW_SUMS];
        dw_start(a, d->start);
        const dw_weight *wq = d->w;
        if (d->rows == 3 && d->KW == 3) {
            const int8_t *r0 = d->row[0] + x0, *r1 = d->row[1] + x0, *r2 = d->row[2] + x0;
            dw_interior_tap(r0, &wq, a), dw_interior_tap(r0 + C, &wq, a), dw_interior_tap(r0 + 2 * C, &wq, a);
            dw_interior_tap(r1, &wq, a), dw_interior_tap(r1 + C, &wq, a), dw_interior_tap(r1 + 2 * C, &wq, a);
            dw_interior_tap(r2, &wq, a), dw_interior_tap(r2 + C, &wq, a), dw_interior_tap(r2 + 2 * C, &wq, a);
        } else {
            for (uint32_t k = 0; k < d->rows; ++k) {
                const int8_t *xp = d->row[k] + x0;
                for (uint32_t t = 0; t < d->KW; ++t, xp += C) dw_interior_tap(xp, &wq, a);
            }
        }
        dw_store(acc, a);
    }
}

/* d's weights and start for channels c..c+3 and the `count` in-bounds kernel rows from kh0: 0
 * when the interior form does not apply. They hold for every output row with those kernel
 * rows (dw_interior_rows then points d at a row's inputs). */
static int dw_interior_weights(dw_interior *d, const int8_t *w, const mt_spatial *g, uint32_t kh0, uint32_t count,
                               uint32_t c, int32_t zx, const int32_t start[4])
{
    const size_t C = g->C;
    if (count == 0 || count > 3 || g->KW * count > MT_DW_TAPS) return 0;
    d->rows = count, d->KW = g->KW, d->C = C, d->step = (size_t)g->SW * C;
#if MT_S8_MVE
    /* the kernel rows' taps follow each other in W, C bytes apart: a word of four weights and
     * their Σ W a tap (the fused expansion's rows make these for every output row) */
    const uint32_t taps = count * g->KW;
    const int8_t *wp = w + (size_t)kh0 * g->KW * C + c;
    int32x4_t sum = vdupq_n_s32(0); /* Σ W of the four channels */
    for (uint32_t t = 0; t < taps; ++t, wp += C) {
        memcpy(d->w + 4 * t, wp, 4);
        sum = vaddq_s32(sum, vldrbq_s32(wp));
    }
    if (taps < MT_DW_TAPS) memset(d->w + 4 * taps, 0, sizeof d->w - 4 * taps); /* rows out of bounds weigh 0 */
    const int32x4_t st = vsubq_s32(vld1q_s32(start), vmulq_n_s32(sum, zx)); /* wrapping */
    vst1q_s32(d->start, st);
    d->gathered = 0;
    return 1;
#else
    uint32_t tap = 0;
#if MT_S8_DSP
    int16x2_t sum_e = 0, sum_o = 0; /* Σ W of channels 0, 2 and 1, 3: |Σ| <= 9·128 fits */
#else
    int32_t sums[4] = {0, 0, 0, 0};
#endif
    for (uint32_t k = 0; k < count; ++k)
        for (uint32_t t = 0; t < g->KW; ++t, ++tap) {
            const int8_t *wp = w + ((size_t)(kh0 + k) * g->KW + t) * C + c;
#if MT_S8_DSP
            const uint32_t ww = mt_s8_word(wp);
            const int16x2_t we = __sxtb16(ww), wo = mt_s8_odd(ww);
            d->w[2 * tap] = (uint32_t)we, d->w[2 * tap + 1] = (uint32_t)wo;
            sum_e = __sadd16(sum_e, we), sum_o = __sadd16(sum_o, wo);
#else
            for (uint32_t r = 0; r < 4; ++r) d->w[4 * tap + r] = wp[r], sums[r] += wp[r];
#endif
        }
#if MT_S8_DSP
    const int32_t sums[4] = {(int16_t)sum_e, (int16_t)sum_o, (int16_t)((uint32_t)sum_e >> 16),
                             (int16_t)((uint32_t)sum_o >> 16)};
#endif
    for (uint32_t r = 0; r < 4; ++r) d->start[r] = (int32_t)((uint32_t)start[r] - (uint32_t)zx * (uint32_t)sums[r]);
    return 1;
#endif
}

#if MT_S8_MVE
/* mt_s8_dwg_run's weights and starts (d->k: channel r's row 40 bytes on, a scatter a tap) from
 * d's, where the interior pixels of a row are `inside` >= DW_GATHERED outputs of a 3-wide
 * kernel (the narrower rows of the fused expansion, which makes these every row, would pay for
 * them and not use them) */
static void dw_gathered_weights(dw_interior *d, uint32_t inside)
{
    d->gathered = d->KW == 3 && inside >= DW_GATHERED;
    if (!d->gathered) return;
    const uint32x4_t channel = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sizeof d->k[0]);
    for (uint32_t t = 0; t < MT_DW_TAPS; ++t) vstrwq_scatter_offset_s32(&d->k[0][t], channel, vldrbq_s32(d->w + 4 * t));
    vstrwq_scatter_offset_s32(&d->k[0][MT_DW_TAPS], channel, vld1q_s32(d->start));
}
#endif

/* d's input rows: the in-bounds kernel rows of one output row (rows->count of them, as
 * dw_interior_weights was given), at channel c */
static void dw_interior_rows(dw_interior *d, const dw_rows *rows, uint32_t c)
{
    uint32_t slot = rows->first;
    for (uint32_t k = 0; k < rows->count; ++k) {
        d->row[k] = rows->base + (size_t)slot * rows->bytes + c;
        if (++slot == rows->ring) slot = 0;
    }
}

static inline __attribute__((always_inline)) void dw_sums(const dw_rows *rows, size_t xofs, const int8_t *w,
                                                          size_t wrow, uint32_t cols, size_t C, int32_t zx, uint32_t n,
                                                          const int32_t start[4], int32_t acc[4])
{
    const int8_t *xr = rows->base + (size_t)rows->first * rows->bytes + xofs;
    uint32_t slot = rows->first;
#if MT_S8_MVE
    const mve_pred16_t pr = vctp32q(n); /* lanes past n load 0 */
    int32x4_t a = vld1q_s32(start);
#else
    int32_t a[4] = {start[0], start[1], start[2], start[3]};
#if MT_S8_DSP
    const int16x2_t zz = mt_s8_pair(zx);
#endif
#endif
    for (uint32_t k = 0; k < rows->count; ++k, w += wrow) {
        const int8_t *xp = xr, *wp = w;
#if MT_S8_MVE
        for (uint32_t j = 0; j < cols; ++j, xp += C, wp += C)
            a = vaddq_s32(a, vmulq_s32(vsubq_n_s32(vldrbq_z_s32(xp, pr), zx), vldrbq_z_s32(wp, pr)));
#else
#if MT_S8_DSP
        if (n == 4 && cols == 3) { /* a whole 3-wide window row, unrolled */
            dw_tap(xp, wp, zz, a), dw_tap(xp + C, wp + C, zz, a), dw_tap(xp + 2 * C, wp + 2 * C, zz, a);
        } else if (n == 4) {
            for (uint32_t j = 0; j < cols; ++j, xp += C, wp += C) dw_tap(xp, wp, zz, a);
        } else
#else
        if (n == 4) {
            for (uint32_t j = 0; j < cols; ++j, xp += C, wp += C)
                for (uint32_t r = 0; r < 4; ++r) a[r] += (int32_t)wp[r] * ((int32_t)xp[r] - zx);
        } else
#endif
            for (uint32_t j = 0; j < cols; ++j, xp += C, wp += C)
                for (uint32_t r = 0; r < n; ++r) a[r] += (int32_t)wp[r] * ((int32_t)xp[r] - zx);
#endif
        if (++slot == rows->ring) slot = 0, xr = rows->base + xofs; /* the ring wraps */
        else xr += rows->bytes;
    }
#if MT_S8_MVE
    vst1q_s32(acc, a);
#else
    acc[0] = a[0], acc[1] = a[1], acc[2] = a[2], acc[3] = a[3];
#endif
}

/* One depthwise output row's geometry: its in-bounds input rows and kernel rows, and the
 * outputs whose KW taps are all inside (the same in every row: dw_inside) */
typedef struct dw_row {
    dw_rows rows;
    uint32_t kh0, inside0, inside1;
} dw_row;

typedef struct dw_inside {
    uint32_t first, end;
} dw_inside;

static dw_inside dw_inside_of(const mt_spatial *g)
{
    dw_inside in;
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &in.first, &in.end);
    return in;
}

static dw_row dw_row_of(const int8_t *x, uint32_t ring, uint32_t oh, const mt_spatial *g, dw_inside in)
{
    uint32_t kh0, kh1;
    mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
    const uint32_t ih0 = oh * g->SH + kh0 - g->PT; /* the first in-bounds row (none when kh1 == kh0) */
    const dw_row r = {{x, (size_t)g->W * g->C, ring ? ih0 % ring : ih0, ring, kh1 - kh0}, kh0, in.first, in.end};
    return r;
}

#if MT_S8_MVE
/* An edge pixel of a 3-wide kernel's row that the interior form holds, its taps kw0..2 inside
 * (kw0 = 1: the left edge) or 0..1 (kw0 = 0: the right one): its four sums from d's start and
 * weights. The tap in the padding is taken as x = zx, whose term the reference does not have:
 * d's start, bias - zx·Σ W over all the row's taps, holds -zx·W for it, which W·zx (a VMLA
 * by zx) takes away; a tap inside adds W·x as in the interior. About 10 instructions a kernel
 * row, where dw_sums's loops and the tap range took about 150 for the pixel. */
static inline __attribute__((always_inline)) void dw_edge_pixel(const dw_interior *d, size_t x0, const int left,
                                                                int32_t zx, int32_t *acc)
{
    const size_t C = d->C;
    int32x4_t a = vld1q_s32(d->start);
    const int8_t *wq = d->w;
    for (uint32_t k = 0; k < d->rows; ++k, wq += 12) {
        const int8_t *xp = d->row[k] + x0; /* the first tap inside */
        const int32x4_t w0 = vldrbq_s32(wq), w1 = vldrbq_s32(wq + 4), w2 = vldrbq_s32(wq + 8);
        if (left) {
            a = vmlaq_n_s32(a, w0, zx);
            a = vaddq_s32(a, vmulq_s32(vldrbq_s32(xp), w1));
            a = vaddq_s32(a, vmulq_s32(vldrbq_s32(xp + C), w2));
        } else {
            a = vaddq_s32(a, vmulq_s32(vldrbq_s32(xp), w0));
            a = vaddq_s32(a, vmulq_s32(vldrbq_s32(xp + C), w1));
            a = vmlaq_n_s32(a, w2, zx);
        }
    }
    vst1q_s32(acc, a);
}
#endif

/* Pixels of a run of dw_row_channels: on Helium 64 (1 KB of sums), as each channel's run of
 * interior pixels is a call of mt_s8_dwg_run whose setup (about 35 instructions) cost a
 * quarter of its products at 16 */
#if MT_S8_MVE
#define DW_RUN 64u
#else
#define DW_RUN MT_S8_RUN
#endif

/* Channels c..c+n-1 (n <= 4) of one output row: the sums of DW_RUN pixels at a time (the
 * interior ones through d when it is given, its rows set), each started from start (the
 * biases), then their requantization with q */
static void dw_row_channels(const dw_row *r, const int8_t *w, const mt_spatial *g, uint32_t c, uint32_t n,
                            const mt_q_requant q[4], const int32_t start[4], const dw_interior *d, mt_q_params p,
                            int8_t *y)
{
    const uint32_t C = g->C;
    int32_t sums[4 * DW_RUN];
    for (uint32_t ow0 = 0; ow0 < g->OW; ow0 += DW_RUN) {
        const uint32_t run = g->OW - ow0 < DW_RUN ? g->OW - ow0 : DW_RUN;
        for (uint32_t j = 0; j < run; ++j) {
            const uint32_t ow = ow0 + j;
            if (d && ow >= r->inside0 && ow < r->inside1) { /* the pixels up to the run's or the inside's end */
                const uint32_t m = (ow0 + run < r->inside1 ? ow0 + run : r->inside1) - ow;
                dw_interior_pixels(d, (size_t)((int64_t)ow * g->SW - g->PL) * C, m, sums + 4 * j);
                j += m - 1;
                continue;
            }
#if MT_S8_MVE
            if (d && d->KW == 3) { /* one tap in the padding, left (tap 0's column -1) or right (W) */
                const int64_t i0 = (int64_t)ow * g->SW - g->PL; /* tap 0's input column */
                if (i0 == -1 && g->W >= 2u) {
                    dw_edge_pixel(d, 0, 1, p.x_zp, sums + 4 * j);
                    continue;
                }
                if (i0 >= 0 && i0 + 2 == (int64_t)g->W) {
                    dw_edge_pixel(d, (size_t)i0 * C, 0, p.x_zp, sums + 4 * j);
                    continue;
                }
            }
#endif
            uint32_t kw0 = 0, kw1 = g->KW;
            if (ow < r->inside0 || ow >= r->inside1) mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
            const size_t xofs = (size_t)((int64_t)ow * g->SW + kw0 - g->PL) * C + c;
            dw_sums(&r->rows, xofs, w + ((size_t)r->kh0 * g->KW + kw0) * C + c, (size_t)g->KW * C, kw1 - kw0, C,
                    p.x_zp, n, start, sums + 4 * j);
        }
        mt_s8_requant_block(sums, run, n, q, p, y + (size_t)ow0 * C + c, C);
    }
}

struct dw3_planes; /* the DSP cores' planes (depthwise_s8_planes.h) */

/* Four channels' constants: their requantizations, their biases (the sums' start) and the
 * interior form's weights for the kernel rows [kh0, kh0 + count) (interior: 0 where it does
 * not apply; count UINT32_MAX: not made yet) */
typedef struct dw_group {
    mt_q_requant q[4];
    int32_t start[4];
    dw_interior d;
    int interior;
    uint32_t kh0, count;
#if MT_DW3
    mt_s8_dw3_weights k3[4]; /* the planes' form: each channel's weights and start (made: 1) */
    int made;
    struct dw3_planes *planes; /* their slots: the caller's, reset for each group */
    uint32_t min_ow;           /* the narrowest output row the planes' form takes */
#endif
} dw_group;

static void dw_group_of(dw_group *grp, const int32_t *bias, const int32_t *rq, uint32_t c, uint32_t n)
{
    mt_s8_requants(bias, rq, c, n, grp->q);
    for (uint32_t r = 0; r < 4; ++r) grp->start[r] = grp->q[r].bias;
    grp->interior = 0, grp->kh0 = 0, grp->count = UINT32_MAX;
#if MT_DW3
    grp->made = 0, grp->planes = NULL;
#endif
}

/* A group kept in a layer's constants (kernels.def's consts: each of the fused expansion's
 * rows made it again, its requantizations, the planes' or the interior's weights and starts) */
typedef char dw_group_fits[sizeof(dw_group) <= MT_S8_DEPTHWISE_GROUP ? 1 : -1];

#if MT_DW3
#include "ops/portable/depthwise_s8_planes.h"
#endif

/* A new group of n channels from c: its constants (dw_group_of) and, with the planes' form, the
 * caller's planes emptied for it (dw3_attach, whole as there); without that form planes and
 * whole are not used (nor evaluated) */
#if MT_DW3
#define DW_GROUP_START(grp, bias, rq, c, n, planes, whole) \
    (dw_group_of((grp), (bias), (rq), (c), (n)), dw3_attach((grp), (planes), (whole)))
#else
#define DW_GROUP_START(grp, bias, rq, c, n, planes, whole) dw_group_of((grp), (bias), (rq), (c), (n))
#endif

/* Group c / 4 of a row kernel's call: made into own (consts NULL), or kept in the layer's
 * constants (consts: MT_S8_CONSTS_BYTES(C, MT_S8_DEPTHWISE_GROUP) bytes), made at the layer's first call (their
 * header 0; the caller sets it once made) and given the call's planes after */
static dw_group *dw_group_for(void *consts, dw_group *own, const int32_t *bias, const int32_t *rq, uint32_t c,
                              uint32_t n, struct dw3_planes *planes)
{
    dw_group *grp = own;
    if (consts != NULL) {
        grp = (dw_group *)(void *)((char *)consts + MT_S8_CONSTS_HEADER) + c / 4u;
        if (*(const uint32_t *)consts) { /* made */
#if MT_DW3
            dw3_attach(grp, planes, 0);
#endif
            return grp;
        }
    }
    DW_GROUP_START(grp, bias, rq, c, n, planes, 0);
    (void)planes;
    return grp;
}

/* Output row r's channels c..c+n-1 with the group's constants, the interior weights made
 * only where the row's kernel rows differ from those they were made for */
static void dw_group_row(dw_group *grp, const dw_row *r, const int8_t *w, const mt_spatial *g, uint32_t c,
                         uint32_t n, mt_q_params p, int8_t *y)
{
#if MT_DW3
    if (dw3_applies(grp, g, n)) {
        dw3_row(grp, r, w, g, c, p, y);
        return;
    }
#endif
    const int inside = n == 4 && r->inside1 > r->inside0;
    if (inside && (r->kh0 != grp->kh0 || r->rows.count != grp->count)) {
        grp->interior = dw_interior_weights(&grp->d, w, g, r->kh0, r->rows.count, c, p.x_zp, grp->start);
#if MT_S8_MVE
        if (grp->interior) dw_gathered_weights(&grp->d, r->inside1 - r->inside0);
#endif
        grp->kh0 = r->kh0, grp->count = r->rows.count;
    }
    const int interior = inside && grp->interior;
    if (interior) dw_interior_rows(&grp->d, &r->rows, c);
    dw_row_channels(r, w, g, c, n, grp->q, grp->start, interior ? &grp->d : NULL, p, y);
}

#endif /* MT_OPS_PORTABLE_DEPTHWISE_S8_ROWS_H */
