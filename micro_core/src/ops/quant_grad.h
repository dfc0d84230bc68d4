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
 * clamp can cut (Add, Mean).
 *
 * Int8 layers trained in place (convert(..., int8_train=True)): Conv2D, DepthwiseConv2D and
 * FullyConnected whose int8 weight W_q and int32 bias b_q are trained weights. The gradients
 * are those of the real weight w = sw[c]·W_q and the real bias sx·sw[c]·b_q of the float
 * reading above, f32, from the int8 input read as x = sx·(x_q - zx) per use and dv:
 *
 *   dW[c, ..] += Σ dv[c]·x          (Σ over the batch and the outputs that tap x; the float
 *                                    op's reference order: each sum from +0, then added)
 *   db[c]     += Σ dv[c]
 *
 * which the float op's reference backward computes, bit for bit, on the dequantized input.
 * Their update is ops/qas.c's (quantization-aware scaling). The weight's runtime record holds
 * its scales sw[0..C) and then sx (mt_q_input_scale); the bias keeps no record: its scales
 * sx·sw[c] are read in place from the image's quantization record (mt_quant_scales_f32).
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

/* Σ_oc dy[oc]·w[oc], w[oc] = sw[oc]·W[oc·ws] dequantized per use (one float multiply), from +0 by
 * ascending oc, one fused multiply-add a term: the input-gradient sum of the int8 weighted ops
 * (ws: W's stride from one output channel to the next) */
static inline float mt_q_dx_sum(const float *dy, const int8_t *w, size_t ws, const float *w_scale, uint32_t OC)
{
    float acc = 0.0f;
    for (uint32_t oc = 0; oc < OC; ++oc) acc = mt_fmaf(dy[oc], w_scale[oc] * (float)w[(size_t)oc * ws], acc);
    return acc;
}

/* The per-output-channel weight scales the planner decoded for an int8 weight whose op's
 * backward runs (planner.c): f32 [channels], a per-tensor scale repeated, then the scale sx
 * of the op's input (what a weight gradient reads x in). They live where a float weight keeps
 * its optimizer state (mt_tensor_rt.opt_state), so the tensor record keeps its size; a
 * trained int8 weight or int32 bias keeps its momentum after them (mt_qas_state). */
static inline const float *mt_q_weight_scales(const mt_tensor_rt *w)
{
    return w->opt_state;
}

/* Floats of a trained int8 weight's or int32 bias's decoded record before its momentum: the
 * weight's `channels` scales and sx; none for a bias, whose scales sx·sw[c] the image holds
 * as f32 already (its QAS view reads them there, mt_qas_tensor_of) and no kernel reads (a
 * frozen int8 weight's record is its scales alone: no weight gradient reads sx) */
static inline uint32_t mt_q_record_floats(uint8_t dtype, uint32_t channels)
{
    return dtype == MT_DTYPE_I8 ? channels + 1u : 0u;
}

/* ---- the backward kernels (no siblings yet: the reference runs on every target) ----
 * dy is the output's gradient, masked in place; dx += the input's (NULL: none). */

/* What a weighted int8 op's backward writes: dx += the input's gradient, dw += the real
 * weight's and db += the real bias's (each NULL: none), x_scale the input's scale sx. */
typedef struct mt_q_grads {
    float *dx, *dw, *db;
    float x_scale;
} mt_q_grads;

/* conv_s8.c: Conv2D and DepthwiseConv2D, the forward's parameters and the weight scales */
void mt_op_conv2d_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                              const int32_t *rq, float *dy, const mt_q_grads *d, uint32_t B,
                              const struct mt_spatial *g, uint32_t packed);
void mt_op_depthwise_conv2d_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                                        const int32_t *rq, float *dy, const mt_q_grads *d, uint32_t B,
                                        const struct mt_spatial *g, uint32_t packed);
