/*
 * Optimizer updates for one weight tensor of N elements (PyTorch's formulas).
 * w, g are the weights and their gradient; state holds 1 (SGD with momentum)
 * or 2 (Adam/AdamW: m then v) arrays of N floats.
 *
 * Each update has a side-effect-free twin, *_update_is_finite_f32, taking the same
 * arguments: 1 when every gradient element is finite and the update would leave every
 * weight and state element finite, else 0. It computes each element with the update's own
 * code (same operations, same order), so its answer is about the exact bits the update
 * would store. The session calls it before an update to refuse one that would write a
 * NaN or infinity (a huge learning rate overflows lr·g, or Adam's lr / (1 - β1^t)).
 *
 * The updates and guards are rows of the kernel table (select/kernels.def: mt_sgd_update_f32,
 * mt_sgd_update_is_finite_f32, mt_adam_update_f32, mt_adam_update_is_finite_f32, each with the
 * parameters below): the references, _ref, are optimizers.c's; their x86 and Helium siblings
 * live beside it in optimizers/; the session calls the build's column's (mt_kernel_...).
 */
#ifndef MT_OPTIMIZERS_H
#define MT_OPTIMIZERS_H

#include <stddef.h>
#include <stdint.h>

/* Number of N-element state arrays the optimizer keeps per weight tensor. */
uint32_t mt_optimizer_state_arrays(int optimizer, float momentum);

/* The proximal term of FedProx, shared by every optimizer: with mu > 0 the reduced gradient
 * g·grad_scale first gets μ·(w − ref) added (ref: N reference weights; NULL when mu == 0),
 * the gradient of μ/2·‖w − ref‖², computed from w before any decay. */
typedef struct mt_proximal {
    const float *ref;
    float mu;
} mt_proximal;

/* SGD: g is first multiplied by grad_scale (1/rows for MEAN reduction of accumulated sums);
 * buf may be NULL when momentum == 0 (plain SGD keeps no state).
 * g' = g·scale + μ·(w − ref) + wd·w;  momentum > 0: buf = momentum·buf + g';
 * w -= lr·(momentum > 0 ? buf : g')
 *
 * Adam (decoupled = 0, L2 decay added to g) or AdamW (decoupled = 1, w *= 1 - lr·wd),
 * at step t >= 1 with beta1_power = β1^t and beta2_power = β2^t (the caller keeps
 * these running products, in double as PyTorch computes its bias corrections):
 * m = lerp(m, g, 1-β1)  (= β1 m + (1-β1) g, evaluated as PyTorch's lerp);  v = β2 v + (1-β2) g²;
 * w -= (lr / (1-β1^t)) · m / (sqrt(v) / sqrt(1-β2^t) + ε);  g is first multiplied by grad_scale
 * and gets the proximal term μ·(w − ref) (of w before AdamW's decay) */

/* Adam's per-call constants, computed once for the portable update and for its x86 and Helium
 * siblings (the same floats from the same doubles): the bias corrections, 1 - β, AdamW's
 * decay factor, the configuration flags and the guard's shortcut bound m_bound (> 0: a new w is
 * proven finite for |m'| <= m_bound, |w| <= 2^126 and v' >= 0; 0: never). */
typedef struct mt_adam_params {
    float step_size;             /* lr / (1 - β1^t) */
    float bias_correction2_sqrt; /* sqrt(1 - β2^t) */
    float beta1, beta2, one_minus_beta1, one_minus_beta2, epsilon;
    float weight_decay, decay; /* decay = 1 - lr·wd (AdamW) */
    float grad_scale, mu;
    float m_bound;
    int decoupled, has_mu, has_decay, near_m; /* near_m: m' = m + (1-β1)·(g' - m), else g' - (g' - m)·β1 */
    int plain; /* near_m, no decay, no proximal term (Adam, β1 > 0.5): the loops compiled for it apart */
    /* The whole-tensor shortcut of the plain configuration (limits != 0): when every |g|, |m|
     * and |w| and every v (sign bit clear) has bits at most g_limit, m_limit, MT_ADAM_W_LIMIT
     * and v_limit, the guard answers 1 without one element's moments (the proof is at
     * mt_adam_set_limits, which the guards call; mt_adam_params_for leaves them 0). Bits, as
     * the siblings compare them: magnitudes order as theirs. */
    uint32_t g_limit, m_limit, v_limit;
    int limits;
} mt_adam_params;

#define MT_ADAM_W_LIMIT 0x7e800000u /* the bits of 2^126 */

mt_adam_params mt_adam_params_for(float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                  int decoupled, double beta1_power, double beta2_power, float grad_scale, float mu);

/* Sets p's whole-tensor limits (none outside the plain configuration) */
void mt_adam_set_limits(mt_adam_params *p);

/* 1 when p->limits and every element is within them, so that the guard's answer is 1 (the
 * portable test; the x86 and Helium guards make it on vectors of the same bits) */
int mt_adam_within_limits(const mt_adam_params *p, const float *w, const float *g, const float *m, const float *v,
                          size_t N);

#endif /* MT_OPTIMIZERS_H */
