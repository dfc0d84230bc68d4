/*
 * The requantization of the int8 siblings' sums (s8_dot.h includes it, after its target
 * macros MT_S8_MVE / MT_S8_DSP and their headers; nothing else does): each channel's constants
 * made once for a loop over its outputs (mt_s8_requants), then whole runs of MT_S8_RUN pixels'
 * sums requantized a channel at a time with the constants in registers (mt_s8_requant_block:
 * gemmlowp's rounding, ops/quant.h's mt_q_scale_known; Helium and AVX2 take a pixel's four
 * channels as lanes), and FullyConnected's double scaling (mt_s8_fc_requant_block).
 */
#ifndef MT_OPS_PORTABLE_S8_REQUANT_H
#define MT_OPS_PORTABLE_S8_REQUANT_H

#if MT_S8_DSP
#include "ops/dsp/s8_requant_dsp.h"
#endif

/* The requantizations of output channels oc..oc+R-1, made once for a loop over their outputs */
static inline __attribute__((always_inline)) void mt_s8_requants(const int32_t *bias, const int32_t *rq, uint32_t oc,
                                                                 uint32_t R, mt_q_requant q[4])
{
#if MT_S8_MVE
    /* the four channels as lanes (lane r >= R: channel oc, as below): mt_q_requant_of's fields
     * from two gathers of rq (and one of bias), scattered into q's four entries. 1 << (right - 1)
     * is VSHL of 1 by right - 1, which for right = 0 shifts right by one: 0, as half must be.
     * About 20 instructions where four calls of mt_q_requant_of took 72 (the fused expansion
     * makes these a row at a time). */
    const uint32x4_t lane = vidupq_n_u32(0u, 1), ch = vpselq_u32(lane, vdupq_n_u32(0u), vctp32q(R));
    const uint32x4_t pair = vshlq_n_u32(ch, 1); /* rq's word index of each lane's multiplier */
    const int32x4_t shift = vldrwq_gather_shifted_offset_s32(rq + 2 * oc + 1, pair), zero = vdupq_n_s32(0);
    const int32x4_t right = vmaxq_s32(vnegq_s32(shift), zero);
    const uint32x4_t at = vmulq_n_u32(lane, (uint32_t)sizeof(mt_q_requant));
    int32_t *base = (int32_t *)(void *)q;
    vstrwq_scatter_offset_s32(base + offsetof(mt_q_requant, bias) / 4, at,
                              bias ? vldrwq_gather_shifted_offset_s32(bias + oc, ch) : zero);
    vstrwq_scatter_offset_s32(base + offsetof(mt_q_requant, multiplier) / 4, at,
                              vldrwq_gather_shifted_offset_s32(rq + 2 * oc, pair));
    vstrwq_scatter_offset_s32(base + offsetof(mt_q_requant, left) / 4, at, vmaxq_s32(shift, zero));
    vstrwq_scatter_offset_s32(base + offsetof(mt_q_requant, right) / 4, at, right);
    vstrwq_scatter_offset_s32(base + offsetof(mt_q_requant, half) / 4, at,
                              vshlq_s32(vdupq_n_s32(1), vsubq_n_s32(right, 1)));
#else
    for (uint32_t r = 0; r < 4; ++r) q[r] = mt_q_requant_of(bias, rq, oc + (r < R ? r : 0));
#endif
}

/* v in [-128, 127]: one SSAT where the core saturates (ACLE), else the clamp */
static inline int32_t mt_s8_saturate(int32_t v)
{
#if defined(__ARM_FEATURE_SAT)
    return __ssat(v, 8);
#else
    return mt_q_clamp(v, -128, 127);
#endif
}

/* Pixels whose sums wait for their requantization (4 channels each: 256 bytes of stack) */
#define MT_S8_RUN 16u

#if MT_S8_MVE
/* mt_q_scale(a, q) in four lanes, each with its own constants: lv = q.left, mv = q.multiplier,
 * rv = -q.right (shifted: some lane's left shift is not 0; why these are gemmlowp's steps:
 * mt_s8_requant_block below); the requantization's, and the int8 Add's (add_s8_portable.c) */
static inline __attribute__((always_inline)) int32x4_t mt_s8_scale_lanes(int32x4_t a, int32x4_t lv, int32x4_t mv,
                                                                         int32x4_t rv, const int shifted)
{
    const int32x4_t h = vqrdmulhq_s32(shifted ? vshlq_s32(a, lv) : a, mv);
    return vrshlq_s32(vqaddq_s32(h, vshrq_n_s32(vandq_s32(h, rv), 31)), rv);
}

/* mt_s8_requant_block's loop (shifted, all: some lane's left shift is not 0, every lane is
 * stored; constants where it is inlined) */
