/*
 * Sessions end to end, on models from image_builder:
 *   - mt_plan's total is exactly the arena init needs, and its pieces add up to it;
 *   - the session stays inside its arena (guard bytes) and never writes the image;
 *   - a partial batch (n < B) is exactly a batch of size n (bitwise), garbage rows ignored;
 *   - one SGD step equals the update worked out by hand in double (plain, fused losses);
 *   - training reduces the loss; num_trainable_ops picks what trains; frozen weights are
 *     read in place from the image; eval and infer leave weights alone; infer is right.
 * Glossary: B = batch size, n = valid rows, I/Hd/O = input/hidden/output features.
 */
#include <math.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"

#define GUARD 64 /* bytes before and after the arena, a multiple of MT_ARENA_ALIGN */
#define GUARD_BYTE 0xA5

/* An arena of exactly plan.total_bytes between two guard zones, itself pre-filled with
 * junk: init must not rely on zeroed memory (stack arenas are not zero). */
typedef struct guarded {
    uint8_t *block, *arena;
    size_t bytes;
    mt_session *s;
} guarded;

static mt_status open_guarded(guarded *g, const uint8_t *image, size_t image_bytes,
                              const mt_train_config *cfg)
{
    mt_memory_plan plan;
    mt_status st = mt_plan(image, image_bytes, cfg, &plan);
    memset(g, 0, sizeof *g);
    if (st != MT_OK)
        return st;
    g->bytes = plan.total_bytes;
    g->block = malloc(plan.total_bytes + 2 * GUARD + MT_ARENA_ALIGN);
    g->arena = g->block + GUARD + (MT_ARENA_ALIGN - (uintptr_t)(g->block + GUARD) % MT_ARENA_ALIGN) %
                                      MT_ARENA_ALIGN;
    memset(g->block, GUARD_BYTE, plan.total_bytes + 2 * GUARD + MT_ARENA_ALIGN);
    return mt_session_init(&g->s, image, image_bytes, cfg, g->arena, g->bytes);
}

static int guards_intact(const guarded *g)
{
    for (uint8_t *p = g->block; p < g->arena; p++)
        if (*p != GUARD_BYTE)
            return 0;
    for (size_t i = 0; i < GUARD; i++)
        if (g->arena[g->bytes + i] != GUARD_BYTE)
            return 0;
    return 1;
}

static void fill_inputs(mt_session *s, int rows, int in, unsigned seed)
{
    float *x;
    int32_t count;
    mt_test_seed(seed);
    CHECK_STATUS(mt_session_input(s, 0, &x, &count), MT_OK);
    for (int i = 0; i < rows * in && i < count; i++)
        x[i] = mt_test_uniform(-1.f, 1.f);
}

/* Float targets in [0, 1) (valid for every loss but the sparse one), or labels. */
static void fill_targets(mt_session *s, int rows, int out, int sparse, unsigned seed)
{
    void *t;
    int32_t bytes;
    mt_test_seed(seed);
    CHECK_STATUS(mt_session_target(s, &t, &bytes), MT_OK);
    for (int i = 0; i < rows * (sparse ? 1 : out) && 4 * i < bytes; i++) {
        if (sparse)
            ((int32_t *)t)[i] = (int32_t)(mt_test_rand_u32() % (unsigned)out);
        else
            ((float *)t)[i] = mt_test_uniform(0.f, 1.f);
    }
}

/* The weights position p as the session uses them: its arena copy or the image's. */
static const float *param_data(mt_session *s, int p, int32_t *count)
{
    mt_param_info info;
    if (mt_session_param(s, p, &info) != MT_OK)
        return NULL;
    *count = info.count;
    return info.trained ? info.data : info.image_data;
}

/* Every weight of a and b equal bit for bit. */
static int same_params(mt_session *a, mt_session *b)
{
    int32_t na = 0, nb = 0;
    mt_session_param_count(a, &na);
    mt_session_param_count(b, &nb);
    if (na != nb)
        return 0;
    for (int p = 0; p < na; p++) {
        int32_t ca = 0, cb = 0;
        const float *wa = param_data(a, p, &ca), *wb = param_data(b, p, &cb);
        if (!wa || !wb || ca != cb || memcmp(wa, wb, sizeof(float) * (size_t)ca) != 0)
            return 0;
    }
    return 1;
}

static void config(mt_train_config *cfg, int optimizer, int loss, int batch)
{
    mt_train_config_init(cfg);
    cfg->optimizer = optimizer, cfg->loss = loss, cfg->batch_size = batch;
}

/* ---- plan ------------------------------------------------------------------------------ */