/* ... a pointwise Conv2D (1x1, stride 1) whose output's gradient is a global mean's broadcast
 * g [B, OC] (every one of its P pixels' dy[b,p,:] = g[b,:]; conv_s8.c), W frozen (d->dw NULL):
 * d->db and d->dx as mt_op_conv2d_s8_backward computes them from the expanded gradient, with
 * `work` of mt_q_broadcast_work_floats(OC) floats (MT_BROADCAST_PIXELS rows of OC, then OC
 * sums), which the planner lays just before g in g's own buffer (plan_lifetimes.c,
 * mt_plan_grad_floats): it lives while g does */
#define MT_BROADCAST_PIXELS 4u /* the dx kernel's block of pixels (ops/portable/conv_s8_backward_portable.c) */
static inline uint32_t mt_q_broadcast_work_floats(uint32_t OC)
{
    return ((MT_BROADCAST_PIXELS + 1u) * OC + 3u) & ~3u; /* g stays 16-byte aligned */
}
void mt_op_conv2d_s8_broadcast_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                                        const int32_t *rq, const float *g, const mt_q_grads *d, uint32_t B, uint32_t P,
                                        uint32_t C, uint32_t OC, uint32_t packed, float *work);
/* dense_s8.c: FullyConnected x [B, D], W [U, D] */
void mt_op_dense_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                             const int32_t *rq, float *dy, const mt_q_grads *d, uint32_t B, uint32_t D, uint32_t U,
                             uint32_t packed);

/* ---- ops/qas.c: an int8 weight whose first k = w->rows_held rows alone the arena holds, the
 * others read in place from the image (ops/kernel.h, mt_weight_row_s8; plan_sparse.c) ----
 * A FullyConnected's or pointwise Conv2D's forward and mask over N rows (samples, pixels) of
 * x [N, D], through the kernel the op calls over its whole weight (its sibling), a row at a
 * time over the two row ranges (mt_s8_held_rows): units 0..k-1 from the arena, k..U-1 from
 * the image, each range's outputs at its offset in y [N, U] (bias + k, rq + 2k: two words a
 * unit). Every
 * output is an integer sum requantized by its own unit's constants: the bytes (and the mask)
 * of the call over the whole weight in one array. */
typedef void (*mt_s8_rows_kernel)(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                  int8_t *y, uint32_t N, uint32_t D, uint32_t U, uint32_t packed);
typedef void (*mt_s8_mask_kernel)(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                  float *dy, uint32_t N, uint32_t D, uint32_t U, uint32_t packed);
/* forward (y int8 [N, U] at out) or, forward NULL, mask (dy float [N, U] at out) */
void mt_s8_held_rows(mt_s8_rows_kernel forward, mt_s8_mask_kernel mask, const int8_t *x, const mt_tensor_rt *w,
                     const int32_t *bias, const int32_t *rq, void *out, uint32_t N, uint32_t D, uint32_t U,
                     uint32_t packed);
/* dx[j] += Σ_r dz[r]·w[r,j] for j < D over R rows of D (mt_weight_row_s8), w = sw[r]·W[r,j]
 * dequantized per use: mt_q_dx_sum's sums (from +0 by ascending r, a fused multiply-add a
 * term, then added) four columns at a time, the rows read along their length */
void mt_q_weight_rows_dx(const mt_tensor_rt *w, const float *w_scale, const float *dz, uint32_t R, uint32_t D,
                         float *dx);

/* The gradients a weighted int8 op's adapter passes (its input's, weight's, bias's) */
mt_q_grads mt_q_grads_of(const mt_op_desc *op, const mt_tensor_rt *t);

/* ---- ops/qas.c: the update of a trained int8 weight or int32 bias ----
 * q: N int8 (dtype MT_DTYPE_I8) or int32 (MT_DTYPE_I32) values; g their real gradient;
 * buf N floats of momentum (NULL when momentum is 0); element i scales with
 * scale[(i / inner) % channels]. With d = g·grad_scale, momentum > 0: buf = momentum·buf + d,
 * d = buf (PyTorch's SGD), then (quantization-aware scaling, tiny-training):
 *   q ← sat(round_half_even(double(q) − double(lr·(d / scale))))
 * sat: [−127, 127] for int8, int32's range for int32. With a master copy m (float, in W_q's
 * units, from W_q at init): m ← clamp(m − lr·(d / scale), −127, 127) in float, and
 * q ← round_half_even(m): steps smaller than half a quantization step accumulate in m. */