static inline __attribute__((always_inline)) void mt_s8_requant_lanes(const int32_t *acc, uint32_t n, int32x4_t mv,
                                                                       int32x4_t lv, int32x4_t rv, mt_q_params p,
                                                                       int8_t *y, size_t ys, mve_pred16_t lanes,
                                                                       const int shifted, const int all)
{
    const int32x4_t lo = vdupq_n_s32(p.act_min), hi = vdupq_n_s32(p.act_max);
    for (uint32_t j = 0; j < n; ++j, acc += 4, y += ys) {
        const int32x4_t rounded = mt_s8_scale_lanes(vld1q_s32(acc), lv, mv, rv, shifted);
        const int32x4_t v = vminq_s32(vmaxq_s32(vaddq_n_s32(rounded, p.y_zp), lo), hi);
        if (all) vstrbq_s32(y, v);
        else vstrbq_p_s32(y, v, lanes);
    }
}

/* y[j·ys + r] = the requantization of acc[4·j + r] (its bias included) for n pixels and R
 * channels, in Helium: a pixel's four channels are a vector's lanes, each with its own
 * multiplier and shifts, and its R bytes one VSTRB (predicated where R < 4). VQRDMULH is gemmlowp's
 * doubling high multiply exactly ((2·a·b + 2^31) >> 32, saturating only INT32_MIN², which a
 * multiplier >= 0 never meets); VRSHL by -e rounds ties up, so a negative value first loses 1
 * (the lanes with e > 0 only: x & -e has x's sign bit there, 0 where e = 0), which makes the
 * ties go away from zero as gemmlowp's rounding shift does (floor((h + 2^(e-1) - [h < 0]) / 2^e),
 * mt_q_scale). The loop: a load, eight of arithmetic, the store, the pointer's step and the loop
 * end for four outputs (four channels: no store predicate; no left shift: no VSHL), where the
 * scalar run takes fifteen for one; the constants are three gathers from q. */
static __attribute__((noinline, unused)) void mt_s8_requant_block(const int32_t *acc, uint32_t n, uint32_t R,
                                                                  const mt_q_requant q[4], mt_q_params p, int8_t *y,
                                                                  size_t ys)
{
    /* the four channels' constants, one gather each from q's array (20 bytes an entry) */
    const uint32x4_t at = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sizeof(mt_q_requant));
    const int32_t *base = (const int32_t *)(const void *)q;
    const int32x4_t mv = vldrwq_gather_offset_s32(base + offsetof(mt_q_requant, multiplier) / 4, at);
    const int32x4_t lv = vldrwq_gather_offset_s32(base + offsetof(mt_q_requant, left) / 4, at);
    const int32x4_t rv = vnegq_s32(vldrwq_gather_offset_s32(base + offsetof(mt_q_requant, right) / 4, at));
    /* the common runs: four channels (no store predicate), no left shift (no VSHL): the
     * loop's fifteen instructions for four outputs become twelve */
    const int shifted = vmaxvq_u32(0u, vreinterpretq_u32_s32(lv)) != 0u;
    const mve_pred16_t lanes = vctp32q(R);
    if (R == 4 && !shifted) mt_s8_requant_lanes(acc, n, mv, lv, rv, p, y, ys, lanes, 0, 1);
    else if (R == 4) mt_s8_requant_lanes(acc, n, mv, lv, rv, p, y, ys, lanes, 1, 1);
    else mt_s8_requant_lanes(acc, n, mv, lv, rv, p, y, ys, lanes, 1, 0);
}
#else
/* y[j·ys] for n pixels of one channel from their sums a[4·j], the bias included: form is
 * mt_q_right_form(c) and full is [lo, hi] = [-128, 127] (the common activation range: none or
 * a ReLU/ReLU6 whose zero is -128), both constants where the block below calls this, so the
 * loop tests neither per output */
static inline __attribute__((always_inline)) void mt_s8_requant_run(const int32_t *a, uint32_t n, mt_q_requant c,
                                                                    mt_q_params p, int8_t *y, size_t ys,
                                                                    const int form, const int full)
{
    for (uint32_t j = 0; j < n; ++j, a += 4, y += ys) {
        const int32_t v = mt_q_scale_known(*a, c, form) + p.y_zp;
        *y = (int8_t)(full ? mt_s8_saturate(v) : mt_q_clamp(v, p.act_min, p.act_max));
    }
}

/* y[j·ys + r] = the requantization of acc[4·j + r] (its bias included) for n pixels and R
 * channels: a channel at a time, its constants in registers over the pixels (four channels'
 * did not fit: each output reloaded them). Not inlined, for the registers. */
