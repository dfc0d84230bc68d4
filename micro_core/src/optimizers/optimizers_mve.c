/*
 * optimizers.c's SGD and Adam (AdamW) updates and their guards in Helium, four elements at a
 * time: each lane the reference's operations in its order, a block that flushed a subnormal or
 * made a NaN redone by the reference; a proximal term (FedProx) is the reference's to compute.
 * Built into every M55 core (the session calls them). ops/mve/mve.h says how the kernels keep
 * the reference's bits.
 */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include <math.h>
#include <string.h>

#include "ops/mve/mve_flags.h"
#include "optimizers.h"

/* ---- SGD ---- */

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

/* mt_sgd_update_f32_ref without a proximal term, four elements at a time; a block that flushed a
 * subnormal or holds a NaN is redone by the portable update before anything of it is stored,
 * and a last partial block is the portable update's */
void mt_sgd_update_f32_mve(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                           float weight_decay, float grad_scale, mt_proximal prox)
{
    if (prox.mu != 0.0f) {
        mt_sgd_update_f32_ref(w, g, buf, N, lr, momentum, weight_decay, grad_scale, prox);
        return;
    }
    const mt_proximal none = {NULL, 0.0f};
    size_t i = 0;
    mt_mve_flags_clear(); /* the flags are sticky: cleared again only after a block that set them */
    for (; i + 4 <= N; i += 4) {
        float32x4_t b = momentum > 0.0f ? vld1q_f32(buf + i) : vdupq_n_f32(0.0f);
        const float32x4_t nw = sgd4(vld1q_f32(w + i), vld1q_f32(g + i), &b, lr, momentum, weight_decay, grad_scale);
        if (mt_mve_flushed(nw, b, nw, b) || mt_mve_nan(nw, b, nw, b)) {
            mt_sgd_update_f32_ref(w + i, g + i, buf ? buf + i : NULL, 4, lr, momentum, weight_decay, grad_scale, none);
            mt_mve_flags_clear();
            continue;
        }
        vst1q_f32(w + i, nw);
        if (momentum > 0.0f) vst1q_f32(buf + i, b);
    }
    if (i < N)
        mt_sgd_update_f32_ref(w + i, g + i, buf ? buf + i : NULL, N - i, lr, momentum, weight_decay, grad_scale, none);
}

/* mt_sgd_update_is_finite_f32_ref without a proximal term: g, w' and buf' finite when the largest of
 * their magnitudes' bits stays below +inf's; a flushed subnormal anywhere: the portable guard */
int mt_sgd_update_is_finite_f32_mve(const float *w, const float *g, const float *buf, size_t N, float lr,
                                    float momentum, float weight_decay, float grad_scale, mt_proximal prox)
{
    if (prox.mu != 0.0f)
        return mt_sgd_update_is_finite_f32_ref(w, g, buf, N, lr, momentum, weight_decay, grad_scale, prox);
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
        return mt_sgd_update_is_finite_f32_ref(w, g, buf, N, lr, momentum, weight_decay, grad_scale, none);
    if (vmaxvq_u32(0u, worst) >= 0x7f800000u) return 0;
    return i == N || mt_sgd_update_is_finite_f32_ref(w + i, g + i, buf ? buf + i : NULL, N - i, lr, momentum,
                                                     weight_decay, grad_scale, none);
}

/* ---- Adam and AdamW ---- */

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

/* mt_adam_update_f32_ref's arguments, for the portable update of the blocks Helium gives back */
typedef struct {
    float lr, beta1, beta2, epsilon, weight_decay, grad_scale;
    int decoupled;
    double beta1_power, beta2_power;
} adam_args;

static __attribute__((noinline)) void adam_portable(const adam_args *a, float *w, const float *g, float *m, float *v,
                                                    size_t n)
{
    const mt_proximal none = {NULL, 0.0f};
    mt_adam_update_f32_ref(w, g, m, v, n, a->lr, a->beta1, a->beta2, a->epsilon, a->weight_decay, a->decoupled,
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
 * mt_adam_update_f32_ref without a proximal term: per four elements the moments in Helium, then
 * each new w on the scalar FPU; a block the Helium path cannot give the reference's bits for
 * is redone by the portable update from its untouched values, and so is a last partial block.
 */
void mt_adam_update_f32_mve(float *w, const float *g, float *m, float *v, size_t N, float lr, float beta1,
                            float beta2, float epsilon, float weight_decay, int decoupled, double beta1_power,
                            double beta2_power, float grad_scale, mt_proximal prox)
{
    if (prox.mu != 0.0f) {
        mt_adam_update_f32_ref(w, g, m, v, N, lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                               beta2_power, grad_scale, prox);
        return;
    }
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
 * mt_adam_update_is_finite_f32_ref without a proximal term: first the whole-tensor limits (the
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
                                     int decoupled, double beta1_power, double beta2_power, float grad_scale,
                                     mt_proximal prox)
{
    if (prox.mu != 0.0f)
        return mt_adam_update_is_finite_f32_ref(w, g, m, v, N, lr, beta1, beta2, epsilon, weight_decay, decoupled,
                                                beta1_power, beta2_power, grad_scale, prox);
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
        return mt_adam_update_is_finite_f32_ref(w, g, m, v, N, lr, beta1, beta2, epsilon, weight_decay, decoupled,
                                                beta1_power, beta2_power, grad_scale, none);
    if (vmaxvq_u32(0u, worst) >= 0x7f800000u || (weights_bad & 0x80000000u)) return 0;
    return i == N || mt_adam_update_is_finite_f32_ref(w + i, g + i, m + i, v + i, N - i, lr, beta1, beta2, epsilon,
                                                      weight_decay, decoupled, beta1_power, beta2_power, grad_scale,
                                                      none);
}

#else
typedef int mt_optimizers_mve_unused; /* ISO C: a translation unit is not empty */
#endif
