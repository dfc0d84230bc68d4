/*
 * Optimizer updates, element by element, exactly PyTorch's formulas (see optimizers.h).
 *
 * Each optimizer has one element function that computes an element's new weight and new
 * state from the old ones. The update stores what it returns; the finiteness check runs
 * the very same function and only looks at the results. So the check and the update can
 * never disagree: the check sees the bits the update would write.
 */
#include "optimizers.h"

#include <math.h>

#include "microtrain.h"
#include "mt_math.h"

uint32_t mt_optimizer_state_arrays(int optimizer, float momentum)
{
    switch (optimizer) {
    case MT_OPTIMIZER_SGD: return momentum > 0.0f ? 1u : 0u;
    case MT_OPTIMIZER_ADAM:
    case MT_OPTIMIZER_ADAMW: return 2u;
    default: return 0u;
    }
}

/* ---- SGD ---- */

typedef struct sgd_params {
    float lr, momentum, weight_decay, grad_scale;
} sgd_params;

/* d = g·scale + wd·w;  momentum > 0: buf' = μ·buf + d, d = buf';  w' = w - lr·d.
 * buf is read and *buf_new written only when momentum > 0. */
static void sgd_element(const sgd_params *p, float w, float g, float buf, float *w_new, float *buf_new)
{
    float d = g * p->grad_scale;
    if (p->weight_decay != 0.0f) d += p->weight_decay * w;
    if (p->momentum > 0.0f) {
        /* buf starts at 0, so the first step gives buf = d as in PyTorch */
        buf = p->momentum * buf + d;
        d = buf;
        *buf_new = buf;
    }
    *w_new = w - p->lr * d;
}

void mt_sgd_update_f32(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                       float weight_decay, float grad_scale)
{
    const sgd_params p = {lr, momentum, weight_decay, grad_scale};
    const int has_buf = momentum > 0.0f;
    for (size_t i = 0; i < N; ++i) {
        float unused = 0.0f;
        sgd_element(&p, w[i], g[i], has_buf ? buf[i] : 0.0f, &w[i], has_buf ? &buf[i] : &unused);
    }
}

int mt_sgd_update_is_finite_f32(const float *w, const float *g, const float *buf, size_t N, float lr,
                                float momentum, float weight_decay, float grad_scale)
{
    const sgd_params p = {lr, momentum, weight_decay, grad_scale};
    const int has_buf = momentum > 0.0f;
    for (size_t i = 0; i < N; ++i) {
        float w_new, buf_new = 0.0f;
        if (!mt_isfinitef(g[i])) return 0;
        sgd_element(&p, w[i], g[i], has_buf ? buf[i] : 0.0f, &w_new, &buf_new);
        if (!mt_isfinitef(w_new) || !mt_isfinitef(buf_new)) return 0;
    }
    return 1;
}

/* ---- Adam, AdamW ---- */

typedef struct adam_params {
    float step_size;             /* lr / (1 - β1^t) */
    float bias_correction2_sqrt; /* sqrt(1 - β2^t) */
    float beta1, beta2, one_minus_beta1, one_minus_beta2, epsilon;
    float weight_decay, decay; /* decay = 1 - lr·wd (AdamW) */
    float grad_scale;
    int decoupled;
} adam_params;

static adam_params adam_params_for(float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                   int decoupled, double beta1_power, double beta2_power, float grad_scale)
{
    adam_params p;
    /* the bias corrections in double, as PyTorch computes them, rounded once to float */
    p.step_size = (float)((double)lr / (1.0 - beta1_power));
    p.bias_correction2_sqrt = (float)sqrt(1.0 - beta2_power);
    p.beta1 = beta1, p.beta2 = beta2;
    p.one_minus_beta1 = 1.0f - beta1, p.one_minus_beta2 = 1.0f - beta2;
    p.epsilon = epsilon;
    p.weight_decay = weight_decay, p.decay = 1.0f - lr * weight_decay;
    p.grad_scale = grad_scale;
    p.decoupled = decoupled;
    return p;
}

/* AdamW: w = w·(1 - lr·wd); Adam: g' = g·scale + wd·w.  m' = lerp(m, g', 1-β1);
 * v' = β2·v + (1-β2)·g'²;  w' = w - step_size · m' / (sqrt(v') / sqrt(1-β2^t) + ε). */
static void adam_element(const adam_params *p, float w, float g, float m, float v, float *w_new,
                         float *m_new, float *v_new)
{
    float gi = g * p->grad_scale;
    if (p->decoupled) {
        w *= p->decay;
    } else if (p->weight_decay != 0.0f) {
        gi += p->weight_decay * w;
    }
    /* PyTorch's lerp(m, g, w) with w = 1-β1: from the nearer end, so that
     * w = 1 (β1 = 0) gives m = g exactly */
    if (p->one_minus_beta1 < 0.5f)
        m = m + p->one_minus_beta1 * (gi - m);
    else
        m = gi - (gi - m) * p->beta1;
    v = p->beta2 * v + p->one_minus_beta2 * (gi * gi);
    const float denom = sqrtf(v) / p->bias_correction2_sqrt + p->epsilon;
    *w_new = w - p->step_size * (m / denom);
    *m_new = m;
    *v_new = v;
}

void mt_adam_update_f32(float *w, const float *g, float *m, float *v, size_t N, float lr,
                        float beta1, float beta2, float epsilon, float weight_decay,
                        int decoupled, double beta1_power, double beta2_power, float grad_scale)
{
    const adam_params p = adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                          beta2_power, grad_scale);
    for (size_t i = 0; i < N; ++i) adam_element(&p, w[i], g[i], m[i], v[i], &w[i], &m[i], &v[i]);
}

int mt_adam_update_is_finite_f32(const float *w, const float *g, const float *m, const float *v, size_t N,
                                 float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                 int decoupled, double beta1_power, double beta2_power, float grad_scale)
{
    const adam_params p = adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                          beta2_power, grad_scale);
    for (size_t i = 0; i < N; ++i) {
        float w_new, m_new, v_new;
        if (!mt_isfinitef(g[i])) return 0;
        adam_element(&p, w[i], g[i], m[i], v[i], &w_new, &m_new, &v_new);
        if (!mt_isfinitef(w_new) || !mt_isfinitef(m_new) || !mt_isfinitef(v_new)) return 0;
    }
    return 1;
}
