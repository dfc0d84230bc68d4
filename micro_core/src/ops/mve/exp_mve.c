/*
 * mt_math.c's exponentials four lanes at a time in Helium (select/kernels.def's
 * expf_shifted_f32: Softmax's and the softmax cross-entropy's), built into every M55 core.
 * ops/mve/mve.h says how the kernels keep the reference's bits.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "mt_math.h"
#include "ops/mve/mve_flags.h"

/* ---- exponentials (mt_math.c's mt_expf, four lanes) ---- */

/*
 * out[j] = mt_expf(x[j] - m): its float operations in its order, four lanes at a time (the x86
 * sibling's scheme, ops/x86/exp_x86.c): n = (int)(fn ± 0.5) with fn = v / ln 2 (VCVT truncates
 * toward zero, as the cast), r = v - n·ln2 in two parts, the same polynomial, times 2^n. A block
 * goes to mt_expf where a lane is NaN or infinite (VCVT would give 0 or saturate), or n falls
 * outside [-126, 127] (the scalar function's early returns and its subnormal results), or MVE
 * flushed a subnormal.
 */
void mt_expf_shifted_mve(const float *x, float m, float *out, uint32_t n)
{
    uint32_t j = 0;
    mt_mve_flags_clear(); /* sticky flags: cleared again only after a block that set them */
    for (; j + 4 <= n; j += 4) {
        const float32x4_t v = vsubq_n_f32(vld1q_f32(x + j), m);
        const float32x4_t fn = vmulq_n_f32(v, 1.44269504088896341f);
        const float32x4_t half = vpselq_f32(vdupq_n_f32(0.5f), vdupq_n_f32(-0.5f), vcmpgeq_n_f32(fn, 0.0f));
        const int32x4_t k = vcvtq_s32_f32(vaddq_f32(fn, half));
        const float32x4_t kf = vcvtq_f32_s32(k);
        float32x4_t r = vsubq_f32(v, vmulq_n_f32(kf, 0.693359375f));
        r = vsubq_f32(r, vmulq_n_f32(kf, -2.12194440e-4f));
        float32x4_t p;
        MT_EXPF_SERIES(p, r, vaddq_f32, vmulq_f32, vdupq_n_f32);
        const float32x4_t scale = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_n_s32(k, 127), 23));
        const float32x4_t e = vmulq_f32(p, scale);
        if (vmaxvq_u32(0u, mt_mve_magnitude(v)) < 0x7f800000u && vmaxvq_s32(INT32_MIN, k) <= 127 &&
            vminvq_s32(INT32_MAX, k) >= -126 && !mt_mve_flushed(e, e, e, e)) {
            vst1q_f32(out + j, e);
            continue;
        }
        for (uint32_t i = j; i < j + 4; ++i) out[i] = mt_expf(x[i] - m);
        mt_mve_flags_clear();
    }
    for (; j < n; ++j) out[j] = mt_expf(x[j] - m); /* a last partial block: a vector block costs as much */
}

#else
typedef int mt_exp_mve_unused; /* ISO C: a translation unit is not empty */
#endif
