/*
 * test_numeric_guard: a step whose loss is finite but whose weight gradient is not.
 *
 * Model: x[2] -> Dense(W1 [3,2], b1) -> ReLU -> Dense(W2 [1,3], b2), MSE, Adam.
 * W1's column for feature 0 is 1e-38 and the bad batch has x0 = 3e38 on every row, so the
 * forward stays finite (3e38 * 1e-38 = 3) while dW1[:, 0] = sum_rows dy * 3e38 overflows
 * (targets of 100 make dy large). Good batches have x0 = 0, so Adam leaves W1[:, 0] alone.
 *
 * What microtrain.h promises, and what is checked here:
 *   - guard_gradients = 1: every gradient is checked before any weight changes, so the
 *     step returns MT_ERR_NUMERIC with weights, optimizer state and counters unchanged
 *     (compared as the bytes of a full checkpoint) and numeric_errors incremented; the next
 *     step equals that of a twin session that never saw the bad batch.
 *   - guard_gradients = 0 with fused updates: each gradient is checked just before its own
 *     update; the bad one is never applied, the step stops there, and the weights updated
 *     before it in that step keep their update (backward runs from the last op, so W2 and
 *     b2, bit for bit as a session training only the last Dense updates them).
 *   - accumulate_gradients = 1: mt_session_optimizer_step() is all or nothing.
 *   - The update itself is guarded too: a huge but finite learning rate (SGD's lr·g, Adam's
 *     lr / (1 - β1^t) overflowing) gives a finite loss and finite gradients, and the update
 *     would write Inf/NaN. SGD, SGD + momentum + decay, Adam and AdamW, in every mode: the
 *     step is refused and counted, and nothing changes (atomic modes: by contract; fused:
 *     the first update checked is refused, so none was applied and the counters stay); after
 *     lowering the rate the session is its twin's. A sweep of rates up to FLT_MAX never
 *     leaves a non-finite weight or optimizer state, whatever mode.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define B 4
#define IN 2
#define HIDDEN 3

static uint8_t *build(size_t *bytes)
{
    static const float w1[HIDDEN * IN] = {1e-38f, 0.5f, 1e-38f, -0.25f, 1e-38f, 0.75f};
    static const float b1[HIDDEN] = {0.1f, 0.2f, 0.3f};
    static const float w2[HIDDEN] = {0.5f, -0.5f, 0.25f};
    static const float b2[1] = {0.0f};
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = IN, spec.hidden = HIDDEN, spec.out = 1;
    spec.hidden_act = MT_OP_RELU, spec.out_act = 0;
    spec.w1 = w1, spec.b1 = b1, spec.w2 = w2, spec.b2 = b2;
    return ib_build_mlp(&spec, bytes);
}

static mt_train_config config(int accumulate, int guard, int trainable_ops)
{
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = MT_OPTIMIZER_ADAM;
    cfg.learning_rate = 0.01f;
    cfg.loss = MT_LOSS_MSE;
    cfg.batch_size = B;
    cfg.num_trainable_ops = trainable_ops;
    cfg.accumulate_gradients = accumulate;
    cfg.guard_gradients = guard;
    return cfg;
}

/* A good batch (x0 = 0, x1 and targets from seed) or the overflowing one. */
static void feed(mt_session *s, int bad, unsigned seed)
{
    float *x, *t;
    void *tv;
    int32_t count, tb;
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, &tv, &tb);
    t = (float *)tv;
    mt_test_seed(seed);
    for (int i = 0; i < B; i++) {
        x[i * IN + 0] = bad ? 3e38f : 0.0f;
        x[i * IN + 1] = bad ? 1.0f : mt_test_uniform(-1.f, 1.f);
        t[i] = bad ? 100.0f : mt_test_uniform(-1.f, 1.f);
    }
}

/* Target of row `row` := value (NaN, Inf): a non-finite loss. */
static void poison_target(mt_session *s, int row, float value)
{
    void *t;
    int32_t tb;
    mt_session_target(s, &t, &tb);
    ((float *)t)[row] = value;
}

static int64_t errors_of(const mt_session *s)
{
    int64_t n = -1;
    CHECK_STATUS(mt_session_numeric_errors(s, &n), MT_OK);
    return n;
}

