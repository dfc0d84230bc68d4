/*
 * Helium (MVE) kernels for Armv8.1-M cores with the floating-point extension (Cortex-M55),
 * chosen at build time: MT_MVE_KERNELS is 1 when the compiler targets MVE with float
 * (__ARM_FEATURE_MVE & 2), and the op adapters call these instead of the portable siblings.
 *
 * Exact bits: every sum keeps the reference's order (vector lanes run across independent
 * outputs), each term of a layer sum one VFMA, the fused multiply-add the reference's mt_fmaf
 * computes (mt_fma.h: a·b + acc rounded once). Two differences remain: MVE floating point
 * flushes subnormal inputs and results to zero, and makes every NaN result the default NaN,
 * where the scalar FPU and every other target keep subnormals and carry an input NaN's sign
 * and payload through. So each kernel clears FPSCR's cumulative flags (sticky: a loop may
 * clear them once, and again only after a block that set them), computes a block of sums in
 * registers, and reads FPSCR before storing: IDC (a subnormal input was flushed) or UFC (a
 * subnormal result was flushed) sends that block, or the whole op for kernels that overwrite
 * their output, to the portable scalar code (its multiply-adds fused too: mt_fmaf, the scalar
 * FPU's VFMA), which computes the reference's bits. A VFMA rounds once, so its exact product
 * is never flushed: only an input (IDC) or the rounded sum (UFC) can be, and a sum that could
 * have been a subnormal input of the next term was flushed, and flagged, as a result first.
 * NaN rule: a block whose results hold a NaN (each result vector compared with itself,
 * mve_flags.h's mt_mve_nan) is recomputed the same way, so a NaN output has the reference's
 * bits (where two NaNs meet in one sum, which one wins is the compiled operand order's, on any
 * target). Without subnormals and NaNs the vector arithmetic (VFMA included) is IEEE
 * round-to-nearest, the same as the scalar FPU's. (Comparisons: VCMP's LT and LE conditions
 * hold for a NaN, unlike C's < and <=; test with GT or GE and swapped operands.)
 *
 * No float code here is vectorized by the compiler: GCC treats MVE as IEEE arithmetic and,
 * from -O2 on, turns straight-line lanes (four scalar square roots and divisions, say) and
 * loops into VMUL/VSUB that flush where no flag is read. The core compiles with
 * -fno-tree-vectorize on 32-bit ARM (micro_core/CMakeLists.txt, micropython.mk), and these
 * files, which raise themselves to -O2, say `#pragma GCC optimize("O2", "no-tree-vectorize")`.
 */
#ifndef MT_OPS_ARM_MVE_H
#define MT_OPS_ARM_MVE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && !defined(MT_NO_MVE_KERNELS)
#define MT_MVE_KERNELS 1
#else
#define MT_MVE_KERNELS 0
#endif

#if MT_MVE_KERNELS
struct mt_spatial;

/* Dense, and Conv2D's forward, ops/ops.h's parameters (the backward's scratch is not used);
 * Dense's forward applies a fused activation (MT_FUSED_*: a pointwise Conv2D's) */
void mt_op_dense_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                 uint32_t I, uint32_t U, uint32_t act);
void mt_op_dense_f32_backward_mve(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                  float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero);
void mt_op_conv2d_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                  const struct mt_spatial *g);
/* Conv2D's backward, ops/ops.h's parameters (dy is masked in place by the activation's
 * derivative): one-channel 3-wide stride-1 layers in Helium, others the portable sibling */
void mt_op_conv2d_f32_backward_mve(const float *x, const float *w, const float *y, float *dy, float *dx, float *dw,
                                   float *dbias, uint32_t B, const struct mt_spatial *g);
/* DepthwiseConv2D, ops/ops.h's parameters (dy is masked in place by the activation's derivative) */
void mt_op_depthwise_conv2d_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                            const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_backward_mve(const float *x, const float *w, const float *y, float *dy, float *dx,
                                             float *dw, float *dbias, uint32_t B, const struct mt_spatial *g);
/* MaxPool2D, ops/ops.h's parameters */
void mt_op_max_pool2d_f32_forward_mve(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void mt_op_max_pool2d_f32_backward_mve(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                       const struct mt_spatial *g);
/* dz = dy·[0 < y (< 6 for ReLU6)] in place (MT_FUSED_*) and dbias += Σ_p dz (dbias may be
 * NULL), P pixels of C >= 4 channels: the reference's bits */
void mt_mve_relu_bias(uint32_t act, const float *y, float *dy, float *dbias, size_t P, uint32_t C);
/* ReLU's forward and backward, ops/ops.h's parameters (activations_mve.c) */
void mt_op_relu_f32_forward_mve(const float *x, float *y, size_t N);
void mt_op_relu_f32_backward_mve(const float *y, const float *dy, float *dx, size_t N);
/* optimizers.h's SGD and Adam (AdamW) updates and guards without a proximal term: the
 * reference's bits and answers (shared_mve.c) */
void mt_sgd_update_f32_mve(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                           float weight_decay, float grad_scale);
int mt_sgd_update_is_finite_f32_mve(const float *w, const float *g, const float *buf, size_t N, float lr,
                                    float momentum, float weight_decay, float grad_scale);
void mt_adam_update_f32_mve(float *w, const float *g, float *m, float *v, size_t N, float lr, float beta1,
                            float beta2, float epsilon, float weight_decay, int decoupled, double beta1_power,
                            double beta2_power, float grad_scale);
int mt_adam_update_is_finite_f32_mve(const float *w, const float *g, const float *m, const float *v, size_t N,
                                     float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                     int decoupled, double beta1_power, double beta2_power, float grad_scale);
/* dx += dy: ops/shared.c's mt_op_add_f32_accumulate, its bits (shared_mve.c) */
void mt_mve_add_accumulate(const float *dy, float *dx, size_t N);
/* p[0..n) = +0.0f with integer stores, sixteen floats a turn (shared_mve.c): a gradient's
 * clear, where newlib-nano's memset takes 7 instructions for 16 bytes */
void mt_mve_clear_f32(float *p, size_t n);
/* mt_math.h's mt_expf_shifted: the same bits (shared_mve.c) */
void mt_expf_shifted_mve(const float *x, float m, float *out, uint32_t n);
#endif

#endif /* MT_OPS_ARM_MVE_H */
