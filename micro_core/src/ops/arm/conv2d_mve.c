/*
 * Helium siblings of the Conv2D kernels (ops/conv2d.c); ops/arm/mve.h says how they keep the
 * reference's bits. As in ops/fast/conv2d_fast.c, an output's in-bounds taps of one kernel
 * row are a contiguous run (kw, c) in the input row and in W's row (oc, kh), found once per
 * output (mt_spatial_tap_range); here four output channels share a vector (one gather reads
 * W[oc..oc+3, kh, kw, c]) and four output pixels of a row share each gather. One input channel
 * with a kernel 3 wide at stride 1 has its own loop (forward_c1: x taps broadcast from
 * general-purpose registers); other one-channel 3 x 3 layers run the scalar FPU's assembly
 * (vfp_conv.h), which beats the gathers there.
 */
#include "ops/arm/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/arm/mve.h: no auto-vectorized float code */
#include "ops/arm/mve_flags.h"
#include "ops/fast/fast.h"
#include "ops/fast/vfp_conv.h"
#include "ops/ops.h"
#include "ops/spatial.h"

/*
 * One input channel, a kernel 3 wide, stride 1 along W (the first layer of an image model):
 * lanes across four output channels, the four W values of a tap one gather (vector base, the
 * tap an immediate offset), each x tap a general-purpose register that VFMA broadcasts to the
 * lanes. Four output pixels of a row side by side read six x values of a kernel row, one LDM:
 * per kernel row 1 LDM, 3 gathers, 12 VFMA and 3 instructions of the loop: 19 for 48 MACs,
 * every sum in the reference's (kh, kw) order, each term fused (mt_fma.h). L: pixel 0 lacks
 * tap kw = 0 (the left padding), R: pixel 3 lacks kw = 2 (the right); those terms are left out
 * and their x never loaded. xp: x of pixel 0's first loaded tap (kw = L).
 */
#define C1_TERM(r, a) "vfma.f32 %q[" a "], q6, " r "\n\t"
/* the block's sums over `rows` >= 1 kernel rows (x rows xstep bytes apart, W's 12 bytes), plus
 * bv; returns VPR.P0 of the NaN test (0xffff: no NaN) */
static inline __attribute__((always_inline)) uint32_t c1_rows3(const float *xp, uint32x4_t wa, uint32_t rows,
                                                               uint32_t xstep, float32x4_t bv, float32x4_t *a0,
                                                               float32x4_t *a1, float32x4_t *a2, float32x4_t *a3,
                                                               const int L, const int R)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    uint32_t ok;
    __asm volatile("dls lr, %[n]\n\t"
                   "movs r12, #12\n"
                   "1:\n\t"
                   ".if %c[L]\n\t"
                   ".if %c[R]\n\tldm %[xp], {r5, r6, r8, r10}\n\t.else\n\tldm %[xp], {r5, r6, r8, r10, r11}\n\t.endif\n\t"
                   ".else\n\t"
                   ".if %c[R]\n\tldm %[xp], {r4, r5, r6, r8, r10}\n\t.else\n\tldm %[xp], {r4, r5, r6, r8, r10, r11}\n\t.endif\n\t"
                   ".endif\n\t"
                   "vldrw.u32 q6, [%q[wa], #0]\n\t"
                   ".if !%c[L]\n\t" C1_TERM("r4", "s0") ".endif\n\t"
                   C1_TERM("r5", "s1") C1_TERM("r6", "s2") C1_TERM("r8", "s3")
                   "vldrw.u32 q6, [%q[wa], #4]\n\t"
                   C1_TERM("r5", "s0") C1_TERM("r6", "s1") C1_TERM("r8", "s2") C1_TERM("r10", "s3")
                   "vldrw.u32 q6, [%q[wa], #8]\n\t"
                   C1_TERM("r6", "s0") C1_TERM("r8", "s1") C1_TERM("r10", "s2")
                   ".if !%c[R]\n\t" C1_TERM("r11", "s3") ".endif\n\t"
                   "vadd.i32 %q[wa], %q[wa], r12\n\t"
                   "add %[xp], %[xstep]\n\t"
                   "le lr, 1b\n\t"
                   "vadd.f32 %q[s0], %q[s0], %q[bv]\n\t"
                   "vadd.f32 %q[s1], %q[s1], %q[bv]\n\t"
                   "vadd.f32 %q[s2], %q[s2], %q[bv]\n\t"
                   "vadd.f32 %q[s3], %q[s3], %q[bv]\n\t"
                   "vcmp.f32 eq, %q[s0], %q[s0]\n\t"
                   "vpsttt\n\t"
                   "vcmpt.f32 eq, %q[s1], %q[s1]\n\t"
                   "vcmpt.f32 eq, %q[s2], %q[s2]\n\t"
                   "vcmpt.f32 eq, %q[s3], %q[s3]\n\t"
                   "vmrs %[ok], p0\n"
                   : [s0] "+w"(s0), [s1] "+w"(s1), [s2] "+w"(s2), [s3] "+w"(s3), [xp] "+r"(xp), [wa] "+w"(wa),
                     [ok] "=r"(ok)
                   : [n] "r"(rows), [xstep] "r"(xstep), [bv] "w"(bv), [L] "n"(L), [R] "n"(R)
                   : "r4", "r5", "r6", "r8", "r10", "r11", "r12", "lr", "q6", "p0", "memory");
    *a0 = s0, *a1 = s1, *a2 = s2, *a3 = s3;
    return ok;
}