static int64_t step_of(const mt_session *s)
{
    int64_t step = -1;
    CHECK_STATUS(mt_session_counters(s, &step, NULL), MT_OK);
    return step;
}

/* The whole trainable state (weights, optimizer state, counters, lr) as checkpoint bytes. */
static void snapshot(const mt_session *s, sink *k)
{
    sink_clear(k);
    CHECK_STATUS(mt_checkpoint_save(s, 1, NULL, 0, sink_write, k), MT_OK);
}

static int same_snapshot(const sink *a, const sink *b)
{
    return a->size == b->size && a->size > 0 && memcmp(a->data, b->data, a->size) == 0;
}

static void test_guard_refuses_the_step_whole(const uint8_t *img, size_t bytes, int accumulate)
{
    mt_train_config cfg = config(accumulate, 1, -1);
    sess a, twin;
    sink *before = sink_new(), *after = sink_new();
    float loss = 0.f, loss_twin = 1.f;
    mt_memory_plan plan;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&twin, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(mt_session_plan(a.s, &plan), MT_OK);
    CHECK_EQ_INT(plan.fused_update, 0); /* the guard needs every gradient at once */

    for (unsigned seed = 1; seed <= 2; seed++) { /* some Adam state first */
        feed(a.s, 0, seed), feed(twin.s, 0, seed);
        CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_OK);
        CHECK_STATUS(mt_session_train_step(twin.s, B, &loss_twin), MT_OK);
    }
    snapshot(a.s, before);
    feed(a.s, 1, 0);
    CHECK_STATUS(mt_session_eval_step(a.s, B, &loss), MT_OK); /* the forward is finite */
    CHECK(isfinite(loss) && loss > 1000.f);
    CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_ERR_NUMERIC);
    CHECK(isfinite(loss)); /* the loss was fine: the gradient was refused */
    CHECK_EQ_INT(errors_of(a.s), 1);
    CHECK_EQ_INT(step_of(a.s), 2);
    snapshot(a.s, after);
    CHECK(same_snapshot(before, after)); /* weights, optimizer state, counters, lr */
    CHECK(weights_finite(a.s));

    /* a NaN loss is counted too */
    feed(a.s, 0, 9);
    poison_target(a.s, 1, NAN);
    CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_ERR_NUMERIC);
    CHECK_EQ_INT(errors_of(a.s), 2);
    snapshot(a.s, after);
    CHECK(same_snapshot(before, after));

    /* the next step is the one the twin takes: nothing of the refused steps remains */
    feed(a.s, 0, 3), feed(twin.s, 0, 3);
    CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_OK);
    CHECK_STATUS(mt_session_train_step(twin.s, B, &loss_twin), MT_OK);
    CHECK(memcmp(&loss, &loss_twin, sizeof loss) == 0);
    CHECK(same_params(a.s, twin.s));
    CHECK(same_counters(a.s, twin.s));
    CHECK_EQ_INT(errors_of(twin.s), 0);
    free(a.block), free(twin.block), free(before), free(after);
}

