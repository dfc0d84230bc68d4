/*
 * Integer arithmetic of TFLite's int8 quantization scheme, shared by the int8 inference ops
 * (quantize.c, conv_s8.c, dense_s8.c, add_s8.c, pooling_s8.c, shape_s8.c).
 *
 *   real = scale · (q - zero_point)          int8 activations (per tensor), int8 weights
 *                                            (per output channel, zero point 0), int32 bias
 *                                            (scale = input scale · weight scale)
 *   requantization of an int32 accumulator to the output's scale: acc · M with
 *   M = multiplier · 2^(shift - 31), multiplier in [2^30, 2^31) (or 0), shift in [-31, 30],
 *   computed as TFLite's reference kernels do by default ("double rounding", gemmlowp's
 *   SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT).
 *
 * The multipliers and shifts are computed once, by the converter, from the float scales
 * exactly as TFLite's Prepare does (py_facade/microtrain/convert/int8_quant.py), and stored
 * in the image: the core never needs double arithmetic for them.
 *
 * Integer sums are exact whatever the order, so any loop order (and any fused or in-place
 * schedule) gives the reference's bits. Right shifts of negative numbers are arithmetic,
 * as on every compiler the project targets (GCC and Clang document it).
 */
#ifndef MT_OPS_QUANT_H
#define MT_OPS_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "ops/kernel.h"
#include "select/kernels.h"

/* Most a shift may be either way (QuantizeMultiplier's output range). */
#define MT_QUANT_MIN_SHIFT (-31)
#define MT_QUANT_MAX_SHIFT 30

/* floor((a·b + 2^30) / 2^31): mt_q_doubling_high_mul where a·b is not INT32_MIN² (a
 * requantization's multipliers are >= 0, mt_q_check_requant) */
static inline int32_t mt_q_high_mul_unsaturated(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31); /* arithmetic shift */
}

/* gemmlowp's SaturatingRoundingDoublingHighMul: (a·b + nudge) / 2^31 truncated, nudge 2^30
 * for a·b >= 0 and 1 - 2^30 below, saturating the one overflow. Both cases are
 * floor((a·b + 2^30) / 2^31) (for a·b < 0, truncation is floor((y + 2^31 - 1) / 2^31) of
 * y = a·b + 1 - 2^30): x.5 rounds up, -x.5 too; one 64-bit add and shift, no branch.
 * tests/core/test_int8_quant.c holds it to gemmlowp's form. */
static inline int32_t mt_q_doubling_high_mul(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) return INT32_MAX;
    return mt_q_high_mul_unsaturated(a, b);
}

/* x / 2^exponent rounded to nearest, ties away from zero (gemmlowp), 0 <= exponent <= 31. */
static inline int32_t mt_q_rounding_divide_by_pot(int32_t x, int exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1), threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + ((x & mask) > threshold ? 1 : 0);
}

/* acc · multiplier · 2^(shift - 31): TFLite's MultiplyByQuantizedMultiplier (int32). The left
 * shift wraps as TFLite's int32 multiply does on every target (through uint32 here, where a
 * signed overflow would be undefined). */
static inline int32_t mt_q_multiply(int32_t acc, int32_t multiplier, int32_t shift)
{
    const int left = shift > 0 ? (int)shift : 0;
    const int right = shift > 0 ? 0 : (int)-shift;
    const int32_t shifted = (int32_t)((uint32_t)acc << left);
    return mt_q_rounding_divide_by_pot(mt_q_doubling_high_mul(shifted, multiplier), right);
}

static inline int8_t mt_q_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* One output channel's requantization, its loads and shift decisions made once (a loop over
 * that channel's outputs keeps it in registers): bias (0 when none), multiplier, the left
 * shift of mt_q_multiply (shift > 0) or its rounding right shift e (shift <= 0), and 2^(e-1). */
typedef struct mt_q_requant {
    int32_t bias, multiplier, left, right;
    uint32_t half;
} mt_q_requant;

static inline mt_q_requant mt_q_requant_of(const int32_t *bias, const int32_t *rq, uint32_t oc)
{
    const int32_t shift = rq[2 * oc + 1], right = shift > 0 ? 0 : -shift;
    mt_q_requant q = {bias ? bias[oc] : 0, rq[2 * oc], shift > 0 ? shift : 0, right,
                      right > 0 ? (uint32_t)1 << (right - 1) : 0u};
    return q;
}

