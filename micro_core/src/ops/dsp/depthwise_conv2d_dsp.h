/*
 * The DepthwiseConv2D siblings' inner loops over 8 channels side by side, in assembly on
 * Cortex-M cores with a single-precision FPU (FPv4/FPv5: M4F, M7, M33, and the M55's scalar
 * FPU: MT_VFP_SCALAR, dsp.h). NHWC keeps 8 channels of x, W and dy contiguous, so each
 * tap is two VLDMs and eight VFMAs (each its own channel's sum: s = fma(a, b, s), rounded
 * once, the reference's mt_fmaf), and the sums never leave s8-s15 between taps. Elsewhere
 * MT_VFP_DW is 0 and the sibling runs its C loop (the same arithmetic, any channel count).
 *
 * A run (mt_dw_run) is `lines` lines of `pixels` sums of 8 channels; each sum is
 *     s = (flags & MT_DW_LOAD ? *dst : +0) + Σ_{i < rows} Σ_{t < cols} a[i, t] · b[i, t]
 * with the terms in ascending (i, t), each s = fma(a[i, t], b[i, t], s), a[i, t] at
 * a + i·(cols·at + ar) + t·at bytes and b[i, t] likewise (br, bt); then s += bias (when not
 * NULL), s = s < 0 ? +0 : s (when MT_DW_RELU: -0 and NaN pass), and dst receives s. After
 * each pixel a, b and dst advance by ap, bp and dstep bytes, after each line a and dst by la
 * and ld more. rows, cols, pixels, lines >= 1.
 */
#ifndef MT_OPS_FAST_VFP_DEPTHWISE_H
#define MT_OPS_FAST_VFP_DEPTHWISE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/dsp/dsp.h"

#define MT_DW_LOAD 1u
#define MT_DW_RELU 2u

/* The offsets are the assembly's (32-bit pointers); steps are in bytes. */
typedef struct mt_dw_run {
    const float *a, *b;         /* 0, 4: pixel 0's first terms (advanced in place by the assembly) */
    int32_t at, bt, ar, br;     /* 8, 12, 16, 20: to the next term of a row; from a row's end to the next */
    uint32_t rows, cols;        /* 24, 28 */
    float *dst;                 /* 32 */
    int32_t ap, bp, dstep;      /* 36, 40, 44: per pixel */
    uint32_t pixels;            /* 48 */
    const float *bias;          /* 52: 8 floats or NULL */
    uint32_t flags;             /* 56: MT_DW_LOAD | MT_DW_RELU */
    uint32_t lines;             /* 60 */
    int32_t la, ld;             /* 64, 68: per line, after the pixels' steps */
    uint32_t left;              /* 72: the assembly's line counter */
} mt_dw_run;

#if MT_VFP_SCALAR
#define MT_VFP_DW 1

/* the assembly's offsets (compile-time check: a negative array size fails the build) */
typedef char mt_dw_run_layout[offsetof(mt_dw_run, flags) == 56 && offsetof(mt_dw_run, left) == 72 ? 1 : -1];

/* s(8+j) = fma(s(16+j), s(24+j), s(8+j)), j = 0..7: one tap of 8 channels */
#define MT_VFP_DW_FMA8 \
    "vfma.f32 s8, s16, s24\n\t" \
    "vfma.f32 s9, s17, s25\n\t" \
    "vfma.f32 s10, s18, s26\n\t" \
    "vfma.f32 s11, s19, s27\n\t" \
    "vfma.f32 s12, s20, s28\n\t" \
    "vfma.f32 s13, s21, s29\n\t" \
    "vfma.f32 s14, s22, s30\n\t" \
    "vfma.f32 s15, s23, s31\n\t"

/* s(8+j) += s(16+j), j = 0..7 */
#define MT_VFP_DW_ADD8 \
    "vadd.f32 s8, s8, s16\n\t" \
    "vadd.f32 s9, s9, s17\n\t" \
    "vadd.f32 s10, s10, s18\n\t" \
    "vadd.f32 s11, s11, s19\n\t" \
    "vadd.f32 s12, s12, s20\n\t" \
    "vadd.f32 s13, s13, s21\n\t" \
    "vadd.f32 s14, s14, s22\n\t" \
    "vadd.f32 s15, s15, s23\n\t"

/* s(8+j) = s(8+j) < 0 ? s24 (+0) : s(8+j): "mi" is false for NaN and for -0 */
#define MT_VFP_DW_RELU1(j)                                                                      \
    "vcmp.f32 s" #j ", #0\n\t"                                                                  \
    "vmrs APSR_nzcv, fpscr\n\t"                                                                 \
    "it mi\n\t"                                                                                 \
    "vmovmi.f32 s" #j ", s24\n\t"

