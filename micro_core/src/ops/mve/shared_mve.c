/*
 * Helium pieces built into every core whatever its op list: the fused activation's derivative
 * with the bias gradient (Conv2D and DepthwiseConv2D both call it), the SGD and Adam updates
 * and their guards (session.c), and the softmax's exponentials (mt_math.c). ops/mve/mve.h says how they
 * keep the reference's bits.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include <math.h>
#include <string.h>

#include "mt_math.h"
#include "ops/mve/mve_flags.h"
#include "optimizers.h"

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
 * both, four or two vectors of channels at a time (relu_bias_vectors), then one. */
void mt_mve_relu_bias(uint32_t act, const float *y, float *dy, float *dbias, size_t P, uint32_t C)
{
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

/* ---- SGD (optimizers.c's, without a proximal term) ---- */

/* sgd_element of four elements: d = g·scale (+ wd·w); momentum: buf' = momentum·buf + d, d = buf';
 * w' = w - lr·d. Each lane the reference's operations in its order. */
static inline __attribute__((always_inline)) float32x4_t sgd4(float32x4_t w, float32x4_t g, float32x4_t *buf,
                                                              float lr, float momentum, float weight_decay,
                                                              float grad_scale)
{
    float32x4_t d = vmulq_n_f32(g, grad_scale);
    if (weight_decay != 0.0f) d = vaddq_f32(d, vmulq_n_f32(w, weight_decay));
    if (momentum > 0.0f) *buf = d = vaddq_f32(vmulq_n_f32(*buf, momentum), d);
    return vsubq_f32(w, vmulq_n_f32(d, lr));
}

/* mt_sgd_update_f32 without a proximal term, four elements at a time; a block that flushed a
 * subnormal or holds a NaN is redone by the portable update before anything of it is stored,
 * and a last partial block is the portable update's */
void mt_sgd_update_f32_mve(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                           float weight_decay, float grad_scale)
{
    const mt_proximal none = {NULL, 0.0f};
    size_t i = 0;
    mt_mve_flags_clear(); /* the flags are sticky: cleared again only after a block that set them */
    for (; i + 4 <= N; i += 4) {
        float32x4_t b = momentum > 0.0f ? vld1q_f32(buf + i) : vdupq_n_f32(0.0f);
        const float32x4_t nw = sgd4(vld1q_f32(w + i), vld1q_f32(g + i), &b, lr, momentum, weight_decay, grad_scale);
        if (mt_mve_flushed(nw, b, nw, b) || mt_mve_nan(nw, b, nw, b)) {
            mt_sgd_update_f32(w + i, g + i, buf ? buf + i : NULL, 4, lr, momentum, weight_decay, grad_scale, none);
            mt_mve_flags_clear();
            continue;
        }
        vst1q_f32(w + i, nw);
        if (momentum > 0.0f) vst1q_f32(buf + i, b);
    }
    if (i < N) mt_sgd_update_f32(w + i, g + i, buf ? buf + i : NULL, N - i, lr, momentum, weight_decay, grad_scale, none);
}

/* mt_sgd_update_is_finite_f32 without a proximal term: g, w' and buf' finite when the largest of
 * their magnitudes' bits stays below +inf's; a flushed subnormal anywhere: the portable guard */
int mt_sgd_update_is_finite_f32_mve(const float *w, const float *g, const float *buf, size_t N, float lr,
                                    float momentum, float weight_decay, float grad_scale)
{
    const mt_proximal none = {NULL, 0.0f};
    uint32x4_t worst = vdupq_n_u32(0u);
    size_t i = 0;
    mt_mve_flags_clear();
    for (; i + 4 <= N; i += 4) {
        const float32x4_t gv = vld1q_f32(g + i);
        float32x4_t b = momentum > 0.0f ? vld1q_f32(buf + i) : vdupq_n_f32(0.0f);
        const float32x4_t nw = sgd4(vld1q_f32(w + i), gv, &b, lr, momentum, weight_decay, grad_scale);
        worst = vmaxq_u32(vmaxq_u32(worst, mt_mve_magnitude(gv)), vmaxq_u32(mt_mve_magnitude(nw), mt_mve_magnitude(b)));
    }
    const float32x4_t none_v = vdupq_n_f32(0.0f);
    if (mt_mve_flushed(none_v, none_v, none_v, none_v)) /* a flush: the reference decides */
        return mt_sgd_update_is_finite_f32(w, g, buf, N, lr, momentum, weight_decay, grad_scale, none);
    if (vmaxvq_u32(0u, worst) >= 0x7f800000u) return 0;
    return i == N || mt_sgd_update_is_finite_f32(w + i, g + i, buf ? buf + i : NULL, N - i, lr, momentum,
                                                 weight_decay, grad_scale, none);
}

/* ---- Adam and AdamW (optimizers.c's, without a proximal term) ---- */

/* adam_moments of four elements: g' = g·scale; AdamW w·decay, Adam g' + wd·w; m' as PyTorch's
 * lerp from the nearer end; v' = β2·v + (1-β2)·g'². Each lane the reference's operations in its
 * order (a product by a constant is the same product either way round). plain: the common
 * configuration (near_m, no decay: Adam with β1 > 0.5), known where inlined, so its loop
 * tests nothing and keeps its constants in registers. */
static inline __attribute__((always_inline)) void adam4_moments(const mt_adam_params *k, float32x4_t g, float32x4_t *w,
                                                                float32x4_t *m, float32x4_t *v, const int plain)
{
    float32x4_t gi = vmulq_n_f32(g, k->grad_scale);
    if (!plain && k->decoupled) *w = vmulq_n_f32(*w, k->decay);
    else if (!plain && k->has_decay) gi = vaddq_f32(gi, vmulq_n_f32(*w, k->weight_decay));
    if (plain || k->near_m) *m = vaddq_f32(*m, vmulq_n_f32(vsubq_f32(gi, *m), k->one_minus_beta1));
    else *m = vsubq_f32(gi, vmulq_n_f32(vsubq_f32(gi, *m), k->beta1));
    *v = vaddq_f32(vmulq_n_f32(*v, k->beta2), vmulq_n_f32(vmulq_f32(gi, gi), k->one_minus_beta2));
}

/*
 * adam_weight of four elements, w' = w - step_size·(m' / (sqrt(v') / sqrt(1-β2^t) + ε)), on the
 * scalar FPU (MVE has no square root or division): the same operations in the same order,
 * lane by lane (a product by a constant is the same product either way round). A Q register
 * is four S registers, so the asm works on the lanes where they are: w', m', v' and the
 * constants pinned to q0..q3 (s0-s3 the weights, s4-s7 m', s8-s11 v', s12-s14 the constants),
 * s16-s19 for the four lanes' terms. In C, GCC moved every lane through the stack and back
 * (about 20 instructions a block of four).
 */
static inline __attribute__((always_inline)) float32x4_t adam4_weights(float32x4_t w, float32x4_t m, float32x4_t v,
                                                                       float32x4_t constants)
{
    register float32x4_t q0 __asm("q0") = w;
    register float32x4_t q1 __asm("q1") = m;
    register float32x4_t q2 __asm("q2") = v;
    register float32x4_t q3 __asm("q3") = constants;
    __asm volatile("vsqrt.f32 s16, s8\n\t"
                   "vsqrt.f32 s17, s9\n\t"
                   "vsqrt.f32 s18, s10\n\t"
                   "vsqrt.f32 s19, s11\n\t"
                   "vdiv.f32 s16, s16, s12\n\t" /* / sqrt(1-β2^t) */
                   "vdiv.f32 s17, s17, s12\n\t"
                   "vdiv.f32 s18, s18, s12\n\t"
                   "vdiv.f32 s19, s19, s12\n\t"
                   "vadd.f32 s16, s16, s13\n\t" /* + ε */
                   "vadd.f32 s17, s17, s13\n\t"
                   "vadd.f32 s18, s18, s13\n\t"
                   "vadd.f32 s19, s19, s13\n\t"
                   "vdiv.f32 s16, s4, s16\n\t" /* m' / denom */
                   "vdiv.f32 s17, s5, s17\n\t"
                   "vdiv.f32 s18, s6, s18\n\t"
                   "vdiv.f32 s19, s7, s19\n\t"
                   "vmul.f32 s16, s16, s14\n\t" /* step_size · */
                   "vmul.f32 s17, s17, s14\n\t"
                   "vmul.f32 s18, s18, s14\n\t"
                   "vmul.f32 s19, s19, s14\n\t"
                   "vsub.f32 s0, s0, s16\n\t" /* w - */
                   "vsub.f32 s1, s1, s17\n\t"
                   "vsub.f32 s2, s2, s18\n\t"
                   "vsub.f32 s3, s3, s19"
                   : "+w"(q0)
                   : "w"(q1), "w"(q2), "w"(q3)
                   : "s16", "s17", "s18", "s19");
    return q0;
}

/* adam4_weights' constants: sqrt(1-β2^t), ε, step_size (and a 0) */
static inline __attribute__((always_inline)) float32x4_t adam4_constants(const mt_adam_params *k)
{
    const float c[4] = {k->bias_correction2_sqrt, k->epsilon, k->step_size, 0.0f};
    return vld1q_f32(c);
}

/* mt_adam_update_f32's arguments, for the portable update of the blocks Helium gives back */
typedef struct {
    float lr, beta1, beta2, epsilon, weight_decay, grad_scale;
    int decoupled;
    double beta1_power, beta2_power;
} adam_args;

static __attribute__((noinline)) void adam_portable(const adam_args *a, float *w, const float *g, float *m, float *v,
                                                    size_t n)
{
    const mt_proximal none = {NULL, 0.0f};
    mt_adam_update_f32(w, g, m, v, n, a->lr, a->beta1, a->beta2, a->epsilon, a->weight_decay, a->decoupled,
                       a->beta1_power, a->beta2_power, a->grad_scale, none);
}

/* the blocks of four from i; returns where it stopped: N rounded down to four, or the first
 * block the portable update must take (a flushed subnormal, or a NaN in its new weights:
 * one its division made, ∞/∞, whose sign is the compiled reference's, a VMLS negating it, or
 * one from w, m' or v', which the scalar square root, divisions and subtraction carry).
 * The flags are read before the scalar division and square root, whose own underflow would
 * set UFC (a flag they leave stops the loop at the next block, which the portable update then
 * takes: a false alarm costs time, never bits); nothing of a block is stored before its tests. */
static inline __attribute__((always_inline)) size_t adam4_blocks(const mt_adam_params *k, float *w, const float *g,
                                                                 float *m, float *v, size_t i, size_t N, const int plain)
{
    const float32x4_t constants = adam4_constants(k);
    w += i, g += i, m += i, v += i; /* moving pointers: indexed, GCC kept the bases on the stack */
    mt_mve_flags_clear(); /* once: the flags are sticky, so a flag set since stops the loop */
    for (; i + 4 <= N; i += 4, w += 4, g += 4, m += 4, v += 4) {
        float32x4_t wv = vld1q_f32(w), mv = vld1q_f32(m), vv = vld1q_f32(v);
        adam4_moments(k, vld1q_f32(g), &wv, &mv, &vv, plain);
        if (mt_mve_flushed(wv, mv, vv, vv)) break;
        const float32x4_t nw = adam4_weights(wv, mv, vv, constants);
        if (mt_mve_nan1(nw)) break; /* also a NaN w, m' or v': each makes its lane's new w a NaN */
        vst1q_f32(w, nw), vst1q_f32(m, mv), vst1q_f32(v, vv);
    }
    return i;
}

/*
 * mt_adam_update_f32 without a proximal term: per four elements the moments in Helium, then
 * each new w on the scalar FPU; a block the Helium path cannot give the reference's bits for
 * is redone by the portable update from its untouched values, and so is a last partial block.
 */
void mt_adam_update_f32_mve(float *w, const float *g, float *m, float *v, size_t N, float lr, float beta1,
                            float beta2, float epsilon, float weight_decay, int decoupled, double beta1_power,
                            double beta2_power, float grad_scale)
{
    const mt_adam_params k = mt_adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                                 beta2_power, grad_scale, 0.0f);
    const adam_args a = {lr, beta1, beta2, epsilon, weight_decay, grad_scale, decoupled, beta1_power, beta2_power};
    const int plain = k.plain;
    size_t i = 0;
    while (i + 4 <= N) {
        i = plain ? adam4_blocks(&k, w, g, m, v, i, N, 1) : adam4_blocks(&k, w, g, m, v, i, N, 0);
        if (i + 4 <= N) adam_portable(&a, w + i, g + i, m + i, v + i, 4), i += 4;
    }
    if (i < N) adam_portable(&a, w + i, g + i, m + i, v + i, N - i);
}