/* y = act(a + bias) of four pixels, output channels oc.. (lanes p, all when tail is 0), at yp;
 * 1 when one is a NaN (checked before the activation: the reference's ReLU keeps a NaN, VMAXNM
 * would not). The activation is VMAXNM with +0 (and VMINNM with 6): the same as the
 * reference's v < 0 ? 0 : v (> 6 ? 6) for every other v, as a sum from +0 plus the bias is -0
 * only after a fused term underflowed, which sets UFC and sends the op to the portable kernel. */
static inline __attribute__((always_inline)) void c1_store4(float32x4_t a0, float32x4_t a1, float32x4_t a2,
                                                            float32x4_t a3, uint32_t act, float *yp, size_t OC,
                                                            int tail, mve_pred16_t p)
{
    if (act != MT_FUSED_NONE) {
        const float32x4_t zero = vdupq_n_f32(0.0f);
        a0 = vmaxnmq_f32(a0, zero), a1 = vmaxnmq_f32(a1, zero), a2 = vmaxnmq_f32(a2, zero), a3 = vmaxnmq_f32(a3, zero);
        if (act == MT_FUSED_RELU6) {
            const float32x4_t six = vdupq_n_f32(6.0f);
            a0 = vminnmq_f32(a0, six), a1 = vminnmq_f32(a1, six), a2 = vminnmq_f32(a2, six), a3 = vminnmq_f32(a3, six);
        }
    }
    if (tail) {
        vstrwq_p_f32(yp, a0, p), vstrwq_p_f32(yp + OC, a1, p), vstrwq_p_f32(yp + 2 * OC, a2, p);
        vstrwq_p_f32(yp + 3 * OC, a3, p);
    } else {
        vst1q_f32(yp, a0), vst1q_f32(yp + OC, a1), vst1q_f32(yp + 2 * OC, a2), vst1q_f32(yp + 3 * OC, a3);
    }
}

typedef struct c1_geometry { /* forward_c1's, by value: in memory, the asm's memory clobber made GCC reload it */
    uint32_t OC, K, W, act; /* output channels, W's floats per output channel (KH·3), input width, MT_FUSED_* */
} c1_geometry;

/* four pixels from x index s (pixel 0's tap kw = 0, s >= -1) of the kernel rows [kh0, kh1) from
 * xr (kh1 > kh0), every output channel; 1 on a NaN (lanes past OC hold oc's sums) */
static inline __attribute__((always_inline)) int c1_block(const float *xr, const float *w, const float *bias,
                                                          float *yp, const c1_geometry q, uint32_t kh0,
                                                          uint32_t kh1, int32_t s, uint32x4_t wofs, const int L,
                                                          const int R)
{
    const uint32_t OC = q.OC, K = q.K, W = q.W;
    for (uint32_t oc = 0; oc < OC; oc += 4) {
        const int tail = OC - oc < 4;
        const mve_pred16_t p = vctp32q(OC - oc);
        uint32x4_t wa = vaddq_n_u32(tail ? vpselq_u32(wofs, vdupq_n_u32(0u), p) : wofs,
                                    (uint32_t)(uintptr_t)(w + (size_t)oc * K + kh0 * 3u));
        float32x4_t a0, a1, a2, a3;
        const float32x4_t bv = !bias ? vdupq_n_f32(0.0f) : tail ? vldrwq_z_f32(bias + oc, p) : vld1q_f32(bias + oc);
        if (c1_rows3(xr + s + L, wa, kh1 - kh0, W * 4u, bv, &a0, &a1, &a2, &a3, L, R) != 0xffffu) return 1;
        c1_store4(a0, a1, a2, a3, q.act, yp + oc, OC, tail, p);
    }
    return 0;
}

