/*
 * The 4 x 4 dot-product loop of the portable siblings, in assembly on Cortex-M cores with a
 * single-precision FPU (FPv4/FPv5: M4F, M7, M33): GCC keeps spilling the eight pointers of
 * this loop to the stack at -Os. Same arithmetic as the C loop it replaces: c[i][j] =
 * fma(a_i[t], b_j[t], c[i][j]) for t ascending, each term one VFMA (a·b + c rounded once, the
 * reference's mt_fmaf: its bits; the operands in the reference's order, a NaN's payload
 * included). Elsewhere MT_VFP_DOT is 0 and the C loop runs.
 */
#ifndef MT_OPS_FAST_VFP_DOT_H
#define MT_OPS_FAST_VFP_DOT_H

#include <stdint.h>

#include "mt_math.h"

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4) && \
    defined(__thumb2__) && !defined(__ARM_FEATURE_MVE) && !defined(MT_NO_VFP_DOT)
#define MT_VFP_DOT 1

/* The 16 terms of a 4 x 4 step: s(4·i + j) = fma(s(ai), s(bj), s(4·i + j)), i, j = 0..3 (each a
 * VFMA: the product and the sum rounded once, as mt_fmaf) */
#define MT_VFP_FMA(d, a, b) "vfma.f32 s" #d ", s" #a ", s" #b "\n\t"
#define MT_VFP_FMA_AT(a0, a1, a2, a3, b0, b1, b2, b3)                                               \
    MT_VFP_FMA(0, a0, b0) MT_VFP_FMA(1, a0, b1) MT_VFP_FMA(2, a0, b2) MT_VFP_FMA(3, a0, b3)         \
    MT_VFP_FMA(4, a1, b0) MT_VFP_FMA(5, a1, b1) MT_VFP_FMA(6, a1, b2) MT_VFP_FMA(7, a1, b3)         \
    MT_VFP_FMA(8, a2, b0) MT_VFP_FMA(9, a2, b1) MT_VFP_FMA(10, a2, b2) MT_VFP_FMA(11, a2, b3)       \
    MT_VFP_FMA(12, a3, b0) MT_VFP_FMA(13, a3, b1) MT_VFP_FMA(14, a3, b2) MT_VFP_FMA(15, a3, b3)
#define MT_VFP_FMA_4X4 MT_VFP_FMA_AT(24, 25, 26, 27, 28, 29, 30, 31)

/* n >= 1 terms; c holds the 16 sums row by row (c[4·i + j]), kept in s0-s15 for the loop; the
 * eight row pointers travel in memory and live in fixed registers inside (the caller's own
 * registers stay free, so the compiler has no operands to spill) */
static inline void mt_vfp_dot4x4(const float *a0, const float *a1, const float *a2, const float *a3,
                                 const float *b0, const float *b1, const float *b2, const float *b3, uint32_t n,
                                 float *c)
{
    const float *rows[8] = {a0, a1, a2, a3, b0, b1, b2, b3};
    __asm volatile(
        "ldm %[rows], {r4, r5, r6, r8, r10, r11, r12, lr}\n\t"
        "vldmia %[c], {s0-s15}\n"
        "1:\n\t"
        "vldmia r4!, {s24}\n\t"
        "vldmia r5!, {s25}\n\t"
        "vldmia r6!, {s26}\n\t"
        "vldmia r8!, {s27}\n\t"
        "vldmia r10!, {s28}\n\t"
        "vldmia r11!, {s29}\n\t"
        "vldmia r12!, {s30}\n\t"
        "vldmia lr!, {s31}\n\t"
        MT_VFP_FMA_4X4
        "subs %[n], #1\n\t"
        "bne 1b\n\t"
        "vstmia %[c], {s0-s15}\n"
        : [n] "+r"(n)
        : [c] "r"(c), [rows] "r"(rows)
        : "r4", "r5", "r6", "r8", "r10", "r11", "r12", "lr", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8",
          "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31",
          "cc", "memory");
}
/* n >= 1 terms: c[4·i + j] += g[i]·m[j], then g += gstep and m += mstep floats (an outer
 * product per term: four g side by side times four m side by side, one VLDM each) */
static inline void mt_vfp_outer4x4(const float *g, uint32_t gstep, const float *m, uint32_t mstep, uint32_t n,
                                   float *c)
{
    const uint32_t gb = gstep * 4u, mb = mstep * 4u;
    __asm volatile(
        "vldmia %[c], {s0-s15}\n"
        "1:\n\t"
        "vldmia %[g], {s24-s27}\n\t"
        "vldmia %[m], {s28-s31}\n\t"
        "add %[g], %[gb]\n\t"
        "add %[m], %[mb]\n\t"
        MT_VFP_FMA_4X4
        "subs %[n], #1\n\t"
        "bne 1b\n\t"
        "vstmia %[c], {s0-s15}\n"
        : [n] "+r"(n), [g] "+r"(g), [m] "+r"(m)
        : [c] "r"(c), [gb] "r"(gb), [mb] "r"(mb)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
          "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc", "memory");
}

