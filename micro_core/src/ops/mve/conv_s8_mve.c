/*
 * Helium sibling of the int8 Conv2D (ops/conv_s8.c, kernels.def's conv2d_s8_forward) for a
 * first layer's windows: three kernel rows of at most 16 inputs each (KW·C <= 16: a 3 x 3 over
 * 3 channels, MobileNetV2's stem, 27 inputs), more than 16 in all (the portable sibling
 * gathers windows of up to 16 inputs in one vector, but copies a longer one byte by byte:
 * about 180 instructions a window of the stem, 0.42 a MAC at 16 output channels). Here no
 * window is copied:
 *
 *   acc[oc] = bias[oc] - zx·Σ W[oc] + Σ_kh Σ_{i<KW·C} W[oc, kh, i]·x[row kh of the window, i]
 *
 * a kernel row's KW·C inputs are contiguous in the NHWC input, one 16-byte load, and its
 * weights a vector whose lanes past KW·C are 0 (so the loaded bytes past the window add
 * 0·x = 0): three VMLADAVA an output. Two output channels a pass, their six weight vectors in
 * registers across an output row's pixels, the pixel's three input vectors shared by both: a
 * pixel's two outputs take three loads and six VMLADAVA. A tap in the padding holds zx (its
 * term W·(zx - zx) is 0, the start's -zx·Σ W takes it back): the edge pixels' loads are
 * predicated to their taps in bounds and the rest set to zx, kernel rows outside all zx; and
 * a pixel whose 16-byte loads would pass the input's end takes the edges' form. The integer
 * sums are exact in any order (modulo 2^32, as VMLADAVA's), each output's the reference's;
 * then the requantization of s8_requant.h (mt_s8_requant_block: four channels as lanes). Any
 * other Conv2D: the portable sibling.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/portable/s8_dot.h"
#include "ops/spatial.h"

/* Pixels whose sums wait for their requantization: an output row of a 128-wide stem (64),
 * 1 KB of sums; each run pays a call and the constants' gathers of mt_s8_requant_block */
#define STEM_RUN 64u

/* The windows this kernel takes: KH = 3, each kernel row's KW·C inputs one vector (<= 16),
 * more than 16 inputs in all (up to 16 the portable sibling's one gather a window is shorter) */
static int stem_form(const mt_spatial *g)
{
    const uint32_t run = g->KW * g->C;
    return g->KH == 3u && run <= 16u && 3u * run > 16u;
}

/* The window's three rows as vectors for output (oh, ow), each lane k < KW·C tap (kw, c) =
 * (k / C, k mod C), zx where the tap is in the padding (rows: kh in [kh0, kh1); columns: kw in
 * [kw0, kw1)); base is tap (0, 0)'s address (in the padding, where it lies there: only the
 * lanes in bounds are read through it) */
static inline __attribute__((always_inline)) void edge_rows(const int8_t *base, size_t row, uint32_t C,
                                                           uint32_t kh0, uint32_t kh1, uint32_t kw0, uint32_t kw1,
                                                           int8x16_t zv, int8x16_t v[3])
{
    const mve_pred16_t in = vctp8q(kw1 * C) & (mve_pred16_t)~vctp8q(kw0 * C);
    for (uint32_t kh = 0; kh < 3; ++kh)
        v[kh] = kh >= kh0 && kh < kh1 ? vpselq_s8(vldrbq_z_s8(base + kh * row, in), zv, in) : zv;
}

/* acc[4·j] and acc[4·j + 1] for n interior pixels (every tap inside, 16 bytes past each row's
 * start readable) from x0 on, step bytes apart: channels r and r + 1 of the group, w their
 * weight rows (channel, kh) as 16-byte vectors, s0 and s1 their sums' starts. The six weight
 * vectors stay in registers and a kernel row's vector is read once for both channels: three
 * loads, six VMLADAVA, two moves of the starts and one STRD a pixel. */
