/*
 * Optimizer updates, element by element, exactly PyTorch's formulas (see optimizers.h).
 *
 * Each optimizer has one element function that computes an element's new weight and new
 * state from the old ones. The update stores what it returns; the finiteness check runs
 * the very same function and only looks at the results. So the check and the update can
 * never disagree: the check sees the bits the update would write.
 */
#include "optimizers.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "microtrain.h"
#include "select/kernels.h"

/* The element functions are inlined into their loops: called per element, they reloaded
 * every parameter and spent a call on each (about 70 instructions an Adam element on a
 * Cortex-M at -Os, against about 30 inlined); the arithmetic, and so every bit, is the same. */
#if defined(__GNUC__)
#define MT_ELEMENT static inline __attribute__((always_inline))
#else
#define MT_ELEMENT static inline
#endif

uint32_t mt_optimizer_state_arrays(int optimizer, float momentum)
{
    switch (optimizer) {
    case MT_OPTIMIZER_SGD: return momentum > 0.0f ? 1u : 0u;
    case MT_OPTIMIZER_ADAM:
    case MT_OPTIMIZER_ADAMW: return 2u;
    default: return 0u;
    }
}

/* x's bits */
MT_ELEMENT uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* Bit 31 set when x is NaN or ±Inf: its exponent bits are all ones, and adding one to the
 * exponent field carries out of it. The checks OR this over every value and test bit 31 once
 * at the end: no branch nor compare per element (mt_isfinitef's test, cheaper in a loop). */
MT_ELEMENT uint32_t non_finite(float x)
{
    return (bits_of(x) & 0x7f800000u) + 0x00800000u;
}

/* ---- SGD ---- */

/* The flags are ints tested per element: a float compare there costs the FPU cores a VCMP and
 * a VMRS each (the arithmetic, and so every bit, is the same). */
typedef struct sgd_params {
    float lr, momentum, weight_decay, grad_scale, mu;
    int has_mu, has_decay;
} sgd_params;

typedef struct sgd_result {
    float w, buf;
} sgd_result;

/* The proximal gradient μ·(w − ref) of μ/2·(w − ref)², added to the reduced gradient d. */
MT_ELEMENT float add_proximal(float d, float mu, float w, float ref)
{
    return d + mu * (w - ref);
}

/* d = g·scale (+ μ·(w − ref)) + wd·w;  momentum > 0: buf' = momentum·buf + d, d = buf';
 * w' = w - lr·d. buf is used, and the result's buf meaningful, only when momentum > 0. */
MT_ELEMENT sgd_result sgd_element(const sgd_params *p, float w, float g, float buf, float ref)
{
    sgd_result r;
    float d = g * p->grad_scale;
    if (p->has_mu) d = add_proximal(d, p->mu, w, ref);
    if (p->has_decay) d += p->weight_decay * w;
    if (p->momentum > 0.0f) { /* (the loops are split on momentum: a constant there) */
        /* buf starts at 0, so the first step gives buf = d as in PyTorch */
        buf = p->momentum * buf + d;
        d = buf;
    }
    r.buf = buf;
    r.w = w - p->lr * d;
    return r;
}

/* The reference element i, or 0 when there is no proximal term (ref: prox.ref then, else NULL). */
#define REF(ref, i) ((ref) ? (ref)[i] : 0.0f)

static const float *reference_of(mt_proximal prox)
{
    return prox.mu != 0.0f ? prox.ref : NULL;
}

static sgd_params sgd_params_for(float lr, float momentum, float weight_decay, float grad_scale, float mu)
{
    const sgd_params p = {lr, momentum, weight_decay, grad_scale, mu, mu != 0.0f, weight_decay != 0.0f};
    return p;
}

void mt_sgd_update_f32_ref(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                           float weight_decay, float grad_scale, mt_proximal prox)
{
    const sgd_params p = sgd_params_for(lr, momentum, weight_decay, grad_scale, prox.mu);
    const float *ref = reference_of(prox);
    if (momentum > 0.0f) {
        for (size_t i = 0; i < N; ++i) {
            const sgd_result r = sgd_element(&p, w[i], g[i], buf[i], REF(ref, i));
            w[i] = r.w;
            buf[i] = r.buf;
        }
    } else {
        for (size_t i = 0; i < N; ++i) w[i] = sgd_element(&p, w[i], g[i], 0.0f, REF(ref, i)).w;
    }
}

int mt_sgd_update_is_finite_f32_ref(const float *w, const float *g, const float *buf, size_t N, float lr,
                                    float momentum, float weight_decay, float grad_scale, mt_proximal prox)
{
    const sgd_params p = sgd_params_for(lr, momentum, weight_decay, grad_scale, prox.mu);
    const float *ref = reference_of(prox);
    uint32_t bad = 0; /* bit 31: some value is not finite */
    if (momentum > 0.0f) {
        for (size_t i = 0; i < N; ++i) {
            const sgd_result r = sgd_element(&p, w[i], g[i], buf[i], REF(ref, i));
            bad |= non_finite(g[i]) | non_finite(r.w) | non_finite(r.buf);
        }
    } else {
        for (size_t i = 0; i < N; ++i)
            bad |= non_finite(g[i]) | non_finite(sgd_element(&p, w[i], g[i], 0.0f, REF(ref, i)).w);
    }
    return (bad & 0x80000000u) == 0;
}

/* ---- Adam, AdamW ---- */


typedef struct adam_result {
    float w, m, v;
} adam_result;

/*
 * The whole-tensor shortcut of the guard, for the plain configuration: limits on the old
 * values under which no element can make a non-finite value, so that a pass comparing bits
 * answers for the whole tensor (the guard's loop computes every element's moments: about 33
 * instructions an element on the M4F and 12 on the M55, where the comparisons take 19 and 3).
 * With u = 2^-24 (round to nearest: |fl(x)| <= |x|·(1 + u) unless it overflows, or 2u for a
 * result just below the normal range), s = |grad scale|, a = |1 - β1| <= 1, 0 <= β2 <= 1,
 * 0 <= 1 - β2 <= 1 (as floats, sign bits clear) and m_bound > 0, take M = m_bound/4,
 * G = min(2^62, M) and, for every element,
 *   |g|·s <= G/(1 + u), |m| <= M, 0 <= v <= 2^125 (sign bit clear), |w| <= 2^126.
 * Then, along the guard's own operations:
 *   g' = g·s:             |g'| <= G <= 2^62, finite;
 *   m' = m + (1 - β1)·(g' - m): |g' - m| <= (G + M)(1 + u) <= 2M(1 + u), the product at most
 *                         that times (1 + u), |m'| <= (M + 2M(1 + u)^2)(1 + u) < 3.1·M < m_bound,
 *                         finite, every step below 2^127 (M <= 2^125);
 *   v' = β2·v + (1 - β2)·g'²: g'² <= 2^124(1 + u), each product <= 2^125, the sum <= 2^126,
 *                         finite; products and sums of sign-clear floats keep the sign clear,
 *                         so v' >= +0;
 * so g, m' and v' are finite and the guard's per-element shortcut holds (|m'| <= m_bound,
 * |w| <= 2^126, v' sign clear): it answers 1 without computing a new w. g's limit is computed
 * in float (double arithmetic is a library call on the single-precision FPUs), rounded so that
 * it errs low: G / fl(s·(1 + 2^-19)), times 1 - 2^-19, is at most G·(1 + u)^3·(1 - 2^-19) /
 * ((1 + 2^-19)(1 - u)·s) < G/((1 + u)·s) even with 2u for the last rounding; a quotient past
 * FLT_MAX gives FLT_MAX, one below 2^-100 gives 0 (only zeros pass), s = 0 gives FLT_MAX
 * (every g' is then a zero). A NaN's bits exceed every limit.
 */
void mt_adam_set_limits(mt_adam_params *p)
{
    p->g_limit = p->m_limit = p->v_limit = 0u, p->limits = 0;
    const float s = fabsf(p->grad_scale), a = fabsf(p->one_minus_beta1);
    const float b2 = p->beta2, c2 = p->one_minus_beta2;
    if (!p->plain || !(p->m_bound > 0.0f) || !(s <= FLT_MAX) || !(a <= 1.0f) || signbit(b2) || !(b2 <= 1.0f) ||
        signbit(c2) || !(c2 <= 1.0f))
        return;
    const float m_limit = p->m_bound * 0.25f; /* exact: m_bound >= 2^-49, a normal float */
    const float g_prime = m_limit < 0x1p62f ? m_limit : 0x1p62f;
    float g_limit = FLT_MAX;
    if (s > 0.0f) {
        const float q = g_prime / (s * (1.0f + 0x1p-19f)); /* +inf past FLT_MAX; 0 where s·(…) overflows */
        g_limit = q > FLT_MAX ? FLT_MAX : q < 0x1p-100f ? 0.0f : q * (1.0f - 0x1p-19f);
    }
    p->g_limit = bits_of(g_limit), p->m_limit = bits_of(m_limit), p->v_limit = bits_of(0x1p125f);
    p->limits = 1;
}

mt_adam_params mt_adam_params_for(float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                   int decoupled, double beta1_power, double beta2_power, float grad_scale,
                                   float mu)
{
    mt_adam_params p;
    /* the bias corrections in double, as PyTorch computes them, rounded once to float */
    p.step_size = (float)((double)lr / (1.0 - beta1_power));
    p.bias_correction2_sqrt = (float)sqrt(1.0 - beta2_power);
    p.beta1 = beta1, p.beta2 = beta2;
    p.one_minus_beta1 = 1.0f - beta1, p.one_minus_beta2 = 1.0f - beta2;
    p.epsilon = epsilon;
    p.weight_decay = weight_decay, p.decay = 1.0f - lr * weight_decay;
    p.grad_scale = grad_scale;
    p.mu = mu;
    p.decoupled = decoupled;
    p.has_mu = mu != 0.0f, p.has_decay = weight_decay != 0.0f, p.near_m = p.one_minus_beta1 < 0.5f;
    p.plain = p.near_m && !p.has_mu && !p.has_decay && !p.decoupled;
    /* The guard's shortcut. With v' >= 0 finite, sqrt(1-β2^t) > 0 and ε > 0, the denominator
     * sqrt(v')/sqrt(1-β2^t) + ε is >= ε (rounding is monotonic) or +inf, never NaN; so for
     * |m'| <= ε·2^100, |m'/denom| <= 2^100, and with |step_size| <= 2^26 the term
     * step_size·(m'/denom) is at most 2^126: next to |w| <= 2^126 the new w is at most 2^127,
     * finite, known without the square root and the two divisions (soft-float calls on a
     * core without an FPU, 14 cycles each on the M4F's). The x86 and Helium guards read it here. */
    p.m_bound = (epsilon > 0.0f && epsilon <= 0x1p27f && p.bias_correction2_sqrt > 0.0f &&
                 fabsf(p.step_size) <= 0x1p26f) ? epsilon * 0x1p100f : 0.0f;
    p.g_limit = p.m_limit = p.v_limit = 0u, p.limits = 0; /* the guards' mt_adam_set_limits */
    return p;
}

/* g' = g·scale (+ μ·(w − ref), w before any decay); AdamW: w = w·(1 - lr·wd); Adam:
 * g' += wd·w.  m' = lerp(m, g', 1-β1);  v' = β2·v + (1-β2)·g'²: r.w is w after the decay.
 * plain (a constant where inlined): p->plain holds, and nothing is tested per element. */
MT_ELEMENT adam_result adam_moments(const mt_adam_params *p, float w, float g, float m, float v, float ref,
                                    const int plain)
{
    adam_result r;
    float gi = g * p->grad_scale;
    if (!plain && p->has_mu) gi = add_proximal(gi, p->mu, w, ref);
    if (!plain && p->decoupled) {
        w *= p->decay;
    } else if (!plain && p->has_decay) {
        gi += p->weight_decay * w;
    }
    /* PyTorch's lerp(m, g, w) with w = 1-β1: from the nearer end, so that
     * w = 1 (β1 = 0) gives m = g exactly */
    if (plain || p->near_m)
        r.m = m + p->one_minus_beta1 * (gi - m);
    else
        r.m = gi - (gi - m) * p->beta1;
    r.v = p->beta2 * v + p->one_minus_beta2 * (gi * gi);
    r.w = w;
    return r;
}

/* w' = w - step_size · m' / (sqrt(v') / sqrt(1-β2^t) + ε), w after the decay */
MT_ELEMENT float adam_weight(const mt_adam_params *p, float w, float m, float v)
{
    const float denom = sqrtf(v) / p->bias_correction2_sqrt + p->epsilon;
    return w - p->step_size * (m / denom);
}

/* One element's whole step: the new w, m and v */
MT_ELEMENT adam_result adam_element(const mt_adam_params *p, float w, float g, float m, float v, float ref,
                                    const int plain)
{
    adam_result r = adam_moments(p, w, g, m, v, ref, plain);
    r.w = adam_weight(p, r.w, r.m, r.v);
    return r;
}

/* the update's loop, compiled apart for the plain configuration (plain a constant) */
MT_ELEMENT void adam_loop(const mt_adam_params *p, float *w, const float *g, float *m, float *v, size_t N,
                          const float *ref, const int plain)
{
    for (size_t i = 0; i < N; ++i) {
        const adam_result r = adam_element(p, w[i], g[i], m[i], v[i], REF(ref, i), plain);
        w[i] = r.w;
        m[i] = r.m;
        v[i] = r.v;
    }
}

/* the guard's loop: bit 31 of the result set when some value the update writes is not finite */
MT_ELEMENT uint32_t adam_guard_loop(const mt_adam_params *p, const float *w, const float *g, const float *m,
                                    const float *v, size_t N, const float *ref, const int plain)
{
    const uint32_t m_bound = bits_of(p->m_bound); /* 0 or the bits of a positive float */
    uint32_t bad = 0;
    for (size_t i = 0; i < N; ++i) {
        const adam_result r = adam_moments(p, w[i], g[i], m[i], v[i], REF(ref, i), plain);
        bad |= non_finite(g[i]) | non_finite(r.m) | non_finite(r.v);
        /* The new w is finite without computing it where the shortcut holds: m_bound > 0,
         * |m'| <= m_bound, |w| <= 2^126 and v' >= 0, tested on the bits (magnitudes order as
         * their bits, and a NaN's exceed every bound, as C's <= fails for it; a v' with its
         * sign bit set, -0 included, is computed, and a NaN v' with it clear is caught by
         * non_finite above: the answer is the float tests'). Else computed as the update will. */
        if (m_bound == 0u || (bits_of(r.m) & 0x7fffffffu) > m_bound ||
            (bits_of(r.w) & 0x7fffffffu) > MT_ADAM_W_LIMIT || (bits_of(r.v) >> 31))
            bad |= non_finite(adam_weight(p, r.w, r.m, r.v));
    }
    return bad;
}

void mt_adam_update_f32_ref(float *w, const float *g, float *m, float *v, size_t N, float lr,
                            float beta1, float beta2, float epsilon, float weight_decay,
                            int decoupled, double beta1_power, double beta2_power, float grad_scale,
                            mt_proximal prox)
{
    const mt_adam_params p = mt_adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                          beta2_power, grad_scale, prox.mu);
    if (p.plain) adam_loop(&p, w, g, m, v, N, NULL, 1);
    else adam_loop(&p, w, g, m, v, N, reference_of(prox), 0);
}