/* one pixel whose taps are kw0..kw1 of the kernel rows [kh0, kh1), x index s of tap kw = 0 */
static int c1_pixel(const float *xr, const float *w, const float *bias, float *yp, const mt_spatial *g,
                    uint32_t kh0, uint32_t kh1, int32_t s, uint32x4_t wofs)
{
    const uint32_t OC = g->OC, K = g->KH * 3u, W = g->W;
    const uint32_t kw0 = s < 0 ? (uint32_t)-s : 0u, kw1 = (int32_t)W - s < 3 ? (uint32_t)((int32_t)W - s) : 3u;
    for (uint32_t oc = 0; oc < OC; oc += 4) {
        const mve_pred16_t p = vctp32q(OC - oc);
        const uint32x4_t offs = vpselq_u32(wofs, vdupq_n_u32(0u), p);
        float32x4_t a = vdupq_n_f32(0.0f);
        for (uint32_t kh = kh0; kh < kh1; ++kh)
            for (uint32_t kw = kw0; kw < kw1; ++kw) {
                const float32x4_t wv = vldrwq_gather_offset_f32(w + (size_t)oc * K + kh * 3u + kw, offs);
                a = vfmaq_n_f32(a, wv, xr[(size_t)(kh - kh0) * W + (uint32_t)(s + (int32_t)kw)]);
            }
        const float32x4_t v = mt_mve_finish(a, bias ? vldrwq_z_f32(bias + oc, p) : vdupq_n_f32(0.0f), g->activation);
        vstrwq_p_f32(yp + oc, v, p);
        if (mt_mve_nan1(v)) return 1;
    }
    return 0;
}