static void test_fused_updates_stop_at_the_bad_gradient(const uint8_t *img, size_t bytes)
{
    mt_train_config cfg = config(0, 0, -1);
    mt_train_config last = config(0, 0, 1); /* only the last Dense trains */
    sess a, tail;
    float loss = 0.f, loss_tail = 1.f;
    float w_before[4][HIDDEN * IN];
    int32_t count[4];
    mt_memory_plan plan;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&tail, img, bytes, &last), MT_OK);
    CHECK_STATUS(mt_session_plan(a.s, &plan), MT_OK);
    CHECK_EQ_INT(plan.fused_update, 1);
    for (int p = 0; p < 4; p++) {
        const float *w = param_data(a.s, p, &count[p]); /* sets count[p] first */
        memcpy(w_before[p], w, 4u * (size_t)count[p]);
    }

    feed(a.s, 1, 0), feed(tail.s, 1, 0);
    CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_ERR_NUMERIC);
    CHECK_STATUS(mt_session_train_step(tail.s, B, &loss_tail), MT_OK); /* W2's gradient is finite */
    CHECK(isfinite(loss) && memcmp(&loss, &loss_tail, sizeof loss) == 0);
    CHECK_EQ_INT(errors_of(a.s), 1);
    CHECK(weights_finite(a.s)); /* the bad gradient was never applied */

    int32_t n;
    /* W1 (its gradient overflowed) keeps its value */
    CHECK(memcmp(param_data(a.s, 0, &n), w_before[0], 4u * (size_t)count[0]) == 0);
    /* b1, W1's op's next weight, is not reached once the step has stopped */
    CHECK(memcmp(param_data(a.s, 1, &n), w_before[1], 4u * (size_t)count[1]) == 0);
    /* W2 and b2 were updated before the bad gradient was met and keep that update, bit for
     * bit as a session training only the last Dense updates them on the same batch */
    CHECK(memcmp(param_data(a.s, 2, &n), w_before[2], 4u * (size_t)count[2]) != 0);
    CHECK(memcmp(param_data(a.s, 2, &n), param_data(tail.s, 2, &n), 4u * (size_t)count[2]) == 0);
    CHECK(memcmp(param_data(a.s, 3, &n), param_data(tail.s, 3, &n), 4u * (size_t)count[3]) == 0);
    /* The header is silent on the step counter here. It advances: W2 and b2 took this
     * step's update with its Adam bias correction, so the next step must be step 2. */
    CHECK_EQ_INT(step_of(a.s), 1);

    /* a NaN loss is refused before backward, so nothing changes and the counter stays */
    float w2[HIDDEN];
    memcpy(w2, param_data(a.s, 2, &n), sizeof w2);
    feed(a.s, 0, 4);
    poison_target(a.s, 0, INFINITY);
    CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_ERR_NUMERIC);
    CHECK(!isfinite(loss));
    CHECK_EQ_INT(errors_of(a.s), 2);
    CHECK_EQ_INT(step_of(a.s), 1);
    CHECK(memcmp(param_data(a.s, 2, &n), w2, sizeof w2) == 0);

    feed(a.s, 0, 5); /* and the session trains on */
    CHECK_STATUS(mt_session_train_step(a.s, B, &loss), MT_OK);
    CHECK_EQ_INT(step_of(a.s), 2);
    free(a.block), free(tail.block);
}

static void test_accumulated_optimizer_step_is_all_or_nothing(const uint8_t *img, size_t bytes)
{
    mt_train_config cfg = config(1, 0, -1);
    sess a, twin;
    sink *before = sink_new(), *after = sink_new();
    float loss = 0.f, loss_twin = 1.f;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&twin, img, bytes, &cfg), MT_OK);

    snapshot(a.s, before);
    CHECK_STATUS(mt_session_zero_grad(a.s), MT_OK);
    feed(a.s, 0, 1);
    CHECK_STATUS(mt_session_accumulate(a.s, B, &loss), MT_OK);
    feed(a.s, 1, 0);
    CHECK_STATUS(mt_session_accumulate(a.s, B, &loss), MT_OK); /* finite loss: accumulated */
    CHECK_EQ_INT(errors_of(a.s), 0);
    CHECK_STATUS(mt_session_optimizer_step(a.s), MT_ERR_NUMERIC);
    CHECK_EQ_INT(errors_of(a.s), 1);
    CHECK_EQ_INT(step_of(a.s), 0);
    snapshot(a.s, after);
    CHECK(same_snapshot(before, after));
    CHECK_STATUS(mt_session_optimizer_step(a.s), MT_ERR_NUMERIC); /* the gradients stay bad */
    CHECK_EQ_INT(errors_of(a.s), 2);

    /* after zero_grad the session is the twin's again */
    CHECK_STATUS(mt_session_zero_grad(a.s), MT_OK);
    CHECK_STATUS(mt_session_zero_grad(twin.s), MT_OK);
    feed(a.s, 0, 2), feed(twin.s, 0, 2);
    CHECK_STATUS(mt_session_accumulate(a.s, B, &loss), MT_OK);
    CHECK_STATUS(mt_session_accumulate(twin.s, B, &loss_twin), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(a.s), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(twin.s), MT_OK);
    CHECK(same_params(a.s, twin.s));
    CHECK(same_counters(a.s, twin.s));
    free(a.block), free(twin.block), free(before), free(after);
}

/* ---- the update guard: huge learning rates ---------------------------------------------- */

