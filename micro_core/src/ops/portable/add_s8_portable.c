/*
 * The sibling of the int8 Add (ops/add_s8.c): on Helium four elements a vector, as int32
 * lanes (two widening byte loads, the zero points and the left shift, each input's and the
 * output's rescaling as s8_dot.h's mt_s8_scale_lanes, the clamp, a narrowing store), the
 * last N mod 4 under a tail predicate: the reference's integer steps, so its bytes (the
 * siblings' int8 Add cases, on every board). Elsewhere the reference itself.
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
    mt_op_add_s8_forward_ref(a, b, y, N, rq, zero_points, range);
#endif
}