static __attribute__((noinline)) void stem_pair(const int8_t *x0, size_t row, size_t step, uint32_t n,
                                                const int8_t *w, int32_t s0, int32_t s1, int32_t *acc)
{
    const int8x16_t w00 = vld1q_s8(w), w01 = vld1q_s8(w + 16), w02 = vld1q_s8(w + 32);
    const int8x16_t w10 = vld1q_s8(w + 48), w11 = vld1q_s8(w + 64), w12 = vld1q_s8(w + 80);
    const int8_t *x1 = x0 + row, *x2 = x0 + 2 * row;
    for (uint32_t j = n; j; --j, acc += 4, x0 += step, x1 += step, x2 += step) {
        const int8x16_t v0 = vld1q_s8(x0);
        int32_t a0 = vmladavaq_s8(s0, v0, w00), a1 = vmladavaq_s8(s1, v0, w10);
        const int8x16_t v1 = vld1q_s8(x1);
        a0 = vmladavaq_s8(a0, v1, w01), a1 = vmladavaq_s8(a1, v1, w11);
        const int8x16_t v2 = vld1q_s8(x2);
        acc[0] = vmladavaq_s8(a0, v2, w02), acc[1] = vmladavaq_s8(a1, v2, w12);
    }
}

/* stem_pair's sums for one edge pixel (output (oh, ow), base its tap (0, 0)'s address) and all
 * four channels of the group (wv: channel r's kernel row kh at (3r + kh)·16), its taps in the
 * padding zx (edge_rows) */
static __attribute__((noinline)) void stem_edge(const int8_t *base, size_t row, const mt_spatial *g, uint32_t oh,
                                                uint32_t ow, int8_t zx, const int8_t *wv, const int32_t start[4],
                                                int32_t *acc)
{
    uint32_t kh0, kh1, kw0, kw1;
    mt_spatial_tap_range(oh, g->SH, g->PT, 3u, g->H, &kh0, &kh1);
    mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
    int8x16_t v[3];
    edge_rows(base, row, g->C, kh0, kh1, kw0, kw1, vdupq_n_s8(zx), v); /* only taps in bounds read */
    for (uint32_t r = 0; r < 4; ++r, wv += 48) {
        int32_t a = vmladavaq_s8(start[r], v[0], vld1q_s8(wv));
        a = vmladavaq_s8(a, v[1], vld1q_s8(wv + 16));
        acc[r] = vmladavaq_s8(a, v[2], vld1q_s8(wv + 32));
    }
}

/* The four sums s0..s3 as a vector's lanes: a VDUP and three VMOV.32. (The two-register form,
 * VMOV Qd[2], Qd[0], Rt, Rt2, would take two; which of Rt and Rt2 goes to lane 0 is read one way
 * by QEMU and the other by some tools, and QEMU cannot tell which silicon does.) */
static inline __attribute__((always_inline)) int32x4_t lanes_of(int32_t s0, int32_t s1, int32_t s2, int32_t s3)
{
    return vsetq_lane_s32(s3, vsetq_lane_s32(s2, vsetq_lane_s32(s1, vdupq_n_s32(s0), 1), 2), 3);
}

/* y[0..3] = the requantization of the four lanes of sums, as mt_s8_requant_block's (no left
 * shift: mt_s8_scale_lanes), one VSTRB. full: the clamp is the whole int8 range, two saturating
 * narrowings (VQMOVNB.S32 into each lane's low int16, VQMOVNB.S16 into its low byte, the byte
 * VSTRB.32 stores), where the bounds' VMAX and VMIN want two vector registers more than the
 * eight hold beside four weight rows and the constants (GCC reloaded both every pixel) */
