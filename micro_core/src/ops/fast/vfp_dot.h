/*
 * The 4 x 4 dot-product loop of the portable siblings, in assembly on Cortex-M cores with a
 * single-precision FPU (FPv4/FPv5: M4F, M7, M33): GCC keeps spilling the eight pointers of
 * this loop to the stack at -Os. Same arithmetic as the C loop it replaces: c[i][j] += a_i[t]
 * · b_j[t] for t ascending, each term one VMLA (the product rounded, then the sum: the
 * reference's bits). Elsewhere MT_VFP_DOT is 0 and the C loop runs.
 */
#ifndef MT_OPS_FAST_VFP_DOT_H
#define MT_OPS_FAST_VFP_DOT_H

#include <stdint.h>

#include "mt_math.h"

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4) && \
    defined(__thumb2__) && !defined(__ARM_FEATURE_MVE) && !defined(MT_NO_VFP_DOT)
#define MT_VFP_DOT 1

/* The 16 terms of a 4 x 4 step: s(4·i + j) += s(ai) · s(bj), i, j = 0..3 (each a VMLA: the
 * product rounded, then the sum) */
#define MT_VFP_MLA(d, a, b) "vmla.f32 s" #d ", s" #a ", s" #b "\n\t"
#define MT_VFP_MLA_AT(a0, a1, a2, a3, b0, b1, b2, b3)                                               \
    MT_VFP_MLA(0, a0, b0) MT_VFP_MLA(1, a0, b1) MT_VFP_MLA(2, a0, b2) MT_VFP_MLA(3, a0, b3)         \
    MT_VFP_MLA(4, a1, b0) MT_VFP_MLA(5, a1, b1) MT_VFP_MLA(6, a1, b2) MT_VFP_MLA(7, a1, b3)         \
    MT_VFP_MLA(8, a2, b0) MT_VFP_MLA(9, a2, b1) MT_VFP_MLA(10, a2, b2) MT_VFP_MLA(11, a2, b3)       \
    MT_VFP_MLA(12, a3, b0) MT_VFP_MLA(13, a3, b1) MT_VFP_MLA(14, a3, b2) MT_VFP_MLA(15, a3, b3)
#define MT_VFP_MLA_4X4 MT_VFP_MLA_AT(24, 25, 26, 27, 28, 29, 30, 31)

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
        MT_VFP_MLA_4X4
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
        MT_VFP_MLA_4X4
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
 * such a term's product is ±0, and a sum that starts from +0 is never -0 (x + y is -0 in
 * round-to-nearest only when both are), so it would have left the sum's bits as they were.
 * Sums in s0-s15 from 16 zeros, g in s16, m's row eight floats at a time in s17-s24; each
 * term one VMLA (the product rounded, then the sum), as the dense blocks. 26 instructions a
 * term that counts, 7 one skipped. c receives the sums (not added to). */
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
        MT_VFP_MLA(0, 16, 17) MT_VFP_MLA(1, 16, 18) MT_VFP_MLA(2, 16, 19) MT_VFP_MLA(3, 16, 20)
        MT_VFP_MLA(4, 16, 21) MT_VFP_MLA(5, 16, 22) MT_VFP_MLA(6, 16, 23) MT_VFP_MLA(7, 16, 24)
        "vldmia %[bits], {s17-s24}\n\t"
        MT_VFP_MLA(8, 16, 17) MT_VFP_MLA(9, 16, 18) MT_VFP_MLA(10, 16, 19) MT_VFP_MLA(11, 16, 20)
        MT_VFP_MLA(12, 16, 21) MT_VFP_MLA(13, 16, 22) MT_VFP_MLA(14, 16, 23) MT_VFP_MLA(15, 16, 24)
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

/* 1 when the n floats at p are all finite: s0 = Σ p[k]·0 by VMLA from +0 stays +0 (each
 * product is ±0, and a sum from +0 is never -0) unless some p[k] is infinite or NaN (inf·0 is
 * NaN, and a NaN stays); eight floats a VLDM, about 1.3 instructions a float where a test of
 * the bits takes 5 (the last n mod 8 are tested by their bits) */
static inline int mt_vfp_all_finite(const float *p, uint32_t n)
{
    static const float zero[2];
    uint32_t eights = n / 8u, bits;
    __asm volatile(
        "vldmia %[z], {s0-s1}\n\t"
        "cbz %[e], 2f\n"
        "1:\n\t"
        "vldmia %[p]!, {s16-s23}\n\t"
        MT_VFP_MLA(0, 16, 1) MT_VFP_MLA(0, 17, 1) MT_VFP_MLA(0, 18, 1) MT_VFP_MLA(0, 19, 1)
        MT_VFP_MLA(0, 20, 1) MT_VFP_MLA(0, 21, 1) MT_VFP_MLA(0, 22, 1) MT_VFP_MLA(0, 23, 1)
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
