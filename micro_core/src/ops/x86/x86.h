/*
 * The x86-64 kernel family (the AVX-512 and AVX2 columns of select/x86_64.h): siblings of the
 * reference kernels that compute the reference's exact bits (the sibling tests run every one
 * beside its reference at every level the CPU has).
 *
 * How they keep the bits: each output's sum is still one chain, in the reference's order
 * (ascending index, skipped taps skipped), each term one fused multiply-add as the reference's
 * mt_fmaf (mt_fma.h): _mm512_fmadd_ps, or _mm256_fmadd_ps in the AVX2 build, which therefore
 * also needs FMA3 (every AVX2 CPU but a few VIA parts has it; one without runs the portable
 * column). Nothing else is fused: the core compiles with -ffp-contract=off. The vector lanes
 * run across *independent* outputs: output channels or units (Dense and Conv2D forward, weight
 * gradients), input positions (input gradients), channels (DepthwiseConv2D, pooling), elements
 * (optimizers). Where a layout puts those outputs apart in memory (Dense/Conv2D forward reads
 * W[u, i] along i), a 16 x 16 tile of W is transposed in registers. Nothing is packed in the
 * arena; the only memory besides registers is a fixed tile of a few KiB on the stack (Conv2D's
 * input gradient columns).
 *
 * Two builds of each source (<name>_avx512.c, and <name>_avx2.c, which compiles it again over
 * avx2_shim.h: the 16-lane vectors and masks the kernels are written in as pairs of 8-lane
 * AVX2 vectors, the same operations on the same lanes, so the same bits; only the block sizes
 * that fit 32 zmm registers shrink to fit 16 ymm ones). The kernels' names come from
 * select/kernels.h (base_avx512, base_avx2; avx512.h's MT_X86_NAME gives the build's); this
 * header declares the helpers the family's files share, for both builds (gradient_avx512.c).
 * Every function is compiled with a target attribute, not -mavx512f or -mavx2, so the library
 * still loads on any x86-64. The files compile to nothing on other targets (MT_X86_KERNELS,
 * select/target.h).
 */
#ifndef MT_OPS_X86_H
#define MT_OPS_X86_H

#include <stddef.h>
#include <stdint.h>

#include "select/kernels.h"

#if MT_X86_KERNELS
#define MT_X86_SHARED(name)                                                                            \
    /* dbias[c] += Σ_p dy[p, c], mt_op_bias_f32_backward_ref's sums */                                \
    void name(mt_op_bias_f32_backward)(const float *dy, float *dbias, size_t P, uint32_t C);          \
    /* mt_all_finitef (mt_math.h) */                                                                   \
    int name(mt_all_finitef)(const float *x, size_t n);                                               \
    /* mt_fused_activation_forward / _backward (ops/spatial.h) */                                     \
    void name(mt_fused_activation_forward)(uint32_t activation, float *y, size_t N);                  \
    void name(mt_fused_activation_backward)(uint32_t activation, const float *y, float *dy, size_t N);
#define MT_X86_AVX512_NAME(name) name##_avx512
#define MT_X86_AVX2_NAME(name) name##_avx2
MT_X86_SHARED(MT_X86_AVX512_NAME)
MT_X86_SHARED(MT_X86_AVX2_NAME)
#undef MT_X86_AVX512_NAME
#undef MT_X86_AVX2_NAME
#undef MT_X86_SHARED
#endif /* MT_X86_KERNELS */

#endif /* MT_OPS_X86_H */