/* One row of a weight gradient behind a ReLU: c[j] = Σ_t g[t]·m[t][j] for 16 columns, t
 * ascending over the n >= 1 terms (g steps gstep floats, m rows mstep floats), skipping each
 * term whose g is ±0 (bits << 1 == 0: a NaN counts). With every m finite (the caller checks)
 * such a term's product is exactly ±0, and fma(±0, m, s) = s + ±0 is s for every s but -0
 * (-0 + +0 is +0 in round-to-nearest). A sum of rounded products from +0 is never -0 (x + y is
 * -0 only when both are), but a sum of fused terms can be: a term whose exact value a·b + s is
 * negative and at most 2^-150 in magnitude rounds to -0. So the skipping sum and the full one
 * keep the same value and differ at most in a zero's sign, this one -0 where the full one is
 * +0 (a skipped term can only turn the full sum's -0 into +0; a counted term adds the same
 * product to both). The caller adds each sum to dW, which is never -0 (zeroed to +0, then only
 * given sums: +0 + -0 is +0), and dW + -0 = dW + +0 for every dW but -0: the reference's bits. Sums in s0-s15 from 16 zeros, g in s16, m's row
 * eight floats at a time in s17-s24; each term one VFMA, as the dense blocks. 26 instructions
 * a term that counts, 7 one skipped. c receives the sums (not added to). */
static inline void mt_vfp_sparse_row(const float *g, uint32_t gstep, const float *m, uint32_t mstep, uint32_t n,
                                     float *c)
{
    static const float zeros[16];
    const uint32_t gb = gstep * 4u, mb = mstep * 4u;
    uint32_t bits;
    __asm volatile(
        "vldmia %[z], {s0-s15}\n"
        "1:\n\t"
        "ldr %[bits], [%[g]]\n\t"
        "lsls %[bits], %[bits], #1\n\t"
        "beq 2f\n\t"
        "vldr s16, [%[g]]\n\t"
        "vldmia %[m], {s17-s24}\n\t"
        "add %[bits], %[m], #32\n\t"
        MT_VFP_FMA(0, 16, 17) MT_VFP_FMA(1, 16, 18) MT_VFP_FMA(2, 16, 19) MT_VFP_FMA(3, 16, 20)
        MT_VFP_FMA(4, 16, 21) MT_VFP_FMA(5, 16, 22) MT_VFP_FMA(6, 16, 23) MT_VFP_FMA(7, 16, 24)
        "vldmia %[bits], {s17-s24}\n\t"
        MT_VFP_FMA(8, 16, 17) MT_VFP_FMA(9, 16, 18) MT_VFP_FMA(10, 16, 19) MT_VFP_FMA(11, 16, 20)
        MT_VFP_FMA(12, 16, 21) MT_VFP_FMA(13, 16, 22) MT_VFP_FMA(14, 16, 23) MT_VFP_FMA(15, 16, 24)
        "2:\n\t"
        "add %[g], %[gb]\n\t"
        "add %[m], %[mb]\n\t"
        "subs %[n], #1\n\t"
        "bne 1b\n\t"
        "vstmia %[c], {s0-s15}\n"
        : [n] "+r"(n), [g] "+r"(g), [m] "+r"(m), [bits] "=&r"(bits)
        : [c] "r"(c), [z] "r"(zeros), [gb] "r"(gb), [mb] "r"(mb)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
          "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "cc", "memory");
}

/* 1 when the n floats at p are all finite: s0 = fma(p[k], +0, s0) from +0 (VFMA) stays +0 (a
 * finite p[k] times +0 is exactly ±0, and +0 + ±0 is +0) unless some p[k] is infinite or NaN
 * (inf·0 is NaN, fused or not, and a NaN stays); eight floats a VLDM, about 1.3 instructions a
 * float where a test of the bits takes 5 (the last n mod 8 are tested by their bits) */
static inline int mt_vfp_all_finite(const float *p, uint32_t n)
{
    static const float zero[2];
    uint32_t eights = n / 8u, bits;
    __asm volatile(
        "vldmia %[z], {s0-s1}\n\t"
        "cbz %[e], 2f\n"
        "1:\n\t"
        "vldmia %[p]!, {s16-s23}\n\t"
        MT_VFP_FMA(0, 16, 1) MT_VFP_FMA(0, 17, 1) MT_VFP_FMA(0, 18, 1) MT_VFP_FMA(0, 19, 1)
        MT_VFP_FMA(0, 20, 1) MT_VFP_FMA(0, 21, 1) MT_VFP_FMA(0, 22, 1) MT_VFP_FMA(0, 23, 1)
        "subs %[e], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "vmov %[bits], s0\n"
        : [p] "+r"(p), [e] "+r"(eights), [bits] "=r"(bits)
        : [z] "r"(zero)
        : "s0", "s1", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "cc", "memory");
    return bits == 0u && mt_all_finitef(p, n % 8u); /* the last few by their bits */
}
#else
#define MT_VFP_DOT 0
#endif

#endif /* MT_OPS_FAST_VFP_DOT_H */
