/*
 * The sibling of the int8 Add (ops/add_s8.c): on Helium four elements a vector, as int32
 * lanes (two widening byte loads, the zero points and the left shift, each input's and the
 * output's rescaling as s8_dot.h's mt_s8_scale_lanes, the clamp, a narrowing store), the
 * last N mod 4 under a tail predicate: the reference's integer steps, so its bytes (the
 * siblings' int8 Add cases, on every board).
 *
 * Elsewhere (the scalar cores: the DSP extension has no 32 x 32-bit lanes) an input's
 * rescaling a' = scale((a - za)·2^L, qa) depends on its byte alone: 256 values. Past
 * ADD_TABLE_MIN elements each input's 256 rescalings are made once, by the reference's
 * mt_q_scale, into a table on the stack (1 KB each), and an element is two byte loads, two
 * table loads, the add and the output's rescaling (mt_q_scale_known: three instructions, an
 * SMLAL and a shift), the clamp and the store: about 21 instructions where the three
 * rescalings took 81 on the M3 and M7. Every entry is the reference's value for its byte, so
 * every output is the reference's, ties included. Shorter runs take the reference itself (the
 * tables cost about 6000 instructions to make).
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__arm__)
#pragma GCC optimize("O2") /* residual Adds of an int8 backbone: speed even in -Os firmware */
#endif
#include "select/kernels.h"
#include "ops/portable/s8_dot.h"

#if MT_S8_MVE
/* The rescalings' constants as vectors: input a's, input b's and the output's */
typedef struct add_lanes {
    int32x4_t l[3], m[3], r[3];
} add_lanes;

/* the loop; shifted: some rescaling has a left shift (TFLite's have none: their multipliers
 * are below 1), a constant where it is inlined */
static inline __attribute__((always_inline)) void add_s8_lanes(const int8_t *a, const int8_t *b, int8_t *y, size_t N,
                                                               const add_lanes *c, int32_t left, int32_t za,
                                                               int32_t zb, int32_t zy, int32x4_t lo, int32x4_t hi,
                                                               const int shifted)
{
    const int32x4_t lv = vdupq_n_s32(left);
    for (size_t i = 0; i < N; i += 4, a += 4, b += 4, y += 4) {
        const mve_pred16_t p = vctp32q(N - i < 4 ? (uint32_t)(N - i) : 4u);
        const int32x4_t sa = vshlq_s32(vsubq_n_s32(vldrbq_z_s32(a, p), za), lv);
        const int32x4_t sb = vshlq_s32(vsubq_n_s32(vldrbq_z_s32(b, p), zb), lv);
        const int32x4_t raw = vaddq_s32(mt_s8_scale_lanes(sa, c->l[0], c->m[0], c->r[0], shifted),
                                        mt_s8_scale_lanes(sb, c->l[1], c->m[1], c->r[1], shifted));
        const int32x4_t v = vaddq_n_s32(mt_s8_scale_lanes(raw, c->l[2], c->m[2], c->r[2], shifted), zy);
        vstrbq_p_s32(y, vminq_s32(vmaxq_s32(v, lo), hi), p);
    }
}
#else
/* The shortest run that takes the tables (their 512 rescalings cost as much as about 100
 * elements' saving); every residual Add of MobileNetV2-w0.35 at 128 x 128 has 896 or more */
#define ADD_TABLE_MIN 512u

/* t[v + 128] = the rescaling of input byte v: scale((v - z)·2^left, q), the reference's steps */
static __attribute__((noinline)) void add_s8_table(int32_t t[256], int32_t z, int left, mt_q_requant q)
{
    for (int32_t v = -128; v < 128; ++v) t[v + 128] = mt_q_scale((int32_t)((uint32_t)(v - z) << left), q);
}

/* y[i] = clamp(scale(ta[a[i]] + tb[b[i]], qy) + zy, lo, hi); form (mt_q_right_form(qy)) and
 * full (lo, hi = -128, 127: one SSAT) constants where it is inlined */
static inline __attribute__((always_inline)) void add_s8_run(const int8_t *a, const int8_t *b, int8_t *y, size_t N,
                                                             const int32_t *ta, const int32_t *tb, mt_q_requant qy,
                                                             int32_t zy, int32_t lo, int32_t hi, const int form,
                                                             const int full)
{
    ta += 128, tb += 128; /* indexed by the signed byte */
    for (const int8_t *end = a + N; a != end; ++a, ++b, ++y) {
        const int32_t raw = (int32_t)((uint32_t)ta[*a] + (uint32_t)tb[*b]); /* the reference's a' + b' */
        const int32_t v = mt_q_scale_known(raw, qy, form) + zy;
        *y = (int8_t)(full ? mt_s8_saturate(v) : mt_q_clamp(v, lo, hi));
    }
}
#endif

void mt_op_add_s8_forward_portable(const int8_t *a, const int8_t *b, int8_t *y, size_t N, const int32_t *rq,
                                   uint32_t zero_points, uint32_t range)
{
#if MT_S8_MVE
    add_lanes c;
    int shifted = 0;
    for (uint32_t k = 0; k < 3; ++k) {
        const mt_q_requant q = mt_q_requant_of(NULL, rq, k);
        c.l[k] = vdupq_n_s32(q.left), c.m[k] = vdupq_n_s32(q.multiplier), c.r[k] = vdupq_n_s32(-q.right);
        shifted |= q.left != 0;
    }
    const int32_t za = mt_q_param_byte(zero_points, 0), zb = mt_q_param_byte(zero_points, 1);
    const int32_t zy = mt_q_param_byte(zero_points, 2);
    const int32x4_t lo = vdupq_n_s32(mt_q_param_byte(range, 0)), hi = vdupq_n_s32(mt_q_param_byte(range, 1));
    if (shifted) add_s8_lanes(a, b, y, N, &c, rq[6], za, zb, zy, lo, hi, 1);
    else add_s8_lanes(a, b, y, N, &c, rq[6], za, zb, zy, lo, hi, 0);
#else
    if (N < ADD_TABLE_MIN) {
        mt_op_add_s8_forward_ref(a, b, y, N, rq, zero_points, range);
        return;
    }
    const int left = (int)rq[6];
    const int32_t za = mt_q_param_byte(zero_points, 0), zb = mt_q_param_byte(zero_points, 1);
    const int32_t zy = mt_q_param_byte(zero_points, 2);
    const int32_t lo = mt_q_param_byte(range, 0), hi = mt_q_param_byte(range, 1);
    int32_t ta[256], tb[256];
    add_s8_table(ta, za, left, mt_q_requant_of(NULL, rq, 0));
    add_s8_table(tb, zb, left, mt_q_requant_of(NULL, rq, 1));
    const mt_q_requant qy = mt_q_requant_of(NULL, rq, 2);
    const int full = lo == -128 && hi == 127;
    const int form = mt_q_right_form(qy);
    if (form == MT_Q_RIGHT_ZERO) add_s8_run(a, b, y, N, ta, tb, qy, zy, lo, hi, MT_Q_RIGHT_ZERO, 0);
    else if (form == MT_Q_RIGHT_ONE) add_s8_run(a, b, y, N, ta, tb, qy, zy, lo, hi, MT_Q_RIGHT_ONE, 0);
    else if (full) add_s8_run(a, b, y, N, ta, tb, qy, zy, lo, hi, MT_Q_RIGHT_TWO, 1);
    else add_s8_run(a, b, y, N, ta, tb, qy, zy, lo, hi, MT_Q_RIGHT_TWO, 0);
#endif
}
