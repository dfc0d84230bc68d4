/*
 * Helium siblings of ReLU's forward and backward (ops/activations.c); ops/mve/mve.h says how
 * they keep the reference's bits. Glossary as in ops/ops.h.
 *
 * The tests "x < 0" and "y > 0" are made on the floats' bits with integer operations, where a
 * float compare would see a flushed subnormal as 0:
 *   x < 0  <=>  bits in [0x80000001, 0xff800000] (negative, not -0, not a NaN)
 *   y > 0  <=>  bits in [0x00000001, 0x7f800000] (positive, not +0, not a NaN)
 * each a subtraction and one unsigned compare (bits - low < 0x7f800000). The forward then only
 * moves bits (VPSEL), so no flag or NaN rule applies to it; the backward's dx + dy is MVE
 * arithmetic, and a block that flushed or made a NaN is redone in scalar code.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/mve/mve_flags.h"
#include "ops/ops.h"

/* the lanes whose bits lie in [low, low + 0x7f800000 - 1] */
static inline mve_pred16_t bits_from(float32x4_t v, uint32_t low)
{
    return vcmphiq_u32(vdupq_n_u32(0x7f800000u), vsubq_n_u32(vreinterpretq_u32_f32(v), low));
}

/* y = x < 0 ? 0 : x; a last partial block under a predicate */
void mt_op_relu_f32_forward_mve(const float *x, float *y, size_t N)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 4 <= N; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        vst1q_f32(y + i, vpselq_f32(zero, v, bits_from(v, 0x80000001u)));
    }
    if (i < N) {
        const mve_pred16_t lanes = vctp32q((uint32_t)(N - i));
        const float32x4_t v = vldrwq_z_f32(x + i, lanes);
        vstrwq_p_f32(y + i, vpselq_f32(zero, v, bits_from(v, 0x80000001u)), lanes);
    }
}

/* dx = y > 0 ? dx + dy : dx (dx keeps its own bits elsewhere); the last partial block and a
 * block whose sums flushed a subnormal or hold a NaN are the reference's */
void mt_op_relu_f32_backward_mve(const float *y, const float *dy, float *dx, size_t N)
{
    size_t i = 0;
    mt_mve_flags_clear(); /* the flags are sticky: cleared again only after a block that set them */
    for (; i + 4 <= N; i += 4) {
        const float32x4_t d = vld1q_f32(dx + i), s = vaddq_f32(d, vld1q_f32(dy + i));
        if (mt_mve_flushed(s, s, s, s) || mt_mve_nan1(s)) {
            mt_op_relu_f32_backward_ref(y + i, dy + i, dx + i, 4);
            mt_mve_flags_clear();
            continue;
        }
        vst1q_f32(dx + i, vpselq_f32(s, d, bits_from(vld1q_f32(y + i), 1u)));
    }
    if (i < N) mt_op_relu_f32_backward_ref(y + i, dy + i, dx + i, N - i);
}
#else
typedef int mt_activations_mve_unused; /* ISO C: a translation unit is not empty */
#endif
