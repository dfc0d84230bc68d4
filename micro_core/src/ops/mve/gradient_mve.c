/*
 * Helium pieces of a layer's backward, built into every M55 core whatever its op list: the
 * fused activation's derivative with the bias gradient (select/kernels.def's
 * activation_bias_f32_backward: a pointwise Conv2D's, and Conv2D's and DepthwiseConv2D's
 * Helium backward call it), a gradient's += (add_f32_accumulate) and its clear
 * (grad_clear_f32). ops/mve/mve.h says how they keep the reference's bits.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "ops/mve/mve_flags.h"
#include "ops/spatial.h"

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

/* relu_bias_vector's masking and sums for k (2 or 4) vectors of channels side by side, one
 * pass over the pixels whose pointer steps and loop turn the k vectors share. In asm, where
 * the predicate lives one instruction: keep = top > bits - 1 (VCMP HI, the same unsigned test
 * as relu_bias_vector's) picks dy or +0 (VPSEL); 7 instructions a vector and pixel, and 3 a
 * pixel (in C, with VHSUB, VSHR and VAND for the test, GCC's code took 9.5 a vector). */
#define MT_RELU_SUM(at, a)                                                                                         \
    "vldrw.u32 q4, [%[yp], #" at "]\n\t"                                                                            \
    "vsub.i32 q4, q4, %[one]\n\t"                                                                                  \
    "vcmp.u32 hi, %q[limit], q4\n\t"                                                                               \
    "vldrw.u32 q5, [%[dp], #" at "]\n\t"                                                                            \
    "vpsel q5, q5, %q[zero]\n\t"                                                                                   \
    "vstrw.32 q5, [%[dp], #" at "]\n\t"                                                                             \
    "vadd.f32 %q[" a "], %q[" a "], q5\n\t"
static inline __attribute__((always_inline)) void relu_bias_vectors(const int32_t *yb, float *d, size_t P, uint32_t C,
                                                                    uint32_t top, const uint32_t k, float32x4_t *acc)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    const uint32x4_t limit = vdupq_n_u32(top);
    float32x4_t a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    __asm volatile("wls lr, %[n], 2f\n"
                   "1:\n\t"
                   MT_RELU_SUM("0", "a0") MT_RELU_SUM("16", "a1")
                   ".if %c[k] == 4\n\t"
                   MT_RELU_SUM("32", "a2") MT_RELU_SUM("48", "a3")
                   ".endif\n\t"
                   "add %[yp], %[cs]\n\t"
                   "add %[dp], %[cs]\n\t"
                   "le lr, 1b\n"
                   "2:\n"
                   : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [a3] "+w"(a3), [yp] "+r"(yb), [dp] "+r"(d)
                   : [limit] "w"(limit), [zero] "w"(zero), [one] "r"(1u), [cs] "r"(C * sizeof(float)), [n] "r"(P),
                     [k] "n"(k)
                   : "q4", "q5", "lr", "p0", "memory");
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}
#undef MT_RELU_SUM

/* dbias[c..c+3] += the reference's sums of dz (already in dy), lanes from skip on */
static void bias_reference(const float *dy, float *dbias, size_t P, uint32_t C, uint32_t c, uint32_t skip)
{
    for (uint32_t j = c + skip; j < c + 4; ++j) {
        float a = 0.0f;
        for (size_t q = 0; q < P; ++q) a += dy[q * C + j];
        dbias[j] += a;
    }
}

/* dz = dy·[0 < y (< 6 for ReLU6)] in place and dbias += Σ_p dz, each channel's sum from +0 in
 * ascending p (relu_bias_vector); the sums are checked for flushed subnormals and NaNs. With
 * both, four or two vectors of channels at a time (relu_bias_vectors), then one (the last
 * overlapping the one before; fewer than four channels: the reference). Conv2D's and
 * DepthwiseConv2D's Helium backward call it too. */
