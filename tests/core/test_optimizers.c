/*
 * Optimizer updates of optimizers.h against a double-precision transcription of PyTorch's
 * torch.optim formulas, over several steps with changing gradients:
 *
 *   SGD    g' = g + wd·w;  momentum > 0: buf = μ·buf + g' (buf₀ = 0, so step 1 gives buf = g',
 *          as PyTorch's clone);  w -= lr·(μ > 0 ? buf : g')
 *   Adam   g' = g + wd·w;  m = β1 m + (1-β1) g' (PyTorch's lerp m + (1-β1)(g' - m));  v = β2 v + (1-β2) g'²
 *          w -= lr/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + ε), β^t passed in as doubles
 *   AdamW  w *= 1 - lr·wd first; then Adam with g' = g
 *
 * Float vs double over 6 steps of lr ≤ 0.1 drifts by ~1e-7 relative; tolerance 2e-6.
 *
 * The numeric guard's checks (mt_*_update_is_finite_f32) must answer exactly "would the
 * update write a NaN or infinity, or is a gradient one": compared with the update itself on
 * copies, over learning rates up to FLT_MAX, gradients up to 1e30 and poisoned elements.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "microtrain.h"
#include "mt_test.h"
#include "optimizers.h"
#include "select/kernels.h"

#define NW 37 /* odd, so unrolled variants must handle a tail */
#define STEPS 6
#define TOL 2e-6

static const mt_proximal NO_PROX = {NULL, 0.0f};

static void draw(float *a, int n, float lo, float hi)
{
    for (int i = 0; i < n; i++)
        a[i] = mt_test_uniform(lo, hi);
}

static void check_array(const char *what, const float *got, const double *want, int n, int step)
{
    for (int i = 0; i < n; i++)
        if (!CHECK_NEAR(got[i], want[i], TOL * (1.0 + fabs(want[i]))))
            printf("    %s[%d] after step %d\n", what, i, step);
}

static void test_sgd(float lr, float momentum, float wd)
{
    float w[NW], g[NW], buf[NW] = { 0 };
    double rw[NW], rbuf[NW] = { 0 };
    draw(w, NW, -1.f, 1.f);
    for (int i = 0; i < NW; i++)
        rw[i] = w[i];
    for (int t = 1; t <= STEPS; t++) {
        draw(g, NW, -2.f, 2.f);
        /* plain SGD keeps no state: the trainer passes no buffer */
        mt_sgd_update_f32_ref(w, g, momentum > 0.f ? buf : NULL, NW, lr, momentum, wd, 1.0f, NO_PROX);
        for (int i = 0; i < NW; i++) {
            double gp = (double)g[i] + (double)wd * rw[i];
            if (momentum > 0.f) {
                rbuf[i] = (double)momentum * rbuf[i] + gp;
                gp = rbuf[i];
            }
            rw[i] -= (double)lr * gp;
        }
        check_array("sgd w", w, rw, NW, t);
        if (momentum > 0.f)
            check_array("sgd buf", buf, rbuf, NW, t);
    }
}

static void test_adam(float lr, float b1, float b2, float eps, float wd, int decoupled)
{
    float w[NW], g[NW], m[NW] = { 0 }, v[NW] = { 0 };
    double rw[NW], rm[NW] = { 0 }, rv[NW] = { 0 };
    draw(w, NW, -1.f, 1.f);
    for (int i = 0; i < NW; i++)
        rw[i] = w[i];
    for (int t = 1; t <= STEPS; t++) {
        draw(g, NW, -2.f, 2.f);
        if (t == 3)
            g[0] = 0.f, g[1] = 1e-6f; /* v ≈ 0: ε, not sqrt(v), dominates the denominator */
        /* the caller keeps β^t as running products in double, like PyTorch */
        double b1t = pow((double)b1, t), b2t = pow((double)b2, t);
        mt_adam_update_f32_ref(w, g, m, v, NW, lr, b1, b2, eps, wd, decoupled, b1t, b2t, 1.0f, NO_PROX);
        double bc1 = 1.0 - b1t, bc2 = 1.0 - b2t;
        for (int i = 0; i < NW; i++) {
            double gp = g[i];
            if (decoupled)
                rw[i] *= 1.0 - (double)lr * (double)wd;
            else
                gp += (double)wd * rw[i];
            rm[i] = (double)b1 * rm[i] + (1.0 - (double)b1) * gp;
            rv[i] = (double)b2 * rv[i] + (1.0 - (double)b2) * gp * gp;
            rw[i] -= (double)lr / bc1 * rm[i] / (sqrt(rv[i]) / sqrt(bc2) + (double)eps);
        }
        check_array(decoupled ? "adamw w" : "adam w", w, rw, NW, t);
        if (b1 == 0.f && wd == 0.f) /* m = 0·m + 1·g is g exactly, in any float arithmetic */
            for (int i = 0; i < NW; i++)
                if (!CHECK_BITS_EQ(m[i], g[i]))
                    printf("    beta1 = 0: m[%d] != g[%d] after step %d\n", i, i, t);
        check_array("adam m", m, rm, NW, t);
        check_array("adam v", v, rv, NW, t);
    }
}