static inline __attribute__((always_inline)) void pw_requant_store(int32x4_t sums, int32x4_t mv, int32x4_t rv,
                                                                  mt_q_params p, int8_t *y, const int full)
{
    const int32x4_t v = vaddq_n_s32(mt_s8_scale_lanes(sums, vdupq_n_s32(0), mv, rv, 0), p.y_zp);
    if (full) {
        /* in place (each lane's low half, then its low byte: the byte VSTRB.32 stores), where the
         * intrinsics' form keeps the top halves of another vector and GCC copied or spilled */
        int32x4_t b = v;
        __asm("vqmovnb.s32 %q0, %q0\n\tvqmovnb.s16 %q0, %q0" : "+w"(b));
        vstrbq_s32(y, b);
    } else {
        vstrbq_s32(y, vminq_s32(vmaxq_s32(v, vdupq_n_s32(p.act_min)), vdupq_n_s32(p.act_max)));
    }
}

/* One pixel's four outputs y[0..3] from its inputs xv (lanes past D any value: the weights
 * there are 0): the four sums by VMLADAV into general registers, moved into lanes (lanes_of)
 * and requantized there (pw_requant_store) */
static inline __attribute__((always_inline)) void pw_pixel(int8x16_t xv, int8x16_t w0, int8x16_t w1, int8x16_t w2,
                                                          int8x16_t w3, int32x4_t start, int32x4_t mv, int32x4_t rv,
                                                          mt_q_params p, int8_t *y, const int full)
{
    const int32x4_t sums = vaddq_s32(
        lanes_of(vmladavq_s8(xv, w0), vmladavq_s8(xv, w1), vmladavq_s8(xv, w2), vmladavq_s8(xv, w3)), start);
    pw_requant_store(sums, mv, rv, p, y, full);
}

/* y[j·ys + r] for P pixels of D <= 16 inputs and four output channels r (pw_pixel): w the four
 * weight rows, start their sums' starts (bias - zx·Σ W), mv and rv the multipliers and -right
 * shifts. A pixel's 16-byte load reads the next pixels' first inputs too, against weights 0,
 * while its 16 bytes lie within the P·D of x; the last pixels' loads are predicated to their D
 * (the bytes after x are not the input's). */
static inline __attribute__((always_inline)) void pw_pixels(const int8_t *x, const int8_t *w, uint32_t D, uint32_t P,
                                                           int32x4_t start, int32x4_t mv, int32x4_t rv,
                                                           mt_q_params p, int8_t *y, size_t ys, const int full)
{
    const mve_pred16_t pd = vctp8q(D);
    const int8x16_t w0 = vldrbq_z_s8(w, pd), w1 = vldrbq_z_s8(w + D, pd), w2 = vldrbq_z_s8(w + 2 * D, pd),
                    w3 = vldrbq_z_s8(w + 3 * D, pd);
    const uint32_t whole = P * D < 16u ? 0u : (P * D - 16u) / D + 1u; /* pixels j with j·D + 16 <= P·D */
    for (uint32_t j = whole; j; --j, x += D, y += ys) pw_pixel(vld1q_s8(x), w0, w1, w2, w3, start, mv, rv, p, y, full);
    for (uint32_t j = whole; j < P; ++j, x += D, y += ys)
        pw_pixel(vldrbq_z_s8(x, pd), w0, w1, w2, w3, start, mv, rv, p, y, full);
}

/* pw_pixels, the clamp known (P >= 1) */
static __attribute__((noinline)) void pw_group(const int8_t *x, const int8_t *w, uint32_t D, uint32_t P,
                                               int32x4_t start, int32x4_t mv, int32x4_t rv, mt_q_params p, int8_t *y,
                                               size_t ys)
{
    if (p.act_min == -128 && p.act_max == 127) pw_pixels(x, w, D, P, start, mv, rv, p, y, ys, 1);
    else pw_pixels(x, w, D, P, start, mv, rv, p, y, ys, 0);
}

/* pw_group's outputs the portable sibling's way (a channel with a left shift): runs of sums by
 * mt_s8_dot4_pixels, then mt_s8_requant_block */
