/*
 * Sessions end to end, on models from image_builder (guarded_session_util.h).
 * This program, steps that do not train and steps in pieces:
 *   - eval and infer leave weights alone; infer computes the double-precision forward;
 *   - a fused train_step equals zero_grad + accumulate + optimizer_step, bitwise, and
 *     accumulating two halves equals one step on the whole batch;
 *   - the learning rate and the epoch round-trip.
 */
#include "guarded_session_util.h"

/* ---- eval, infer, accumulate -------------------------------------------------------------- */

/* Double forward of the default MLP (relu hidden, softmax out) with the session's weights. */
static void reference_forward(mt_session *s, const float *x, double *p)
{
    int32_t c;
    const float *w1 = param_data(s, 0, &c), *b1 = param_data(s, 1, &c);
    const float *w2 = param_data(s, 2, &c), *b2 = param_data(s, 3, &c);
    double h[4], z[2];
    for (int u = 0; u < 4; u++) {
        h[u] = b1[u];
        for (int i = 0; i < 3; i++)
            h[u] += (double)w1[3 * u + i] * x[i];
        h[u] = h[u] > 0 ? h[u] : 0;
    }
    for (int u = 0; u < 2; u++) {
        z[u] = b2[u];
        for (int i = 0; i < 4; i++)
            z[u] += (double)w2[4 * u + i] * h[i];
    }
    double m = fmax(z[0], z[1]), e0 = exp(z[0] - m), e1 = exp(z[1] - m);
    p[0] = e0 / (e0 + e1), p[1] = e1 / (e0 + e1);
}

static void test_eval_infer_accumulate(void)
{
    ib_mlp_spec spec;
    mt_train_config cfg;
    guarded a, b;
    size_t bytes;
    float le = 0.f, lt = 1.f, la = 2.f, *x;
    const float *out;
    int32_t count;
    int64_t step, epoch;
    ib_mlp_defaults(&spec);
    spec.out_act = MT_OP_SOFTMAX;
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    config(&cfg, MT_OPTIMIZER_ADAM, MT_LOSS_CATEGORICAL_CROSSENTROPY, 6);
    CHECK_STATUS(open_guarded(&a, img, bytes, &cfg), MT_OK);
    cfg.accumulate_gradients = 1; /* b accumulates; a updates fused, during backward */
    CHECK_STATUS(open_guarded(&b, img, bytes, &cfg), MT_OK);
    for (int k = 0; k < 2; k++) {
        guarded *g = k ? &b : &a;
        fill_inputs(g->s, 6, 3, 31u);
        fill_targets(g->s, 6, 2, 0, 32u);
    }

    /* eval: no weight changes, no step counted, loss as train_step will report it */
    CHECK_STATUS(mt_session_eval_step(a.s, 6, &le), MT_OK);
    CHECK(same_params(a.s, b.s));
    CHECK_STATUS(mt_session_counters(a.s, &step, &epoch), MT_OK);
    CHECK_EQ_INT(step, 0);

    /* infer: outputs are the double-precision forward of rows 0..n-1 */
    CHECK_STATUS(mt_session_infer(a.s, 6), MT_OK);
    CHECK_STATUS(mt_session_input(a.s, 0, &x, &count), MT_OK);
    CHECK_EQ_INT(count, 6 * 3);
    CHECK_STATUS(mt_session_output(a.s, 0, &out, &count), MT_OK);
    CHECK_EQ_INT(count, 6 * 2);
    for (int i = 0; i < 6; i++) {
        double p[2];
        reference_forward(a.s, x + 3 * i, p);
        CHECK_NEAR(out[2 * i], p[0], 1e-6);
        CHECK_NEAR(out[2 * i + 1], p[1], 1e-6);
    }
    CHECK(same_params(a.s, b.s));
    /* eval and train steps skip the softmax op: the fused loss writes its output, the same bits */
    float inferred[12];
    memcpy(inferred, out, sizeof inferred);
    memset((float *)out, 0xff, sizeof inferred);
    CHECK_STATUS(mt_session_eval_step(a.s, 6, &le), MT_OK);
    for (int i = 0; i < 12; i++)
        CHECK_BITS_EQ(out[i], inferred[i]);

    /* a fused train_step == zero_grad + accumulate + optimizer_step, bitwise; its loss is eval's */
    memset((float *)out, 0xff, sizeof inferred);
    CHECK_STATUS(mt_session_train_step(a.s, 6, &lt), MT_OK);
    CHECK_BITS_EQ(lt, le);
    for (int i = 0; i < 12; i++) /* the outputs of the forward before the update */
        CHECK_BITS_EQ(out[i], inferred[i]);
    CHECK(!same_params(a.s, b.s));
    CHECK_STATUS(mt_session_zero_grad(b.s), MT_OK);
    CHECK_STATUS(mt_session_accumulate(b.s, 6, &la), MT_OK);
    CHECK_BITS_EQ(la, le);
    CHECK_STATUS(mt_session_counters(b.s, &step, &epoch), MT_OK);
    CHECK_EQ_INT(step, 0);
    CHECK_STATUS(mt_session_optimizer_step(b.s), MT_OK);
    CHECK(same_params(a.s, b.s));
    CHECK_STATUS(mt_session_counters(b.s, &step, &epoch), MT_OK);
    CHECK_EQ_INT(step, 1);

    /* learning rate and epoch round-trip */
    float lr = 0.f, lr0 = 0.f;
    CHECK_STATUS(mt_session_get_learning_rate(a.s, &lr0), MT_OK);
    CHECK_STATUS(mt_session_set_learning_rate(a.s, 0.5f), MT_OK);
    CHECK_STATUS(mt_session_get_learning_rate(a.s, &lr), MT_OK);
    CHECK(lr0 == cfg.learning_rate && lr == 0.5f);
    CHECK_STATUS(mt_session_set_epoch(a.s, 7), MT_OK);
    CHECK_STATUS(mt_session_counters(a.s, &step, &epoch), MT_OK);
    CHECK(epoch == 7 && step == 1);
    free(a.block), free(b.block), free(img);
}

