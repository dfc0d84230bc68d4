/*
 * Siblings of the int8 Conv2D and DepthwiseConv2D (ops/conv_s8.c): the same integer sums,
 * so the same bytes, on every target. The reference finds each term's input position and
 * tests its bounds per multiply; here, as in the float siblings (conv2d_portable.c), an output's
 * in-bounds taps are found once (mt_spatial_tap_range):
 *   Conv2D: a pointwise one is a FullyConnected over its pixels; a window of at most
 *     MT_S8_WINDOW_BYTES inputs is copied (the padding as zx, whose terms are 0; on Helium a
 *     window of up to 16 taps is one byte gather) and is a row of one too, as many windows
 *     at a time as fit, across output rows; in a larger one, for one kernel row kh the in-bounds taps (kw, c) are one
 *     contiguous run in the input row and in W's row (oc, kh), an inner product of s8_dot.h
 *     for MT_S8_ROWS output channels at a time that read the run's inputs once;
 *   DepthwiseConv2D: four channels at a time (Helium: the lanes of a vector), each term
 *     W·(x - zx); the pixels whose taps are all inside take the channels' weights gathered
 *     once per output row and -zx·Σ W in their sums' start (dw_interior).
 * Each output row's sums wait for their requantization in runs of MT_S8_RUN pixels
 * (mt_s8_requant_block: a channel at a time, its constants in registers; Helium and AVX2
 * take a pixel's channels as a vector's lanes).
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__arm__)
#pragma GCC optimize("O2") /* the step's cost in an int8 backbone: speed even in -Os firmware */
#endif
/* conv_windows's short copies stay byte loops, where GCC would make them calls to memcpy and
 * memset (a call costs more than a 3-byte run); only there: the rest of the file keeps the
 * calls GCC makes (the depthwise's weight gathers took 1.6M more instructions a MobileNetV2
 * step on the M3 with the option applied to the whole file) */
#if defined(__GNUC__) && !defined(__clang__)
#define MT_BYTE_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define MT_BYTE_LOOPS
#endif
#include "select/kernels.h"
#include "ops/portable/s8_dot.h"
#include "ops/spatial.h"

/* Bytes of the window copies (im2col) a Conv2D takes on the stack: windows of K <= this many
 * inputs go through mt_s8_dense_rows as rows of K, as many as fit at a time */
#define MT_S8_WINDOW_BYTES 512u

/* n bytes of in (fill_run: of v): a byte loop for the few bytes of a small window's kernel
 * row (a call to memcpy or memset costs more than a 3-byte run), the library's word copies
 * past 16 */
static inline __attribute__((always_inline)) void copy_run(int8_t *out, const int8_t *in, size_t n)
{
    if (n > 16u) {
        memcpy(out, in, n);
        return;
    }
    for (; n; --n) *out++ = *in++; /* pointers walked: a load, a store and the count a byte */
}

static inline __attribute__((always_inline)) void fill_run(int8_t *out, int8_t v, size_t n)
{
    if (n > 16u) {
        memset(out, v, n);
        return;
    }
    for (; n; --n) *out++ = v;
}

/* The windows of n consecutive outputs of one sample (x), from output (oh, ow) on in row
 * order, across output rows, as n rows of K = KH·KW·C bytes, (kh, kw, c) in W's order; a tap
 * in the padding holds zx, whose term W·(zx - zx) is 0: the sum of the in-bounds terms, the
 * reference's. The kernel rows in bounds are found once per output row, the taps of a row
 * only outside [inside0, inside1), where some fall in the padding. */