/* Bit 31 of limit - x is set exactly when x > limit, both below 2^31; a v with its sign bit
 * set sets it itself. One OR a value, one test at the end, as the guard's loops. */
int mt_adam_within_limits(const mt_adam_params *p, const float *w, const float *g, const float *m, const float *v,
                          size_t N)
{
    if (!p->limits) return 0;
    const uint32_t gl = p->g_limit, ml = p->m_limit, vl = p->v_limit;
    uint32_t over = 0u;
    for (size_t i = 0; i < N; ++i) {
        const uint32_t vb = bits_of(v[i]);
        over |= (gl - (bits_of(g[i]) & 0x7fffffffu)) | (ml - (bits_of(m[i]) & 0x7fffffffu)) | (vl - vb) | vb |
                (MT_ADAM_W_LIMIT - (bits_of(w[i]) & 0x7fffffffu));
    }
    return (over & 0x80000000u) == 0;
}

int mt_adam_update_is_finite_f32_ref(const float *w, const float *g, const float *m, const float *v, size_t N,
                                     float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                     int decoupled, double beta1_power, double beta2_power, float grad_scale,
                                     mt_proximal prox)
{
    mt_adam_params p = mt_adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                          beta2_power, grad_scale, prox.mu);
    mt_adam_set_limits(&p);
    if (mt_adam_within_limits(&p, w, g, m, v, N)) return 1; /* the plain configuration's usual case */
    const uint32_t bad = p.plain ? adam_guard_loop(&p, w, g, m, v, N, NULL, 1)
                                 : adam_guard_loop(&p, w, g, m, v, N, reference_of(prox), 0);
    return (bad & 0x80000000u) == 0;
}
