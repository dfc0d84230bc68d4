/*
 * Assembly loops of the Conv2D siblings (conv2d_portable.c) on Cortex-M cores with a single-precision
 * FPU (FPv4/FPv5: M4F, M7, M33, and the M55's scalar FPU: MT_VFP_SCALAR, dsp.h). Same
 * arithmetic as the C loops they replace: every term one VFMA (a·b + sum rounded once, the
 * reference's mt_fmaf, operands in its order), each sum in its own register in the reference's
 * order; what they save is instructions around the VFMAs (VLDM/VSTM of whole blocks, pointers
 * kept in registers across rows). The loop parameters travel in a small array
 * and are loaded into fixed registers inside (as in dot_dsp.h), so the compiler has none to spill.
 */
#ifndef MT_OPS_DSP_CONV2D_DSP_H
#define MT_OPS_DSP_CONV2D_DSP_H

#include "ops/dsp/dot_dsp.h"
#include "ops/dsp/dsp.h"
#include "ops/spatial.h"

#if MT_VFP_SCALAR
#define MT_VFP_CONV 1

#ifndef MT_VFP_FMA_4X4 /* dot_dsp.h's, where its guard leaves it out (the M55) */
#define MT_VFP_FMA_4X4                                                                          \
    "vfma.f32 s0, s24, s28\n\t"                                                                 \
    "vfma.f32 s1, s24, s29\n\t"                                                                 \
    "vfma.f32 s2, s24, s30\n\t"                                                                 \
    "vfma.f32 s3, s24, s31\n\t"                                                                 \
    "vfma.f32 s4, s25, s28\n\t"                                                                 \
    "vfma.f32 s5, s25, s29\n\t"                                                                 \
    "vfma.f32 s6, s25, s30\n\t"                                                                 \
    "vfma.f32 s7, s25, s31\n\t"                                                                 \
    "vfma.f32 s8, s26, s28\n\t"                                                                 \
    "vfma.f32 s9, s26, s29\n\t"                                                                 \
    "vfma.f32 s10, s26, s30\n\t"                                                                \
    "vfma.f32 s11, s26, s31\n\t"                                                                \
    "vfma.f32 s12, s27, s28\n\t"                                                                \
    "vfma.f32 s13, s27, s29\n\t"                                                                \
    "vfma.f32 s14, s27, s30\n\t"                                                                \
    "vfma.f32 s15, s27, s31\n\t"
#endif

/* One lane of the ReLU derivative: dy(d) = y(v) > 0 ? dy : +0 (NaN: 0), then acc(a) += dy */
#define MT_VFP_RELU_LANE(v, d, a)                                                               \
    "vcmp.f32 s" #v ", #0\n\t"                                                                  \
    "vmrs APSR_nzcv, fpscr\n\t"                                                                 \
    "it le\n\t"                                                                                 \
    "vmovle.f32 s" #d ", s24\n\t"                                                               \
    "vadd.f32 s" #a ", s" #a ", s" #d "\n\t"

/* P >= 1 rows of 8 channels, row stride `stride` bytes: dy = dy · [y > 0] in place (ReLU's
 * derivative, as mt_fused_activation_backward: NaN and 0 give +0), and sum[j] += dy[p, j] in
 * ascending p (the bias gradient's sums, in mt_op_bias_f32_backward_ref's order) */