static __attribute__((noinline)) MT_BYTE_LOOPS void conv_windows(const int8_t *x, const mt_spatial *g, uint32_t oh,
                                                                 uint32_t ow, uint32_t n, int8_t zx, uint32_t inside0,
                                                                 uint32_t inside1, int8_t *out)
{
    const uint32_t C = g->C, KW = g->KW, KH = g->KH;
    const size_t run = (size_t)KW * C, row = (size_t)g->W * C;
    uint32_t kh0, kh1;
    mt_spatial_tap_range(oh, g->SH, g->PT, KH, g->H, &kh0, &kh1);
    for (uint32_t j = 0; j < n; ++j, ++ow) {
        if (ow == g->OW) { /* the next output row */
            ow = 0, ++oh;
            mt_spatial_tap_range(oh, g->SH, g->PT, KH, g->H, &kh0, &kh1);
        }
        if (kh0 == 0 && kh1 == KH && ow >= inside0 && ow < inside1) { /* every tap inside: KH runs */
            const int8_t *xp = x + (size_t)(oh * g->SH - g->PT) * row + (size_t)(ow * g->SW - g->PL) * C;
            for (uint32_t kh = 0; kh < KH; ++kh, out += run, xp += row) copy_run(out, xp, run);
            continue;
        }
        uint32_t kw0 = 0, kw1 = KW;
        if (ow < inside0 || ow >= inside1) mt_spatial_tap_range(ow, g->SW, g->PL, KW, g->W, &kw0, &kw1);
        const size_t before = (size_t)kw0 * C, inside = (size_t)(kw1 - kw0) * C; /* 0 when no tap is in */
        if (kh1 <= kh0 || inside == 0) { /* every tap in the padding */
            fill_run(out, zx, run * g->KH), out += run * g->KH;
            continue;
        }
        /* tap kw0 of kernel row kh0 */
        const int8_t *xp = x + (size_t)(oh * g->SH + kh0 - g->PT) * row + (size_t)((int64_t)ow * g->SW + kw0 - g->PL) * C;
        for (uint32_t kh = 0; kh < g->KH; ++kh, out += run) {
            if (kh < kh0 || kh >= kh1) {
                fill_run(out, zx, run);
                continue;
            }
            fill_run(out, zx, before);
            copy_run(out + before, xp + (size_t)(kh - kh0) * row, inside);
            fill_run(out + before + inside, zx, run - before - inside);
        }
    }
}

#if MT_S8_MVE
/* Helium's form of conv_windows for windows of K <= 16 inputs whose taps all lie within 256
 * bytes of the window's first ((KH - 1)·W·C + KW·C <= 256): a window is one byte gather, lane k
 * reading tap (kh, kw, c) = (k / (KW·C), k / C mod KW, k mod C) at kh·W·C + kw·C + c past the
 * window's origin, the lanes in the padding (kh outside [kh0, kh1) or kw outside [kw0, kw1))
 * predicated off and set to zx, then one predicated store of K bytes: about 20 instructions
 * a window where copying its kernel rows took about 210 for a one-channel 3 x 3. */
typedef struct gathered_windows {
    uint8x16_t offsets, kh, kw; /* lane k's tap */
    mve_pred16_t lanes;         /* the K lanes */
} gathered_windows;

static int gathered_windows_of(const mt_spatial *g, size_t K, gathered_windows *gw)
{
    const size_t row = (size_t)g->W * g->C;
    if (K > 16u || (g->KH - 1u) * row + (size_t)g->KW * g->C > 256u) return 0;
    uint8_t offsets[16] = {0}, kh[16] = {0}, kw[16] = {0};
    for (uint32_t k = 0; k < K; ++k) {
        kh[k] = (uint8_t)(k / (g->KW * g->C)), kw[k] = (uint8_t)(k / g->C % g->KW);
        offsets[k] = (uint8_t)(kh[k] * row + (size_t)kw[k] * g->C + k % g->C);
    }
    gw->offsets = vld1q_u8(offsets), gw->kh = vld1q_u8(kh), gw->kw = vld1q_u8(kw);
    gw->lanes = vctp8q((uint32_t)K);
    return 1;
}

/* The lanes whose tap (index k along one axis, a lane of tap) falls inside [0, size) for
 * output o of that axis: k in mt_spatial_tap_range's [k0, k1) */
static inline mve_pred16_t lanes_within(uint8x16_t tap, uint32_t o, uint32_t stride, uint32_t pad, uint32_t K,
                                        uint32_t size)
{
    uint32_t k0, k1;
    mt_spatial_tap_range(o, stride, pad, K, size, &k0, &k1);
    return vcmpcsq_n_u8(tap, (uint8_t)k0) & (mve_pred16_t)~vcmpcsq_n_u8(tap, (uint8_t)k1);
}