typedef struct mt_qas_tensor {
    void *q;
    uint8_t dtype;
    const float *g;
    float *buf;
    float *master; /* an int8 weight's float master copy (MT_TENSOR_MASTER), else NULL */
    const float *scale;
    size_t N;
    uint32_t inner, channels;
} mt_qas_tensor;

void mt_qas_sgd_update(const mt_qas_tensor *t, float lr, float momentum, float grad_scale);
/* 1 when every gradient element, momentum and step lr·(d / scale) is finite (the update then
 * leaves finite int8/int32 values: they saturate); writes nothing */
int mt_qas_sgd_update_is_finite(const mt_qas_tensor *t, float lr, float momentum, float grad_scale);
/* The update (check_only 0; answers 1) or its guard (check_only 1; writes nothing) over
 * `blocks` runs of `len` elements of t, run j at element j·stride, its momentum at j·len: a
 * sparse update's part (session.h, mt_weight_part); one run of N for a whole tensor */
int mt_qas_sgd_update_runs(const mt_qas_tensor *t, uint32_t blocks, uint32_t len, uint32_t stride, float lr,
                           float momentum, float grad_scale, int check_only);
/* The view of trained weight t, input k (1: weight, 2: bias) of `op` in image img, with
 * gradient g: a weight's scales from its record, a bias's from img in place */
void mt_qas_tensor_of(const mt_image *img, const mt_op_desc *op, int k, mt_tensor_rt *t, const float *g,
                      float momentum, mt_qas_tensor *v);
/* The float master copy of trained int8 weight t (MT_TENSOR_MASTER), laid out by the planner
 * as the piece right after the weight, or NULL */
static inline float *mt_q_master_of(const mt_tensor_rt *t)
{
    if (!(t->flags & MT_TENSOR_MASTER) || !t->trained) return NULL;
    const size_t bytes = ((size_t)t->count + (MT_ARENA_ALIGN - 1u)) & ~(size_t)(MT_ARENA_ALIGN - 1u);
    return (float *)(void *)((uint8_t *)t->mutable_data + bytes);
}

/* round half to even of v (never NaN: the guard sees to it), saturated to [lo, hi] (|lo|, |hi| < 2^62) */
int64_t mt_qas_round(double v, int64_t lo, int64_t hi);
/* add_s8.c: da += dy·mask, db += dy·mask (either may be NULL) */
void mt_op_add_s8_backward(const int8_t *a, const int8_t *b, float *dy, float *da, float *db, size_t N,
                           const int32_t *rq, uint32_t zero_points, uint32_t range);
/* pooling_s8.c */
void mt_op_max_pool2d_s8_backward(const int8_t *x, const float *dy, float *dx, uint32_t B,
                                  const struct mt_spatial *g);
void mt_op_average_pool2d_s8_backward(const float *dy, float *dx, uint32_t B, const struct mt_spatial *g);
void mt_op_mean_s8_backward(const int8_t *x, float *dy, float *dx, uint32_t B, uint32_t P, uint32_t C,
                            uint32_t zero_points, int32_t multiplier, int32_t shift, int broadcast);
/* quantize.c: QUANTIZE dx += dy where -128 <= round(x / scale) + zp <= 127 */
void mt_op_quantize_f32_s8_backward(const float *x, const float *dy, float *dx, size_t N, float scale,
                                    int32_t zero_point);

/* backward_reads() of the int8 ops that recompute their mask from input 0 (and Add's from
 * both): ops/quant_check.c */
uint32_t mt_q_reads_input(const mt_op_desc *op, uint32_t grad_inputs);
uint32_t mt_q_reads_inputs_0_1(const mt_op_desc *op, uint32_t grad_inputs);

#endif /* MT_OPS_QUANT_GRAD_H */
