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
 *   DepthwiseConv2D: its rows' machinery in depthwise_s8_rows.h.
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
#include "ops/portable/s8_dense_rows.h"
#include "ops/spatial.h"
#include "ops/portable/depthwise_s8_rows.h"

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
 * order, across output rows, as n rows of K = KH·KW·C bytes, (kh, kw, c) in W's order, each
 * followed by `pad` bytes of zx (rows of mt_s8_padded_row(K), whose weights past K are 0); a tap
 * in the padding holds zx, whose term W·(zx - zx) is 0: the sum of the in-bounds terms, the
 * reference's. The kernel rows in bounds are found once per output row, the taps of a row
 * only outside [inside0, inside1), where some fall in the padding. */
static __attribute__((noinline)) MT_BYTE_LOOPS void conv_windows(const int8_t *x, const mt_spatial *g, uint32_t oh,
                                                                 uint32_t ow, uint32_t n, int8_t zx, uint32_t inside0,
                                                                 uint32_t inside1, size_t pad, int8_t *out)
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
            fill_run(out, zx, pad), out += pad;
            continue;
        }
        uint32_t kw0 = 0, kw1 = KW;
        if (ow < inside0 || ow >= inside1) mt_spatial_tap_range(ow, g->SW, g->PL, KW, g->W, &kw0, &kw1);
        const size_t before = (size_t)kw0 * C, inside = (size_t)(kw1 - kw0) * C; /* 0 when no tap is in */
        if (kh1 <= kh0 || inside == 0) { /* every tap in the padding */
            fill_run(out, zx, run * g->KH + pad), out += run * g->KH + pad;
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
        fill_run(out, zx, pad), out += pad;
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
        mt_op_conv2d_s8_pointwise_portable(x, w, bias, rq, y, B * g->H * g->W, g->C, g->OC, packed, NULL);
        return;
    }
    uint32_t inside0, inside1; /* the outputs whose KW taps are all in bounds */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &inside0, &inside1);
    const size_t window = (size_t)g->KH * g->KW * g->C;
    if (window <= MT_S8_WINDOW_BYTES) {
        /* small windows (a first layer's): copied, as many as fit, across output rows (an
         * 8 x 8 image's row of 3 x 3 windows is 8 of the 56 that fit: each product's call and
         * each channel's requantization served 8 pixels), then one product each */
        int8_t windows[MT_S8_WINDOW_BYTES], padded[MT_S8_WINDOW_BYTES];
        MT_S8_SPREAD_SCRATCH(spread); /* the windows' pairs' halves (s8_dense_rows.h's mt_s8_dense_pairs) */
        /* a window and its padding, and W's rows alike (when they fit; else unpadded) */
        size_t stride = mt_s8_padded_row(window);
        const int8_t *rows = w;
        if (stride != window && (size_t)g->OC * stride <= sizeof padded) {
            for (uint32_t oc = 0; oc < g->OC; ++oc) {
                memcpy(padded + oc * stride, w + oc * window, window);
                memset(padded + oc * stride + window, 0, stride - window);
            }
            rows = padded;
        } else {
            stride = window;
        }
        const uint32_t per = (uint32_t)(MT_S8_WINDOW_BYTES / stride), outputs = g->OH * g->OW;
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
                    conv_windows(xb, g, q / g->OW, q % g->OW, n, (int8_t)p.x_zp, inside0, inside1, stride - window,
                                 windows);
                mt_s8_dense_rows(windows, rows, bias, rq, y + ((size_t)b * outputs + q) * g->OC, n,
                                 (uint32_t)stride, g->OC, packed, 0, spread, NULL);
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
                                        int8_t *y, uint32_t P, uint32_t C, uint32_t OC, uint32_t packed, void *consts)
{
    MT_S8_SPREAD_SCRATCH(spread); /* the pixel pairs' halves (s8_dense_rows.h's mt_s8_dense_pairs) */
    mt_s8_dense_rows(x, w, bias, rq, y, P, C, OC, packed, 0, spread, consts); /* Conv2D: gemmlowp's rounding */
}

/* One output row; with consts (the fused expansion's rows, a call each) the channel groups'
 * constants and weights are made at the layer's first row and kept for the others */
void mt_op_depthwise_conv2d_s8_row_portable(const int8_t *x, uint32_t ring, const int8_t *w, const int32_t *bias,
                                            const int32_t *rq, int8_t *y, uint32_t oh, const mt_spatial *g,
                                            uint32_t packed, void *consts)
{
    const mt_q_params p = mt_q_unpack(packed);
    const dw_row r = dw_row_of(x, ring, oh, g, dw_inside_of(g));
    struct dw3_planes *slots = NULL;
#if MT_DW3
    dw3_planes planes;
    slots = &planes;
#endif
    for (uint32_t c = 0; c < g->C; c += 4) { /* four channels outside: their requantization stays */
        const uint32_t n = g->C - c < 4 ? g->C - c : 4;
        dw_group own;
        dw_group_row(dw_group_for(consts, &own, bias, rq, c, n, slots), &r, w, g, c, n, p, y);
    }
    if (consts != NULL) *(uint32_t *)consts = 1; /* made */
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
#if MT_DW3
    dw3_planes planes;
#endif
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t c = 0; c < g->C; c += 4) {
            const uint32_t n = g->C - c < 4 ? g->C - c : 4;
            dw_group grp;
            DW_GROUP_START(&grp, bias, rq, c, n, &planes, 1);
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                const dw_row r = dw_row_of(x + b * sample, 0, oh, g, in);
                dw_group_row(&grp, &r, w, g, c, n, p, y + ((size_t)b * g->OH + oh) * out_row);
            }
        }
}