static void conv_windows_gathered(const int8_t *x, const mt_spatial *g, const gathered_windows *gw, uint32_t oh,
                                  uint32_t ow, uint32_t n, int8_t zx, uint32_t inside0, uint32_t inside1, int8_t *out)
{
    const uint32_t C = g->C, K = g->KH * g->KW * C;
    const int8x16_t zv = vdupq_n_s8(zx);
    mve_pred16_t rows = gw->lanes & lanes_within(gw->kh, oh, g->SH, g->PT, g->KH, g->H);
    for (uint32_t j = 0; j < n; ++j, ++ow, out += K) {
        if (ow == g->OW) { /* the next output row */
            ow = 0, ++oh;
            rows = gw->lanes & lanes_within(gw->kh, oh, g->SH, g->PT, g->KH, g->H);
        }
        mve_pred16_t in = rows;
        if (ow < inside0 || ow >= inside1) in &= lanes_within(gw->kw, ow, g->SW, g->PL, g->KW, g->W);
        /* the window's origin, tap (0, 0), in the padding where it lies there: an address that
         * only the lanes in bounds, at offsets that reach the input, are read through */
        const intptr_t origin = ((intptr_t)oh * g->SH - (intptr_t)g->PT) * (intptr_t)g->W * (intptr_t)C +
                                ((intptr_t)ow * g->SW - (intptr_t)g->PL) * (intptr_t)C;
        const int8_t *base = (const int8_t *)((uintptr_t)x + (uintptr_t)origin);
        vstrbq_p_s8(out, vpselq_s8(vldrbq_gather_offset_z_s8(base, gw->offsets, in), zv, in), gw->lanes);
    }
}
#endif

void mt_op_conv2d_s8_forward_portable(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                      int8_t *y, uint32_t B, const mt_spatial *g, uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    if (g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PT == 0 && g->PL == 0) {
        /* pointwise: the pixels are already the rows of a FullyConnected */
        mt_op_conv2d_s8_pointwise_portable(x, w, bias, rq, y, B * g->H * g->W, g->C, g->OC, packed);
        return;
    }
    uint32_t inside0, inside1; /* the outputs whose KW taps are all in bounds */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &inside0, &inside1);
    const size_t window = (size_t)g->KH * g->KW * g->C;
    if (window <= MT_S8_WINDOW_BYTES) {
        /* small windows (a first layer's): copied, as many as fit, across output rows (an
         * 8 x 8 image's row of 3 x 3 windows is 8 of the 56 that fit: each product's call and
         * each channel's requantization served 8 pixels), then one product each */
        int8_t windows[MT_S8_WINDOW_BYTES];
        const uint32_t per = (uint32_t)(MT_S8_WINDOW_BYTES / window), outputs = g->OH * g->OW;
#if MT_S8_MVE
        gathered_windows gw;
        const int gathered = gathered_windows_of(g, window, &gw);
#endif
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t q = 0; q < outputs; q += per) {
                const uint32_t n = outputs - q < per ? outputs - q : per;
                const int8_t *xb = x + (size_t)b * g->H * g->W * g->C;
#if MT_S8_MVE
                if (gathered)
                    conv_windows_gathered(xb, g, &gw, q / g->OW, q % g->OW, n, (int8_t)p.x_zp, inside0, inside1,
                                          windows);
                else
#endif
                    conv_windows(xb, g, q / g->OW, q % g->OW, n, (int8_t)p.x_zp, inside0, inside1, windows);
                mt_op_conv2d_s8_pointwise_portable(windows, w, bias, rq, y + ((size_t)b * outputs + q) * g->OC, n,
                                                   (uint32_t)window, g->OC, packed);
            }
        return;
    }
    const uint32_t C = g->C, OC = g->OC;
    const size_t K = (size_t)g->KH * g->KW * C, row = (size_t)g->W * C;
    for (uint32_t oc = 0; oc < OC; oc += MT_S8_ROWS) { /* the output channels outside: their
                                                         * requantization and W rows stay */
        const uint32_t R = OC - oc < MT_S8_ROWS ? OC - oc : MT_S8_ROWS;
        mt_q_requant q[4];
        mt_s8_requants(bias, rq, oc, R, q);
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                uint32_t kh0, kh1;
                mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
                const int8_t *xr = x + ((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * row; /* row at kh0 */
                int8_t *yp = y + ((size_t)b * g->OH + oh) * g->OW * OC + oc;
                for (uint32_t ow = 0; ow < g->OW; ++ow, yp += OC) {
                    uint32_t kw0 = 0, kw1 = g->KW;
                    if (ow < inside0 || ow >= inside1)
                        mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                    const uint32_t run = (kw1 - kw0) * C, taps = kh1 > kh0 && run ? kh1 - kh0 : 0;
                    const int8_t *xp = xr + (size_t)((int64_t)ow * g->SW + kw0 - g->PL) * C;
                    const int8_t *wp = w + oc * K + ((size_t)kh0 * g->KW + kw0) * C;
                    int32_t acc[4] = {0, 0, 0, 0};
                    for (uint32_t t = 0; t < taps; ++t) /* the kernel rows in order: the reference's */
                        mt_s8_dot(xp + t * row, wp + (size_t)t * g->KW * C, K, run, p.x_zp, R, acc);
                    for (uint32_t r = 0; r < R; ++r)
                        yp[r] = mt_q_requantize(acc[r], q[r], p.y_zp, p.act_min, p.act_max);
                }
            }
    }
}