/* The guard's blocks of four from 0 (plain as for adam4_blocks): each g, m' and v' magnitude
 * into *worst, each new w computed where the shortcut does not cover its block into
 * *weights_bad (bit 31: not finite). Returns N rounded down to four, or the block where a
 * flush stopped it (the caller then asks the portable guard). */
static inline __attribute__((always_inline)) size_t adam4_guard_blocks(const mt_adam_params *k, const float *w,
                                                                       const float *g, const float *m, const float *v,
                                                                       size_t N, uint32_t m_bound, uint32x4_t *worst,
                                                                       uint32_t *weights_bad, const int plain)
{
    const float32x4_t constants = adam4_constants(k);
    size_t i = 0;
    for (; i + 4 <= N; i += 4) {
        const float32x4_t gv = vld1q_f32(g + i);
        float32x4_t wv = vld1q_f32(w + i), mv = vld1q_f32(m + i), vv = vld1q_f32(v + i);
        adam4_moments(k, gv, &wv, &mv, &vv, plain);
        const uint32x4_t mm = mt_mve_magnitude(mv);
        *worst = vmaxq_u32(vmaxq_u32(*worst, mt_mve_magnitude(gv)), vmaxq_u32(mm, mt_mve_magnitude(vv)));
        /* the shortcut holds for every lane: m_bound > 0, |m'| <= m_bound, |w| <= 2^126, v' >= 0 */
        if (m_bound != 0u && vmaxvq_u32(0u, mm) <= m_bound && vmaxvq_u32(0u, mt_mve_magnitude(wv)) <= MT_ADAM_W_LIMIT &&
            vminvq_s32(INT32_MAX, vreinterpretq_s32_f32(vv)) >= 0)
            continue;
        if (mt_mve_flushed(wv, mv, vv, vv)) break; /* before the scalar arithmetic sets UFC */
        float nw[4];
        vst1q_f32(nw, adam4_weights(wv, mv, vv, constants));
        for (int j = 0; j < 4; ++j) {
            uint32_t u;
            memcpy(&u, &nw[j], 4);
            *weights_bad |= (u & 0x7f800000u) + 0x00800000u; /* bit 31: not finite */
        }
        mt_mve_flags_clear();
    }
    return i;
}

