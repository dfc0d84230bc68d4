/*
 * Sessions end to end, on models from image_builder (guarded_session_util.h).
 * This program, training steps:
 *   - a partial batch (n < B) is exactly a batch of size n (bitwise), garbage rows ignored;
 *   - one SGD step equals the update worked out by hand in double (plain, fused losses);
 *   - training reduces the loss.
 */
#include "guarded_session_util.h"

/* ---- partial batch ----------------------------------------------------------------------- */

/* A session of batch 5 stepped with n = 3 equals a session of batch 3, bit for bit, even
 * with NaN inputs, NaN targets and out-of-range labels in rows 3..4. */
static void partial_batch_case(int optimizer, int loss, int out_act, int reduction)
{
    const int sparse = loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    ib_mlp_spec spec;
    mt_train_config cfg;
    guarded big, small;
    size_t bytes;
    ib_mlp_defaults(&spec);
    spec.hidden_act = MT_OP_TANH;
    spec.out_act = out_act;
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    config(&cfg, optimizer, loss, 5);
    cfg.reduction = reduction;
    cfg.momentum = optimizer == MT_OPTIMIZER_SGD ? 0.9f : 0.f;
    CHECK_STATUS(open_guarded(&big, img, bytes, &cfg), MT_OK);
    cfg.batch_size = 3;
    CHECK_STATUS(open_guarded(&small, img, bytes, &cfg), MT_OK);
    for (int step = 0; step < 3; step++) {
        float *x;
        void *t;
        int32_t count, tb;
        float lb = 0.f, ls = 1.f;
        fill_inputs(big.s, 3, 3, 100u + (unsigned)step);
        fill_inputs(small.s, 3, 3, 100u + (unsigned)step);
        fill_targets(big.s, 3, 2, sparse, 200u + (unsigned)step);
        fill_targets(small.s, 3, 2, sparse, 200u + (unsigned)step);
        mt_session_input(big.s, 0, &x, &count);
        mt_session_target(big.s, &t, &tb);
        for (int i = 3 * 3; i < count; i++)
            x[i] = NAN;
        for (int i = 3 * (sparse ? 1 : 2); 4 * i < tb; i++) {
            if (sparse)
                ((int32_t *)t)[i] = 1000;
            else
                ((float *)t)[i] = NAN;
        }
        CHECK_STATUS(mt_session_train_step(big.s, 3, &lb), MT_OK);
        CHECK_STATUS(mt_session_train_step(small.s, 3, &ls), MT_OK);
        CHECK_BITS_EQ(lb, ls);
        if (!CHECK(same_params(big.s, small.s)))
            printf("    optimizer %d loss %d reduction %d step %d\n", optimizer, loss,
                   reduction, step);
        const float *ob, *os;
        CHECK_STATUS(mt_session_output(big.s, 0, &ob, &count), MT_OK);
        CHECK_STATUS(mt_session_output(small.s, 0, &os, &count), MT_OK);
        CHECK(memcmp(ob, os, sizeof(float) * 3 * 2) == 0);
    }
    CHECK(guards_intact(&big) && guards_intact(&small));
    free(big.block), free(small.block), free(img);
}

/* ---- one step by hand -------------------------------------------------------------------- */

/* One Dense layer x[I=3] -> z[O=2] (+ softmax or sigmoid), SGD lr, n = 2 of B = 3, MEAN:
 *   dL/dz = MSE: 2(p - y)/(O n);  softmax+CCE: (p Σy - y)/n;  sigmoid+BCE: (p - y)/(O n)
 *   W -= lr Σ_i dz_i x_iᵀ,  b -= lr Σ_i dz_i. */
static void one_step_case(int loss, int out_act)
{
    const float w0[6] = { 0.3f, -0.2f, 0.5f, -0.4f, 0.1f, 0.25f }, b0[2] = { 0.05f, -0.1f };
    const float xs[2][3] = { { 0.5f, -1.0f, 0.25f }, { -0.3f, 0.8f, 1.0f } };
    const float ys[2][2] = { { 1.0f, 0.0f }, { 0.2f, 0.6f } };
    const double lr = 0.1;
    ib_mlp_spec spec;
    mt_train_config cfg;
    guarded g;
    size_t bytes;
    float *x, loss_value = 0.f;
    void *t;
    int32_t count, tb;
    ib_mlp_defaults(&spec);
    spec.hidden = 0, spec.out_act = out_act, spec.w1 = w0, spec.b1 = b0;
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    config(&cfg, MT_OPTIMIZER_SGD, loss, 3);
    cfg.learning_rate = (float)lr;
    CHECK_STATUS(open_guarded(&g, img, bytes, &cfg), MT_OK);
    mt_session_input(g.s, 0, &x, &count);
    mt_session_target(g.s, &t, &tb);
    CHECK_EQ_INT(count, 3 * 3);
    CHECK_EQ_INT(tb, 3 * 2 * 4);
    memcpy(x, xs, sizeof xs);
    memcpy(t, ys, sizeof ys);

    double total = 0.0, dw[6] = { 0 }, db[2] = { 0 };
    for (int i = 0; i < 2; i++) {
        double z[2], p[2], dz[2];
        for (int u = 0; u < 2; u++)
            z[u] = (double)b0[u] + (double)w0[3 * u] * xs[i][0] +
                   (double)w0[3 * u + 1] * xs[i][1] + (double)w0[3 * u + 2] * xs[i][2];
        double m = fmax(z[0], z[1]), ysum = (double)ys[i][0] + ys[i][1];
        for (int u = 0; u < 2; u++) {
            double y = ys[i][u];
            if (out_act == MT_OP_SOFTMAX) {
                p[u] = exp(z[u] - m) / (exp(z[0] - m) + exp(z[1] - m));
                total += -y * (z[u] - m - log(exp(z[0] - m) + exp(z[1] - m)));
                dz[u] = (p[u] * ysum - y) / 2;
            } else if (out_act == MT_OP_SIGMOID) {
                p[u] = 1.0 / (1.0 + exp(-z[u]));
                total += -(y * log(p[u]) + (1 - y) * log(1 - p[u])) / 2;
                dz[u] = (p[u] - y) / (2 * 2);
            } else {
                total += (z[u] - y) * (z[u] - y) / 2;
                dz[u] = 2 * (z[u] - y) / (2 * 2);
            }
            db[u] += dz[u];
            for (int k = 0; k < 3; k++)
                dw[3 * u + k] += dz[u] * xs[i][k];
        }
    }
    CHECK_STATUS(mt_session_train_step(g.s, 2, &loss_value), MT_OK);
    CHECK_NEAR(loss_value, total / 2, 1e-6);
    int32_t c;
    const float *nw = param_data(g.s, 0, &c), *nb = param_data(g.s, 1, &c);
    for (int k = 0; k < 6; k++)
        CHECK_NEAR(nw[k], w0[k] - lr * dw[k], 1e-6);
    for (int u = 0; u < 2; u++)
        CHECK_NEAR(nb[u], b0[u] - lr * db[u], 1e-6);
    int64_t step = -1, epoch = -1;
    CHECK_STATUS(mt_session_counters(g.s, &step, &epoch), MT_OK);
    CHECK(step == 1 && epoch == 0);
    free(g.block), free(img);
}

