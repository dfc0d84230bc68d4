/*
 * The sibling of the int8 MEAN (ops/pooling_s8.c): on Helium four channels a vector, their
 * sums over the P pixels in int32 lanes (a widening byte load and an add a pixel, where the
 * scalar form takes nine instructions for four channels), then the rescaling as s8_dot.h's
 * mt_s8_scale_lanes and one narrowing store, the last C mod 4 channels under a tail
 * predicate: the reference's integer steps, so its bytes (the siblings' Mean cases, on every
 * board). Elsewhere the reference itself.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__arm__)
#pragma GCC optimize("O2") /* the backbone's last int8 op: speed even in -Os firmware */
#endif
#include "select/kernels.h"
#include "ops/portable/s8_dot.h"

void mt_op_mean_s8_forward_portable(const int8_t *x, int8_t *y, uint32_t B, uint32_t P, uint32_t C, uint32_t zero_points,
                                    int32_t multiplier, int32_t shift)
{
#if MT_S8_MVE
    const int32_t zx = mt_q_param_byte(zero_points, 0), zy = mt_q_param_byte(zero_points, 1);
    int32_t m, s;
    mt_q_mean_scale(P, multiplier, shift, &m, &s);
    const int32x4_t lv = vdupq_n_s32(s > 0 ? s : 0), mv = vdupq_n_s32(m), rv = vdupq_n_s32(s > 0 ? 0 : s);
    const int32x4_t lo = vdupq_n_s32(-128), hi = vdupq_n_s32(127);
    const int32_t zx_sum = (int32_t)((uint32_t)zx * P); /* zx's share of a sum, wrapping as TFLite's int32 */
    for (uint32_t b = 0; b < B; ++b, x += (size_t)P * C, y += C)
        for (uint32_t c = 0; c < C; c += 4) {
            const mve_pred16_t lanes = vctp32q(C - c < 4 ? C - c : 4u);
            int32x4_t sum = vdupq_n_s32(0);
            const int8_t *xp = x + c;
            for (uint32_t p = 0; p < P; ++p, xp += C) sum = vaddq_s32(sum, vldrbq_z_s32(xp, lanes));
            const int32x4_t v = mt_s8_scale_lanes(vsubq_n_s32(sum, zx_sum), lv, mv, rv, s > 0);
            vstrbq_p_s32(y + c, vminq_s32(vmaxq_s32(vaddq_n_s32(v, zy), lo), hi), lanes);
        }
#else
    mt_op_mean_s8_forward_ref(x, y, B, P, C, zero_points, multiplier, shift);
#endif
}