/* MultiplyByQuantizedMultiplier(sum, rq) (mt_q_multiply) with q's constants. For e = 0 it is
 * the high multiply of the shifted sum. For e >= 1, with P = sum·M + 2^30 (64-bit, no
 * overflow: |sum·M| < 2^62), the high multiply is h = floor(P / 2^31), and gemmlowp's
 * rounding shift of h (ties away from zero) is floor((h + 2^(e-1) - [h < 0]) / 2^e): for
 * h >= 0 it adds 1 where the remainder is >= 2^(e-1), for h < 0 where it is > 2^(e-1).
 * h < 0 exactly when P < 0, and floor(floor(a / b) / c) = floor(a / (b·c)), so the result
 * is floor((P + (2^(e-1) - [P < 0])·2^31) / 2^(31+e)).
 * [P < 0] may be read from the sum's sign, [sum < 0], known before the product: with M >= 0
 * (mt_q_check_requant refuses a negative multiplier) they differ only where sum < 0 and
 * sum·M >= -2^30, so 0 <= P <= 2^30, and there both numerators, P + 2^(e-1)·2^31 and
 * P + (2^(e-1) - 1)·2^31, lie in [0, 2^(31+e)): both results are 0. So with
 * t = 2^(e-1) - [sum < 0] (>= 0), the result is the high word of sum·M + t·2^31 + 2^30,
 * shifted right by e - 1; the constant's low word is (t << 31) | 2^30 and its high word
 * t >> 1. On a 32-bit core: an add of the sign, two shifts, an SMLAL and the shift, where
 * the two rounding steps took about twice as many and the test of P after the product four
 * more. right_is_zero is q.right == 0, which a loop over one channel's outputs passes as a
 * constant (s8_dot.h). tests/core/test_int8_quant.c holds it to gemmlowp's two steps. */
static inline int32_t mt_q_scale_known(int32_t sum, mt_q_requant q, int right_is_zero)
{
    if (right_is_zero) return mt_q_high_mul_unsaturated((int32_t)((uint32_t)sum << q.left), q.multiplier);
    const uint32_t t = q.half + (uint32_t)(sum >> 31); /* sum >> 31: 0 or -1 */
    const int64_t p = (int64_t)sum * q.multiplier + (int64_t)(((uint64_t)t << 31) | ((uint64_t)1 << 30));
    return (int32_t)(p >> 32) >> (q.right - 1);
}

static inline int32_t mt_q_scale(int32_t sum, mt_q_requant q)
{
    return mt_q_scale_known(sum, q, q.right == 0);
}

/* clamp(MultiplyByQuantizedMultiplier(acc + bias, rq) + zy, lo, hi): mt_q_multiply's steps.
 * The doubling high multiply needs no saturation here: a requantization table's multipliers
 * are >= 0 (mt_q_check_requant), so the product is never INT32_MIN². */
static inline int8_t mt_q_requantize(int32_t acc, mt_q_requant q, int32_t y_zp, int32_t lo, int32_t hi)
{
    const uint32_t sum = (uint32_t)acc + (uint32_t)q.bias; /* wraps, as the int32 sum would on any target */
    return mt_q_clamp(mt_q_scale((int32_t)sum, q) + y_zp, lo, hi);
}

/* Output channel oc of a Conv2D, DepthwiseConv2D or FullyConnected from its sum of W·(x - zx):
 * clamp(MultiplyByQuantizedMultiplier(acc + b[oc], rq[oc]) + zy, lo, hi) (bias may be NULL). */
static inline int8_t mt_q_output(int32_t acc, const int32_t *bias, const int32_t *rq, uint32_t oc, int32_t y_zp,
                                 int32_t lo, int32_t hi)
{
    return mt_q_requantize(acc, mt_q_requant_of(bias, rq, oc), y_zp, lo, hi);
}

/* A signed byte of a packed param: byte k (0..3) of p as int8. */
static inline int32_t mt_q_param_byte(uint32_t p, int k)
{
    return (int32_t)(int8_t)(uint8_t)(p >> (8 * k));
}

/* The packed activation params of Conv2D, DepthwiseConv2D and FullyConnected:
 * zx | zy << 8 | act_min << 16 | act_max << 24 (signed bytes). */
typedef struct mt_q_params {
    int32_t x_zp, y_zp, act_min, act_max;
} mt_q_params;

static inline mt_q_params mt_q_unpack(uint32_t packed)
{
    mt_q_params p = {mt_q_param_byte(packed, 0), mt_q_param_byte(packed, 1), mt_q_param_byte(packed, 2),
                     mt_q_param_byte(packed, 3)};
    return p;
}

