/*
 * Gradients through frozen int8 ops: the straight-through estimator (STE) of quantization-aware
 * training, as PyTorch's fake quantization computes it.
 *
 * An int8 op's forward is y_q = clamp(requant(W_q ⋆ (x_q - zx) + b) + zy, lo, hi). Its float
 * reading, with x = sx·(x_q - zx), y = sy·(y_q - zy) and w = sw[c]·W_q:
 *
 *   y = FQ(x ⋆ w + sx·sw·b;  sy, zy, lo, hi),   FQ(v) = sy·(clamp(round(v / sy) + zy, lo, hi) - zy)
 *
 * the model torch.fake_quantize_per_tensor_affine(v, sy, zy, quant_min = lo, quant_max = hi)
 * computes, the fused activation (ReLU, ReLU6) being the clamp range as TFLite folds it. Its
 * gradient (STE): d FQ / dv = 1 where round(v / sy) + zy lies inside [lo, hi] (both ends
 * included, as PyTorch's mask), 0 where the clamp cut it. The rounding is the forward's own:
 * the mask is 1 exactly where the forward's clamp left its requantized value unchanged, so a
 * backward recomputes that value from the int8 input it keeps (backward_reads: input 0, and
 * Add's both) and needs no mask stored, and an output that lies on a bound is told apart from
 * one that was cut to it. PyTorch rounds v / sy in float instead (LiteRT's integers here), so
 * the two masks differ only where the two roundings straddle a bound.
 *
 * Gradients of int8 activations are f32, one per element in the activation's own layout
 * ([B, count] as the int8 values), with respect to the dequantized value x (not x_q): what
 * flows into a float op after a DEQUANTIZE and out of one before a QUANTIZE unchanged. So
 *
 *   dv = dy · mask                          (in place over dy, as the float ops' fused activations)
 *   dx += wᵀ ⋆ dv,  w = sw[c]·W_q[...]      dequantized per use (one float multiply, the value
 *                                           torch's fake-quantized weight holds), one fused
 *                                           multiply-add per term in the float kernels' order
 *
 * and never a float copy of the weights: the planner decodes the per-channel scales sw (one
 * float per output channel) into the weight's runtime record (mt_q_weight_scales). Pools,
 * Mean, Add and Reshape move the gradient as their float ops do (Add: to both operands; Mean:
 * dy / P; average pool: dy / count; max pool: to the window's first maximum), masked where a
 * clamp can cut (Add, Mean). The int8 weights never train (the layer that trains is float:
 * the importer dequantizes its weights).
 */
#ifndef MT_OPS_QUANT_GRAD_H
#define MT_OPS_QUANT_GRAD_H

#include "mt_fma.h"
#include "ops/quant.h"

/* 1 where the forward's clamp of a requantized sum left it unchanged: lo <= v <= hi with
 * v = requant(acc + bias) + zy, wrapping in int32 as the forward's sum does (mt_q_requantize) */
static inline int mt_q_unsaturated(int32_t acc, mt_q_requant q, int32_t y_zp, int32_t lo, int32_t hi)
{
    const uint32_t sum = (uint32_t)acc + (uint32_t)q.bias;
    const int32_t v = (int32_t)((uint32_t)mt_q_scale((int32_t)sum, q) + (uint32_t)y_zp);
    return v >= lo && v <= hi;
}

/* ... FullyConnected's (mt_q_fc_requantize) */
static inline int mt_q_fc_unsaturated(int32_t acc, mt_q_fc q, int32_t y_zp, int32_t lo, int32_t hi)
{
    const int32_t s = mt_q_fc_scale((int32_t)((uint32_t)acc + (uint32_t)q.bias), q);
    const int32_t v = (int32_t)((uint32_t)s + (uint32_t)y_zp);
    return v >= lo && v <= hi;
}

/* The per-output-channel weight scales the planner decoded for an int8 weight whose op's
 * backward runs (planner.c): f32 [channels], a per-tensor scale repeated. They live where a
 * trained weight keeps its optimizer state (mt_tensor_rt.opt_state): an int8 weight never
 * trains, so the field is free, and the tensor record keeps its size. */
static inline const float *mt_q_weight_scales(const mt_tensor_rt *w)
{
    return w->opt_state;
}

/* ---- the backward kernels (no siblings yet: the reference runs on every target) ----
 * dy is the output's gradient, masked in place; dx += the input's (NULL: none). */

/* conv_s8.c: Conv2D and DepthwiseConv2D, the forward's parameters and the weight scales */
void mt_op_conv2d_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                              const int32_t *rq, float *dy, float *dx, uint32_t B, const struct mt_spatial *g,
                              uint32_t packed);
void mt_op_depthwise_conv2d_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                                        const int32_t *rq, float *dy, float *dx, uint32_t B,
                                        const struct mt_spatial *g, uint32_t packed);
/* dense_s8.c: FullyConnected x [B, D], W [U, D] */
void mt_op_dense_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                             const int32_t *rq, float *dy, float *dx, uint32_t B, uint32_t D, uint32_t U,
                             uint32_t packed);
/* add_s8.c: da += dy·mask, db += dy·mask (either may be NULL) */
void mt_op_add_s8_backward(const int8_t *a, const int8_t *b, float *dy, float *da, float *db, size_t N,
                           const int32_t *rq, uint32_t zero_points, uint32_t range);
/* pooling_s8.c */
void mt_op_max_pool2d_s8_backward(const int8_t *x, const float *dy, float *dx, uint32_t B,
                                  const struct mt_spatial *g);
void mt_op_average_pool2d_s8_backward(const float *dy, float *dx, uint32_t B, const struct mt_spatial *g);
void mt_op_mean_s8_backward(const int8_t *x, float *dy, float *dx, uint32_t B, uint32_t P, uint32_t C,
                            uint32_t zero_points, int32_t multiplier, int32_t shift);
/* quantize.c: QUANTIZE dx += dy where -128 <= round(x / scale) + zp <= 127 */
void mt_op_quantize_f32_s8_backward(const float *x, const float *dy, float *dx, size_t N, float scale,
                                    int32_t zero_point);

/* backward_reads() of the int8 ops that recompute their mask from input 0 (and Add's from
 * both): ops/quant_check.c */
uint32_t mt_q_reads_input(const mt_op_desc *op, uint32_t grad_inputs);
uint32_t mt_q_reads_inputs_0_1(const mt_op_desc *op, uint32_t grad_inputs);

#endif /* MT_OPS_QUANT_GRAD_H */