void mt_activation_bias_f32_backward_mve(uint32_t act, const float *y, float *dy, float *dbias, size_t P, uint32_t C)
{
    if (C < 4) { /* no whole vector of channels */
        mt_activation_bias_f32_backward_ref(act, y, dy, dbias, P, C);
        return;
    }
    if (act == MT_FUSED_NONE && !dbias) return;
    const uint32_t top = act == MT_FUSED_RELU6 ? 0x40bfffffu : 0x7f800000u; /* the largest passing bits */
    uint32_t c4 = 0;
    if (act != MT_FUSED_NONE && dbias)
        for (uint32_t k; (k = C - c4 >= 16 ? 4 : C - c4 >= 8 ? 2 : 0) != 0; c4 += 4 * k) {
            float32x4_t acc[4];
            const int32_t *yb = (const int32_t *)(const void *)(y + c4);
            mt_mve_flags_clear();
            if (k == 4) relu_bias_vectors(yb, dy + c4, P, C, top, 4, acc);
            else relu_bias_vectors(yb, dy + c4, P, C, top, 2, acc);
            for (uint32_t j = 0; j < k; ++j) acc[j] = vaddq_f32(vld1q_f32(dbias + c4 + 4 * j), acc[j]);
            /* the flags are the k vectors' together: a flush anywhere redoes them all */
            const int redo = mt_mve_flushed(acc[0], acc[1], acc[2], acc[3]);
            for (uint32_t j = 0; j < k; ++j)
                if (redo || mt_mve_nan1(acc[j])) bias_reference(dy, dbias, P, C, c4 + 4 * j, 0);
                else vst1q_f32(dbias + c4 + 4 * j, acc[j]);
        }
    for (; c4 < C; c4 += 4) {
        const uint32_t c = c4 + 4 > C ? C - 4 : c4, skip = c4 - c; /* a last vector overlaps */
        const int32_t *yb = (const int32_t *)(const void *)(y + c);
        mt_mve_flags_clear();
        if (!dbias) {
            relu_bias_vector(yb, dy + c, P, C, top, 1, 0);
            continue;
        }
        float32x4_t acc = act == MT_FUSED_NONE ? relu_bias_vector(yb, dy + c, P, C, top, 0, 1)
                                               : relu_bias_vector(yb, dy + c, P, C, top, 1, 1);
        acc = vaddq_f32(vld1q_f32(dbias + c), acc);
        if (mt_mve_flushed(acc, acc, acc, acc) || mt_mve_nan1(acc)) {
            bias_reference(dy, dbias, P, C, c, skip);
            continue;
        }
        vstrwq_p_f32(dbias + c, acc, (mve_pred16_t)~vctp32q(skip));
    }
}

/* ---- a gradient's += (ops/shared.c's mt_op_add_f32_accumulate_ref) ---- */

/* dx += dy, eight at a time, each lane the reference's one addition; a block whose sums
 * flushed a subnormal or hold a NaN, and the last partial block, are added on the scalar FPU */
void mt_op_add_f32_accumulate_mve(const float *dy, float *dx, size_t N)
{
    mt_mve_flags_clear(); /* sticky flags: cleared again only after a block that set them */
    for (size_t k = N / 8u; k; --k, dx += 8, dy += 8) { /* moving pointers: GCC kept an index and four */
        const float32x4_t a = vaddq_f32(vld1q_f32(dx), vld1q_f32(dy));
        const float32x4_t b = vaddq_f32(vld1q_f32(dx + 4), vld1q_f32(dy + 4));
        if (mt_mve_flushed(a, b, a, b) || mt_mve_nan(a, b, a, b)) {
            for (int j = 0; j < 8; ++j) dx[j] += dy[j];
            mt_mve_flags_clear();
            continue;
        }
        vst1q_f32(dx, a), vst1q_f32(dx + 4, b);
    }
    for (size_t j = 0; j < N % 8u; ++j) dx[j] += dy[j];
}

/* ---- clearing a gradient ---- */

/* Four VSTRW of a zero vector a turn (64 bytes; stores and a VMOV of zero only: no float
 * operation runs, so nothing can flush), then single vectors, then the last lanes under a
 * predicate: about 1.5 instructions for 16 bytes. */
void mt_grad_clear_f32_mve(float *p, size_t n)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (; n >= 16u; n -= 16u, p += 16)
        vst1q_f32(p, zero), vst1q_f32(p + 4, zero), vst1q_f32(p + 8, zero), vst1q_f32(p + 12, zero);
    for (; n >= 4u; n -= 4u, p += 4) vst1q_f32(p, zero);
    if (n) vstrwq_p_f32(p, zero, vctp32q((uint32_t)n));
}

#else
typedef int mt_gradient_mve_unused; /* ISO C: a translation unit is not empty */
#endif