void mt_op_conv2d_s8_pointwise_portable(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                        int8_t *y, uint32_t P, uint32_t C, uint32_t OC, uint32_t packed)
{
    mt_s8_dense_rows(x, w, bias, rq, y, P, C, OC, packed, 0); /* Conv2D: gemmlowp's rounding */
}

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
    const size_t C = d->C;
    for (uint32_t j = 0; j < n; ++j, acc += 4, x0 += d->step) {
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
    uint32_t tap = 0;
#if MT_S8_DSP
    int16x2_t sum_e = 0, sum_o = 0; /* Σ W of channels 0, 2 and 1, 3: |Σ| <= 9·128 fits */
#elif MT_S8_MVE
    int32x4_t sum = vdupq_n_s32(0); /* Σ W of the four channels */
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
#elif MT_S8_MVE
            memcpy(d->w + 4 * tap, wp, 4); /* one word */
            sum = vaddq_s32(sum, vldrbq_s32(wp));
#else
            for (uint32_t r = 0; r < 4; ++r) d->w[4 * tap + r] = wp[r], sums[r] += wp[r];
#endif
        }
#if MT_S8_DSP
    const int32_t sums[4] = {(int16_t)sum_e, (int16_t)sum_o, (int16_t)((uint32_t)sum_e >> 16),
                             (int16_t)((uint32_t)sum_o >> 16)};
#elif MT_S8_MVE
    int32_t sums[4];
    vst1q_s32(sums, sum);
#endif
    for (uint32_t r = 0; r < 4; ++r) d->start[r] = (int32_t)((uint32_t)start[r] - (uint32_t)zx * (uint32_t)sums[r]);
    return 1;
}

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

/* Channels c..c+n-1 (n <= 4) of one output row: the sums of MT_S8_RUN pixels at a time (the
 * interior ones through d when it is given, its rows set), each started from start (the
 * biases), then their requantization with q */
static void dw_row_channels(const dw_row *r, const int8_t *w, const mt_spatial *g, uint32_t c, uint32_t n,
                            const mt_q_requant q[4], const int32_t start[4], const dw_interior *d, mt_q_params p,
                            int8_t *y)
{
    const uint32_t C = g->C;
    int32_t sums[4 * MT_S8_RUN];
    for (uint32_t ow0 = 0; ow0 < g->OW; ow0 += MT_S8_RUN) {
        const uint32_t run = g->OW - ow0 < MT_S8_RUN ? g->OW - ow0 : MT_S8_RUN;
        for (uint32_t j = 0; j < run; ++j) {
            const uint32_t ow = ow0 + j;
            if (d && ow >= r->inside0 && ow < r->inside1) { /* the pixels up to the run's or the inside's end */
                const uint32_t m = (ow0 + run < r->inside1 ? ow0 + run : r->inside1) - ow;
                dw_interior_pixels(d, (size_t)((int64_t)ow * g->SW - g->PL) * C, m, sums + 4 * j);
                j += m - 1;
                continue;
            }
            uint32_t kw0 = 0, kw1 = g->KW;
            if (ow < r->inside0 || ow >= r->inside1) mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
            const size_t xofs = (size_t)((int64_t)ow * g->SW + kw0 - g->PL) * C + c;
            dw_sums(&r->rows, xofs, w + ((size_t)r->kh0 * g->KW + kw0) * C + c, (size_t)g->KW * C, kw1 - kw0, C,
                    p.x_zp, n, start, sums + 4 * j);
        }
        mt_s8_requant_block(sums, run, n, q, p, y + (size_t)ow0 * C + c, C);
    }
}