static void test_plan_is_exact(void)
{
    static const int cases[][4] = { /* optimizer, loss, batch, out_act */
        { MT_OPTIMIZER_ADAM, MT_LOSS_CATEGORICAL_CROSSENTROPY, 4, MT_OP_SOFTMAX },
        { MT_OPTIMIZER_SGD, MT_LOSS_MSE, 1, 0 },
        { MT_OPTIMIZER_ADAMW, MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 7, MT_OP_SOFTMAX },
        { MT_OPTIMIZER_SGD, MT_LOSS_BINARY_CROSSENTROPY, 3, MT_OP_SIGMOID },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ib_mlp_spec spec;
        mt_train_config cfg;
        mt_memory_plan plan, again;
        size_t bytes;
        ib_mlp_defaults(&spec);
        spec.out_act = cases[c][3];
        uint8_t *img = ib_build_mlp(&spec, &bytes);
        config(&cfg, cases[c][0], cases[c][1], cases[c][2]);
        CHECK_STATUS(mt_model_check(img, bytes, NULL), MT_OK);
        CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
        size_t sum = plan.metadata_bytes + plan.weight_bytes + plan.gradient_bytes +
                     plan.optimizer_bytes + plan.activation_bytes + plan.activation_grad_bytes +
                     plan.io_bytes + plan.scratch_bytes - plan.reuse_bytes;
        CHECK_EQ_INT(sum, plan.total_bytes);
        CHECK(plan.lower_bound_bytes <= plan.total_bytes);
        CHECK_EQ_INT(plan.total_bytes % MT_ARENA_ALIGN, 0);
        CHECK_EQ_INT(plan.num_trained_params, 4);
        CHECK_EQ_INT(plan.first_trained_op, 0);
        /* 3·4 + 4 + 4·2 + 2 = 26 trained floats */
        CHECK(plan.weight_bytes >= 26 * 4 && plan.gradient_bytes >= 26 * 4);
        size_t state = cases[c][0] == MT_OPTIMIZER_SGD ? 0 : 2 * 26 * 4;
        CHECK(cases[c][0] == MT_OPTIMIZER_SGD ? plan.optimizer_bytes == 0
                                               : plan.optimizer_bytes >= state);
        /* activations: x[3] h[4] a[4] z[2] (y[2]) per row, B rows */
        CHECK(plan.activation_bytes >= (size_t)cases[c][2] * 4 * (3 + 4 + 4 + 2));
        CHECK(plan.io_bytes >= (size_t)cases[c][2] * 4 *
                                   (cases[c][1] == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ? 1 : 2));
        /* the query is pure: same answer twice */
        CHECK_STATUS(mt_plan(img, bytes, &cfg, &again), MT_OK);
        CHECK(memcmp(&plan, &again, sizeof plan) == 0);

        /* exactly total: one byte less fails, total succeeds, more is fine */
        guarded g;
        CHECK_STATUS(open_guarded(&g, img, bytes, &cfg), MT_OK); /* for its aligned arena */
        uint8_t *arena = g.arena;
        mt_session *s = NULL;
        CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes - 1),
                     MT_ERR_ARENA_TOO_SMALL);
        CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes), MT_OK);
        CHECK((void *)s == (void *)arena); /* "lives at the start of the arena" */
        CHECK_STATUS(mt_session_plan(s, &again), MT_OK);
        CHECK(memcmp(&plan, &again, sizeof plan) == 0);
        CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes + GUARD), MT_OK);
        free(g.block);
        free(img);
    }
}

/* ---- arena bounds, image untouched ------------------------------------------------------- */

static void test_guards_and_image_untouched(void)
{
    ib_mlp_spec spec;
    mt_train_config cfg;
    guarded g;
    size_t bytes;
    float loss;
    ib_mlp_defaults(&spec);
    spec.out_act = MT_OP_SOFTMAX;
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    uint8_t *copy = malloc(bytes);
    memcpy(copy, img, bytes);
    config(&cfg, MT_OPTIMIZER_ADAM, MT_LOSS_CATEGORICAL_CROSSENTROPY, 5);
    CHECK_STATUS(open_guarded(&g, img, bytes, &cfg), MT_OK);
    CHECK(guards_intact(&g));
    for (int step = 0; step < 4; step++) {
        fill_inputs(g.s, 5, 3, 10u + (unsigned)step);
        fill_targets(g.s, 5, 2, 0, 20u + (unsigned)step);
        CHECK_STATUS(mt_session_train_step(g.s, step % 2 ? 5 : 2, &loss), MT_OK);
    }
    /* fused updates (the default) keep no gradients to accumulate */
    CHECK_STATUS(mt_session_accumulate(g.s, 5, &loss), MT_ERR_STATE);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE);
    CHECK_STATUS(mt_session_zero_grad(g.s), MT_ERR_STATE);
    CHECK_STATUS(mt_session_eval_step(g.s, 5, &loss), MT_OK);
    CHECK_STATUS(mt_session_infer(g.s, 1), MT_OK);
    CHECK(guards_intact(&g));
    CHECK(memcmp(copy, img, bytes) == 0); /* the image may sit in flash: never written */
    free(g.block), free(copy), free(img);
}

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

/* ---- what trains ------------------------------------------------------------------------- */

/* Ops of the default MLP: 0 dense(W1, b1), 1 relu, 2 dense(W2, b2); params W1 b1 W2 b2.
 * num_trainable_ops = N trains the last N ops; frozen weights stay in the image. */
