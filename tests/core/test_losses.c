/*
 * Losses of losses.h against double-precision references written here from the formulas of
 * microtrain.h (per sample, then reduced over the n rows; scale = 1/n for MEAN, 1 for SUM):
 *   MSE   mean_d (p - y)²                        ∂/∂p = 2 (p - y) / D · scale
 *   MAE   mean_d |p - y|                         ∂/∂p = sign(p - y) / D · scale
 *   CCE   -Σ_d y log p                           ∂/∂p = -y / p · scale
 *   SCCE  -log p[label]                          ∂/∂p = -[d = label] / p · scale
 *   BCE   mean_d -(y log p + (1-y) log(1-p))     ∂/∂p = (p - y) / (p (1-p)) / D · scale
 *   softmax+CCE  -Σ_d y_d (z_d - logsumexp z)     ∂/∂z = (p Σ_k y_k - y) · scale
 *   sigmoid+BCE  mean_d max(z,0) - z y + log(1 + e^-|z|)   ∂/∂z = (p - y) / D · scale
 * Gradients are also checked against central differences of the double reference (h = 1e-3),
 * so the closed forms above are not trusted blindly either.
 */
#include <math.h>
#include <stdlib.h>

#include "losses.h"
#include "mt_test.h"
#include "ops/ops.h"

#define N 3
#define D 4
#define FD_H 1e-3
#define RTOL 2e-4

/* Every loss form, the fused ones taking logits z instead of probabilities p. */
enum { K_MSE, K_MAE, K_CCE, K_SCCE, K_BCE, K_SOFTMAX_CCE, K_SOFTMAX_SCCE, K_SIGMOID_BCE, K_COUNT };
static const char *const kind_name[K_COUNT] = { "mse", "mae", "cce", "scce", "bce",
                                                "softmax+cce", "softmax+scce", "sigmoid+bce" };

static int is_sparse(int k)
{
    return k == K_SCCE || k == K_SOFTMAX_SCCE;
}

/* The core: value and (when grad != NULL) gradient w.r.t. its first input. */
static mt_status core_loss(int kind, int red, const float *in, const void *target, float *grad,
                           int n, int d, float *loss)
{
    float p[N * D * 4];
    static const int unfused[] = { MT_LOSS_MSE, MT_LOSS_MAE, MT_LOSS_CATEGORICAL_CROSSENTROPY,
                                   MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                   MT_LOSS_BINARY_CROSSENTROPY };
    switch (kind) {
    case K_SOFTMAX_CCE:
    case K_SOFTMAX_SCCE:
        mt_op_softmax_f32_forward(in, p, (uint32_t)n, (uint32_t)d);
        return mt_loss_softmax_cce_f32(kind == K_SOFTMAX_SCCE, red, in, p, target, grad,
                                       (uint32_t)n, (uint32_t)d, loss);
    case K_SIGMOID_BCE:
        mt_op_sigmoid_f32_forward(in, p, (size_t)(n * d));
        return mt_loss_sigmoid_bce_f32(red, in, p, (const float *)target, grad, (uint32_t)n,
                                       (uint32_t)d, loss);
    default:
        return mt_loss_f32(unfused[kind], red, in, target, grad, (uint32_t)n, (uint32_t)d, loss);
    }
}

/* Double reference of the reduced loss; x is p (unfused) or z (fused). */
static double ref_loss(int kind, int red, const double *x, const void *target, int n, int d)
{
    const float *y = (const float *)target;
    const int32_t *label = (const int32_t *)target;
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const double *r = x + i * d;
        double li = 0.0, m = -INFINITY, lse = 0.0;
        for (int j = 0; j < d; j++)
            m = fmax(m, r[j]);
        for (int j = 0; j < d; j++)
            lse += exp(r[j] - m);
        lse = m + log(lse); /* logsumexp of the row, used by the softmax forms */
        for (int j = 0; j < d; j++) {
            double t = is_sparse(kind) ? 0.0 : (double)y[i * d + j];
            switch (kind) {
            case K_MSE: li += (r[j] - t) * (r[j] - t) / d; break;
            case K_MAE: li += fabs(r[j] - t) / d; break;
            case K_CCE: li -= t * log(r[j]); break;
            case K_BCE: li -= (t * log(r[j]) + (1.0 - t) * log(1.0 - r[j])) / d; break;
            case K_SOFTMAX_CCE: li -= t * (r[j] - lse); break;
            case K_SIGMOID_BCE:
                li += (fmax(r[j], 0.0) - r[j] * t + log1p(exp(-fabs(r[j])))) / d;
                break;
            default: break;
            }
        }
        if (kind == K_SCCE)
            li = -log(r[label[i]]);
        if (kind == K_SOFTMAX_SCCE)
            li = lse - r[label[i]];
        total += li;
    }
    return red == MT_REDUCTION_MEAN ? total / n : total;
}