/* C == 1, KW == 3, SW == 1: 1 on a NaN (the caller recomputes y) */
static int forward_c1(const float *x, const float *w, const float *bias, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t OC = g->OC, W = g->W;
    const c1_geometry q = {OC, g->KH * 3u, W, g->activation};
    const uint32x4_t wofs = vmulq_n_u32(vidupq_n_u32(0u, 1), g->KH * 3u * 4u); /* bytes to oc + lane */
    for (uint32_t oh = 0; oh < g->OH; ++oh) { /* rows outside: their taps are the same in every image */
        uint32_t kh0, kh1;
        mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
        for (uint32_t b = 0; b < B; ++b) {
            float *yr = y + ((size_t)b * g->OH + oh) * g->OW * OC;
            if (kh1 <= kh0) { /* every tap in the padding: the bias */
                for (uint32_t i = 0; i < g->OW * OC; ++i) yr[i] = bias ? 0.0f + bias[i % OC] : 0.0f;
                mt_fused_activation_forward(g->activation, yr, (size_t)g->OW * OC);
                continue;
            }
            const float *xr = x + ((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * W;
            for (uint32_t ow = 0; ow < g->OW;) {
                const int32_t s = (int32_t)ow - (int32_t)g->PL;
                float *yp = yr + (size_t)ow * OC;
                int nan;
                if (ow + 4 <= g->OW && s >= -1 && s + 5 <= (int32_t)W) {
                    const int L = s < 0, R = s + 5 == (int32_t)W;
                    if (L && R) nan = c1_block(xr, w, bias, yp, q, kh0, kh1, s, wofs, 1, 1);
                    else if (L) nan = c1_block(xr, w, bias, yp, q, kh0, kh1, s, wofs, 1, 0);
                    else if (R) nan = c1_block(xr, w, bias, yp, q, kh0, kh1, s, wofs, 0, 1);
                    else nan = c1_block(xr, w, bias, yp, q, kh0, kh1, s, wofs, 0, 0);
                    ow += 4;
                } else {
                    nan = c1_pixel(xr, w, bias, yp, g, kh0, kh1, s, wofs);
                    ow += 1;
                }
                if (nan) return 1;
            }
        }
    }
    return 0;
}

/* y[p, oc] = act(Σ_{in-bounds kh,kw; c} x·W[oc,kh,kw,c] + b[oc]); a flushed subnormal, or a NaN
 * in a block's results (the activation keeps NaNs), sends the whole op to the portable kernel,
 * which overwrites y */
void mt_op_conv2d_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                  const mt_spatial *g)
{
    const uint32_t C = g->C, OC = g->OC, K = g->KH * g->KW * C;
    if (C == 1 && g->KW == 3 && g->SW == 1) {
        const float32x4_t none = vdupq_n_f32(0.0f);
        mt_mve_flags_clear();
        if (forward_c1(x, w, bias, y, B, g) || mt_mve_flushed(none, none, none, none))
            mt_op_conv2d_f32_forward_fast(x, w, bias, y, B, g);
        return;
    }
#if MT_VFP_CONV_C1
    /* one input channel, 3 x 3, other strides: the scalar FPU's assembly, fewer instructions
     * per MAC than four lanes of taps gathered one at a time */
    if (mt_op_conv2d_f32_forward_vfp_c1(x, w, bias, y, B, g)) return;
#endif
    const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0u, 1), K);
    const size_t xrow = (size_t)g->W * C, pix = (size_t)g->SW * C, wrow = (size_t)g->KW * C;
    mt_mve_flags_clear();
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            uint32_t kh0, kh1;
            mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
            for (uint32_t ow = 0; ow < g->OW;) {
                uint32_t kw0, kw1, last0, last1, pixels = 1;
                mt_spatial_tap_range(ow, g->SW, g->PL, g->KW, g->W, &kw0, &kw1);
                if (ow + 4 <= g->OW && kw0 == 0 && kw1 == g->KW) {
                    mt_spatial_tap_range(ow + 3, g->SW, g->PL, g->KW, g->W, &last0, &last1);
                    if (last0 == 0 && last1 == g->KW) pixels = 4;
                }
                float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * OC;
                const uint32_t run = kw1 > kw0 ? (kw1 - kw0) * C : 0;
                const float *xp = x + (((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W +
                                       (ow * g->SW + kw0 - g->PL)) * C;
                for (uint32_t oc = 0; oc < OC; oc += 4) {
                    const mve_pred16_t p = vctp32q(OC - oc);
                    const uint32x4_t offs = vpselq_u32(rows, vdupq_n_u32(0u), p); /* lanes past OC reread oc */
                    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
                    if (run)
                        for (uint32_t kh = kh0; kh < kh1; ++kh) {
                            const float *r0 = xp + (kh - kh0) * xrow;
                            const float *r1 = pixels == 4 ? r0 + pix : r0, *r2 = pixels == 4 ? r0 + 2 * pix : r0;
                            const float *r3 = pixels == 4 ? r0 + 3 * pix : r0;
                            mt_mve_dot4x4(r0, r1, r2, r3, w + (size_t)oc * K + kh * wrow + (size_t)kw0 * C, offs, run,
                                          &a0, &a1, &a2, &a3);
                        }
                    const float32x4_t bv = bias ? vldrwq_z_f32(bias + oc, p) : vdupq_n_f32(0.0f);
                    const float32x4_t v0 = mt_mve_finish(a0, bv, g->activation);
                    vstrwq_p_f32(yp + oc, v0, p);
                    int nan;
                    if (pixels == 4) {
                        const float32x4_t v1 = mt_mve_finish(a1, bv, g->activation), v2 = mt_mve_finish(a2, bv, g->activation);
                        const float32x4_t v3 = mt_mve_finish(a3, bv, g->activation);
                        vstrwq_p_f32(yp + OC + oc, v1, p);
                        vstrwq_p_f32(yp + 2 * (size_t)OC + oc, v2, p);
                        vstrwq_p_f32(yp + 3 * (size_t)OC + oc, v3, p);
                        nan = mt_mve_nan(v0, v1, v2, v3);
                    } else {
                        nan = mt_mve_nan1(v0);
                    }
                    if (nan) { /* lanes past OC reread oc: a NaN there is one of oc's */
                        mt_op_conv2d_f32_forward_fast(x, w, bias, y, B, g);
                        return;
                    }
                }
                ow += pixels;
            }
        }
    const float32x4_t none = vdupq_n_f32(0.0f); /* every result is stored: the clobber orders them */
    if (mt_mve_flushed(none, none, none, none)) mt_op_conv2d_f32_forward_fast(x, w, bias, y, B, g);
}

#else
typedef int mt_conv2d_mve_unused; /* ISO C: a translation unit is not empty */
#endif
