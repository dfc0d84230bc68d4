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

/* dz = dy·[0 < y (< 6 for ReLU6)] in place and dbias += Σ_p dz, each channel's sum from +0 in
 * ascending p. The tests are on y's bits as integers (a float y > 0 iff 0 < bits <= +inf's,
 * y < 6 iff bits < 6's there): no float compare, so nothing to flush; the sums are checked. */
void mt_mve_relu_bias(uint32_t act, const float *y, float *dy, float *dbias, size_t P, uint32_t C)
{
    if (act == MT_FUSED_NONE && !dbias) return;
    const int32_t top = act == MT_FUSED_RELU6 ? 0x40bfffff : 0x7f800000; /* the largest passing bits */
    for (uint32_t c4 = 0; c4 < C; c4 += 4) {
        const uint32_t c = c4 + 4 > C ? C - 4 : c4, skip = c4 - c; /* a last vector overlaps */
        float32x4_t acc = vdupq_n_f32(0.0f);
        float *d = dy + c;
        const int32_t *yb = (const int32_t *)(const void *)(y + c);
        mt_mve_flags_clear();
        for (size_t p = 0; p < P; ++p, d += C, yb += C) {
            float32x4_t v = vld1q_f32(d);
            if (act != MT_FUSED_NONE) {
                const int32x4_t bits = vld1q_s32(yb);
                const mve_pred16_t pass = vcmpleq_m_n_s32(bits, top, vcmpgtq_n_s32(bits, 0));
                v = vpselq_f32(v, vdupq_n_f32(0.0f), pass);
                vst1q_f32(d, v);
            }
            if (dbias) acc = vaddq_f32(acc, v);
        }
        if (!dbias) continue;
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
