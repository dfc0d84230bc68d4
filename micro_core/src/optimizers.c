/* Optimizer updates, element by element, exactly PyTorch's formulas (see optimizers.h). */
#include "optimizers.h"

#include <math.h>

#include "microtrain.h"

uint32_t mt_optimizer_state_arrays(int optimizer, float momentum)
{
    switch (optimizer) {
    case MT_OPTIMIZER_SGD: return momentum > 0.0f ? 1u : 0u;
    case MT_OPTIMIZER_ADAM:
    case MT_OPTIMIZER_ADAMW: return 2u;
    default: return 0u;
    }
}

void mt_sgd_update_f32(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                       float weight_decay, float grad_scale)
{
    for (size_t i = 0; i < N; ++i) {
        float d = g[i] * grad_scale;
        if (weight_decay != 0.0f) d += weight_decay * w[i];
        if (momentum > 0.0f) {
            /* buf starts at 0, so the first step gives buf = d as in PyTorch */
            buf[i] = momentum * buf[i] + d;
            d = buf[i];
        }
        w[i] -= lr * d;
    }
}

void mt_adam_update_f32(float *w, const float *g, float *m, float *v, size_t N, float lr,
                        float beta1, float beta2, float epsilon, float weight_decay,
                        int decoupled, double beta1_power, double beta2_power, float grad_scale)
{
    const float step_size = (float)((double)lr / (1.0 - beta1_power));
    const float bias_correction2_sqrt = (float)sqrt(1.0 - beta2_power);
    const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;

    for (size_t i = 0; i < N; ++i) {
        float gi = g[i] * grad_scale;
        if (decoupled) {
            w[i] *= 1.0f - lr * weight_decay;
        } else if (weight_decay != 0.0f) {
            gi += weight_decay * w[i];
        }
        /* PyTorch's lerp(m, g, w) with w = 1-β1: from the nearer end, so that
         * w = 1 (β1 = 0) gives m = g exactly */
        if (one_minus_beta1 < 0.5f)
            m[i] = m[i] + one_minus_beta1 * (gi - m[i]);
        else
            m[i] = gi - (gi - m[i]) * beta1;
        v[i] = beta2 * v[i] + one_minus_beta2 * (gi * gi);
        float denom = sqrtf(v[i]) / bias_correction2_sqrt + epsilon;
        w[i] -= step_size * (m[i] / denom);
    }
}