/* Accumulating two halves with SUM reduction, then one optimizer step, equals one step on
 * the whole batch (same gradient Σ over rows, up to float summation order). */
static void test_accumulate_halves(void)
{
    ib_mlp_spec spec;
    mt_train_config cfg;
    guarded whole, halves;
    size_t bytes;
    float *x, *xh, l[2], lw;
    void *t, *th;
    int32_t count, tb;
    ib_mlp_defaults(&spec);
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    config(&cfg, MT_OPTIMIZER_SGD, MT_LOSS_MSE, 4);
    cfg.reduction = MT_REDUCTION_SUM;
    CHECK_STATUS(open_guarded(&whole, img, bytes, &cfg), MT_OK);
    cfg.accumulate_gradients = 1;
    CHECK_STATUS(open_guarded(&halves, img, bytes, &cfg), MT_OK);
    fill_inputs(whole.s, 4, 3, 41u);
    fill_targets(whole.s, 4, 2, 0, 42u);
    mt_session_input(whole.s, 0, &x, &count), mt_session_target(whole.s, &t, &tb);
    mt_session_input(halves.s, 0, &xh, &count), mt_session_target(halves.s, &th, &tb);
    CHECK_STATUS(mt_session_train_step(whole.s, 4, &lw), MT_OK);
    CHECK_STATUS(mt_session_zero_grad(halves.s), MT_OK);
    for (int h = 0; h < 2; h++) {
        memcpy(xh, x + 2 * 3 * h, sizeof(float) * 2 * 3);
        memcpy(th, (float *)t + 2 * 2 * h, sizeof(float) * 2 * 2);
        CHECK_STATUS(mt_session_accumulate(halves.s, 2, &l[h]), MT_OK);
    }
    CHECK_STATUS(mt_session_optimizer_step(halves.s), MT_OK);
    CHECK_NEAR(l[0] + l[1], lw, 1e-6 * (1.0 + fabs(lw)));
    for (int p = 0; p < 4; p++) {
        int32_t n = 0;
        const float *a = param_data(whole.s, p, &n), *b = param_data(halves.s, p, &n);
        for (int k = 0; k < n; k++)
            CHECK_NEAR(a[k], b[k], 1e-6);
    }
    free(whole.block), free(halves.block), free(img);
}

int main(void)
{
    test_eval_infer_accumulate();
    test_accumulate_halves();
    return MT_TEST_END();
}