static void test_trainable_ops(void)
{
    static const int cases[][3] = { /* num_trainable_ops, frozen_first, trained params */
        { -1, 0, 4 }, { 3, 0, 4 }, { 10, 0, 4 }, { 2, 0, 2 }, { 1, 0, 2 }, { 0, 0, 0 },
        { -1, 1, 2 }
    };
    ib_mlp_spec spec;
    mt_train_config cfg;
    mt_memory_plan full;
    size_t bytes;
    ib_mlp_defaults(&spec);
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    config(&cfg, MT_OPTIMIZER_ADAM, MT_LOSS_MSE, 4);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &full), MT_OK);
    free(img);

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mt_memory_plan plan;
        mt_model_info info;
        guarded g;
        spec.frozen_first = cases[c][1];
        img = ib_build_mlp(&spec, &bytes);
        cfg.num_trainable_ops = cases[c][0];
        CHECK_STATUS(mt_model_check(img, bytes, &info), MT_OK);
        CHECK_EQ_INT(info.num_params, spec.frozen_first ? 2 : 4);
        CHECK_EQ_INT(info.param_count, spec.frozen_first ? 10 : 26);
        CHECK_STATUS(open_guarded(&g, img, bytes, &cfg), MT_OK);
        CHECK_STATUS(mt_session_plan(g.s, &plan), MT_OK);
        CHECK_EQ_INT(plan.num_trained_params, cases[c][2]);
        if (cases[c][2] == 4) {
            CHECK_EQ_INT(plan.gradient_bytes, full.gradient_bytes);
        } else { /* fewer trained weights: less of every per-weight piece */
            CHECK(plan.gradient_bytes < full.gradient_bytes);
            CHECK(plan.weight_bytes < full.weight_bytes);
            CHECK(plan.optimizer_bytes < full.optimizer_bytes);
            CHECK(plan.activation_grad_bytes <= full.activation_grad_bytes);
            CHECK(plan.total_bytes < full.total_bytes);
        }
        if (cases[c][2] == 0) {
            CHECK_EQ_INT(plan.first_trained_op, 3); /* num_ops when nothing trains */
            CHECK_EQ_INT(plan.gradient_bytes, 0);
            CHECK_EQ_INT(plan.optimizer_bytes, 0);
        }
        if (cases[c][0] == 1)
            CHECK_EQ_INT(plan.first_trained_op, 2);

        int32_t count = -1;
        CHECK_STATUS(mt_session_param_count(g.s, &count), MT_OK);
        CHECK_EQ_INT(count, 4); /* trained or frozen, every weight is listed */
        float before[4][12];
        for (int p = 0; p < 4; p++) {
            mt_param_info pi;
            static const int tensor_of[4] = { 1, 2, 5, 6 }, count_of[4] = { 12, 4, 8, 2 };
            CHECK_STATUS(mt_session_param(g.s, p, &pi), MT_OK);
            int trained = p >= 4 - cases[c][2];
            CHECK_EQ_INT(pi.tensor_index, tensor_of[p]);
            CHECK_EQ_INT(pi.count, count_of[p]);
            CHECK_EQ_INT(pi.trained, trained);
            /* image_data always points at the weights inside the image */
            CHECK(pi.image_data == ib_const_data(img, tensor_of[p]));
            CHECK((const uint8_t *)pi.image_data >= img &&
                  (const uint8_t *)(pi.image_data + pi.count) <= img + bytes);
            if (trained) { /* an arena copy of the image's values */
                CHECK(pi.data != NULL && (uint8_t *)pi.data >= g.arena &&
                      (uint8_t *)(pi.data + pi.count) <= g.arena + g.bytes);
                CHECK(pi.data && memcmp(pi.data, pi.image_data, 4u * (size_t)pi.count) == 0);
            } else {
                CHECK(pi.data == NULL);
            }
            memcpy(before[p], trained ? pi.data : pi.image_data, 4u * (size_t)pi.count);
        }

        fill_inputs(g.s, 4, 3, 5u);
        fill_targets(g.s, 4, 2, 0, 6u);
        float loss;
        CHECK_STATUS(mt_session_train_step(g.s, 4, &loss),
                     cases[c][2] ? MT_OK : MT_ERR_STATE);
        for (int p = 0; p < 4; p++) { /* trained weights moved, frozen ones did not */
            int32_t n;
            const float *w = param_data(g.s, p, &n);
            int changed = w && memcmp(w, before[p], 4u * (size_t)n) != 0;
            CHECK_EQ_INT(changed, p >= 4 - cases[c][2]);
        }
        /* inference and evaluation work whatever trains */
        CHECK_STATUS(mt_session_eval_step(g.s, 4, &loss), MT_OK);
        CHECK_STATUS(mt_session_infer(g.s, 4), MT_OK);
        CHECK(guards_intact(&g));
        free(g.block), free(img);
    }
}

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

    /* a fused train_step == zero_grad + accumulate + optimizer_step, bitwise; its loss is eval's */
    CHECK_STATUS(mt_session_train_step(a.s, 6, &lt), MT_OK);
    CHECK_BITS_EQ(lt, le);
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
    test_plan_is_exact();
    test_guards_and_image_untouched();
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
    test_trainable_ops();
    test_eval_infer_accumulate();
    test_accumulate_halves();
    return MT_TEST_END();
}