/* Step 1 of Adam moves every weight by lr·g/(|g| + ε) ≈ lr·sign(g) (m̂ = g, sqrt(v̂) = |g|). */
static void test_adam_first_step_is_sign(void)
{
    float w[4] = { 0.f, 0.f, 0.f, 0.f }, g[4] = { 3.f, -1e-3f, 50.f, -0.5f };
    float m[4] = { 0 }, v[4] = { 0 };
    mt_adam_update_f32_ref(w, g, m, v, 4, 0.01f, 0.9f, 0.999f, 1e-8f, 0.f, 0, (double)0.9f,
                           (double)0.999f, 1.0f, NO_PROX);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(w[i], -0.01 * g[i] / (fabs(g[i]) + 1e-8), 1e-9);
}

static int all_finite(const float *x, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* One case of the guard: is_finite must be 1 exactly when the gradient is finite and the
 * update leaves weights and state finite, and must not write. */
static void guard_case(int optimizer, float lr, float momentum, float wd, float g_scale, int poison,
                       int *refused)
{
    float w[NW], g[NW], m[NW], v[NW], w0[NW], m0[NW], v0[NW];
    draw(w, NW, -1.f, 1.f), draw(g, NW, -g_scale, g_scale);
    draw(m, NW, -1.f, 1.f), draw(v, NW, 0.f, 2.f);
    if (poison == 1)
        g[NW / 2] = NAN;
    if (poison == 2)
        g[NW - 1] = -INFINITY;
    memcpy(w0, w, sizeof w), memcpy(m0, m, sizeof m), memcpy(v0, v, sizeof v);
    int ok;
    if (optimizer == MT_OPTIMIZER_SGD) {
        ok = mt_sgd_update_is_finite_f32_ref(w, g, momentum > 0.f ? m : NULL, NW, lr, momentum, wd, 0.5f, NO_PROX);
        CHECK(memcmp(w, w0, sizeof w) == 0 && memcmp(m, m0, sizeof m) == 0);
        mt_sgd_update_f32_ref(w, g, momentum > 0.f ? m : NULL, NW, lr, momentum, wd, 0.5f, NO_PROX);
    } else {
        const int decoupled = optimizer == MT_OPTIMIZER_ADAMW;
        const double b1t = 0.9, b2t = 0.999; /* step 1: step_size = lr / 0.1 */
        ok = mt_adam_update_is_finite_f32_ref(w, g, m, v, NW, lr, 0.9f, 0.999f, 1e-8f, wd, decoupled, b1t, b2t,
                                              0.5f, NO_PROX);
        CHECK(memcmp(w, w0, sizeof w) == 0 && memcmp(m, m0, sizeof m) == 0 && memcmp(v, v0, sizeof v) == 0);
        mt_adam_update_f32_ref(w, g, m, v, NW, lr, 0.9f, 0.999f, 1e-8f, wd, decoupled, b1t, b2t, 0.5f, NO_PROX);
    }
    const int finite = all_finite(g, NW) && all_finite(w, NW) && all_finite(m, NW) &&
                       (optimizer == MT_OPTIMIZER_SGD || all_finite(v, NW));
    if (!CHECK_EQ_INT(ok, finite))
        printf("    optimizer %d, lr %g, momentum %g, wd %g, |g| < %g, poison %d\n", optimizer, (double)lr,
               (double)momentum, (double)wd, (double)g_scale, poison);
    *refused += !ok;
}

static void test_guard_agrees_with_the_update(void)
{
    static const float lrs[] = { 0.f, 1e-3f, 1.f, 1e30f, 3.4e37f, 1e38f, FLT_MAX };
    static const float g_scales[] = { 1.f, 1e19f, 1e30f };
    int refused = 0, cases = 0;
    for (int optimizer = 0; optimizer < 3; optimizer++)
        for (int variant = 0; variant < 3; variant++) /* SGD: plain, momentum, momentum + decay */
            for (size_t l = 0; l < sizeof lrs / sizeof lrs[0]; l++)
                for (size_t gs = 0; gs < sizeof g_scales / sizeof g_scales[0]; gs++)
                    for (int poison = 0; poison < 3; poison++, cases++)
                        guard_case(optimizer, lrs[l], variant ? 0.9f : 0.f, variant == 2 ? 0.1f : 0.f,
                                   g_scales[gs], poison, &refused);
    /* both answers occur: the sweep is not vacuous */
    CHECK(refused > cases / 3 && refused < cases);
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* One configuration of the guard's whole-tensor limits (mt_adam_params_for): data at the
 * limits, with either sign, and below them must be within and must update to finite values
 * (the proof's claim, tested on the update itself); one ulp past any limit, a v with its
 * sign bit set, or a NaN must not be within, and the guard must then still answer as the
 * update does. Returns whether the configuration has limits. */
static int limits_case(float lr, float beta1, float beta2, float eps, float scale, double b1t, double b2t)
{
    mt_adam_params p = mt_adam_params_for(lr, beta1, beta2, eps, 0.0f, 0, b1t, b2t, scale, 0.0f);
    mt_adam_set_limits(&p);
    if (!p.limits) return 0;
    const float lims[4] = {float_of(p.g_limit), float_of(p.m_limit), float_of(p.v_limit),
                           float_of(MT_ADAM_W_LIMIT)}; /* g, m, v, w */
    for (int edge = 0; edge < 14; ++edge) {
        float a[4][NW]; /* g, m, v, w */
        for (int k = 0; k < 4; ++k)
            for (int i = 0; i < NW; ++i) { /* at the limit, half of it, a random fraction or 0, each array
                                            * its own pattern; any sign but v's */
                const int c = (i * (k + 1) + k) % 4;
                const float x = c == 0 ? lims[k] : c == 1 ? lims[k] * 0.5f : c == 2 ? lims[k] * mt_test_uniform(0.f, 1.f) : 0.f;
                a[k][i] = k != 2 && ((i >> k) & 1) ? -x : x;
            }
        const int at = edge % 2 ? NW - 1 : NW / 3, k = (edge / 2) % 4;
        int within = 1;
        if (edge >= 2 && edge < 10) { /* one ulp past limit k (edges 2..9) */
            uint32_t u;
            memcpy(&u, &lims[k], 4);
            a[k][at] = k != 2 && (edge & 1) ? -float_of(u + 1u) : float_of(u + 1u);
            within = 0;
        } else if (edge == 10 || edge == 11) { /* v with its sign bit set: -0, then past the limit */
            a[2][at] = edge == 10 ? -0.0f : -FLT_MAX;
            within = 0;
        } else if (edge >= 12) { /* a NaN in g or in w */
            a[edge == 12 ? 0 : 3][at] = NAN;
            within = 0;
        }
        CHECK_EQ_INT(mt_adam_within_limits(&p, a[3], a[0], a[1], a[2], NW), within);
        const int ok = mt_adam_update_is_finite_f32_ref(a[3], a[0], a[1], a[2], NW, lr, beta1, beta2, eps, 0.0f, 0, b1t,
                                                        b2t, scale, NO_PROX);
        mt_adam_update_f32_ref(a[3], a[0], a[1], a[2], NW, lr, beta1, beta2, eps, 0.0f, 0, b1t, b2t, scale, NO_PROX);
        const int finite = all_finite(a[0], NW) && all_finite(a[3], NW) && all_finite(a[1], NW) && all_finite(a[2], NW);
        if (!CHECK_EQ_INT(ok, finite) || (within && !CHECK(finite)))
            printf("    lr %g, beta1 %g, beta2 %g, eps %g, scale %g, edge %d\n", (double)lr, (double)beta1,
                   (double)beta2, (double)eps, (double)scale, edge);
    }
    return 1;
}

/* The limits hold the data of every ordinary step, and the proof holds at them over learning
 * rates, betas, epsilons and gradient scales, at the first step (the largest step size) and
 * later; configurations outside the proof's assumptions have none */
static void test_adam_limits(void)
{
    static const float lrs[] = {1e-3f, 0.1f, 100.0f, 6.7e6f};
    static const float beta1s[] = {0.9f, 0.6f, 0.999f, 1.0f, 3.0f};
    static const float beta2s[] = {0.999f, 0.5f, 0.0f};
    static const float epss[] = {1e-8f, 1e-3f, 1.0f, 1e-30f, 0x1p27f};
    static const float scales[] = {1.0f, 1.0f / 32.0f, 1e-20f, 1e20f, 0.0f, -0.5f};
    int with = 0, cases = 0;
    for (size_t l = 0; l < sizeof lrs / sizeof lrs[0]; ++l)
        for (size_t b1 = 0; b1 < sizeof beta1s / sizeof beta1s[0]; ++b1)
            for (size_t b2 = 0; b2 < sizeof beta2s / sizeof beta2s[0]; ++b2)
                for (size_t e = 0; e < sizeof epss / sizeof epss[0]; ++e)
                    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; ++s)
                        for (int t = 1; t <= 2; ++t, ++cases) {
                            const double b1t = t == 1 ? beta1s[b1] : (double)beta1s[b1] * beta1s[b1] * beta1s[b1];
                            const double b2t = t == 1 ? beta2s[b2] : (double)beta2s[b2] * beta2s[b2] * beta2s[b2];
                            with += limits_case(lrs[l], beta1s[b1], beta2s[b2], epss[e], scales[s], b1t, b2t);
                        }
    CHECK(with > cases / 3 && with < cases); /* both kinds occur */
    /* PyTorch's defaults at batch 32: ordinary data is within */
    mt_adam_params p = mt_adam_params_for(1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 0.9, 0.999, 1.0f / 32.0f, 0.0f);
    CHECK(!p.limits); /* mt_adam_params_for leaves them to the guards */
    mt_adam_set_limits(&p);
    float w[NW], g[NW], m[NW], v[NW];
    draw(w, NW, -1e3f, 1e3f), draw(g, NW, -1e6f, 1e6f), draw(m, NW, -1e3f, 1e3f), draw(v, NW, 0.f, 1e12f);
    CHECK(p.limits && mt_adam_within_limits(&p, w, g, m, v, NW));
    /* no limits outside the plain configuration (decay, AdamW, a proximal term, the far lerp end, ε = 0) */
    static const float other[][4] = {/* β1, ε, wd, μ (and AdamW) */ {0.9f, 1e-8f, 0.01f, 0.0f},
                                     {0.9f, 1e-8f, 0.0f, 0.1f}, {0.3f, 1e-8f, 0.0f, 0.0f}, {0.9f, 0.0f, 0.0f, 0.0f},
                                     {0.9f, 1e-8f, 0.0f, -1.0f}};
    for (size_t c = 0; c < sizeof other / sizeof other[0]; ++c) {
        const int adamw = other[c][3] < 0.0f;
        p = mt_adam_params_for(1e-3f, other[c][0], 0.999f, other[c][1], other[c][2], adamw, 0.9, 0.999, 1.0f,
                               adamw ? 0.0f : other[c][3]);
        mt_adam_set_limits(&p);
        CHECK(!p.limits);
    }
}

int main(void)
{
    mt_test_seed(4242u);

    /* state arrays the trainer must reserve per weight tensor */
    CHECK_EQ_INT(mt_optimizer_state_arrays(MT_OPTIMIZER_SGD, 0.f), 0);
    CHECK_EQ_INT(mt_optimizer_state_arrays(MT_OPTIMIZER_SGD, 0.9f), 1);
    CHECK_EQ_INT(mt_optimizer_state_arrays(MT_OPTIMIZER_ADAM, 0.f), 2);
    CHECK_EQ_INT(mt_optimizer_state_arrays(MT_OPTIMIZER_ADAMW, 0.9f), 2);

    test_sgd(0.1f, 0.f, 0.f);     /* plain */
    test_sgd(0.05f, 0.9f, 0.f);   /* momentum */
    test_sgd(0.1f, 0.f, 0.01f);   /* L2 weight decay */
    test_sgd(0.02f, 0.5f, 0.1f);  /* both */

    test_adam(0.01f, 0.9f, 0.999f, 1e-8f, 0.f, 0);   /* PyTorch defaults */
    test_adam(0.05f, 0.8f, 0.99f, 1e-6f, 0.05f, 0);  /* Adam, L2 decay folded into g */
    test_adam(0.01f, 0.9f, 0.999f, 1e-8f, 0.01f, 1); /* AdamW defaults, decoupled decay */
    test_adam(0.1f, 0.5f, 0.9f, 1e-3f, 0.2f, 1);
    /* β = 0: m = g and v = g² exactly. With the lerp written m += (1-β1)(g - m), m keeps only
     * the absolute precision of the old m (|m_old| ε), so a small g after a large one comes
     * out wrong; PyTorch's lerp switches to g - (g - m)·β1 for weights >= 0.5, exact here. */
    test_adam(0.01f, 0.f, 0.f, 1e-8f, 0.f, 0);
    test_adam_first_step_is_sign();
    test_guard_agrees_with_the_update();
    test_adam_limits();
    return MT_TEST_END();
}
