/*
 * Reference kernels: forward and backward side by side, mirrored signatures.
 *
 * Glossary: B = rows in this call (the step's valid samples), I = in_features,
 * U = units (out_features), N = elements, R = rows, C = columns (last dimension).
 * Gradients are prefixed d. Backward *accumulates* (+=) into every gradient it
 * is given; a NULL gradient pointer means "not needed" and is skipped.
 * Reduction order is fixed (ascending index) so every target computes the same bits.
 * Optimized siblings with the same bits live in ops/fast/ (fast.h).
 */
#ifndef MT_OPS_H
#define MT_OPS_H

#include <stddef.h>
#include <stdint.h>

/* 1: compile the reference kernels that an optimized sibling replaces in the op adapters
 * (Dense backward, Conv2D, DepthwiseConv2D). Host and ARM Linux builds keep them: the tests
 * hold every sibling to them. Bare-metal builds (CMake, system Generic) set 0: a firmware
 * never calls them, and the core's flash stays within budget. Kernels that a sibling still
 * calls (Dense forward for its edges) are always compiled. */
#ifndef MT_REFERENCE_KERNELS
#define MT_REFERENCE_KERNELS 1
#endif

/* 1: the op adapters call the portable siblings of ops/fast/ (register-blocked for scalar
 * FPUs). A core without an FPU (Cortex-M3: every float operation is a libgcc call) gains
 * nothing from them and keeps the smaller reference kernels (and compiles the siblings out). */
#if defined(__arm__) && !defined(__ARM_FP) && !defined(__linux__)
#define MT_SCALAR_SIBLINGS 0
#undef MT_REFERENCE_KERNELS
#define MT_REFERENCE_KERNELS 1
#else
#define MT_SCALAR_SIBLINGS 1
#endif

/* Dense: y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u]   (W is [U, I] like torch.nn.Linear) */
void mt_op_dense_f32_forward(const float *x, const float *w, const float *bias, float *y,
                             uint32_t B, uint32_t I, uint32_t U);
/* dx[b,i] += Σ_u dy[b,u]·W[u,i];  dW[u,i] += Σ_b dy[b,u]·x[b,i];  dbias[u] += Σ_b dy[b,u] */
void mt_op_dense_f32_backward(const float *x, const float *w, const float *dy, float *dx,
                              float *dw, float *dbias, uint32_t B, uint32_t I, uint32_t U);

/* Bias gradient of Dense and the convolutions (shared.c): dbias[c] += Σ_p dy[p, c] over P positions */
void mt_op_bias_f32_backward(const float *dy, float *dbias, size_t P, uint32_t C);

/* ReLU: y = max(x, 0);  dx += dy · [y > 0] */
void mt_op_relu_f32_forward(const float *x, float *y, size_t N);
void mt_op_relu_f32_backward(const float *y, const float *dy, float *dx, size_t N);

/* ReLU6: y = min(max(x, 0), 6);  dx += dy · [0 < y < 6] */
void mt_op_relu6_f32_forward(const float *x, float *y, size_t N);
void mt_op_relu6_f32_backward(const float *y, const float *dy, float *dx, size_t N);

/* LeakyReLU: y = x > 0 ? x : α·x (α >= 0);  dx += dy · (y > 0 ? 1 : α) */
void mt_op_leaky_relu_f32_forward(const float *x, float *y, size_t N, float alpha);
void mt_op_leaky_relu_f32_backward(const float *y, const float *dy, float *dx, size_t N, float alpha);

/* Sigmoid: y = 1/(1+e^-x);  dx += dy · y·(1-y) */
void mt_op_sigmoid_f32_forward(const float *x, float *y, size_t N);
void mt_op_sigmoid_f32_backward(const float *y, const float *dy, float *dx, size_t N);

/* Tanh: y = tanh x;  dx += dy · (1 - y²) */
void mt_op_tanh_f32_forward(const float *x, float *y, size_t N);
void mt_op_tanh_f32_backward(const float *y, const float *dy, float *dx, size_t N);

/* Softmax over each row of C: y_j = e^(x_j - max) / Σ_k e^(x_k - max);
 * dx_j += y_j · (dy_j - Σ_k dy_k·y_k) */
void mt_op_softmax_f32_forward(const float *x, float *y, uint32_t R, uint32_t C);
void mt_op_softmax_f32_backward(const float *y, const float *dy, float *dx, uint32_t R,
                                uint32_t C);

/* Add: y = a + b;  da += dy, db += dy (the accumulate, in shared.c, serves Reshape/Concatenation too) */
void mt_op_add_f32_forward(const float *a, const float *b, float *y, size_t N);
void mt_op_add_f32_accumulate(const float *dy, float *dx, size_t N);

/* Spatial ops over NHWC samples; g describes shapes, strides and padding (spatial.h).
 * Convolution backward first masks dy in place by the fused activation's derivative. */
struct mt_spatial;
void mt_op_conv2d_f32_forward(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                              const struct mt_spatial *g);
void mt_op_conv2d_f32_backward(const float *x, const float *w, const float *y, float *dy, float *dx,
                               float *dw, float *dbias, uint32_t B, const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_forward(const float *x, const float *w, const float *bias, float *y,
                                        uint32_t B, const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_backward(const float *x, const float *w, const float *y, float *dy,
                                         float *dx, float *dw, float *dbias, uint32_t B,
                                         const struct mt_spatial *g);
void mt_op_max_pool2d_f32_forward(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void mt_op_max_pool2d_f32_backward(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                   const struct mt_spatial *g);
void mt_op_average_pool2d_f32_forward(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void mt_op_average_pool2d_f32_backward(const float *dy, float *dx, uint32_t B, const struct mt_spatial *g);
/* Global average pool over P = H·W positions of C channels */
void mt_op_global_average_pool_f32_forward(const float *x, float *y, uint32_t B, uint32_t P, uint32_t C);
void mt_op_global_average_pool_f32_backward(const float *dy, float *dx, uint32_t B, uint32_t P, uint32_t C);

#endif /* MT_OPS_H */
