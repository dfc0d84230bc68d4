/*
 * The multiply-accumulate of every layer sum: fma(a, b, c) = a·b + c rounded once (IEEE 754
 * fusedMultiplyAdd, round to nearest, ties to even). Dense, Conv2D and DepthwiseConv2D (forward,
 * input gradient, weight gradient) add each term to their sums with it, on every target and in
 * every sibling kernel, so the sums keep one canonical order and one rounding per term.
 *
 * Why fused and not "product rounded, then sum": the fused form rounds once per term instead of
 * twice (closer to the exact sum) and is one instruction on every core that has it (x86 FMA3
 * and AVX-512F, the FPv4/FPv5 VFMA of the M4F, M7, M33 and M55, Helium's VFMA, AArch64), where
 * the rounded product took two: one VFMA per four MACs on the M55 where a VMUL and a VADD were
 * spent, and twice the multiply-accumulates a cycle on an x86 core with two FMA pipes.
 *
 * The result is correctly rounded, so it is the same bits wherever it is computed:
 *   - a core with the instruction: __builtin_fmaf, one instruction (the core compiles with
 *     -ffp-contract=off, so nothing else is fused);
 *   - bare-metal 32-bit ARM without it (the M3, the M0): mt_fmaf_soft below, integer
 *     arithmetic only, because newlib's fmaf rounds twice (a double sum, then a float) and is
 *     off by one ulp when the double lands on a float tie;
 *   - anything else (x86-64 without FMA3 in the portable build, ARM Linux on VFPv3, wasm): the
 *     C library's fmaf, which glibc and musl compute correctly rounded. Without the instruction
 *     it is slow: on armhf's VFPv3 glibc's takes the digits step to 2.8M instructions
 *     (mt_fmaf_soft 3.5M; 160K with a multiply and an add), so an ARMv7-A core with VFPv4
 *     (Cortex-A7, A15, A17, A53 in AArch32) is best built with -mfpu=neon-vfpv4.
 * NaN: a single NaN operand comes back quiet with its sign and payload everywhere. Where two
 * NaNs meet, or a NaN addend meets 0·∞, the NaN that wins is the target's rule (ARM: the addend
 * first, and 0·∞ + qNaN is the default NaN; x86: its operand order); mt_fmaf_soft follows ARM.
 */
#ifndef MT_FMA_H
#define MT_FMA_H

#include <math.h>

/* a·b + c rounded once, ARM's NaN rules (see above); only integer operations. */
float mt_fmaf_soft(float a, float b, float c);

#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__aarch64__)
#define MT_FMA_HARDWARE 1
static inline float mt_fmaf(float a, float b, float c)
{
    return __builtin_fmaf(a, b, c);
}
#elif (defined(__arm__) || defined(__thumb__)) && !defined(__linux__)
#define MT_FMA_HARDWARE 0
static inline float mt_fmaf(float a, float b, float c)
{
    return mt_fmaf_soft(a, b, c);
}
#else
#define MT_FMA_HARDWARE 0
static inline float mt_fmaf(float a, float b, float c)
{
    return fmaf(a, b, c);
}
#endif

#endif /* MT_FMA_H */
