/*
 * Helium pieces the op kernels share, built into every core whatever its op list (Conv2D and
 * DepthwiseConv2D both call them): the fused activation's derivative with the bias gradient.
 * ops/arm/mve.h says how they keep the reference's bits.
 */
#include "ops/arm/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2")
#include "ops/arm/mve_flags.h"

/* One vector of channels along P pixels (stride C): with mask, dz = dy·[1 <= y's bits <= top]
 * in place, tested on y's bits as integers (a float y > 0 iff 1 <= bits <= +inf's as int32;
 * y < 6 iff bits < 6's there): bits - 1 < top as unsigned, whose halving difference over 33
 * bits (VHSUB) has bit 31 set exactly then; an arithmetic shift makes that all ones, and an AND
 * keeps dy or makes it +0 (no float compare: nothing to flush, no predicate to juggle). With
 * sum, returns Σ_p dz from +0 in ascending p. */
static inline __attribute__((always_inline)) float32x4_t relu_bias_vector(const int32_t *yb, float *d, size_t P,
                                                                          uint32_t C, uint32_t top, const int mask,
                                                                          const int sum)
{
    float32x4_t acc = vdupq_n_f32(0.0f);
    const uint32x4_t limit = vdupq_n_u32(top);
    for (size_t p = 0; p < P; ++p, d += C, yb += C) {
        float32x4_t v = vld1q_f32(d);
        if (mask) {
            const uint32x4_t x = vsubq_n_u32(vreinterpretq_u32_s32(vld1q_s32(yb)), 1u);
            const int32x4_t keep = vshrq_n_s32(vreinterpretq_s32_u32(vhsubq_u32(x, limit)), 31);
            v = vreinterpretq_f32_s32(vandq_s32(vreinterpretq_s32_f32(v), keep));
            vst1q_f32(d, v);
        }
        if (sum) acc = vaddq_f32(acc, v);
    }
    return acc;
}

/* dz = dy·[0 < y (< 6 for ReLU6)] in place and dbias += Σ_p dz, each channel's sum from +0 in
 * ascending p (relu_bias_vector); the sums are checked for flushed subnormals and NaNs. */
void mt_mve_relu_bias(uint32_t act, const float *y, float *dy, float *dbias, size_t P, uint32_t C)
{
    if (act == MT_FUSED_NONE && !dbias) return;
    const uint32_t top = act == MT_FUSED_RELU6 ? 0x40bfffffu : 0x7f800000u; /* the largest passing bits */
    for (uint32_t c4 = 0; c4 < C; c4 += 4) {
        const uint32_t c = c4 + 4 > C ? C - 4 : c4, skip = c4 - c; /* a last vector overlaps */
        const int32_t *yb = (const int32_t *)(const void *)(y + c);
        mt_mve_flags_clear();
        if (!dbias) {
            relu_bias_vector(yb, dy + c, P, C, top, 1, 0);
            continue;
        }
        float32x4_t acc = act == MT_FUSED_NONE ? relu_bias_vector(yb, dy + c, P, C, top, 0, 1)
                                               : relu_bias_vector(yb, dy + c, P, C, top, 1, 1);
        const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip);
        acc = vaddq_f32(vld1q_f32(dbias + c), acc);
        if (mt_mve_flushed(acc, acc, acc, acc) || mt_mve_nan1(acc)) {
            for (uint32_t j = c + skip; j < c + 4; ++j) { /* the reference's sums of dz */
                float a = 0.0f;
                for (size_t q = 0; q < P; ++q) a += dy[q * C + j];
                dbias[j] += a;
            }
            continue;
        }
        vstrwq_p_f32(dbias + c, acc, p);
    }
}

#else
typedef int mt_shared_mve_unused; /* ISO C: a translation unit is not empty */
#endif
