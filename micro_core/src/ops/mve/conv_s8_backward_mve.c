/*
 * Helium sibling of the int8 pointwise Conv2D's input gradient (ops/conv_s8.c, kernels.def's
 * conv2d_s8_pointwise_dx); ops/mve/mve.h says how a Helium kernel keeps the reference's bits:
 *
 *   dx[p,c] += Σ_oc dy[p,oc]·w[oc,c],   w[oc,c] = sw[oc]·W[oc,c] (one float multiply a use)
 *
 * The lanes run across 4 channels c (independent sums), a block 4 pixels: per output channel
 * oc, VLDRB.S32 widens W[oc, c..c+3], VCVT makes them floats (exact), one VMUL by sw[oc] gives
 * the 4 rounded weights w (the reference's product), and 4 VFMAs by the scalar dy[p, oc] add a
 * term to each pixel's sums: each sum still starts from +0 and takes its terms by ascending oc,
 * one fused multiply-add each, then is added to dx (a VADD). Where the block met a subnormal
 * (FPSCR's IDC or UFC: an input flushed, or a weight, sum or dx flushed as a result) or made a
 * NaN (the default NaN, where the scalar FPU keeps a payload), nothing is stored and the block
 * is redone in scalar code: the reference's own arithmetic. Channels past a multiple of 4 and
 * pixels past one of 4 run blocks of one pixel, or the scalar code.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/mve/mve_flags.h"
#include "ops/quant_grad.h"

/* the reference's sums of NP pixels by NC channels, in scalar code (the FPU keeps subnormals) */
static void dx_scalar(const float *dy, const int8_t *w, const float *w_scale, float *dx, uint32_t C, uint32_t OC,
                      uint32_t NP, uint32_t NC)
{
    for (uint32_t i = 0; i < NP; ++i)
        for (uint32_t j = 0; j < NC; ++j)
            dx[(size_t)i * C + j] += mt_q_dx_sum(dy + (size_t)i * OC, w + j, C, w_scale, OC);
}

/* NP (4 or 1) pixels by 4 channels in lanes; 0 (nothing stored) when the block flushed or made
 * a NaN */
static inline __attribute__((always_inline)) int dx_block(const float *dy, const int8_t *w, const float *w_scale,
                                                         float *dx, uint32_t C, uint32_t OC, uint32_t NP)
{
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    const float *d0 = dy, *d1 = dy + (NP > 1 ? OC : 0), *d2 = dy + (NP > 1 ? 2u * OC : 0),
                *d3 = dy + (NP > 1 ? 3u * OC : 0);
    mt_mve_flags_clear();
    const int8_t *wc = w;
    for (uint32_t oc = 0; oc < OC; ++oc, wc += C) {
        const float32x4_t wd = vmulq_n_f32(vcvtq_f32_s32(vldrbq_s32(wc)), w_scale[oc]);
        a0 = vfmaq_n_f32(a0, wd, d0[oc]);
        if (NP > 1) {
            a1 = vfmaq_n_f32(a1, wd, d1[oc]);
            a2 = vfmaq_n_f32(a2, wd, d2[oc]);
            a3 = vfmaq_n_f32(a3, wd, d3[oc]);
        }
    }
    a0 = vaddq_f32(vld1q_f32(dx), a0);
    if (NP > 1) {
        a1 = vaddq_f32(vld1q_f32(dx + C), a1);
        a2 = vaddq_f32(vld1q_f32(dx + 2u * C), a2);
        a3 = vaddq_f32(vld1q_f32(dx + 3u * C), a3);
    } else {
        a1 = a2 = a3 = a0;
    }
    if (mt_mve_flushed(a0, a1, a2, a3) || mt_mve_nan(a0, a1, a2, a3)) return 0;
    vst1q_f32(dx, a0);
    if (NP > 1) {
        vst1q_f32(dx + C, a1);
        vst1q_f32(dx + 2u * C, a2);
        vst1q_f32(dx + 3u * C, a3);
    }
    return 1;
}

/* pixels p .. p + NP over every channel */
static inline __attribute__((always_inline)) void dx_pixels(const float *dy, const int8_t *w, const float *w_scale,
                                                           float *dx, uint32_t C, uint32_t OC, uint32_t NP)
{
    uint32_t c = 0;
    for (; c + 4 <= C; c += 4)
        if (!dx_block(dy, w + c, w_scale, dx + c, C, OC, NP)) dx_scalar(dy, w + c, w_scale, dx + c, C, OC, NP, 4);
    if (c < C) dx_scalar(dy, w + c, w_scale, dx + c, C, OC, NP, C - c);
}

void mt_op_conv2d_s8_pointwise_dx_mve(const float *dy, const int8_t *w, const float *w_scale, float *dx, uint32_t P,
                                      uint32_t C, uint32_t OC)
{
    uint32_t p = 0;
    for (; p + 4 <= P; p += 4) dx_pixels(dy + (size_t)p * OC, w, w_scale, dx + (size_t)p * C, C, OC, 4);
    for (; p < P; ++p) dx_pixels(dy + (size_t)p * OC, w, w_scale, dx + (size_t)p * C, C, OC, 1);
}
#endif