static inline void mt_vfp_relu_mask_sum8(const float *y, float *dy, uint32_t stride, uint32_t P, float *sum)
{
    __asm volatile(
        "vldmia %[sum], {s16-s23}\n\t"
        "vmov s24, %[zero]\n"
        "1:\n\t"
        "vldmia %[y], {s0-s7}\n\t"
        "vldmia %[dy], {s8-s15}\n\t"
        "add %[y], %[st]\n\t"
        MT_VFP_RELU_LANE(0, 8, 16) MT_VFP_RELU_LANE(1, 9, 17) MT_VFP_RELU_LANE(2, 10, 18)
        MT_VFP_RELU_LANE(3, 11, 19) MT_VFP_RELU_LANE(4, 12, 20) MT_VFP_RELU_LANE(5, 13, 21)
        MT_VFP_RELU_LANE(6, 14, 22) MT_VFP_RELU_LANE(7, 15, 23)
        "vstmia %[dy], {s8-s15}\n\t"
        "add %[dy], %[st]\n\t"
        "subs %[n], #1\n\t"
        "bne 1b\n\t"
        "vstmia %[sum], {s16-s23}\n"
        : [y] "+r"(y), [dy] "+r"(dy), [n] "+r"(P)
        : [sum] "r"(sum), [st] "r"(stride), [zero] "r"(0)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
          "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "cc", "memory");
}

/*
 * Weight-gradient sums over a rectangle of outputs: rows >= 1 rows of n >= 1 outputs; per
 * output, g (dy) and m (x) step by gstep / mstep bytes, and past each row by grow / mrow more.
 * p = {g, m, gstep, mstep, n, rows, grow, mrow}. Each term c = fma(g, m, c) (VFMA):
 *   rows8x1: c[j] += g[j]·m[0], j < 8 (8 output channels, one channel of x)
 *   rows4x4: c[4·i + j] += g[i]·m[j], i, j < 4 (4 output channels x 4 channels)
 */
#define MT_VFP_ROWS_LOOP(load, mac, nacc)                                                       \
    __asm volatile("ldm %[p], {r4, r5, r6, r8, r10, r11, r12, lr}\n\t"                         \
                   "vldmia %[c], {s0-s" #nacc "}\n"                                             \
                   "1:\n\t"                                                                    \
                   "mov %[k], r10\n"                                                            \
                   "2:\n\t" load "add r4, r6\n\t"                                              \
                   "add r5, r8\n\t" mac "subs %[k], #1\n\t"                                    \
                   "bne 2b\n\t"                                                                 \
                   "add r4, r12\n\t"                                                            \
                   "add r5, lr\n\t"                                                             \
                   "subs r11, #1\n\t"                                                           \
                   "bne 1b\n\t"                                                                 \
                   "vstmia %[c], {s0-s" #nacc "}\n"                                             \
                   : [k] "=&r"(k)                                                               \
                   : [p] "r"(p), [c] "r"(c)                                                     \
                   : "r4", "r5", "r6", "r8", "r10", "r11", "r12", "lr", "s0", "s1", "s2", "s3", "s4", \
                     "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",   \
                     "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc", "memory")

static inline void mt_vfp_rows8x1(const uint32_t *p, float *c)
{
    uint32_t k;
    MT_VFP_ROWS_LOOP("vldmia r4, {s8-s15}\n\t"
                     "vldr s16, [r5]\n\t",
                     "vfma.f32 s0, s8, s16\n\t"
                     "vfma.f32 s1, s9, s16\n\t"
                     "vfma.f32 s2, s10, s16\n\t"
                     "vfma.f32 s3, s11, s16\n\t"
                     "vfma.f32 s4, s12, s16\n\t"
                     "vfma.f32 s5, s13, s16\n\t"
                     "vfma.f32 s6, s14, s16\n\t"
                     "vfma.f32 s7, s15, s16\n\t",
                     7);
}

static inline void mt_vfp_rows4x4(const uint32_t *p, float *c)
{
    uint32_t k;
    MT_VFP_ROWS_LOOP("vldmia r4, {s24-s27}\n\t"
                     "vldmia r5, {s28-s31}\n\t",
                     MT_VFP_FMA_4X4, 15);
}

/*
 * Forward of a 3 x 3 kernel over one channel (C == 1): a run of n >= 1 output pixels whose
 * in-bounds taps are the same nr x nc rectangle (nr, nc in {2, 3}); the x taps of a pixel sit in
 * s0-s8 (tap (r, c) in s(3r + c)), and per output channel one VLDM brings that channel's taps
 * into s9-s17 and one VFMA each adds them to its sum, from +0 in (kh, kw) order; 4 output
 * channels at a time, then + bias (-0 without one: y + -0 is y for every y, -0 included; a
 * sum of fused terms can be -0, where a term underflows) and the ReLU, stored. The ReLU on
 * the bits: y < 0 ? +0 : y (NaN and -0 pass) is +0 for the signed bit patterns from
 * 0x80000001 to 0xFF800000 (-inf), exactly those for which qsub(y - (k >> 31), k) with
 * k = 0xFF800000 is negative (y - 1 wraps -0 to 0x7FFFFFFF; y - 1 + 2^23, saturated, is below
 * 0 for y - 1 from 0x80000000 to 0xFF7FFFFF); BIC clears y by that sign. Without the ReLU k
 * is 0x80000000: y - 1 + 2^31, saturated, is never below 0 and nothing is cleared
 * (both checked for every pattern; a QADD alone cannot spare -0, as it sits next to -2^-149).
 * p = {x (first tap of pixel 0), x row bytes, w (first tap of channel 0), bias (or -0s, step
 * 0), y, n (counted down to 0), x step bytes, OC / 4, bias step bytes, +0s (the sums' start),
 * unused, k}.
 */
#if defined(__ARM_FEATURE_DSP)
#define MT_VFP_CONV_C1 1
#define MT_VFP_C1_RELU2(a, b)                                                                   \
    "vmov %[t0], %[t1], s" #a ", s" #b "\n\t"                                                   \
    "sub %[t2], %[t0], r11, lsr #31\n\t"                                                        \
    "qsub %[t2], %[t2], r11\n\t"                                                                \
    "bic %[t0], %[t0], %[t2], asr #31\n\t"                                                      \
    "sub %[t2], %[t1], r11, lsr #31\n\t"                                                        \
    "qsub %[t2], %[t2], r11\n\t"                                                                \
    "bic %[t1], %[t1], %[t2], asr #31\n\t"                                                      \
    "strd %[t0], %[t1], [r10], #8\n\t"
#define MT_VFP_C1_ASM(xload, body)                                                              \
    __asm volatile("ldr r10, [%[p], #16]\n\t"                                                   \
                   "ldr r11, [%[p], #44]\n\t"                                                   \
                   "ldr r4, [%[p]]\n"                                                           \
                   "1:\n\t"                                                                     \
                   "ldr r5, [%[p], #4]\n\t" xload "ldrd r6, r8, [%[p], #8]\n\t"                 \
                   "ldr r12, [%[p], #28]\n\t"                                                   \
                   "ldr r5, [%[p], #36]\n"                                                      \
                   "2:\n\t"                                                                     \
                   "vldmia r5, {s18-s21}\n\t" body(18) body(19) body(20) body(21)               \
                   "vldmia r8, {s22-s25}\n\t"                                                   \
                   "ldr lr, [%[p], #32]\n\t"                                                    \
                   "add r8, lr\n\t"                                                             \
                   "vadd.f32 s18, s18, s22\n\t"                                                 \
                   "vadd.f32 s19, s19, s23\n\t"                                                 \
                   "vadd.f32 s20, s20, s24\n\t"                                                 \
                   "vadd.f32 s21, s21, s25\n\t" MT_VFP_C1_RELU2(18, 19) MT_VFP_C1_RELU2(20, 21)   \
                   "subs r12, #1\n\t"                                                           \
                   "bne 2b\n\t"                                                                 \
                   "ldr lr, [%[p], #24]\n\t"                                                    \
                   "add r4, lr\n\t"                                                             \
                   "ldr lr, [%[p], #20]\n\t"                                                    \
                   "subs lr, #1\n\t"                                                            \
                   "str lr, [%[p], #20]\n\t"                                                    \
                   "bne 1b\n"                                                                   \
                   : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2)                             \
                   : [p] "r"(p)                                                                 \
                   : "r4", "r5", "r6", "r8", "r10", "r11", "r12", "lr", "s0", "s1", "s2", "s3", "s4",  \
                     "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",   \
                     "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "cc", "memory")

/* x rows 0, 1 (taps to s0-s(a), s3-s(b)), and row 2 (to s6-s(c)) */
#define MT_VFP_X2(a, b) "vldmia r4, {s0-s" #a "}\n\tadd lr, r4, r5\n\tvldmia lr, {s3-s" #b "}\n\t"
#define MT_VFP_X3(a, b, c) MT_VFP_X2(a, b) "add lr, r5\n\tvldmia lr, {s6-s" #c "}\n\t"
#define MT_VFP_TAP(a, x, w) "vfma.f32 s" #a ", s" #x ", s" #w "\n\t"
#define MT_VFP_C1_33(a)                                                                         \
    "vldmia r6!, {s9-s17}\n\t" MT_VFP_TAP(a, 0, 9) MT_VFP_TAP(a, 1, 10) MT_VFP_TAP(a, 2, 11)    \
        MT_VFP_TAP(a, 3, 12) MT_VFP_TAP(a, 4, 13) MT_VFP_TAP(a, 5, 14) MT_VFP_TAP(a, 6, 15)     \
            MT_VFP_TAP(a, 7, 16) MT_VFP_TAP(a, 8, 17)
#define MT_VFP_C1_32(a)                                                                         \
    "vldmia r6, {s9-s16}\n\tadd r6, #36\n\t" MT_VFP_TAP(a, 0, 9) MT_VFP_TAP(a, 1, 10)           \
        MT_VFP_TAP(a, 3, 12) MT_VFP_TAP(a, 4, 13) MT_VFP_TAP(a, 6, 15) MT_VFP_TAP(a, 7, 16)
#define MT_VFP_C1_23(a)                                                                         \
    "vldmia r6, {s9-s14}\n\tadd r6, #36\n\t" MT_VFP_TAP(a, 0, 9) MT_VFP_TAP(a, 1, 10)           \
        MT_VFP_TAP(a, 2, 11) MT_VFP_TAP(a, 3, 12) MT_VFP_TAP(a, 4, 13) MT_VFP_TAP(a, 5, 14)
#define MT_VFP_C1_22(a)                                                                         \
    "vldmia r6, {s9-s13}\n\tadd r6, #36\n\t" MT_VFP_TAP(a, 0, 9) MT_VFP_TAP(a, 1, 10)           \
        MT_VFP_TAP(a, 3, 12) MT_VFP_TAP(a, 4, 13)

/* rows, cols: the rectangle nr x nc (2 or 3 each). Out of line: its one call site inlined,
 * the forward around it would lose the registers its loops keep. */
__attribute__((noinline, unused)) static void mt_vfp_conv3x3c1(uint32_t *p, uint32_t rows, uint32_t cols)
{
    uint32_t t0, t1, t2;
    if (rows == 3 && cols == 3)
        MT_VFP_C1_ASM(MT_VFP_X3(2, 5, 8), MT_VFP_C1_33);
    else if (rows == 3)
        MT_VFP_C1_ASM(MT_VFP_X3(1, 4, 7), MT_VFP_C1_32);
    else if (cols == 3)
        MT_VFP_C1_ASM(MT_VFP_X2(2, 5), MT_VFP_C1_23);
    else
        MT_VFP_C1_ASM(MT_VFP_X2(1, 4), MT_VFP_C1_22);
}

/* Conv2D's forward for one channel, 3 x 3, OC a multiple of 4, no ReLU6, every pixel with 2 or
 * 3 rows and columns of taps in bounds: in assembly with the bias and the ReLU
 * (mt_vfp_conv3x3c1), 1 when done, else 0 and nothing written. The columns split into runs of
 * pixels with the same in-bounds columns, found once. Inlined into the portable forward; the
 * M55's Helium and portable forwards call it through mt_conv2d_c1_forward_dsp (conv2d_dsp.c),
 * which keeps one copy of mt_vfp_conv3x3c1 in its firmware. */
static inline __attribute__((always_inline)) int mt_vfp_conv2d_c1_forward(const float *x, const float *w,
                                                                          const float *bias, float *y, uint32_t B,
                                                                          const mt_spatial *g)
{
    static const float zeros[4], minus_zeros[4] = {-0.0f, -0.0f, -0.0f, -0.0f};
    uint32_t runs[8][3], nruns = 0, kw0, kw1, kh0, kh1; /* first pixel, end, kw0 | columns << 2 */
    if (g->C != 1 || g->KH != 3 || g->KW != 3 || g->OC % 4 || g->activation == MT_FUSED_RELU6) return 0;
    for (uint32_t ow = 0; ow < g->OW; ++ow) {
        mt_spatial_tap_range(ow, g->SW, g->PL, 3, g->W, &kw0, &kw1);
        if (kw1 - kw0 < 2) return 0;
        const uint32_t code = kw0 | (kw1 - kw0) << 2;
        if (nruns && runs[nruns - 1][2] == code) { /* the same columns: one more pixel of the run */
            runs[nruns - 1][1] = ow + 1;
            continue;
        }
        if (nruns == 8) return 0;
        runs[nruns][0] = ow, runs[nruns][1] = ow + 1, runs[nruns][2] = code, ++nruns;
    }
    for (uint32_t oh = 0; oh < g->OH; ++oh) {
        mt_spatial_tap_range(oh, g->SH, g->PT, 3, g->H, &kh0, &kh1);
        if (kh1 - kh0 < 2) return 0;
    }
    const uint32_t OC = g->OC;
    uint32_t p[12] = {0, 4u * g->W, 0, (uint32_t)(uintptr_t)(bias ? bias : minus_zeros), 0, 0, 4u * g->SW, OC / 4,
                      bias ? 16u : 0u, (uint32_t)(uintptr_t)zeros, 0u,
                      g->activation == MT_FUSED_RELU ? 0xFF800000u : 0x80000000u}; /* conv2d_dsp.h's k */
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh) {
            mt_spatial_tap_range(oh, g->SH, g->PT, 3, g->H, &kh0, &kh1);
            const float *xr = x + ((size_t)b * g->H + oh * g->SH + kh0 - g->PT) * g->W;
            float *yr = y + ((size_t)b * g->OH + oh) * g->OW * OC;
            for (uint32_t r = 0; r < nruns; ++r) {
                const uint32_t ow = runs[r][0], c0 = runs[r][2] & 3u;
                p[0] = (uint32_t)(uintptr_t)(xr + ow * g->SW + c0 - g->PL);
                p[2] = (uint32_t)(uintptr_t)(w + kh0 * 3u + c0);
                p[4] = (uint32_t)(uintptr_t)(yr + (size_t)ow * OC);
                p[5] = runs[r][1] - ow;
                mt_vfp_conv3x3c1(p, kh1 - kh0, runs[r][2] >> 2);
            }
        }
    return 1;
}

/* mt_vfp_conv2d_c1_forward, out of line, for the M55 (ops/mve/conv2d_mve.c, conv2d_portable.c) */
int mt_conv2d_c1_forward_dsp(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                             const mt_spatial *g);
#else
#define MT_VFP_CONV_C1 0
#endif

#else
#define MT_VFP_CONV 0
#define MT_VFP_CONV_C1 0
#endif

#endif /* MT_OPS_DSP_CONV2D_DSP_H */
