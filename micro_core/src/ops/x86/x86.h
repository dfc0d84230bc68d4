/*
 * x86-64 kernels chosen at run time: AVX-512 siblings of the reference kernels that compute
 * the reference's exact bits (tests/core/test_kernel_siblings.c runs every one of them beside
 * its reference on the machine it runs on).
 *
 * How they keep the bits: each output's sum is still one chain, in the reference's order
 * (ascending index, skipped taps skipped), each term one fused multiply-add as the reference's
 * mt_fmaf (mt_fma.h): _mm512_fmadd_ps, or _mm256_fmadd_ps in the AVX2 build, which therefore
 * also needs FMA3 (every AVX2 CPU but a few VIA parts has it; one without runs the portable
 * kernels). Nothing else is fused: the core compiles with -ffp-contract=off. The vector lanes run across *independent* outputs: output channels or
 * units (Dense and Conv2D forward, weight gradients), input positions (input gradients),
 * channels (DepthwiseConv2D, pooling), elements (optimizers). Where a layout puts those
 * outputs apart in memory (Dense/Conv2D forward reads W[u, i] along i), a 16 x 16 tile of W
 * is transposed in registers. Nothing is packed in the arena; the only memory besides
 * registers is a fixed tile of a few KiB on the stack (Conv2D's input gradient columns).
 *
 * Two builds of the same kernel source, chosen at run time by mt_x86_level(): AVX-512F, and
 * AVX2 for the CPUs without it (each ops/x86/<name>_avx2.c compiles <name>.c again over
 * avx2_shim.h, which gives the 16-lane vectors and masks the kernels are written in as pairs
 * of 8-lane AVX2 vectors: the same operations on the same lanes, so the same bits; only the
 * block sizes that fit 32 zmm registers shrink to fit 16 ymm ones). The op adapters
 * (ops/<op>.c) call MT_X86_CALL(name, args...) when mt_x86_vector() says the CPU has either,
 * else the portable kernels (ops/fast/, ops/), which every build compiles and tests;
 * tests/core/test_kernel_siblings.c runs every level the CPU has against the reference.
 * Every function here is compiled with a target attribute, not with -mavx512f or -mavx2, so
 * the library still loads on any x86-64. MT_X86_KERNELS is 0 on every other target (and
 * with -DMT_NO_X86_KERNELS), where these files compile to nothing.
 */
#ifndef MT_OPS_X86_H
#define MT_OPS_X86_H

#include <stddef.h>
#include <stdint.h>

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__) && !defined(MT_NO_X86_KERNELS)
#define MT_X86_KERNELS 1
#else
#define MT_X86_KERNELS 0
#endif

#if MT_X86_KERNELS
struct mt_spatial;

#define MT_X86_PORTABLE 0 /* the portable C kernels */
#define MT_X86_AVX2 1     /* the kernels' AVX2 build (avx2_shim.h) */
#define MT_X86_AVX512 2   /* AVX-512F (its FMA included) */

/* The level the adapters use: the CPU's, unless mt_x86_set_level chose one. */
int mt_x86_level(void);
/* Force a level (tests run every path the CPU has; a level the CPU lacks is refused and
 * returns the level in force); -1 goes back to the CPU's. */
int mt_x86_set_level(int level);
/* The best level this CPU runs. */
int mt_x86_cpu_level(void);

/* 1 when the adapters take an x86 kernel (either build) */
static inline int mt_x86_vector(void)
{
    return mt_x86_level() >= MT_X86_AVX2;
}

/* name's build for the level in force: MT_X86_CALL(mt_op_relu_f32_forward, x, y, N) */
#define MT_X86_CALL(name, ...) \
    (mt_x86_level() >= MT_X86_AVX512 ? name##_avx512(__VA_ARGS__) : name##_avx2(__VA_ARGS__))

#define MT_X86_DECL(name) name##_avx512
#include "ops/x86/x86_kernels.h"
#undef MT_X86_DECL
#define MT_X86_DECL(name) name##_avx2
#include "ops/x86/x86_kernels.h"
#undef MT_X86_DECL
#endif /* MT_X86_KERNELS */

#endif /* MT_OPS_X86_H */
