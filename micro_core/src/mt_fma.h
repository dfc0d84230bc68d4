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
 *   - RISC-V with the F extension (rv32imafc): __builtin_fmaf, one fmadd.s;
 *   - bare-metal 32-bit ARM without it (the M3, the M0) and RISC-V without F (rv32imac):
 *     mt_fmaf_soft below, integer arithmetic only, because newlib's fmaf, and picolibc's on
 *     rv32imac, round twice (a double sum, then a float) and are off by one ulp when the
 *     double lands on a float tie;
 *   - ARM Linux with a double-precision FPU but no VFMA (armhf's VFPv3): mt_fmaf_via_double
 *     below, the sum in double and one test for the rare case where rounding it again to float
 *     could differ (then mt_fmaf_soft): the digits step 1.04M instructions, 2.8M with glibc's
 *     fmaf (which changes the rounding mode around every call), 3.5M with mt_fmaf_soft alone,
 *     160K with a multiply and an add; an ARMv7-A core with VFPv4 (Cortex-A7, A15, A17, A53 in
 *     AArch32) still does best built with -mfpu=neon-vfpv4;
 *   - anything else (x86-64 without FMA3 in the portable build, wasm): the C library's fmaf,
 *     which glibc and musl compute correctly rounded.
 * NaN: on ARM and x86 a single NaN operand comes back quiet with its sign and payload. Where
 * two NaNs meet, or a NaN addend meets 0·∞, the NaN that wins is the target's rule (ARM: the
 * addend first, and 0·∞ + qNaN is the default NaN; x86: its operand order); mt_fmaf_soft
 * follows ARM. RISC-V keeps no NaN: every NaN result of its F extension (fmadd.s, and any
 * other operation) and of libgcc's soft float there is the canonical NaN 0x7FC00000, sign and
 * payload dropped, and mt_fmaf_soft built for RISC-V returns it too, so rv32imac and
 * rv32imafc agree on NaNs as on every other value.
 */
#ifndef MT_FMA_H
#define MT_FMA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* a·b + c rounded once, ARM's NaN rules (RISC-V's canonical NaN when built for RISC-V, see
 * above); only integer operations. */
float mt_fmaf_soft(float a, float b, float c);

/*
 * a·b + c rounded once, through double arithmetic (binary64 with round to nearest): the product
 * of two floats is exact in double (48 significant bits of 53), so r = a·b + c in double is the
 * exact sum v rounded once. Rounding r again to float gives v's float unless r is a float
 * midpoint (every midpoint is a double, and rounding is monotone: if r is not one, v and r lie
 * on the same side of each, and so round alike). For a normal float result a midpoint is a
 * double whose low 29 fraction bits are 1 followed by 28 zeros; the few cases that may be one,
 * with the results in the float subnormal range (whose midpoints sit higher) and the infinities
 * and NaNs, take mt_fmaf_soft. A zero r is v = 0 exactly, with IEEE's sign of an exact zero sum
 * in both. tests/core/test_fma_soft.c holds it to the library's fmaf with mt_fmaf_soft.
 */
static inline float mt_fmaf_via_double(float a, float b, float c)
{
    const double r = (double)a * (double)b + (double)c; /* -ffp-contract=off: a product, then a sum */
    uint64_t bits;
    memcpy(&bits, &r, sizeof bits);
    const uint32_t e = (uint32_t)(bits >> 52) & 0x7FFu; /* r's exponent field */
    if ((bits & 0x1FFFFFFFu) == 0x10000000u || e == 0x7FFu || (e != 0 && e < 1023u - 126u))
        return mt_fmaf_soft(a, b, c);
    return (float)r;
}

#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__aarch64__) || \
    (defined(__riscv) && defined(__riscv_flen))
#define MT_FMA_HARDWARE 1
static inline float mt_fmaf(float a, float b, float c)
{
    return __builtin_fmaf(a, b, c);
}
#elif defined(__arm__) && defined(__linux__) && defined(__ARM_FP) && (__ARM_FP & 8)
#define MT_FMA_HARDWARE 0
static inline float mt_fmaf(float a, float b, float c)
{
    return mt_fmaf_via_double(a, b, c);
}
#elif ((defined(__arm__) || defined(__thumb__)) && !defined(__linux__)) || defined(__riscv)
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