/* mt_adam_within_limits on vectors: the largest magnitude bits of g, m and w, and the largest
 * bits of v (a set sign bit exceeds every limit), against the limits. Integer operations
 * only: nothing flushes, no flag to read. About 3 instructions an element, where the guard's
 * blocks take 12. */
static __attribute__((noinline)) int adam4_within_limits(const mt_adam_params *k, const float *w, const float *g,
                                                         const float *m, const float *v, size_t N)
{
    uint32x4_t gm = vdupq_n_u32(0u), mm = gm, vm = gm, wm = gm;
    /* noinline and moving pointers: inlined in the guard, GCC kept the four bases on the stack */
    for (size_t n = N / 4; n; --n, g += 4, m += 4, w += 4, v += 4) {
        gm = mt_mve_magnitudes(gm, vld1q_f32(g)), mm = mt_mve_magnitudes(mm, vld1q_f32(m));
        wm = mt_mve_magnitudes(wm, vld1q_f32(w)), vm = vmaxq_u32(vm, vld1q_u32((const uint32_t *)v));
    }
    if (N % 4u) { /* the last lanes; the others load as 0, below every limit */
        const mve_pred16_t p = vctp32q((uint32_t)(N % 4u));
        gm = mt_mve_magnitudes(gm, vldrwq_z_f32(g, p)), mm = mt_mve_magnitudes(mm, vldrwq_z_f32(m, p));
        wm = mt_mve_magnitudes(wm, vldrwq_z_f32(w, p));
        vm = vmaxq_u32(vm, vldrwq_z_u32((const uint32_t *)v, p));
    }
    return vmaxvq_u32(0u, gm) <= k->g_limit && vmaxvq_u32(0u, mm) <= k->m_limit && vmaxvq_u32(0u, vm) <= k->v_limit &&
           vmaxvq_u32(0u, wm) <= MT_ADAM_W_LIMIT;
}