enum { FUSED, GUARDED, ACCUMULATED };
static const char *const mode_names[3] = { "fused", "guard_gradients", "accumulate" };

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Every float of a checkpoint's records (weights and optimizer state) finite. */
static int all_state_finite(const mt_session *s)
{
    sink *k = sink_new();
    int ok = mt_checkpoint_save(s, 1, NULL, 0, sink_write, k) == MT_OK;
    const uint32_t records = get_u32(k->data + 16), arrays = get_u32(k->data + 24);
    size_t off = 80;
    for (uint32_t r = 0; ok && r < records; r++) {
        const uint32_t count = get_u32(k->data + off + 4);
        off += 8;
        for (uint32_t i = 0; i < count * (1 + arrays); i++, off += 4) {
            const uint32_t bits = get_u32(k->data + off);
            float x;
            memcpy(&x, &bits, 4);
            ok = ok && isfinite(x);
        }
    }
    free(k);
    return ok;
}

static mt_train_config huge_lr_config(int optimizer, int mode)
{
    mt_train_config cfg = config(mode == ACCUMULATED, mode == GUARDED, -1);
    cfg.optimizer = optimizer;
    if (optimizer == MT_OPTIMIZER_SGD)
        cfg.momentum = 0.9f, cfg.weight_decay = 0.01f;
    if (optimizer == MT_OPTIMIZER_ADAMW)
        cfg.weight_decay = 0.01f;
    return cfg;
}

/* One step in the session's mode; the accumulate mode sums two halves of the batch. */
static mt_status step(mt_session *s, int mode, float *loss)
{
    if (mode != ACCUMULATED)
        return mt_session_train_step(s, B, loss);
    mt_status st;
    CHECK_STATUS(mt_session_zero_grad(s), MT_OK);
    if ((st = mt_session_accumulate(s, B, loss)) != MT_OK)
        return st;
    return mt_session_optimizer_step(s);
}

/* A good batch whose targets of 1000 make every gradient far larger than 1, so lr·g
 * overflows for lr = FLT_MAX (and Adam's step size overflows whatever the gradient). */
static void feed_far_targets(mt_session *s, unsigned seed)
{
    void *t;
    int32_t tb;
    feed(s, 0, seed);
    mt_session_target(s, &t, &tb);
    for (int i = 0; i < B; i++)
        ((float *)t)[i] = 1000.0f;
}