/* Views of an int8 or int32 runtime tensor's data. */
static inline const int8_t *mt_q_s8(const mt_tensor_rt *t)
{
    return (const int8_t *)(const void *)t->data;
}

static inline int8_t *mt_q_s8_out(mt_tensor_rt *t)
{
    return (int8_t *)(void *)t->mutable_data;
}

static inline const int32_t *mt_q_s32(const mt_tensor_rt *t)
{
    return (const int32_t *)(const void *)t->data;
}

/* ---- reference kernels of the int8 ops (their math: the comment atop each source file) ----
 * Conv2D, DepthwiseConv2D (whole, and one output row), the pointwise Conv2D, FullyConnected,
 * Add and Mean have siblings that the op adapters call on every target: they are rows of the
 * kernel table (select/kernels.def, their parameters), their references mt_op_..._ref, compiled
 * where MT_REFERENCE_KERNELS (select/target.h) is 1, for the tests. */

struct mt_spatial;
/* quantize.c: y = clamp(round(x / scale) + zp);  y = scale · (x - zp) */
void mt_op_quantize_f32_s8(const float *x, int8_t *y, size_t N, float scale, int32_t zero_point);
void mt_op_dequantize_s8_f32(const int8_t *x, float *y, size_t N, float scale, int32_t zero_point);
/* conv_s8.c: a pointwise CONV2D_S8 (`expand`) computed row by row inside the depthwise `dw`
 * that alone reads it, its output a ring of KH rows (the planner's operator fusion) */
void mt_op_expand_depthwise_s8_forward(const mt_op_desc *expand, const mt_op_desc *dw, mt_tensor_rt *t,
                                       uint32_t n);
/* pooling_s8.c */
void mt_op_max_pool2d_s8_forward(const int8_t *x, int8_t *y, uint32_t B, const struct mt_spatial *g);
void mt_op_average_pool2d_s8_forward(const int8_t *x, int8_t *y, uint32_t B, const struct mt_spatial *g);
/* MEAN_S8's multiplier and shift with 1/P folded in, as TFLite folds them (pooling_s8.c):
 * k = min(floor(log2 P), 32, 31 + shift), M' = (multiplier · 2^k) / P, s' = shift - k */
static inline void mt_q_mean_scale(uint32_t P, int32_t multiplier, int32_t shift, int32_t *m, int32_t *s)
{
    int32_t k = 0;
    for (uint32_t v = P; v >>= 1;) ++k;
    if (k > 31 + shift) k = 31 + shift;
    *m = (int32_t)(((int64_t)multiplier << k) / (int64_t)P);
    *s = shift - k;
}

/* shape_s8.c: [H, W, C] padded by before[d] and out[d] - in[d] - before[d] after */
void mt_op_pad_s8_forward(const int8_t *x, int8_t *y, uint32_t B, const uint32_t in[3], const uint32_t out[3],
                          const uint32_t before[3], int8_t value);

/* ---- plan-time checks shared by the int8 ops (quant_check.c) ---- */

/* x's quantization record is one channel and (scale, zero point) = (*scale, *zero_point). */
mt_status mt_q_per_tensor(const mt_image *img, const mt_tensor_desc *t, float *scale, int32_t *zero_point);
/* a and b are I8 activations with the same per-tensor scale and zero point. */
mt_status mt_q_same_quant(const mt_image *img, const mt_tensor_desc *a, const mt_tensor_desc *b);
/* A requantization table: CONST I32 [rows, 2] of (multiplier >= 0, shift in [-31, 30]). */
mt_status mt_q_check_requant(const mt_image *img, uint32_t index, uint32_t rows);
/* An int8 op's weight: CONST I8 of ndim dims, zero point 0, one channel or `channels` along
 * `axis`. */
mt_status mt_q_check_weight(const mt_image *img, uint32_t index, uint32_t ndim, uint32_t axis,
                            uint32_t channels);
/* The optional int32 bias (input 2): absent, or CONST I32 [units]. */
mt_status mt_q_check_bias(const mt_image *img, const mt_op_desc *op, uint32_t units);
/* Packed activation params (in_zp | out_zp << 8 | act_min << 16 | act_max << 24) agree with
 * x's and y's zero points, and act_min <= act_max. */
mt_status mt_q_check_packed(uint32_t packed, int32_t x_zp, int32_t y_zp);

#endif /* MT_OPS_QUANT_H */