/*
 * mt_adam_update_is_finite_f32 without a proximal term: first the whole-tensor limits (the
 * plain configuration's usual answer), else the moments of four elements in Helium; g, m'
 * and v' are finite when the largest of their magnitudes' bits stays below +inf's (a NaN's
 * are above). The shortcut is tested a block at a time on integers: the block's largest
 * |m'| and |w| bits against the bounds' (for non-NaN floats the bits order
 * as the magnitudes do; a NaN's exceed every bound, as C's <= fails for it) and its v' signs;
 * a block it does not cover gets every new w on the scalar FPU, as the update computes it.
 * A flushed subnormal anywhere sends the whole check to the portable guard, so the answer is
 * always the reference's.
 */
int mt_adam_update_is_finite_f32_mve(const float *w, const float *g, const float *m, const float *v, size_t N,
                                     float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                     int decoupled, double beta1_power, double beta2_power, float grad_scale)
{
    mt_adam_params k = mt_adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                                 beta2_power, grad_scale, 0.0f);
    mt_adam_set_limits(&k);
    if (k.limits && adam4_within_limits(&k, w, g, m, v, N)) return 1; /* the plain configuration's usual case */
    const mt_proximal none = {NULL, 0.0f};
    uint32_t m_bound, weights_bad = 0u;
    memcpy(&m_bound, &k.m_bound, 4);
    uint32x4_t worst = vdupq_n_u32(0u); /* the largest magnitude bits of every g, m', v' */
    mt_mve_flags_clear();
    const size_t i = k.plain
                         ? adam4_guard_blocks(&k, w, g, m, v, N, m_bound, &worst, &weights_bad, 1)
                         : adam4_guard_blocks(&k, w, g, m, v, N, m_bound, &worst, &weights_bad, 0);
    const float32x4_t none_v = vdupq_n_f32(0.0f);
    if (i + 4 <= N || mt_mve_flushed(none_v, none_v, none_v, none_v)) /* a flush: the reference decides */
        return mt_adam_update_is_finite_f32(w, g, m, v, N, lr, beta1, beta2, epsilon, weight_decay, decoupled,
                                            beta1_power, beta2_power, grad_scale, none);
    if (vmaxvq_u32(0u, worst) >= 0x7f800000u || (weights_bad & 0x80000000u)) return 0;
    return i == N || mt_adam_update_is_finite_f32(w + i, g + i, m + i, v + i, N - i, lr, beta1, beta2, epsilon,
                                                  weight_decay, decoupled, beta1_power, beta2_power, grad_scale,
                                                  none);
}