/* Inputs that keep every loss smooth at the FD points: p in [0.2, 0.8], |p - y| >= 0.05 for
 * MAE, y unnormalised for CCE so the Σ_k y_k term of the fused gradient matters. */
static void make_case(int kind, float *in, float *y, int32_t *label)
{
    for (int i = 0; i < N * D; i++) {
        int fused = kind >= K_SOFTMAX_CCE;
        in[i] = fused ? mt_test_uniform(-3.f, 3.f) : mt_test_uniform(0.2f, 0.8f);
        y[i] = mt_test_uniform(0.f, 1.f);
        if (kind == K_MAE && fabsf(in[i] - y[i]) < 0.05f)
            y[i] = in[i] + 0.1f;
    }
    for (int i = 0; i < N; i++)
        label[i] = (int32_t)(mt_test_rand_u32() % D);
}

static void test_kind(int kind, int red)
{
    float in[N * D], y[N * D], grad[N * D] = { 0 }, acc[N * D], loss = 0.f, loss2 = 0.f;
    int32_t label[N];
    double xd[N * D];
    make_case(kind, in, y, label);
    const void *target = is_sparse(kind) ? (const void *)label : (const void *)y;
    for (int i = 0; i < N * D; i++)
        xd[i] = in[i];

    CHECK_STATUS(core_loss(kind, red, in, target, grad, N, D, &loss), MT_OK);
    double ref = ref_loss(kind, red, xd, target, N, D);
    if (!CHECK_NEAR(loss, ref, 1e-5 * (1.0 + fabs(ref))))
        printf("    value of %s, reduction %d\n", kind_name[kind], red);

    /* gradient against central differences of the double reference */
    for (int i = 0; i < N * D; i++) {
        double save = xd[i];
        xd[i] = save + FD_H;
        double lp = ref_loss(kind, red, xd, target, N, D);
        xd[i] = save - FD_H;
        double lm = ref_loss(kind, red, xd, target, N, D);
        xd[i] = save;
        if (!CHECK_CLOSE(grad[i], (lp - lm) / (2.0 * FD_H), RTOL))
            printf("    gradient %d of %s, reduction %d\n", i, kind_name[kind], red);
    }

    /* NULL gradient: same value, nothing written; and the gradient is added, not stored */
    CHECK_STATUS(core_loss(kind, red, in, target, NULL, N, D, &loss2), MT_OK);
    CHECK_BITS_EQ(loss2, loss);
    for (int i = 0; i < N * D; i++)
        acc[i] = 1.5f;
    CHECK_STATUS(core_loss(kind, red, in, target, acc, N, D, &loss2), MT_OK);
    for (int i = 0; i < N * D; i++)
        CHECK_NEAR(acc[i] - 1.5f, grad[i], 1e-6 * (1.0 + fabs(grad[i])));
}

/* MEAN over n rows is SUM / n, for the value and for every gradient element. */
static void test_mean_is_sum_over_n(int kind)
{
    float in[N * D], y[N * D], gm[N * D] = { 0 }, gs[N * D] = { 0 }, lm = 0.f, ls = 0.f;
    int32_t label[N];
    make_case(kind, in, y, label);
    const void *target = is_sparse(kind) ? (const void *)label : (const void *)y;
    CHECK_STATUS(core_loss(kind, MT_REDUCTION_MEAN, in, target, gm, N, D, &lm), MT_OK);
    CHECK_STATUS(core_loss(kind, MT_REDUCTION_SUM, in, target, gs, N, D, &ls), MT_OK);
    CHECK_NEAR(lm, (double)ls / N, 1e-6 * (1.0 + fabs(ls)));
    for (int i = 0; i < N * D; i++)
        CHECK_NEAR((double)gm[i] * N, gs[i], 1e-6 * (1.0 + fabs(gs[i])));
}