static void test_huge_learning_rate_is_refused(const uint8_t *img, size_t bytes, int optimizer, int plain_sgd,
                                               int mode)
{
    mt_train_config cfg = huge_lr_config(optimizer, mode);
    if (plain_sgd)
        cfg.momentum = 0.f, cfg.weight_decay = 0.f;
    sess a, twin;
    sink *before = sink_new(), *after = sink_new();
    float loss = 0.f, loss_twin = 1.f;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&twin, img, bytes, &cfg), MT_OK);
    for (unsigned seed = 1; seed <= 2; seed++) { /* some optimizer state first */
        feed(a.s, 0, seed), feed(twin.s, 0, seed);
        CHECK_STATUS(step(a.s, mode, &loss), MT_OK);
        CHECK_STATUS(step(twin.s, mode, &loss_twin), MT_OK);
    }
    snapshot(a.s, before);

    /* 1e38 / (1 - 0.9^3) overflows float; FLT_MAX·g overflows for |g| > 1 */
    const float huge = optimizer == MT_OPTIMIZER_SGD ? FLT_MAX : 1e38f;
    CHECK_STATUS(mt_session_set_learning_rate(a.s, huge), MT_OK);
    feed_far_targets(a.s, 3);
    mt_status st = step(a.s, mode, &loss);
    if (!CHECK_STATUS(st, MT_ERR_NUMERIC))
        printf("    optimizer %d%s, %s\n", optimizer, plain_sgd ? " (plain)" : "", mode_names[mode]);
    CHECK(isfinite(loss)); /* the loss and the gradients were fine: the update was refused */
    CHECK_EQ_INT(errors_of(a.s), 1);
    mt_error_detail where; /* the refusal names a weight and the Dense op that reads it */
    CHECK_STATUS(mt_session_last_error(a.s, &where), MT_OK);
    CHECK_EQ_INT(where.status, MT_ERR_NUMERIC);
    CHECK_EQ_INT(where.op_type, MT_OP_DENSE);
    CHECK(where.op_index >= 0 && where.tensor_index >= 0);
    CHECK(weights_finite(a.s) && all_state_finite(a.s));
    CHECK_EQ_INT(step_of(a.s), 2);
    if (mode == ACCUMULATED) { /* refused again; the gradients are kept, so a lower rate applies them */
        CHECK_STATUS(mt_session_optimizer_step(a.s), MT_ERR_NUMERIC);
        CHECK_EQ_INT(errors_of(a.s), 2);
    }
    CHECK_STATUS(mt_session_set_learning_rate(a.s, cfg.learning_rate), MT_OK);
    snapshot(a.s, after);
    if (!CHECK(same_snapshot(before, after))) /* weights, state, step, β powers, lr */
        printf("    optimizer %d, %s: the refused step changed the session\n", optimizer, mode_names[mode]);

    if (mode == ACCUMULATED) { /* the kept gradients, at the configured rate: the twin's step */
        feed_far_targets(twin.s, 3);
        CHECK_STATUS(mt_session_zero_grad(twin.s), MT_OK);
        CHECK_STATUS(mt_session_accumulate(twin.s, B, &loss_twin), MT_OK);
        CHECK_STATUS(mt_session_optimizer_step(twin.s), MT_OK);
        CHECK_STATUS(mt_session_optimizer_step(a.s), MT_OK);
        CHECK(same_params(a.s, twin.s) && same_counters(a.s, twin.s));
    }
    feed(a.s, 0, 4), feed(twin.s, 0, 4); /* and the next step is the twin's */
    CHECK_STATUS(step(a.s, mode, &loss), MT_OK);
    CHECK_STATUS(step(twin.s, mode, &loss_twin), MT_OK);
    CHECK(memcmp(&loss, &loss_twin, sizeof loss) == 0);
    CHECK(same_params(a.s, twin.s) && same_counters(a.s, twin.s));
    free(a.block), free(twin.block), free(before), free(after);
}

/* Rates from 1e-3 up to FLT_MAX, one step each, far targets every other step: some steps are
 * refused, some not; no weight or optimizer state is ever NaN or infinite. */
static void test_no_rate_makes_a_weight_non_finite(const uint8_t *img, size_t bytes, int optimizer, int mode)
{
    mt_train_config cfg = huge_lr_config(optimizer, mode);
    sess a;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    int refused = 0, bad = 0;
    for (int e = -3; e <= 39; e++) {
        const float lr = e == 39 ? FLT_MAX : powf(10.f, (float)e);
        float loss;
        CHECK_STATUS(mt_session_set_learning_rate(a.s, lr), MT_OK);
        if (e % 2)
            feed_far_targets(a.s, (unsigned)(e + 10));
        else
            feed(a.s, 0, (unsigned)(e + 10));
        mt_status st = step(a.s, mode, &loss);
        CHECK(st == MT_OK || st == MT_ERR_NUMERIC);
        refused += st == MT_ERR_NUMERIC;
        if (!(weights_finite(a.s) && all_state_finite(a.s)) && bad++ == 0)
            printf("    optimizer %d, %s: non-finite after lr 1e%d\n", optimizer, mode_names[mode], e);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(refused > 0 && refused < 43);
    CHECK_EQ_INT(errors_of(a.s), refused);
    free(a.block);
}

int main(void)
{
    size_t bytes = 0;
    uint8_t *img = build(&bytes);
    test_guard_refuses_the_step_whole(img, bytes, 0);
    test_guard_refuses_the_step_whole(img, bytes, 1);
    test_fused_updates_stop_at_the_bad_gradient(img, bytes);
    test_accumulated_optimizer_step_is_all_or_nothing(img, bytes);
    for (int mode = FUSED; mode <= ACCUMULATED; mode++) {
        test_huge_learning_rate_is_refused(img, bytes, MT_OPTIMIZER_SGD, 1, mode);
        for (int optimizer = 0; optimizer < 3; optimizer++) {
            test_huge_learning_rate_is_refused(img, bytes, optimizer, 0, mode);
            test_no_rate_makes_a_weight_non_finite(img, bytes, optimizer, mode);
        }
    }
    free(img);
    return MT_TEST_END();
}