/* Four channels' constants: their requantizations, their biases (the sums' start) and the
 * interior form's weights for the kernel rows [kh0, kh0 + count) (interior: 0 where it does
 * not apply; count UINT32_MAX: not made yet) */
typedef struct dw_group {
    mt_q_requant q[4];
    int32_t start[4];
    dw_interior d;
    int interior;
    uint32_t kh0, count;
} dw_group;

static void dw_group_of(dw_group *grp, const int32_t *bias, const int32_t *rq, uint32_t c, uint32_t n)
{
    mt_s8_requants(bias, rq, c, n, grp->q);
    for (uint32_t r = 0; r < 4; ++r) grp->start[r] = grp->q[r].bias;
    grp->interior = 0, grp->kh0 = 0, grp->count = UINT32_MAX;
}

/* Output row r's channels c..c+n-1 with the group's constants, the interior weights made
 * only where the row's kernel rows differ from those they were made for */
static void dw_group_row(dw_group *grp, const dw_row *r, const int8_t *w, const mt_spatial *g, uint32_t c,
                         uint32_t n, mt_q_params p, int8_t *y)
{
    const int inside = n == 4 && r->inside1 > r->inside0;
    if (inside && (r->kh0 != grp->kh0 || r->rows.count != grp->count)) {
        grp->interior = dw_interior_weights(&grp->d, w, g, r->kh0, r->rows.count, c, p.x_zp, grp->start);
        grp->kh0 = r->kh0, grp->count = r->rows.count;
    }
    const int interior = inside && grp->interior;
    if (interior) dw_interior_rows(&grp->d, &r->rows, c);
    dw_row_channels(r, w, g, c, n, grp->q, grp->start, interior ? &grp->d : NULL, p, y);
}

void mt_op_depthwise_conv2d_s8_row_portable(const int8_t *x, uint32_t ring, const int8_t *w, const int32_t *bias,
                                            const int32_t *rq, int8_t *y, uint32_t oh, const mt_spatial *g,
                                            uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    const dw_row r = dw_row_of(x, ring, oh, g, dw_inside_of(g));
    for (uint32_t c = 0; c < g->C; c += 4) { /* four channels outside: their requantization stays */
        const uint32_t n = g->C - c < 4 ? g->C - c : 4;
        dw_group grp;
        dw_group_of(&grp, bias, rq, c, n);
        dw_group_row(&grp, &r, w, g, c, n, p, y);
    }
}

/* The whole tensor: four channels' constants made once for every row of a sample, and their
 * interior weights once for each run of rows with the same kernel rows, where the row form
 * (the fused expansion's, a row at a time) makes them for every row: a layer of 4-pixel
 * rows (the digits CNN's) spent more on them than on its taps */
void mt_op_depthwise_conv2d_s8_forward_portable(const int8_t *x, const int8_t *w, const int32_t *bias,
                                                const int32_t *rq, int8_t *y, uint32_t B, const mt_spatial *g,
                                                uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    const size_t sample = (size_t)g->H * g->W * g->C, out_row = (size_t)g->OW * g->C;
    const dw_inside in = dw_inside_of(g);
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t c = 0; c < g->C; c += 4) {
            const uint32_t n = g->C - c < 4 ? g->C - c : 4;
            dw_group grp;
            dw_group_of(&grp, bias, rq, c, n);
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                const dw_row r = dw_row_of(x + b * sample, 0, oh, g, in);
                dw_group_row(&grp, &r, w, g, c, n, p, y + ((size_t)b * g->OH + oh) * out_row);
            }
        }
}
