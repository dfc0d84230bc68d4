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
 *   SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT): Conv2D,
 *   DepthwiseConv2D, Add, Mean. FullyConnected's reference scales in double instead
 *   (mt_q_fc_scale below: one rounding of the double product, ties away from zero).
 *
 * The multipliers and shifts (and FullyConnected's double scales) are computed once, by the
 * converter, from the float scales exactly as LiteRT does (py_facade/microtrain/convert/
 * int8_quant.py), and stored in the image: the core never needs double arithmetic for them.
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

/* MultiplyByQuantizedMultiplier(sum, rq) (mt_q_multiply) with q's constants, in the form
 * `form` names (MT_Q_RIGHT_*, mt_q_right_form: a constant where a loop over one channel's
 * outputs inlines it, s8_dot.h). For e = 0 it is the high multiply of the shifted sum. For
 * e >= 1, with P = sum·M + 2^30 (64-bit, no overflow: |sum·M| < 2^62), the high multiply is
 * h = floor(P / 2^31), and gemmlowp's rounding shift of h (ties away from zero) is
 * floor((h + 2^(e-1) - [h < 0]) / 2^e): for h >= 0 it adds 1 where the remainder is >= 2^(e-1),
 * for h < 0 where it is > 2^(e-1). h < 0 exactly when P < 0, and floor(floor(a / b) / c) =
 * floor(a / (b·c)), so the result is floor((P + (2^(e-1) - [P < 0])·2^31) / 2^(31+e)).
 * [P < 0] may be read from the sum's sign, [sum < 0], known before the product: with M >= 0
 * (mt_q_check_requant refuses a negative multiplier) they differ only where sum < 0 and
 * sum·M >= -2^30, so 0 <= P <= 2^30, and there both numerators, P + 2^(e-1)·2^31 and
 * P + (2^(e-1) - 1)·2^31, lie in [0, 2^(31+e)): both results are 0. So with
 * t = 2^(e-1) - [sum < 0] (>= 0), the result is the high word of sum·M + t·2^31 + 2^30,
 * shifted right by e - 1: an SMLAL onto the constant t·2^31 + 2^30, whose low word is
 * ((t & 1) << 31) | 2^30 and high word t >> 1. For e >= 2, 2^(e-1) is even, so t is odd
 * exactly when sum < 0: the low word is (sum & 2^31) | 2^30 and the high word
 * 2^(e-2) - [sum < 0] = 2^(e-2) + (sum >> 31), three instructions before the SMLAL where
 * e = 1 (t = 1 or 0) takes four. tests/core/test_int8_quant.c holds every form to gemmlowp's
 * two steps. */
#define MT_Q_RIGHT_ZERO 0 /* q.right == 0 */
#define MT_Q_RIGHT_ONE 1  /* q.right == 1 (the form holds for every q.right >= 1) */
#define MT_Q_RIGHT_TWO 2  /* q.right >= 2 */

static inline int mt_q_right_form(mt_q_requant q)
{
    return q.right == 0 ? MT_Q_RIGHT_ZERO : q.right == 1 ? MT_Q_RIGHT_ONE : MT_Q_RIGHT_TWO;
}

static inline int32_t mt_q_scale_known(int32_t sum, mt_q_requant q, int form)
{
    if (form == MT_Q_RIGHT_ZERO) return mt_q_high_mul_unsaturated((int32_t)((uint32_t)sum << q.left), q.multiplier);
    uint64_t constant;
    if (form == MT_Q_RIGHT_TWO) {
        const uint32_t high = (q.half >> 1) + (uint32_t)(sum >> 31); /* sum >> 31: 0 or -1 */
        constant = (uint64_t)high << 32 | (((uint32_t)sum & 0x80000000u) | 0x40000000u);
    } else {
        const uint32_t t = q.half + (uint32_t)(sum >> 31);
        constant = ((uint64_t)t << 31) | ((uint64_t)1 << 30);
    }
    const int64_t p = (int64_t)sum * q.multiplier + (int64_t)constant;
    return (int32_t)(p >> 32) >> (q.right - 1);
}

/* The reference kernels' form: every e >= 1 as e = 1, so that the siblings' MT_Q_RIGHT_TWO is
 * held to a form computed otherwise */
static inline int32_t mt_q_scale(int32_t sum, mt_q_requant q)
{
    return mt_q_scale_known(sum, q, q.right == 0 ? MT_Q_RIGHT_ZERO : MT_Q_RIGHT_ONE);
}

/* clamp(MultiplyByQuantizedMultiplier(acc + bias, rq) + zy, lo, hi): mt_q_multiply's steps.
 * The doubling high multiply needs no saturation here: a requantization table's multipliers
 * are >= 0 (mt_q_check_requant), so the product is never INT32_MIN². */
static inline int8_t mt_q_requantize(int32_t acc, mt_q_requant q, int32_t y_zp, int32_t lo, int32_t hi)
{
    const uint32_t sum = (uint32_t)acc + (uint32_t)q.bias; /* wraps, as the int32 sum would on any target */
    return mt_q_clamp(mt_q_scale((int32_t)sum, q) + y_zp, lo, hi);
}

/* Output channel oc of a Conv2D or DepthwiseConv2D from its sum of W·(x - zx):
 * clamp(MultiplyByQuantizedMultiplier(acc + b[oc], rq[oc]) + zy, lo, hi) (bias may be NULL). */
static inline int8_t mt_q_output(int32_t acc, const int32_t *bias, const int32_t *rq, uint32_t oc, int32_t y_zp,
                                 int32_t lo, int32_t hi)
{
    return mt_q_requantize(acc, mt_q_requant_of(bias, rq, oc), y_zp, lo, hi);
}

/*
 * FullyConnected's requantization (DENSE_S8) is not the one above: LiteRT's reference
 * FullyConnected (BUILTIN_REF, since "Make the fully_connected ref kernel do requant in float",
 * April 2025) scales in double, from the float scales:
 *
 *   E = double(sx) · double(sw[u]) / double(sy)               (the product exact, the quotient rounded)
 *   y = clamp(int32(round(double(acc) · E)) + zy, lo, hi)
 *
 * the product double(acc)·E rounded to double (to nearest, ties to even), round() half away
 * from zero, int32(v) as x86-64 converts (INT32_MIN where v does not fit, which needs E > 1)
 * and zy added in int32, wrapping. The image holds E's binary64 bits per unit: rq[2u] its low
 * word, rq[2u + 1] its high word (mt_q_check_fc_requant: positive, normal, below 2^20).
 *
 * In integers: E = m·2^-k with m in [2^52, 2^53) (the significand with its hidden bit) and
 * k = 1075 - E's exponent field (>= 33: E < 2^20). With a = |acc| <= 2^31 (rounding is
 * symmetric: fl(-p) = -fl(p), round(-v) = -round(v)), P = a·m < 2^84 and the double product
 * is fl(P)·2^-k, fl(P) being P rounded to 53 significant bits: P itself for P < 2^53, else the
 * nearest multiple of 2^s, s = bitlen(P) - 53, ties to even. The result is
 *
 *   r = floor((P + 2^(k-1) + [s >= 1]·2^(s-1)) / 2^k)
 *
 * because round-half-away of fl(P)·2^-k (>= 0) is floor((fl(P) + 2^(k-1)) / 2^k), and fl moves
 * P across one of the steps T (T = 2^(k-1) mod 2^k, a multiple of 2^s: s <= k - 22 wherever r
 * fits int32) only from P in [T - 2^(s-1), T), which it rounds up to T (at T - 2^(s-1), a tie,
 * T is the even multiple); adding 2^(s-1) moves exactly those P across T. Scaling m by 2^j
 * scales P, 2^k and 2^s alike, so r is the same with m·2^j, k + j and s + j.
 *
 * E < 1 (k >= 53, the usual scales: k is 55..65 for most layers) takes k' = max(k, 64) and
 * m' = m·2^(k'-k) < 2^64. With P' = a·m' = top·2^32 + low (top < 2^63, low < 2^32), r is
 *
 *   (top + 2^(k'-33) + c) >> (k' - 32),   c = (low + [s' >= 1]·2^(s'-1)) >> 32 <= 2^9
 *
 * (s' = bitlen(P') - 53 <= 42): the high word of t = top + 2^(k'-33) shifted right by k' - 64
 * (<= 21), one UMULL and one UMLAL for top, no 64-bit shift. c can change r only where t's low
 * word is within 2^9 of 2^32: only where it is within 2^10 (a chance of 2^-22) is bitlen(P')
 * found (mt_q_fc_carry). It never overflows: |acc·E| < 2^31 but for acc = -2^31, whose result is at
 * most 2^31 in magnitude, INT32_MIN. For k > 85 every |acc·E| < 1/4 (fl(P) < 2^84): m' = 0.
 * E >= 1 (k < 53, "wide") keeps m and k: r = (top + 2^(k-33) + c) >> (k - 32) with c <= 1,
 * and the int32 conversion's overflow.
 * tests/core/test_int8_quant.c holds both to double arithmetic (ties, the rounding of the
 * product, every exponent); tests/ops/test_dense_s8.py to LiteRT.
 */
typedef struct mt_q_fc {
    int32_t bias;         /* 0 when none */
    uint32_t m_lo, m_hi;  /* m' = m_hi·2^32 + m_lo; E < 1: m·2^(64-k) (k < 64), m (k <= 85), 0; E >= 1: m */
    uint32_t shift;       /* E < 1: k' - 64, in [0, 21]; E >= 1: k - 32, in [1, 20] */
    uint32_t wide;        /* E >= 1 */
} mt_q_fc;

/* The exponent field of the largest E (2^20 > E): k = 1075 - 1042 = 33 */
#define MT_Q_FC_MAX_EXPONENT 1042u

static inline mt_q_fc mt_q_fc_of(const int32_t *bias, const int32_t *rq, uint32_t u)
{
    const uint32_t hi = (uint32_t)rq[2 * u + 1], k = 1075u - (hi >> 20); /* sign 0, normal: checked */
    uint64_t m = (uint64_t)((hi & 0xFFFFFu) | 0x100000u) << 32 | (uint32_t)rq[2 * u];
    mt_q_fc q;
    q.bias = bias ? bias[u] : 0;
    q.wide = k < 53u;
    if (q.wide) q.shift = k - 32u;
    else if (k > 85u) m = 0u, q.shift = 21u;     /* every sum rounds to 0 */
    else if (k < 64u) m <<= 64u - k, q.shift = 0u; /* k' = 64 */
    else q.shift = k - 64u;
    q.m_lo = (uint32_t)m, q.m_hi = (uint32_t)(m >> 32);
    return q;
}

/* t + c: the carry into bit 32 of low + 2^(s-1), s = bitlen(P) - 53, P = top·2^32 + low
 * (fl(P) rounding P up; nothing when P < 2^53, which double holds exactly). Rare, so out of
 * line: inlined, its loop's registers cost the common path four stack reloads (M7). */
static __attribute__((noinline, unused)) uint64_t mt_q_fc_carry(uint64_t t, uint64_t top, uint32_t low)
{
    if ((top >> 21) == 0u) return t;
    uint32_t bits = 22u; /* bitlen(top): s = bits + 32 - 53 */
    while (bits < 63u && (top >> bits) != 0u) ++bits;
    return t + (((uint64_t)low + ((uint64_t)1 << (bits - 22u))) >> 32);
}

/* mt_q_fc_scale for E < 1 */
static inline int32_t mt_q_fc_scale_narrow(int32_t acc, mt_q_fc q)
{
    const uint32_t sign = (uint32_t)(acc >> 31), a = ((uint32_t)acc ^ sign) - sign; /* |acc|, 0 or -1 */
    const uint64_t low = (uint64_t)a * q.m_lo;
    const uint64_t top = (uint64_t)a * q.m_hi + (low >> 32); /* floor(P' / 2^32) */
    uint64_t t = top + ((uint64_t)1 << (31u + q.shift));      /* + 2^(k'-1) / 2^32 */
    if ((uint32_t)t >= 0xFFFFFC00u) t = mt_q_fc_carry(t, top, (uint32_t)low);
    const uint32_t r = (uint32_t)(t >> 32) >> q.shift;
    return (int32_t)((r ^ sign) - sign);
}

/* mt_q_fc_scale for E >= 1: the 64-bit shift, and INT32_MIN where the result overflows */
static inline int32_t mt_q_fc_scale_wide(int32_t acc, mt_q_fc q)
{
    const uint32_t a = acc < 0 ? 0u - (uint32_t)acc : (uint32_t)acc;
    const uint64_t low = (uint64_t)a * q.m_lo;
    const uint64_t top = (uint64_t)a * q.m_hi + (low >> 32); /* floor(P / 2^32) < 2^53 */
    const uint64_t below = ((uint64_t)1 << q.shift) - 1u;    /* the bits under the result; c <= 1 */
    uint64_t t = top + ((uint64_t)1 << (q.shift - 1u));
    if ((t & below) == below) t = mt_q_fc_carry(t, top, (uint32_t)low);
    const uint64_t r = t >> q.shift;
    if (r > (uint64_t)INT32_MAX + (acc < 0 ? 1u : 0u)) return INT32_MIN; /* x86-64's cvttsd2si */
    return (int32_t)(acc < 0 ? 0u - (uint32_t)r : (uint32_t)r);
}

/* int32(round(double(acc) · E)) as x86-64's LiteRT computes it (INT32_MIN where it overflows) */
static inline int32_t mt_q_fc_scale(int32_t acc, mt_q_fc q)
{
    return q.wide ? mt_q_fc_scale_wide(acc, q) : mt_q_fc_scale_narrow(acc, q);
}

/* clamp(int32(round((acc + bias) · E)) + zy, lo, hi): the int32 sum and + zy wrap, as LiteRT's do */
static inline int8_t mt_q_fc_requantize(int32_t acc, mt_q_fc q, int32_t y_zp, int32_t lo, int32_t hi)
{
    const int32_t v = mt_q_fc_scale((int32_t)((uint32_t)acc + (uint32_t)q.bias), q);
    return mt_q_clamp((int32_t)((uint32_t)v + (uint32_t)y_zp), lo, hi);
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
/* The constants an int8 row kernel keeps across the calls of one layer (kernels.def's consts:
 * the fused expansion's rows and the depthwise's): a header word (0: not made yet; the caller
 * clears it before the layer's first call), then `group` bytes for each four channels, each
 * family's record within them (a compile-time check where it is defined): the pointwise's
 * (s8_dense_rows.h's mt_s8_units, 116 bytes) and the depthwise's (depthwise_s8_rows.h's
 * dw_group: 188 bytes on the M3 and RISC-V, 216 on x86-64, 332 on the DSP cores, 352 on
 * Helium). The same bytes on every target: the host's plan is the device's. */
#define MT_S8_CONSTS_HEADER 16u
#define MT_S8_POINTWISE_GROUP 128u
#define MT_S8_DEPTHWISE_GROUP 352u
#define MT_S8_CONSTS_BYTES(C, group) (MT_S8_CONSTS_HEADER + ((C) + 3u) / 4u * (group))
/* conv_s8.c: a pointwise CONV2D_S8 (`expand`) computed row by row inside the depthwise `dw`
 * that alone reads it, its output a ring of KH rows (the planner's operator fusion), then
 * the two row kernels' constants (mt_op_expand_depthwise_s8_scratch_bytes of them) */
void mt_op_expand_depthwise_s8_forward(const mt_op_desc *expand, const mt_op_desc *dw, mt_tensor_rt *t,
                                       uint32_t n);
/* The bytes after the ring for the constants of an expansion to CE channels and its depthwise
 * (the planner's query: here, not in conv_s8.c, so that a core without the int8 ops links) */
static inline uint32_t mt_op_expand_depthwise_s8_scratch_bytes(uint32_t CE)
{
    return MT_S8_CONSTS_BYTES(CE, MT_S8_POINTWISE_GROUP) + MT_S8_CONSTS_BYTES(CE, MT_S8_DEPTHWISE_GROUP);
}
/* conv_s8.c: a DEPTHWISE_CONV2D_S8 (stride 1, OH = H, OW = W) whose output is planned over its
 * input, with a band of KH input rows after the n samples (MT_OPF_IN_PLACE) */
void mt_op_depthwise_s8_in_place_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n);
/* conv_s8.c: a CONV2D_S8 computed one output row at a time, its output planned to start
 * before its input in the same bytes (MT_OPF_IN_PLACE) */
void mt_op_conv2d_s8_rows_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n);
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
/* FullyConnected's table: CONST I32 [rows, 2], each row E's binary64 bits (low word, high
 * word), E positive, normal and below 2^20 (mt_q_fc_of). */
mt_status mt_q_check_fc_requant(const mt_image *img, uint32_t index, uint32_t rows);
/* The optional int32 bias (input 2): absent, or CONST I32 [units]. */
mt_status mt_q_check_bias(const mt_image *img, const mt_op_desc *op, uint32_t units);
/* The weighted int8 ops' (Conv2D, DepthwiseConv2D, FullyConnected) operands: inputs x, W,
 * the optional bias and rq, W and rq present, one output y; x an activation (not CONST). */
mt_status mt_q_weighted_operands(const mt_image *img, const mt_op_desc *op, mt_tensor_desc *x, mt_tensor_desc *w,
                                 mt_tensor_desc *y);
/* x and y are quantized per tensor, and the packed activation params (in_zp | out_zp << 8 |
 * act_min << 16 | act_max << 24) agree with their zero points, act_min <= act_max. */
mt_status mt_q_check_packed(const mt_image *img, const mt_tensor_desc *x, const mt_tensor_desc *y, uint32_t packed);

#endif /* MT_OPS_QUANT_H */
