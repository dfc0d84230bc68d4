/*
 * Helium siblings of the Conv2D kernels (ops/conv2d.c); ops/mve/mve.h says how they keep the
 * reference's bits. As in ops/portable/conv2d_portable.c, an output's in-bounds taps of one kernel
 * row are a contiguous run (kw, c) in the input row and in W's row (oc, kh), found once per
 * output (mt_spatial_tap_range); here four output channels share a vector (one gather reads
 * W[oc..oc+3, kh, kw, c]) and four output pixels of a row share each gather. One input channel
 * with a kernel 3 wide at stride 1 has its own loop (forward_c1: x taps broadcast from
 * general-purpose registers, a row's blocks in every image one naked function,
 * conv2d_c1_rows_mve.h); other one-channel 3 x 3 layers run the scalar FPU's assembly
 * (conv2d_dsp.h), which beats the gathers there.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/mve/conv2d_c1_rows_mve.h"
#include "ops/mve/mve_flags.h"
#include "ops/dsp/conv2d_dsp.h"
#include "ops/ops.h"
#include "ops/spatial.h"

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

/* C == 1, KW == 3, SW == 1: 1 on a NaN (the caller recomputes y). Rows outside: their taps
 * are the same in every image, and each run of whole blocks in a row is one call of
 * mt_mve_c1_rows_run over the batch; the pixels left over take c1_pixel. */
static int forward_c1(const float *x, const float *w, const float *bias, float *y, uint32_t B, const mt_spatial *g)
{
    const uint32_t OC = g->OC, W = g->W, K = g->KH * 3u;
    mt_mve_c1_rows r = {0};
    r.act = g->activation, r.ystep = OC * 4u, r.wstep = 16u * K, r.bias = bias, r.OC = OC, r.images = B;
    r.ximage = g->H * W * 4u, r.yimage = g->OH * g->OW * OC * 4u, r.xstep = W * 4u;
    for (uint32_t lane = 0; lane < 4; ++lane) {
        r.wofs[lane] = lane * K * 4u - 4u; /* modulo 2^32: lane 0 is W's address - 4 */
        r.tail_offs[lane] = lane < OC % 4u ? r.wofs[lane] : r.wofs[0];
    }
    const uint32x4_t wofs = vmulq_n_u32(vidupq_n_u32(0u, 1), K * 4u); /* c1_pixel's: bytes to oc + lane */
    for (uint32_t oh = 0; oh < g->OH; ++oh) {
        uint32_t kh0, kh1;
        mt_spatial_tap_range(oh, g->SH, g->PT, g->KH, g->H, &kh0, &kh1);
        if (kh1 <= kh0) { /* every tap in the padding: the bias */
            for (uint32_t b = 0; b < B; ++b) {
                float *yr = y + ((size_t)b * g->OH + oh) * g->OW * OC;
                for (uint32_t i = 0; i < g->OW * OC; ++i) yr[i] = bias ? 0.0f + bias[i % OC] : 0.0f;
                mt_fused_activation_forward(g->activation, yr, (size_t)g->OW * OC);
            }
            continue;
        }
        const float *xr = x + ((size_t)oh * g->SH + kh0 - g->PT) * W; /* image 0's first kernel row */
        r.rows = kh1 - kh0, r.w = w + kh0 * 3u;
        for (uint32_t ow = 0; ow < g->OW;) {
            const int32_t s = (int32_t)ow - (int32_t)g->PL;
            float *yp = y + ((size_t)oh * g->OW + ow) * OC;
            const uint32_t n = mt_mve_block_run(ow, g->PL, W, g->OW, &r.edges);
            if (n) {
                r.blocks = n, r.y = yp, r.x = mt_mve_block_tap0(xr, ow, g->PL, 1);
                if (mt_mve_c1_rows_run(&r)) return 1;
                ow += 4 * n;
            } else {
                for (uint32_t b = 0; b < B; ++b)
                    if (c1_pixel(xr + (size_t)b * g->H * W, w, bias, yp + (size_t)b * g->OH * g->OW * OC, g, kh0, kh1,
                                 s, wofs))
                        return 1;
                ow += 1;
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
            mt_op_conv2d_f32_forward_portable(x, w, bias, y, B, g);
        return;
    }
#if MT_VFP_CONV_C1
    /* one input channel, 3 x 3, other strides: the scalar FPU's assembly, fewer instructions
     * per MAC than four lanes of taps gathered one at a time */
    if (mt_conv2d_c1_forward_dsp(x, w, bias, y, B, g)) return;
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
                        mt_op_conv2d_f32_forward_portable(x, w, bias, y, B, g);
                        return;
                    }
                }
                ow += pixels;
            }
        }
    const float32x4_t none = vdupq_n_f32(0.0f); /* every result is stored: the clobber orders them */
    if (mt_mve_flushed(none, none, none, none)) mt_op_conv2d_f32_forward_portable(x, w, bias, y, B, g);
}

#else
typedef int mt_conv2d_mve_unused; /* ISO C: a translation unit is not empty */
#endif