static __attribute__((noinline, unused)) void mt_s8_requant_block(const int32_t *acc, uint32_t n, uint32_t R,
                                                                  const mt_q_requant q[4], mt_q_params p, int8_t *y,
                                                                  size_t ys)
{
#if MT_X86_KERNELS
    if (mt_x86_vector()) { /* the CPU has AVX2 (ops/x86/s8_avx2.c) */
        mt_s8_requant_block_avx2(acc, n, R, q, p, y, ys);
        return;
    }
#endif
    const int full = p.act_min == -128 && p.act_max == 127;
#if MT_S8_DSP
    uint32_t left = (1u << R) - 1u; /* the channels the loop below takes */
    if (full) { /* 2 <= e <= 24, the common form, in assembly (ops/dsp/s8_requant_dsp.h): short
                 * runs of four channels a pixel at a time, the rest a channel at a time */
        const mt_s8_requant4 run = {acc, y, (uint32_t)ys, n, R, q, p.y_zp};
        if (R == 4u && n < MT_S8_REQUANT_PIXELS_MAX && mt_s8_requant_pixels_run(&run) == 0u) return;
        left = mt_s8_requant4_run(&run);
        if (left == 0u) return;
    }
#endif
    for (uint32_t r = 0; r < R; ++r) {
#if MT_S8_DSP
        if (!(left >> r & 1u)) continue;
#endif
        const int form = mt_q_right_form(q[r]);
        if (form == MT_Q_RIGHT_TWO) {
            if (full) mt_s8_requant_run(acc + r, n, q[r], p, y + r, ys, MT_Q_RIGHT_TWO, 1);
            else mt_s8_requant_run(acc + r, n, q[r], p, y + r, ys, MT_Q_RIGHT_TWO, 0);
        } else if (form == MT_Q_RIGHT_ZERO) {
            if (full) mt_s8_requant_run(acc + r, n, q[r], p, y + r, ys, MT_Q_RIGHT_ZERO, 1);
            else mt_s8_requant_run(acc + r, n, q[r], p, y + r, ys, MT_Q_RIGHT_ZERO, 0);
        } else {
            mt_s8_requant_run(acc + r, n, q[r], p, y + r, ys, MT_Q_RIGHT_ONE, 0);
        }
    }
}
#endif

/* y[j·ys] for n pixels of one unit from their sums a[4·j], the bias included (+ zy wraps, as
 * LiteRT's int32 add): wide is c.wide (E >= 1), full the clamp [-128, 127], both constants
 * where mt_s8_fc_requant_block calls this */
static inline __attribute__((always_inline)) void mt_s8_fc_requant_run(const int32_t *a, uint32_t n, mt_q_fc c,
                                                                       mt_q_params p, int8_t *y, size_t ys,
                                                                       const int wide, const int full)
{
    for (uint32_t j = 0; j < n; ++j, a += 4, y += ys) {
        const int32_t scaled = wide ? mt_q_fc_scale_wide(*a, c) : mt_q_fc_scale_narrow(*a, c);
        const int32_t v = (int32_t)((uint32_t)scaled + (uint32_t)p.y_zp);
        *y = (int8_t)(full ? mt_s8_saturate(v) : mt_q_clamp(v, p.act_min, p.act_max));
    }
}

/* FullyConnected's requantization of a run (DENSE_S8: mt_q_fc_scale, LiteRT's reference
 * FullyConnected's double scaling): y[j·ys + r] for n pixels and R units from their sums
 * acc[4·j + r] (bias included), a unit at a time with its constants in registers. Scalar code
 * on every target, where Conv2D's gemmlowp rounding has Helium and AVX2 lanes: the 32 x 64-bit
 * products have none here, and an output's requantization is small beside the D MACs of its
 * sum. */
static __attribute__((noinline, unused)) void mt_s8_fc_requant_block(const int32_t *acc, uint32_t n, uint32_t R,
                                                                     const mt_q_fc q[4], mt_q_params p, int8_t *y,
                                                                     size_t ys)
{
    const int full = p.act_min == -128 && p.act_max == 127;
    for (uint32_t r = 0; r < R; ++r) {
        if (q[r].wide) mt_s8_fc_requant_run(acc + r, n, q[r], p, y + r, ys, 1, 0);
        else if (full) mt_s8_fc_requant_run(acc + r, n, q[r], p, y + r, ys, 0, 1);
        else mt_s8_fc_requant_run(acc + r, n, q[r], p, y + r, ys, 0, 0);
    }
}

/* The requantization of a run of mt_s8_dense_rows: FullyConnected's (fc) or Conv2D's */
static inline __attribute__((always_inline)) void mt_s8_rows_requant(const int32_t *acc, uint32_t n, uint32_t R,
                                                                     const mt_q_requant q[4], const mt_q_fc f[4],
                                                                     mt_q_params p, int8_t *y, size_t ys, const int fc)
{
    if (fc) mt_s8_fc_requant_block(acc, n, R, f, p, y, ys);
    else mt_s8_requant_block(acc, n, R, q, p, y, ys);
}

#endif /* MT_OPS_PORTABLE_S8_REQUANT_H */
