/*
 * x86-64 kernels chosen at run time: AVX-512 siblings of the reference kernels that compute
 * the reference's exact bits (tests/core/test_kernel_siblings.c runs every one of them beside
 * its reference on the machine it runs on).
 *
 * How they keep the bits: each output's sum is still one chain, in the reference's order
 * (ascending index, skipped taps skipped), each term a separate multiply then add (no FMA:
 * the core compiles with -ffp-contract=off, and the intrinsics are _mm512_mul_ps then
 * _mm512_add_ps). The vector lanes run across *independent* outputs: output channels or
 * units (Dense and Conv2D forward, weight gradients), input positions (input gradients),
 * channels (DepthwiseConv2D, pooling), elements (optimizers). Where a layout puts those
 * outputs apart in memory (Dense/Conv2D forward reads W[u, i] along i), a 16 x 16 tile of W
 * is transposed in registers. Nothing is packed in the arena; the only memory besides
 * registers is a fixed tile of a few KiB on the stack (Conv2D's input gradient columns).
 *
 * Dispatch: the op adapters (ops/<op>.c) call these when mt_x86_avx512() says the CPU has
 * AVX-512F, else the portable kernels (ops/fast/, ops/), which every build compiles and
 * tests. Every function here is compiled with a target attribute, not with -mavx512f, so
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
#define MT_X86_AVX512 2   /* AVX-512F (with the AVX2/FMA-free subset we use) */

/* The level the adapters use: the CPU's, unless mt_x86_set_level chose one. */
int mt_x86_level(void);
/* Force a level (tests run every path the CPU has; a level the CPU lacks is refused and
 * returns the level in force); -1 goes back to the CPU's. */
int mt_x86_set_level(int level);
/* The best level this CPU runs. */
int mt_x86_cpu_level(void);

static inline int mt_x86_avx512(void)
{
    return mt_x86_level() >= MT_X86_AVX512;
}

/* Dense: ops/ops.h's mt_op_dense_f32_forward / _backward, same parameters. */
void mt_op_dense_f32_forward_avx512(const float *x, const float *w, const float *bias, float *y,
                                    uint32_t B, uint32_t I, uint32_t U);
void mt_op_dense_f32_backward_avx512(const float *x, const float *w, const float *dy, float *dx,
                                     float *dw, float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero);
/* mt_op_bias_f32_backward */
void mt_op_bias_f32_backward_avx512(const float *dy, float *dbias, size_t P, uint32_t C);
/* ReLU, ops/ops.h's parameters */
void mt_op_relu_f32_forward_avx512(const float *x, float *y, size_t N);
void mt_op_relu_f32_backward_avx512(const float *y, const float *dy, float *dx, size_t N);
/* mt_all_finitef (mt_math.h) */
int mt_all_finitef_avx512(const float *x, size_t n);
/* out[j] = mt_expf(x[j] - m) for j < n (exp_x86.c) */
void mt_expf_shifted_avx512(const float *x, float m, float *out, uint32_t n);
/* mt_fused_activation_forward / _backward (spatial.h) */
void mt_fused_activation_forward_avx512(uint32_t activation, float *y, size_t N);
void mt_fused_activation_backward_avx512(uint32_t activation, const float *y, float *dy, size_t N);

/* Convolutions and max pooling: ops/ops.h's kernels, same parameters. */
void mt_op_conv2d_f32_forward_avx512(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                     const struct mt_spatial *g);
void mt_op_conv2d_f32_backward_avx512(const float *x, const float *w, const float *y, float *dy, float *dx,
                                      float *dw, float *dbias, uint32_t B, const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_forward_avx512(const float *x, const float *w, const float *bias, float *y,
                                               uint32_t B, const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_backward_avx512(const float *x, const float *w, const float *y, float *dy,
                                                float *dx, float *dw, float *dbias, uint32_t B,
                                                const struct mt_spatial *g);
void mt_op_max_pool2d_f32_forward_avx512(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void mt_op_max_pool2d_f32_backward_avx512(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                          const struct mt_spatial *g);

/* Optimizers (optimizers.h), same parameters. */
void mt_sgd_update_f32_avx512(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                              float weight_decay, float grad_scale);
void mt_adam_update_f32_avx512(float *w, const float *g, float *m, float *v, size_t N, float lr,
                               float beta1, float beta2, float epsilon, float weight_decay, int decoupled,
                               double beta1_power, double beta2_power, float grad_scale);
/* The update guards of optimizers.h without a proximal term (the same operations, nothing written). */
int mt_sgd_update_is_finite_f32_avx512(const float *w, const float *g, const float *buf, size_t N, float lr,
                                       float momentum, float weight_decay, float grad_scale);
int mt_adam_update_is_finite_f32_avx512(const float *w, const float *g, const float *m, const float *v, size_t N,
                                        float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                        int decoupled, double beta1_power, double beta2_power, float grad_scale);
#endif /* MT_X86_KERNELS */

#endif /* MT_OPS_X86_H */