/* ---- a gradient's += (ops/shared.c's mt_op_add_f32_accumulate) ---- */

/* dx += dy, eight at a time, each lane the reference's one addition; a block whose sums
 * flushed a subnormal or hold a NaN, and the last partial block, are added on the scalar FPU */
void mt_mve_add_accumulate(const float *dy, float *dx, size_t N)
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
void mt_mve_clear_f32(float *p, size_t n)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (; n >= 16u; n -= 16u, p += 16)
        vst1q_f32(p, zero), vst1q_f32(p + 4, zero), vst1q_f32(p + 8, zero), vst1q_f32(p + 12, zero);
    for (; n >= 4u; n -= 4u, p += 4) vst1q_f32(p, zero);
    if (n) vstrwq_p_f32(p, zero, vctp32q((uint32_t)n));
}

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
        float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
        p = vaddq_f32(vdupq_n_f32(1.0f / 720.0f), vmulq_f32(r, p));
        p = vaddq_f32(vdupq_n_f32(1.0f / 120.0f), vmulq_f32(r, p));
        p = vaddq_f32(vdupq_n_f32(1.0f / 24.0f), vmulq_f32(r, p));
        p = vaddq_f32(vdupq_n_f32(1.0f / 6.0f), vmulq_f32(r, p));
        p = vaddq_f32(vdupq_n_f32(0.5f), vmulq_f32(r, p));
        p = vaddq_f32(r, vmulq_f32(vmulq_f32(r, r), p));
        p = vaddq_f32(vdupq_n_f32(1.0f), p);
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
typedef int mt_shared_mve_unused; /* ISO C: a translation unit is not empty */
#endif