static __attribute__((noinline)) void pw_group_shifted(const int8_t *x, const int8_t *w, const int32_t *bias,
                                                       const int32_t *rq, int8_t *y, uint32_t P, uint32_t C,
                                                       uint32_t OC, uint32_t u, mt_q_params p)
{
    mt_q_requant q[4];
    mt_s8_requants(bias, rq, u, 4u, q);
    int32_t start[4], acc[4 * MT_S8_RUN];
    for (uint32_t r = 0; r < 4; ++r)
        start[r] = (int32_t)((uint32_t)q[r].bias - (uint32_t)p.x_zp * mt_s8_sum(w + (size_t)(u + r) * C, C));
    for (uint32_t b = 0; b < P; b += MT_S8_RUN) {
        const uint32_t n = P - b < MT_S8_RUN ? P - b : MT_S8_RUN;
        mt_s8_dot4_pixels(x + (size_t)b * C, w + (size_t)u * C, C, n, start, acc);
        mt_s8_requant_block(acc, n, 4u, q, p, y + (size_t)b * OC + u, OC);
    }
}

/* A pointwise Conv2D (the fused expansion's rows, and the whole tensor's pixels) of at most
 * 16 inputs: four output channels at a time over the pixels, each pixel's four sums requantized
 * in lanes as they are made (pw_group; consts unused: its constants are made a call, a few
 * vector instructions a group); a group with a left shift goes the old way (pw_group_shifted),
 * more than 16 inputs or fewer than 4 channels in all (the same for every call of a layer, so
 * the layer's consts see one kernel) through the portable sibling. */
void mt_op_conv2d_s8_pointwise_mve(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                   int8_t *y, uint32_t P, uint32_t C, uint32_t OC, uint32_t packed, void *consts)
{
    if (C > 16u || OC < 4u || P == 0) {
        mt_op_conv2d_s8_pointwise_portable(x, w, bias, rq, y, P, C, OC, packed, consts);
        return;
    }
    const mt_q_params p = mt_q_unpack(packed);
    const uint32x4_t lane = vidupq_n_u32(0u, 1);
    for (uint32_t oc = 0; oc < OC; oc += 4) {
        /* the last group overlaps the one before when OC is not a multiple of 4: its first
         * channels' outputs computed twice, the same bytes */
        const uint32_t u = OC - oc < 4 ? OC - 4 : oc;
        const uint32x4_t pair = vshlq_n_u32(vaddq_n_u32(lane, u), 1); /* rq's word of each lane's multiplier */
        const int32x4_t shift = vldrwq_gather_shifted_offset_s32(rq + 1, pair);
        if (vmaxvq_s32(0, shift) > 0) { /* a left shift: the sums stored, then mt_s8_requant_block */
            pw_group_shifted(x, w, bias, rq, y, P, C, OC, u, p);
            continue;
        }
        const int32x4_t mv = vldrwq_gather_shifted_offset_s32(rq, pair), rv = shift; /* -right = shift <= 0 */
        const int8_t *wu = w + (size_t)u * C;
        int32_t s[4];
        for (uint32_t r = 0; r < 4; ++r)
            s[r] = (int32_t)((bias ? (uint32_t)bias[u + r] : 0u) - (uint32_t)p.x_zp * mt_s8_sum(wu + (size_t)r * C, C));
        pw_group(x, wu, C, P, vld1q_s32(s), mv, rv, p, y + u, OC);
    }
}