/* Fused gradient == softmax/sigmoid backward of the unfused loss gradient at p = f(z). */
static void test_fused_matches_chain_rule(int red)
{
    float z[N * D], y[N * D], p[N * D], dp[N * D], chain[N * D], fused[N * D], lf, lu;
    int32_t label[N];
    for (int sparse = 0; sparse <= 1; sparse++) {
        make_case(K_SOFTMAX_CCE, z, y, label);
        const void *target = sparse ? (const void *)label : (const void *)y;
        memset(dp, 0, sizeof dp), memset(chain, 0, sizeof chain), memset(fused, 0, sizeof fused);
        mt_op_softmax_f32_forward(z, p, N, D);
        CHECK_STATUS(mt_loss_f32(sparse ? MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY
                                        : MT_LOSS_CATEGORICAL_CROSSENTROPY,
                                 red, p, target, dp, N, D, &lu), MT_OK);
        mt_op_softmax_f32_backward(p, dp, chain, N, D);
        CHECK_STATUS(mt_loss_softmax_cce_f32(sparse, red, z, p, target, fused, N, D, &lf), MT_OK);
        CHECK_NEAR(lf, lu, 1e-5 * (1.0 + fabs(lu)));
        for (int i = 0; i < N * D; i++)
            CHECK_NEAR(fused[i], chain[i], 1e-5 * (1.0 + fabs(chain[i])));
    }
    make_case(K_SIGMOID_BCE, z, y, label);
    memset(dp, 0, sizeof dp), memset(chain, 0, sizeof chain), memset(fused, 0, sizeof fused);
    mt_op_sigmoid_f32_forward(z, p, N * D);
    CHECK_STATUS(mt_loss_f32(MT_LOSS_BINARY_CROSSENTROPY, red, p, y, dp, N, D, &lu), MT_OK);
    mt_op_sigmoid_f32_backward(p, dp, chain, N * D);
    CHECK_STATUS(mt_loss_sigmoid_bce_f32(red, z, p, y, fused, N, D, &lf), MT_OK);
    CHECK_NEAR(lf, lu, 1e-5 * (1.0 + fabs(lu)));
    for (int i = 0; i < N * D; i++)
        CHECK_NEAR(fused[i], chain[i], 1e-5 * (1.0 + fabs(chain[i])));
}

/* A label outside [0, D) is refused and the gradient buffer is left exactly as it was,
 * even when earlier rows were valid. */
static void test_bad_labels(void)
{
    static const int32_t bad[][N] = { { 0, 1, D }, { -1, 0, 0 }, { 2, 0x7fffffff, 1 },
                                      { 1, 1, (int32_t)0x80000000 } };
    float p[N * D], z[N * D], g[N * D], loss = 0.f;
    for (int i = 0; i < N * D; i++)
        p[i] = 0.25f, z[i] = 0.f;
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        for (int i = 0; i < N * D; i++)
            g[i] = 7.f;
        CHECK_STATUS(mt_loss_f32(MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, MT_REDUCTION_MEAN, p,
                                 bad[c], g, N, D, &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_loss_softmax_cce_f32(1, MT_REDUCTION_SUM, z, p, bad[c], g, N, D, &loss),
                     MT_ERR_BAD_ARGUMENT);
        for (int i = 0; i < N * D; i++)
            CHECK_BITS_EQ(g[i], 7.f);
    }
}

