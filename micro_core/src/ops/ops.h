/*
 * Reference kernels: forward and backward side by side, mirrored signatures.
 *
 * Glossary: B = rows in this call (the step's valid samples), I = in_features,
 * U = units (out_features), N = elements, R = rows, C = columns (last dimension).
 * Gradients are prefixed d. Backward *accumulates* (+=) into every gradient it
 * is given; a NULL gradient pointer means "not needed" and is skipped.
 * Reduction order is fixed (ascending index) so every target computes the same bits.
 *
 * The kernels that have siblings (the same bits, faster, on some hardware) are rows of the
 * kernel table, select/kernels.def, which holds their math: their references are
 * mt_..._ref, and an op adapter calls the row's entry mt_kernel_<slot> (select/kernels.h,
 * included here), which is the kernel this build's column selects. The ops below have only
 * their reference.
 */
#ifndef MT_OPS_H
#define MT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "select/kernels.h"

/* Bias gradient of Dense and the convolutions (shared.c): dbias[c] += Σ_p dy[p, c] over P
 * positions, each sum from +0 in ascending p (the x86 kernels' own: ops/x86/x86.h) */
void mt_op_bias_f32_backward_ref(const float *dy, float *dbias, size_t P, uint32_t C);

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

/* Add: y = a + b;  da += dy, db += dy (mt_kernel_add_f32_accumulate, which serves Reshape,
 * Concatenation and Pad too) */
void mt_op_add_f32_forward(const float *a, const float *b, float *y, size_t N);

/* Spatial ops over NHWC samples; g describes shapes, strides and padding (spatial.h).
 * (Conv2D, DepthwiseConv2D and MaxPool2D: select/kernels.def.) */
struct mt_spatial;
void mt_op_average_pool2d_f32_forward(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void mt_op_average_pool2d_f32_backward(const float *dy, float *dx, uint32_t B, const struct mt_spatial *g);
/* Global average pool over P = H·W positions of C channels */
void mt_op_global_average_pool_f32_forward(const float *x, float *y, uint32_t B, uint32_t P, uint32_t C);
void mt_op_global_average_pool_f32_backward(const float *dy, float *dx, uint32_t B, uint32_t P, uint32_t C);

/* Pad (NHWC, zeros): x [B, H, W, C] -> y [B, T+H+Bo, L+W+R, C] with y[b, T+h, L+w, c] = x[b, h, w, c]
 * and 0 elsewhere;  dx[b, h, w, c] += dy[b, T+h, L+w, c] */
void mt_op_pad_f32_forward(const float *x, float *y, uint32_t B, uint32_t H, uint32_t W, uint32_t C,
                           uint32_t top, uint32_t bottom, uint32_t left, uint32_t right);
void mt_op_pad_f32_backward(const float *dy, float *dx, uint32_t B, uint32_t H, uint32_t W, uint32_t C,
                            uint32_t top, uint32_t bottom, uint32_t left, uint32_t right);

/* Mul and Sub over R rows of C columns (the last dimension). Operand k is read at
 * [r·k_row + j·k_col]: (C, 1) same shape as y, (0, 1) one value per column (a per-channel
 * constant), (0, 0) a scalar.
 *   Mul: y = a · b;  da += dy · b (for an operand of y's shape; the other one read as given)
 *   Sub: y = a − b;  da += dy, db −= dy */
void mt_op_mul_f32_forward(const float *a, uint32_t a_row, uint32_t a_col, const float *b, uint32_t b_row,
                           uint32_t b_col, float *y, size_t R, uint32_t C);
void mt_op_mul_f32_backward(const float *other, uint32_t o_row, uint32_t o_col, const float *dy, float *dx,
                            size_t R, uint32_t C);
void mt_op_sub_f32_forward(const float *a, uint32_t a_row, uint32_t a_col, const float *b, uint32_t b_row,
                           uint32_t b_col, float *y, size_t R, uint32_t C);
/* dx -= dy (the subtrahend's gradient; the minuend's is mt_kernel_add_f32_accumulate) */
void mt_op_sub_f32_backward(const float *dy, float *dx, size_t N);

/* Transpose of each sample: x of dims X[0..3] (leading dims 1 when the sample has fewer),
 * y[i0, i1, i2, i3] = x[the index whose axis perm[k] is i_k];  dx at that index += dy */
void mt_op_transpose_f32_forward(const float *x, float *y, uint32_t B, const uint32_t X[4],
                                 const uint32_t perm[4]);
void mt_op_transpose_f32_backward(const float *dy, float *dx, uint32_t B, const uint32_t X[4],
                                  const uint32_t perm[4]);

#endif /* MT_OPS_H */