void mt_op_conv2d_s8_forward_mve(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq, int8_t *y,
                                 uint32_t B, const mt_spatial *g, uint32_t packed)
{
    if (g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PT == 0 && g->PL == 0) {
        /* pointwise: the pixels are the rows of a FullyConnected */
        mt_op_conv2d_s8_pointwise_mve(x, w, bias, rq, y, B * g->H * g->W, g->C, g->OC, packed, NULL);
        return;
    }
    if (!stem_form(g)) {
        mt_op_conv2d_s8_forward_portable(x, w, bias, rq, y, B, g, packed);
        return;
    }
    const mt_q_params p = mt_q_unpack(packed);
    const uint32_t C = g->C, OC = g->OC, run = g->KW * C, K = 3u * run;
    const size_t row = (size_t)g->W * C, sample = (size_t)g->H * row, step = (size_t)g->SW * C;
    uint32_t inside0, inside1; /* the outputs whose KW taps are all in bounds */
    mt_spatial_window_inside(g->OW, g->SW, g->PL, g->KW, g->W, &inside0, &inside1);
    int8_t wv[4 * 3 * 16] __attribute__((aligned(16))); /* channel r's kernel row kh at (3r + kh)·16 */
    int32_t acc[4 * STEM_RUN];
    for (uint32_t oc = 0; oc < OC; oc += 4) {
        const uint32_t R = OC - oc < 4 ? OC - oc : 4;
        mt_q_requant q[4];
        mt_s8_requants(bias, rq, oc, R, q);
        int32_t start[4];
        for (uint32_t r = 0; r < 4; ++r) { /* a channel r >= R repeats channel oc, unstored */
            const int8_t *wr = w + (size_t)(oc + (r < R ? r : 0)) * K;
            start[r] = (int32_t)((uint32_t)q[r].bias - (uint32_t)p.x_zp * mt_s8_sum(wr, K));
            for (uint32_t kh = 0; kh < 3; ++kh) vst1q_s8(wv + (3 * r + kh) * 16, vldrbq_z_s8(wr + kh * run, vctp8q(run)));
        }
        for (uint32_t b = 0; b < B; ++b) {
            const int8_t *xb = x + (size_t)b * sample;
            const size_t limit = (size_t)(B - b) * sample; /* the bytes readable from xb */
            for (uint32_t oh = 0; oh < g->OH; ++oh) {
                uint32_t kh0, kh1;
                mt_spatial_tap_range(oh, g->SH, g->PT, 3u, g->H, &kh0, &kh1);
                /* tap (0, 0) of output (oh, 0), in the padding where it lies there */
                const intptr_t top = ((intptr_t)oh * g->SH - (intptr_t)g->PT) * (intptr_t)row - (intptr_t)g->PL * C;
                /* the outputs whose three rows' 16 bytes lie within the input: ow < safe */
                const intptr_t room = (intptr_t)limit - (top + 2 * (intptr_t)row) - 16;
                const uint32_t safe = room < 0 ? 0u : (uint32_t)((size_t)room / step + 1u);
                uint32_t lo = inside0, hi = inside1 < safe ? inside1 : safe;
                if (kh0 != 0 || kh1 != 3u || hi < lo) lo = hi = 0; /* a row in the padding: every pixel an edge */
                for (uint32_t ow = 0; ow < g->OW; ow += STEM_RUN) {
                    const uint32_t n = g->OW - ow < STEM_RUN ? g->OW - ow : STEM_RUN;
                    const uint32_t i0 = lo > ow ? lo - ow : 0, i1 = hi > ow ? (hi - ow < n ? hi - ow : n) : 0;
                    const int8_t *x0 = (const int8_t *)((uintptr_t)xb + (uintptr_t)(top + (intptr_t)ow * (intptr_t)step));
                    const uint32_t interior = i1 > i0 ? i1 - i0 : 0, before = interior ? i0 : n;
                    for (uint32_t j = 0; j < n; ++j) { /* the edges: before i0, from i1 on */
                        if (j == before) j = i1;
                        if (j == n) break;
                        stem_edge(x0 + (intptr_t)j * (intptr_t)step, row, g, oh, ow + j, (int8_t)p.x_zp, wv, start,
                                  acc + 4 * j);
                    }
                    if (interior)
                        for (uint32_t r = 0; r < 4; r += 2)
                            stem_pair(x0 + (size_t)i0 * step, row, step, interior, wv + 48 * r, start[r],
                                      start[r + 1], acc + 4 * i0 + r);
                    mt_s8_requant_block(acc, n, R, q, p, y + (((size_t)b * g->OH + oh) * g->OW + ow) * OC + oc,
                                        OC);
                }
            }
        }
    }
}
#endif