/* ---- learning ---------------------------------------------------------------------------- */

/* Regression y = x0 - x1/2 (MSE, Adam) and classification label = [x0 > x1] (sparse CCE
 * through softmax, SGD with momentum): the loss on a fixed batch must fall a lot. */
static void test_training_reduces_loss(void)
{
    for (int task = 0; task < 2; task++) {
        ib_mlp_spec spec;
        mt_train_config cfg;
        guarded g;
        size_t bytes;
        float first = 0.f, last = 0.f, *x;
        void *t;
        int32_t count, tb;
        ib_mlp_defaults(&spec);
        spec.in = 2, spec.hidden = 8;
        spec.hidden_act = task ? MT_OP_RELU : MT_OP_TANH;
        spec.out = task ? 2 : 1;
        spec.out_act = task ? MT_OP_SOFTMAX : 0;
        uint8_t *img = ib_build_mlp(&spec, &bytes);
        config(&cfg, task ? MT_OPTIMIZER_SGD : MT_OPTIMIZER_ADAM,
               task ? MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY : MT_LOSS_MSE, 16);
        cfg.learning_rate = task ? 0.1f : 0.02f;
        cfg.momentum = task ? 0.9f : 0.f;
        CHECK_STATUS(open_guarded(&g, img, bytes, &cfg), MT_OK);
        mt_session_input(g.s, 0, &x, &count);
        mt_session_target(g.s, &t, &tb);
        mt_test_seed(99u);
        for (int i = 0; i < 16; i++) {
            x[2 * i] = mt_test_uniform(-1.f, 1.f), x[2 * i + 1] = mt_test_uniform(-1.f, 1.f);
            if (task)
                ((int32_t *)t)[i] = x[2 * i] > x[2 * i + 1];
            else
                ((float *)t)[i] = x[2 * i] - 0.5f * x[2 * i + 1];
        }
        for (int step = 0; step < 200; step++) {
            float l;
            CHECK_STATUS(mt_session_train_step(g.s, 16, &l), MT_OK);
            if (step == 0)
                first = l;
        }
        CHECK_STATUS(mt_session_eval_step(g.s, 16, &last), MT_OK);
        printf("task %d: loss %.4g -> %.4g\n", task, (double)first, (double)last);
        CHECK(last < 0.2f * first);
        if (task) { /* the fitted classifier gets the training batch right */
            const float *p;
            int correct = 0;
            CHECK_STATUS(mt_session_infer(g.s, 16), MT_OK);
            mt_session_output(g.s, 0, &p, &count);
            for (int i = 0; i < 16; i++)
                correct += (p[2 * i + 1] > p[2 * i]) == ((int32_t *)t)[i];
            CHECK(correct >= 15);
        }
        free(g.block), free(img);
    }
}

int main(void)
{
    partial_batch_case(MT_OPTIMIZER_ADAM, MT_LOSS_CATEGORICAL_CROSSENTROPY, MT_OP_SOFTMAX,
                       MT_REDUCTION_MEAN);
    partial_batch_case(MT_OPTIMIZER_SGD, MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, MT_OP_SOFTMAX,
                       MT_REDUCTION_SUM);
    partial_batch_case(MT_OPTIMIZER_ADAMW, MT_LOSS_MSE, 0, MT_REDUCTION_MEAN);
    partial_batch_case(MT_OPTIMIZER_SGD, MT_LOSS_BINARY_CROSSENTROPY, MT_OP_SIGMOID,
                       MT_REDUCTION_MEAN);
    partial_batch_case(MT_OPTIMIZER_ADAM, MT_LOSS_MAE, MT_OP_TANH, MT_REDUCTION_SUM);
    one_step_case(MT_LOSS_MSE, 0);
    one_step_case(MT_LOSS_CATEGORICAL_CROSSENTROPY, MT_OP_SOFTMAX);
    one_step_case(MT_LOSS_BINARY_CROSSENTROPY, MT_OP_SIGMOID);
    test_training_reduces_loss();
    return MT_TEST_END();
}
