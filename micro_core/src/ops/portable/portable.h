/*
 * Optimized kernels: siblings of the reference kernels of ops/ops.h that compute the same
 * bits (same sums, same order, each term of a layer sum the reference's fused multiply-add,
 * mt_fma.h; no reassociation, no other contraction) faster. They take the reference's
 * parameters in the same order, plus the scratch their _scratch_bytes query sizes.
 * tests/core/test_kernel_siblings.c runs each beside its reference and requires every output
 * bit to be equal.
 *
 * Which slot an op adapter calls (the reference or a sibling) is chosen in the adapter, at
 * compile time; see the note above dense.c's adapter.
 */
#ifndef MT_OPS_FAST_H
#define MT_OPS_FAST_H

#include <stddef.h>
#include <stdint.h>

/* Dense forward, y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u]: the reference's bits with four
 * output chains at a time (instruction-level parallelism). */
void mt_op_dense_f32_forward_blocked(const float *x, const float *w, const float *bias, float *y,
                                     uint32_t B, uint32_t I, uint32_t U);
/* The same, then the fused activation act (MT_FUSED_*) applied to each y as it is stored:
 * the bits of mt_op_dense_f32_forward followed by mt_fused_activation_forward. */
void mt_op_dense_f32_forward_blocked_act(const float *x, const float *w, const float *bias, float *y,
                                         uint32_t B, uint32_t I, uint32_t U, uint32_t act);
/* Dense backward, the reference's bits with the inner loops along contiguous rows;
 * acc: mt_op_dense_f32_scratch_bytes() of scratch. */
void mt_op_dense_f32_backward_rows(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                   float *dbias, uint32_t B, uint32_t I, uint32_t U, float *acc);
/* Scratch mt_op_dense_f32_backward_rows needs: I floats (the reference needs none). */
size_t mt_op_dense_f32_scratch_bytes(uint32_t B, uint32_t I, uint32_t U);

struct mt_spatial;
/* Conv2D and DepthwiseConv2D, ops/ops.h's parameters: the reference's bits with four sums
 * sharing each load and each tap's in-bounds outputs found once (no scratch). */
void mt_op_conv2d_f32_forward_fast(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                   const struct mt_spatial *g);
void mt_op_conv2d_f32_backward_fast(const float *x, const float *w, const float *y, float *dy, float *dx,
                                    float *dw, float *dbias, uint32_t B, const struct mt_spatial *g);
/* Conv2D's forward for one input channel and a 3 x 3 kernel in the scalar FPU's assembly
 * (conv2d_fast.c, where vfp_conv.h has MT_VFP_CONV_C1): 1 when it took the shape, else 0 and
 * nothing written. */
int mt_op_conv2d_f32_forward_vfp_c1(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                    const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_forward_fast(const float *x, const float *w, const float *bias, float *y,
                                             uint32_t B, const struct mt_spatial *g);
void mt_op_depthwise_conv2d_f32_backward_fast(const float *x, const float *w, const float *y, float *dy,
                                              float *dx, float *dw, float *dbias, uint32_t B,
                                              const struct mt_spatial *g);
/* MaxPool2D, ops/ops.h's parameters: the reference's comparisons in its window order, each
 * output's in-bounds taps found once. */
void mt_op_max_pool2d_f32_forward_fast(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void mt_op_max_pool2d_f32_backward_fast(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                        const struct mt_spatial *g);

/*
 * The int8 inference ops' siblings (conv_s8_fast.c, dense_s8_fast.c, add_s8_fast.c,
 * pooling_s8_fast.c; ops/quant.h's parameters):
 * the same integer sums as the references, so the same bytes, on every target (Helium,
 * the DSP extension's SMLAD or portable C: s8_dot.h). Unlike the float siblings the op
 * adapters call them everywhere, the Cortex-M3 included: integer code gains there too.
 */
void mt_op_conv2d_s8_forward_fast(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                  int8_t *y, uint32_t B, const struct mt_spatial *g, uint32_t packed);
/* a 1 x 1 Conv2D at stride 1 without padding over P pixels of C channels: OC outputs each */
void mt_op_conv2d_s8_pointwise_fast(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                    int8_t *y, uint32_t P, uint32_t C, uint32_t OC, uint32_t packed);
void mt_op_depthwise_conv2d_s8_forward_fast(const int8_t *x, const int8_t *w, const int32_t *bias,
                                            const int32_t *rq, int8_t *y, uint32_t B, const struct mt_spatial *g,
                                            uint32_t packed);
void mt_op_depthwise_conv2d_s8_row_fast(const int8_t *x, uint32_t ring, const int8_t *w, const int32_t *bias,
                                        const int32_t *rq, int8_t *y, uint32_t oh, const struct mt_spatial *g,
                                        uint32_t packed);
/* the int8 MEAN over H and W (ops/pooling_s8.c), Helium lanes on the M55 */
void mt_op_mean_s8_forward_fast(const int8_t *x, int8_t *y, uint32_t B, uint32_t P, uint32_t C, uint32_t zero_points,
                                int32_t multiplier, int32_t shift);
/* the int8 Add (ops/add_s8.c), Helium lanes on the M55 */
void mt_op_add_s8_forward_fast(const int8_t *a, const int8_t *b, int8_t *y, size_t N, const int32_t *rq,
                               uint32_t zero_points, uint32_t range);
void mt_op_dense_s8_forward_fast(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq, int8_t *y,
                                 uint32_t B, uint32_t D, uint32_t U, uint32_t packed);

#endif /* MT_OPS_FAST_H */