static inline void mt_vfp_dw_run(mt_dw_run *r)
{
    /* r1 a, r2 b, r3 at, r4 bt, r5 term counter, r6 row counter, r8 dst, r10 ar, r11 br,
     * r12 pixel counter, lr scratch; the sums in s8-s15, a's 8 in s16-s23, b's in s24-s31 */
    __asm volatile(
        "ldrd r3, r4, [%[r], #8]\n\t"
        "ldrd r10, r11, [%[r], #16]\n\t"
        "ldr r8, [%[r], #32]\n\t"
        "ldr r12, [%[r], #60]\n\t"
        "str r12, [%[r], #72]\n\t"
        "ldr r12, [%[r], #48]\n"
        "1:\n\t"
        "ldrd r1, r2, [%[r], #0]\n\t"
        "ldr lr, [%[r], #56]\n\t"
        "tst lr, #1\n\t"
        "beq 2f\n\t"
        "vldmia r8, {s8-s15}\n\t"
        "b 3f\n"
        "2:\n\t"
        "movs r5, #0\n\t"
        "vmov d4, r5, r5\n\t"
        "vmov d5, r5, r5\n\t"
        "vmov d6, r5, r5\n\t"
        "vmov d7, r5, r5\n"
        "3:\n\t"
        "ldr r6, [%[r], #24]\n"
        "4:\n\t"
        "ldr r5, [%[r], #28]\n"
        "5:\n\t"
        "vldmia r1, {s16-s23}\n\t"
        "vldmia r2, {s24-s31}\n\t"
        "add r1, r3\n\t"
        "add r2, r4\n\t"
        MT_VFP_DW_FMA8
        "subs r5, #1\n\t"
        "bne 5b\n\t"
        "add r1, r10\n\t"
        "add r2, r11\n\t"
        "subs r6, #1\n\t"
        "bne 4b\n\t"
        "ldr lr, [%[r], #52]\n\t"
        "cmp lr, #0\n\t"
        "beq 6f\n\t"
        "vldmia lr, {s16-s23}\n\t"
        MT_VFP_DW_ADD8
        "6:\n\t"
        "ldr lr, [%[r], #56]\n\t"
        "tst lr, #2\n\t"
        "beq 7f\n\t"
        "movs r5, #0\n\t"
        "vmov s24, r5\n\t"
        MT_VFP_DW_RELU1(8) MT_VFP_DW_RELU1(9) MT_VFP_DW_RELU1(10) MT_VFP_DW_RELU1(11)
        MT_VFP_DW_RELU1(12) MT_VFP_DW_RELU1(13) MT_VFP_DW_RELU1(14) MT_VFP_DW_RELU1(15)
        "7:\n\t"
        "vstmia r8, {s8-s15}\n\t"
        "ldr lr, [%[r], #44]\n\t"
        "add r8, lr\n\t"
        "ldrd r5, r6, [%[r], #0]\n\t"
        "ldr lr, [%[r], #36]\n\t"
        "add r5, lr\n\t"
        "ldr lr, [%[r], #40]\n\t"
        "add r6, lr\n\t"
        "strd r5, r6, [%[r], #0]\n\t"
        "subs r12, #1\n\t"
        "bne 1b\n\t"
        "ldr r12, [%[r], #72]\n\t"
        "subs r12, #1\n\t"
        "beq 8f\n\t"
        "str r12, [%[r], #72]\n\t"
        "ldr r5, [%[r], #0]\n\t"
        "ldr lr, [%[r], #64]\n\t"
        "add r5, lr\n\t"
        "str r5, [%[r], #0]\n\t"
        "ldr lr, [%[r], #68]\n\t"
        "add r8, lr\n\t"
        "ldr r12, [%[r], #48]\n\t"
        "b 1b\n"
        "8:\n"
        :
        : [r] "r"(r)
        : "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r10", "r11", "r12", "lr", "s8", "s9", "s10", "s11", "s12",
          "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27",
          "s28", "s29", "s30", "s31", "cc", "memory");
}

/* dz = y > 0 ? dy : +0 (ReLU's derivative, y NaN included), stored in place of dy, then
 * sum[j] += dz[j], for n >= 1 pixels of 8 channels, y and dy advancing by step bytes */
#define MT_VFP_DW_MASK1(j, k)                                                                   \
    "vcmp.f32 s" #k ", #0\n\t"                                                                  \
    "vmrs APSR_nzcv, fpscr\n\t"                                                                 \
    "it le\n\t"                                                                                 \
    "vmovle.f32 s" #j ", s0\n\t"

static inline void mt_vfp_dw_relu_bias(const float *y, float *dy, uint32_t n, uint32_t step, float *sum)
{
    uint32_t zero = 0;
    __asm volatile(
        "vldmia %[sum], {s8-s15}\n\t"
        "vmov s0, %[zero]\n"
        "1:\n\t"
        "vldmia %[dy], {s16-s23}\n\t"
        "vldmia %[y], {s24-s31}\n\t"
        MT_VFP_DW_MASK1(16, 24) MT_VFP_DW_MASK1(17, 25) MT_VFP_DW_MASK1(18, 26) MT_VFP_DW_MASK1(19, 27)
        MT_VFP_DW_MASK1(20, 28) MT_VFP_DW_MASK1(21, 29) MT_VFP_DW_MASK1(22, 30) MT_VFP_DW_MASK1(23, 31)
        "vstmia %[dy], {s16-s23}\n\t"
        MT_VFP_DW_ADD8
        "add %[dy], %[step]\n\t"
        "add %[y], %[step]\n\t"
        "subs %[n], #1\n\t"
        "bne 1b\n\t"
        "vstmia %[sum], {s8-s15}\n"
        : [n] "+r"(n), [y] "+r"(y), [dy] "+r"(dy)
        : [sum] "r"(sum), [step] "r"(step), [zero] "r"(zero)
        : "s0", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21",
          "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc", "memory");
}
#else
#define MT_VFP_DW 0
#endif

#endif /* MT_OPS_FAST_VFP_DEPTHWISE_H */