/* Logits far outside exp's range: the fused forms stay finite and exact. */
static void test_fused_stability(void)
{
    const float z[3] = { 1000.f, 0.f, -1000.f };
    float p[3], dz[3] = { 0 }, loss = 0.f;
    int32_t label = 2;
    mt_op_softmax_f32_forward(z, p, 1, 3);
    CHECK_STATUS(mt_loss_softmax_cce_f32(1, MT_REDUCTION_SUM, z, p, &label, dz, 1, 3, &loss),
                 MT_OK);
    CHECK_NEAR(loss, 2000.0, 1e-3); /* logsumexp(z) - z[2] = 1000 + 1000 */
    CHECK_NEAR(dz[0], 1.0, 1e-6);   /* p - onehot = (1, 0, 0) - (0, 0, 1) */
    CHECK_NEAR(dz[2], -1.0, 1e-6);
    label = 0;
    CHECK_STATUS(mt_loss_softmax_cce_f32(1, MT_REDUCTION_SUM, z, p, &label, NULL, 1, 3, &loss),
                 MT_OK);
    CHECK_NEAR(loss, 0.0, 1e-6);

    const float zb[4] = { 100.f, -100.f, 100.f, -100.f }, yb[4] = { 0.f, 0.f, 1.f, 1.f };
    float pb[4], dzb[4] = { 0 };
    mt_op_sigmoid_f32_forward(zb, pb, 4);
    CHECK_STATUS(mt_loss_sigmoid_bce_f32(MT_REDUCTION_SUM, zb, pb, yb, dzb, 1, 4, &loss), MT_OK);
    /* per element: 100, ~0, ~0, 100; mean over D = 4 gives 50 */
    CHECK_NEAR(loss, 50.0, 1e-4);
    CHECK_NEAR(dzb[0], 0.25, 1e-6); /* (p - y) / D */
    CHECK_NEAR(dzb[3], -0.25, 1e-6);
}

/* The fused loss writes the softmax output itself (the session skips the softmax op then):
 * the bits of mt_op_softmax_f32_forward, over rows wider than a block of exponentials, logits
 * far outside exp's range and ties, and also when a label is refused */
static void test_fused_writes_the_softmax(void)
{
    enum { R = 5, C = 37 };
    float z[R * C], want[R * C], got[R * C], dz[R * C], loss = 0.f;
    int32_t labels[R] = {0, 36, 5, 17, 2};
    for (int i = 0; i < R * C; i++)
        z[i] = mt_test_uniform(-8.f, 8.f);
    z[C] = 1000.f, z[C + 1] = -1000.f, z[2 * C] = z[2 * C + 1] = 3.f; /* extremes, a tie */
    mt_op_softmax_f32_forward(z, want, R, C);
    for (int sparse = 0; sparse <= 1; sparse++) {
        float onehot[R * C] = {0};
        for (int r = 0; r < R; r++)
            onehot[r * C + labels[r]] = 1.f;
        memset(got, 0xff, sizeof got), memset(dz, 0, sizeof dz);
        CHECK_STATUS(mt_loss_softmax_cce_f32(sparse, MT_REDUCTION_SUM, z, got, sparse ? (const void *)labels
                                                                                     : (const void *)onehot,
                                             dz, R, C, &loss), MT_OK);
        for (int i = 0; i < R * C; i++)
            CHECK_BITS_EQ(got[i], want[i]);
    }
    labels[3] = C; /* refused: dz untouched, p still written */
    memset(got, 0xff, sizeof got), memset(dz, 0, sizeof dz);
    CHECK_STATUS(mt_loss_softmax_cce_f32(1, MT_REDUCTION_SUM, z, got, labels, dz, R, C, &loss), MT_ERR_BAD_ARGUMENT);
    for (int i = 0; i < R * C; i++) {
        CHECK_BITS_EQ(got[i], want[i]);
        CHECK_BITS_EQ(dz[i], 0.f);
    }
}

int main(void)
{
    mt_test_seed(777u);
    for (int kind = 0; kind < K_COUNT; kind++) {
        test_kind(kind, MT_REDUCTION_MEAN);
        test_kind(kind, MT_REDUCTION_SUM);
        test_mean_is_sum_over_n(kind);
    }
    test_fused_matches_chain_rule(MT_REDUCTION_MEAN);
    test_fused_matches_chain_rule(MT_REDUCTION_SUM);
    test_bad_labels();
    test_fused_stability();
    test_fused_writes_the_softmax();
    return MT_TEST_END();
}
