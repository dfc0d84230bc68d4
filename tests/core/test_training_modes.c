/*
 * What trains and how gradients add up:
 *   - trainable_op_mask: exactly the masked ops' weights train (mt_param_info.trained), the
 *     rest are read in place from the image and never change; the plan's weight, gradient
 *     and optimizer bytes are those of the trained tensors only; first_trained_op is the
 *     first op reading a trained weight; the mask overrides num_trainable_ops and is not kept;
 *   - biases_only: only 1-D weights train, the plan shrinks; it must be 0 or 1;
 *   - accumulation (accumulate_gradients = 1): zero_grad + k accumulates + optimizer_step
 *     equals one step on the k batches concatenated (MEAN and SUM, SGD, SGD+momentum, Adam,
 *     uneven batches); optimizer_step with no rows accumulated is MT_ERR_STATE; train_step,
 *     fused (the default) or not, is exactly zero_grad + accumulate + optimizer_step;
 *     biases_only and accumulate_gradients must be 0 or 1.
 * Model "mlp3": x[3] -> Dense(W1[4,3], b1) -> relu -> Dense(W2[5,4], b2) -> tanh
 *               -> Dense(W3[2,5], b3) -> y[2]; ops 0 dense, 1 relu, 2 dense, 3 tanh, 4 dense;
 *               params (table order) W1 b1 W2 b2 W3 b3 = positions 0..5.
 */
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define NOPS 5
#define NPARAMS 6

static const int param_tensor[NPARAMS] = { 1, 2, 5, 6, 9, 10 };
static const int param_count[NPARAMS] = { 12, 4, 20, 5, 10, 2 };
static const int param_op[NPARAMS] = { 0, 0, 2, 2, 4, 4 };

static uint8_t *mlp3(unsigned seed, size_t *bytes)
{
    static ib_model m;
    static const int32_t dims[][2] = { { 3, 0 }, { 4, 3 }, { 4, 0 }, { 4, 0 }, { 4, 0 },
                                       { 5, 4 }, { 5, 0 }, { 5, 0 }, { 5, 0 }, { 2, 5 },
                                       { 2, 0 }, { 2, 0 } };
    float w[20];
    ib_init(&m);
    mt_test_seed(seed);
    for (int t = 0; t < 12; t++) {
        int is_param = t == 1 || t == 2 || t == 5 || t == 6 || t == 9 || t == 10;
        int flags = is_param ? MT_TENSOR_CONST | MT_TENSOR_TRAINABLE : 0;
        flags |= t == 0 ? MT_TENSOR_INPUT : t == 11 ? MT_TENSOR_OUTPUT : 0;
        for (int i = 0; i < 20; i++)
            w[i] = mt_test_uniform(-0.6f, 0.6f);
        ib_tensor(&m, MT_DTYPE_F32, flags, dims[t][1] ? 2 : 1, dims[t], w);
    }
    static const int ins[NOPS][3] = { { 0, 1, 2 }, { 3 }, { 4, 5, 6 }, { 7 }, { 8, 9, 10 } };
    static const int types[NOPS] = { MT_OP_DENSE, MT_OP_RELU, MT_OP_DENSE, MT_OP_TANH, MT_OP_DENSE };
    static const int outs[NOPS] = { 3, 4, 7, 8, 11 };
    for (int o = 0; o < NOPS; o++)
        ib_op(&m, types[o], types[o] == MT_OP_DENSE ? 3 : 1, ins[o], 1, &outs[o]);
    ib_input(&m, 0);
    ib_output(&m, 11);
    return ib_build(&m, bytes);
}

static void make_cfg(mt_train_config *c, int optimizer, int batch)
{
    mt_train_config_init(c);
    c->optimizer = optimizer, c->batch_size = batch, c->learning_rate = 0.05f;
}

static size_t round16(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

/* ---- trainable_op_mask -------------------------------------------------------------------- */

/* Train a session with this mask (copied into a heap buffer that is scribbled over and freed
 * right after init) and check every weight: trained ones move, frozen ones stay the image's. */
static void mask_case(const uint8_t *mask_bytes, int num_trainable_ops, const int *trains,
                      int first_trained_op, int accumulate)
{
    size_t ib;
    uint8_t *img = mlp3(5u, &ib);
    uint8_t *orig = malloc(ib);
    memcpy(orig, img, ib);
    mt_train_config cfg;
    mt_memory_plan plan, again;
    sess g;
    make_cfg(&cfg, MT_OPTIMIZER_ADAM, 4);
    cfg.num_trainable_ops = num_trainable_ops, cfg.accumulate_gradients = accumulate;
    uint8_t *mask = malloc(NOPS);
    memcpy(mask, mask_bytes, NOPS);
    cfg.trainable_op_mask = mask;
    CHECK_STATUS(mt_plan(img, ib, &cfg, &plan), MT_OK);
    CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
    memset(mask, 1, NOPS); /* the session must not look at it again */
    free(mask);
    cfg.trainable_op_mask = NULL;
    CHECK_STATUS(mt_session_plan(g.s, &again), MT_OK);
    CHECK(memcmp(&plan, &again, sizeof plan) == 0);

    size_t weights = 0, state = 0;
    int num_trained = 0;
    for (int p = 0; p < NPARAMS; p++)
        if (trains[p]) {
            weights += round16(4u * (size_t)param_count[p]);
            state += round16(2 * 4u * (size_t)param_count[p]); /* Adam: m and v */
            num_trained++;
        }
    CHECK_EQ_INT(plan.num_trained_params, num_trained);
    CHECK_EQ_INT(plan.weight_bytes, weights);
    CHECK_EQ_INT(plan.gradient_bytes, weights);
    CHECK_EQ_INT(plan.optimizer_bytes, state);
    if (!CHECK_EQ_INT(plan.first_trained_op, first_trained_op))
        printf("    mask %d%d%d%d%d\n", mask_bytes[0], mask_bytes[1], mask_bytes[2], mask_bytes[3],
               mask_bytes[4]);

    for (int step = 0; step < 3; step++) {
        float loss;
        feed_rows(g.s, 0, 4, 30u + (unsigned)step, 3, 2);
        CHECK_STATUS(mt_session_train_step(g.s, 4, &loss), num_trained ? MT_OK : MT_ERR_STATE);
    }
    for (int p = 0; p < NPARAMS; p++) {
        mt_param_info pi;
        CHECK_STATUS(mt_session_param(g.s, p, &pi), MT_OK);
        const float *in_image = ib_const_data(orig, param_tensor[p]);
        CHECK_EQ_INT(pi.tensor_index, param_tensor[p]);
        CHECK_EQ_INT(pi.trained, trains[p]);
        CHECK(pi.image_data == ib_const_data(img, param_tensor[p])); /* read in place */
        if (trains[p]) {
            CHECK(pi.data != NULL && memcmp(pi.data, in_image, 4u * (size_t)pi.count) != 0);
        } else {
            CHECK(pi.data == NULL);
            CHECK(memcmp(pi.image_data, in_image, 4u * (size_t)pi.count) == 0);
        }
    }
    CHECK(memcmp(img, orig, ib) == 0);
    free(g.block), free(orig), free(img);
}

static void test_trainable_op_mask(void)
{
    static const struct { uint8_t mask[NOPS]; int ntops, trains[NPARAMS], first; } cases[] = {
        { { 0, 0, 1, 0, 0 }, -1, { 0, 0, 1, 1, 0, 0 }, 2 }, /* the middle Dense only */
        { { 0, 0, 1, 0, 0 }, 0, { 0, 0, 1, 1, 0, 0 }, 2 },  /* mask beats "none" */
        { { 0, 0, 1, 0, 0 }, 1, { 0, 0, 1, 1, 0, 0 }, 2 },  /* ... and "the last op" */
        { { 0, 0, 0x80, 0, 0 }, 1, { 0, 0, 1, 1, 0, 0 }, 2 }, /* any nonzero byte */
        { { 7, 0, 0, 0, 0 }, 1, { 1, 1, 0, 0, 0, 0 }, 0 },
        { { 0, 1, 0, 0, 1 }, -1, { 0, 0, 0, 0, 1, 1 }, 4 }, /* relu reads no weight */
        { { 1, 0, 0, 0, 1 }, 0, { 1, 1, 0, 0, 1, 1 }, 0 },
        { { 0, 1, 0, 1, 0 }, -1, { 0, 0, 0, 0, 0, 0 }, NOPS }, /* nothing: first = num_ops */
        { { 0, 0, 0, 0, 0 }, -1, { 0, 0, 0, 0, 0, 0 }, NOPS },
        { { 1, 1, 1, 1, 1 }, 0, { 1, 1, 1, 1, 1, 1 }, 0 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int accumulate = 0; accumulate < 2; accumulate++)
            mask_case(cases[c].mask, cases[c].ntops, cases[c].trains, cases[c].first, accumulate);

    /* an all-ones mask plans exactly like training everything */
    size_t ib;
    uint8_t *img = mlp3(5u, &ib);
    static const uint8_t ones[NOPS] = { 1, 1, 1, 1, 1 };
    mt_train_config cfg;
    mt_memory_plan a, b;
    make_cfg(&cfg, MT_OPTIMIZER_SGD, 3);
    cfg.momentum = 0.9f;
    CHECK_STATUS(mt_plan(img, ib, &cfg, &a), MT_OK);
    cfg.trainable_op_mask = ones;
    CHECK_STATUS(mt_plan(img, ib, &cfg, &b), MT_OK);
    CHECK(memcmp(&a, &b, offsetof(mt_memory_plan, image)) == 0); /* the figures (the binding names the mask) */
    CHECK(a.config_crc32 != b.config_crc32);
    free(img);
}

/* ---- biases_only -------------------------------------------------------------------------- */

static void biases_case(int num_trainable_ops, const uint8_t *mask, const int *trains)
{
    size_t ib;
    uint8_t *img = mlp3(6u, &ib);
    mt_train_config cfg;
    mt_memory_plan all, plan;
    sess g;
    make_cfg(&cfg, MT_OPTIMIZER_ADAM, 4);
    cfg.num_trainable_ops = num_trainable_ops;
    cfg.trainable_op_mask = mask;
    CHECK_STATUS(mt_plan(img, ib, &cfg, &all), MT_OK);
    cfg.biases_only = 1;
    CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
    CHECK_STATUS(mt_session_plan(g.s, &plan), MT_OK);
    size_t weights = 0;
    int n = 0, first = NOPS;
    for (int p = 0; p < NPARAMS; p++)
        if (trains[p]) {
            weights += round16(4u * (size_t)param_count[p]);
            n++;
            if (param_op[p] < first)
                first = param_op[p];
        }
    CHECK_EQ_INT(plan.num_trained_params, n);
    CHECK_EQ_INT(plan.gradient_bytes, weights);
    CHECK_EQ_INT(plan.first_trained_op, first);
    CHECK(plan.total_bytes < all.total_bytes && plan.weight_bytes < all.weight_bytes &&
          plan.gradient_bytes < all.gradient_bytes && plan.optimizer_bytes < all.optimizer_bytes);
    for (int step = 0; step < 3; step++) {
        feed_rows(g.s, 0, 4, 40u + (unsigned)step, 3, 2);
        CHECK_STATUS(mt_session_train_step(g.s, 4, NULL), MT_OK);
    }
    for (int p = 0; p < NPARAMS; p++) {
        mt_param_info pi;
        mt_session_param(g.s, p, &pi);
        CHECK_EQ_INT(pi.trained, trains[p]);
        if (!trains[p]) /* 2-D weights (and untrained ops' biases) stay the image's */
            CHECK(pi.data == NULL &&
                  memcmp(pi.image_data, ib_const_data(img, param_tensor[p]), 4u * (size_t)pi.count) == 0);
        else
            CHECK(pi.data && memcmp(pi.data, pi.image_data, 4u * (size_t)pi.count) != 0);
    }
    free(g.block), free(img);
}

static void test_biases_only(void)
{
    static const int all_biases[NPARAMS] = { 0, 1, 0, 1, 0, 1 }, last[NPARAMS] = { 0, 0, 0, 0, 0, 1 };
    static const int middle[NPARAMS] = { 0, 0, 0, 1, 0, 0 };
    static const uint8_t mask[NOPS] = { 0, 0, 1, 0, 0 };
    biases_case(-1, NULL, all_biases);
    biases_case(1, NULL, last);
    biases_case(-1, mask, middle);

    /* 0 or 1 only */
    size_t ib;
    uint8_t *img = mlp3(6u, &ib);
    static uint8_t arena[1 << 14] __attribute__((aligned(16)));
    const int bad[] = { 2, -1, 255, INT32_MIN };
    for (int i = 0; i < 8; i++) { /* biases_only, then accumulate_gradients */
        mt_train_config cfg;
        mt_memory_plan plan;
        mt_session *s = NULL;
        make_cfg(&cfg, MT_OPTIMIZER_SGD, 2);
        if (i < 4)
            cfg.biases_only = bad[i];
        else
            cfg.accumulate_gradients = bad[i - 4];
        CHECK_STATUS(mt_plan(img, ib, &cfg, &plan), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_init(&s, img, ib, &cfg, arena, sizeof arena), MT_ERR_BAD_ARGUMENT);
    }
    /* a model without biases has nothing to train in this mode */
    ib_mlp_spec spec;
    mt_train_config cfg;
    sess g;
    size_t nb;
    ib_mlp_defaults(&spec);
    spec.use_bias = 0;
    uint8_t *nobias = ib_build_mlp(&spec, &nb);
    make_cfg(&cfg, MT_OPTIMIZER_SGD, 2);
    cfg.biases_only = 1, cfg.accumulate_gradients = 1;
    CHECK_STATUS(sess_open(&g, nobias, nb, &cfg), MT_OK);
    feed_rows(g.s, 0, 2, 50u, 3, 2);
    CHECK_STATUS(mt_session_train_step(g.s, 2, NULL), MT_ERR_STATE);
    CHECK_STATUS(mt_session_accumulate(g.s, 2, NULL), MT_ERR_STATE);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE);
    free(g.block), free(nobias), free(img);
}

/* ---- accumulation ------------------------------------------------------------------------- */

/* Largest |a - b| / max(1, |b|) over every weight. */
static double max_rel_diff(mt_session *a, mt_session *b)
{
    double worst = 0.0;
    for (int p = 0; p < NPARAMS; p++) {
        int32_t n = 0, m = 0;
        const float *wa = param_data(a, p, &n), *wb = param_data(b, p, &m);
        for (int i = 0; i < n && n == m; i++) {
            double d = fabs((double)wa[i] - wb[i]) / fmax(1.0, fabs((double)wb[i]));
            worst = d > worst ? d : worst;
        }
    }
    return worst;
}

/* k = parts batches of sizes[] rows, accumulated then one optimizer step, against one
 * train_step on all rows (batch size = their sum); three rounds so momentum and Adam's
 * moments carry over. */
static void accumulate_case(int optimizer, float momentum, int reduction, int loss,
                            const int *sizes, int parts)
{
    size_t ib;
    uint8_t *img;
    int total = 0, largest = 0;
    for (int i = 0; i < parts; i++)
        total += sizes[i], largest = sizes[i] > largest ? sizes[i] : largest;
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.hidden_act = MT_OP_TANH;
    spec.out_act = loss == MT_LOSS_CATEGORICAL_CROSSENTROPY ? MT_OP_SOFTMAX : 0;
    img = ib_build_mlp(&spec, &ib);
    mt_train_config cfg;
    sess whole, acc;
    make_cfg(&cfg, optimizer, total);
    cfg.momentum = momentum, cfg.reduction = reduction, cfg.loss = loss;
    cfg.weight_decay = 0.01f;
    CHECK_STATUS(sess_open(&whole, img, ib, &cfg), MT_OK);
    cfg.batch_size = largest, cfg.accumulate_gradients = 1; /* whole: fused updates */
    CHECK_STATUS(sess_open(&acc, img, ib, &cfg), MT_OK);
    for (int round = 0; round < 3; round++) {
        float lw = 0.f, l = 0.f;
        double combined = 0.0;
        int first = 0;
        CHECK_STATUS(mt_session_zero_grad(acc.s), MT_OK);
        for (int i = 0; i < parts; i++) {
            unsigned seed = 100u * (unsigned)round + (unsigned)i;
            feed_rows(whole.s, first, sizes[i], seed, 3, 2);
            feed_rows(acc.s, 0, sizes[i], seed, 3, 2);
            CHECK_STATUS(mt_session_accumulate(acc.s, sizes[i], &l), MT_OK);
            combined += reduction == MT_REDUCTION_MEAN ? (double)l * sizes[i] / total : (double)l;
            first += sizes[i];
        }
        CHECK_STATUS(mt_session_optimizer_step(acc.s), MT_OK);
        CHECK_STATUS(mt_session_train_step(whole.s, total, &lw), MT_OK);
        CHECK_NEAR(combined, lw, 1e-6 * fmax(1.0, fabs(lw)));
        double d = max_rel_diff(acc.s, whole.s);
        if (!CHECK(d <= 1e-6))
            printf("    optimizer %d momentum %g reduction %d loss %d parts %d round %d: rel diff %.3g\n",
                   optimizer, (double)momentum, reduction, loss, parts, round, d);
    }
    int64_t sa, sw;
    mt_session_counters(acc.s, &sa, NULL), mt_session_counters(whole.s, &sw, NULL);
    CHECK(sa == 3 && sw == 3);
    free(whole.block), free(acc.block), free(img);
}

static void test_accumulation(void)
{
    static const int k3n2[] = { 2, 2, 2 }, k2n4[] = { 4, 4 }, uneven[] = { 3, 5 }, odd[] = { 1, 4, 2 };
    static const struct { const int *sizes; int parts; } splits[] = {
        { k3n2, 3 }, { k2n4, 2 }, { uneven, 2 }, { odd, 3 } };
    static const struct { int optimizer; float momentum; } opts[] = {
        { MT_OPTIMIZER_SGD, 0.f }, { MT_OPTIMIZER_SGD, 0.9f }, { MT_OPTIMIZER_ADAM, 0.f } };
    for (int o = 0; o < 3; o++)
        for (int r = 0; r < 2; r++)
            for (int sp = 0; sp < 4; sp++)
                accumulate_case(opts[o].optimizer, opts[o].momentum, r ? MT_REDUCTION_SUM : MT_REDUCTION_MEAN,
                                sp % 2 ? MT_LOSS_CATEGORICAL_CROSSENTROPY : MT_LOSS_MSE,
                                splits[sp].sizes, splits[sp].parts);
}

/* optimizer_step needs rows accumulated since the last zero_grad; failed accumulates add none. */
static void test_optimizer_step_needs_rows(void)
{
    ib_mlp_spec spec;
    size_t ib;
    mt_train_config cfg;
    sess g, ref;
    float *x;
    int32_t count;
    ib_mlp_defaults(&spec);
    uint8_t *img = ib_build_mlp(&spec, &ib);
    make_cfg(&cfg, MT_OPTIMIZER_ADAM, 3);
    CHECK_STATUS(sess_open(&ref, img, ib, &cfg), MT_OK);
    /* fused updates (the default) keep no gradients: the three calls are refused */
    feed_rows(ref.s, 0, 3, 60u, 3, 2);
    CHECK_STATUS(mt_session_zero_grad(ref.s), MT_ERR_STATE);
    CHECK_STATUS(mt_session_accumulate(ref.s, 3, NULL), MT_ERR_STATE);
    CHECK_STATUS(mt_session_optimizer_step(ref.s), MT_ERR_STATE);
    cfg.accumulate_gradients = 1;
    CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE); /* fresh */
    CHECK_STATUS(mt_session_zero_grad(g.s), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE);
    feed_rows(g.s, 0, 3, 60u, 3, 2);
    CHECK_STATUS(mt_session_accumulate(g.s, 3, NULL), MT_OK);
    CHECK_STATUS(mt_session_zero_grad(g.s), MT_OK); /* forgets the rows */
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE);
    CHECK_STATUS(mt_session_accumulate(g.s, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_accumulate(g.s, 4, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE);
    mt_session_input(g.s, 0, &x, &count);
    x[0] = INFINITY; /* non-finite loss: MT_ERR_NUMERIC, no rows counted */
    CHECK_STATUS(mt_session_accumulate(g.s, 3, NULL), MT_ERR_NUMERIC);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_ERR_STATE);
    int64_t step = -1;
    mt_session_counters(g.s, &step, NULL);
    CHECK_EQ_INT(step, 0);
    CHECK(same_params(g.s, ref.s)); /* nothing moved */
    free(g.block), free(ref.block), free(img);
}

/* train_step == zero_grad + accumulate + optimizer_step, bit for bit, whatever was
 * accumulated before (train_step starts from zero gradients). */
static void test_train_step_is_the_three_calls(void)
{
    static const struct { int optimizer; float momentum, wd; } opts[] = {
        { MT_OPTIMIZER_SGD, 0.f, 0.f }, { MT_OPTIMIZER_SGD, 0.9f, 0.01f },
        { MT_OPTIMIZER_ADAM, 0.f, 0.01f }, { MT_OPTIMIZER_ADAMW, 0.f, 0.1f } };
    for (int o = 0; o < 4; o++)
        for (int r = 0; r < 4; r++) { /* r & 1: SUM reduction; r & 2: a accumulates too */
            size_t ib;
            uint8_t *img = mlp3(9u, &ib);
            mt_train_config cfg;
            sess a, b;
            make_cfg(&cfg, opts[o].optimizer, 5);
            cfg.momentum = opts[o].momentum, cfg.weight_decay = opts[o].wd;
            cfg.reduction = r & 1 ? MT_REDUCTION_SUM : MT_REDUCTION_MEAN;
            cfg.accumulate_gradients = r >> 1;
            CHECK_STATUS(sess_open(&a, img, ib, &cfg), MT_OK);
            cfg.accumulate_gradients = 1;
            CHECK_STATUS(sess_open(&b, img, ib, &cfg), MT_OK);
            for (int step = 0; step < 4; step++) {
                int n = 2 + step % 4; /* 2, 3, 4, 5 rows of B = 5 */
                float la = 0.f, lb = 1.f;
                if (step == 2 && (r & 2)) { /* stale gradients in a: train_step must discard them */
                    feed_rows(a.s, 0, 5, 999u, 3, 2);
                    CHECK_STATUS(mt_session_accumulate(a.s, 5, NULL), MT_OK);
                }
                feed_rows(a.s, 0, n, 70u + (unsigned)step, 3, 2);
                feed_rows(b.s, 0, n, 70u + (unsigned)step, 3, 2);
                CHECK_STATUS(mt_session_train_step(a.s, n, &la), MT_OK);
                CHECK_STATUS(mt_session_zero_grad(b.s), MT_OK);
                CHECK_STATUS(mt_session_accumulate(b.s, n, &lb), MT_OK);
                CHECK_STATUS(mt_session_optimizer_step(b.s), MT_OK);
                CHECK_BITS_EQ(la, lb);
                if (!CHECK(same_params(a.s, b.s)))
                    printf("    optimizer %d reduction %d step %d\n", opts[o].optimizer, r, step);
            }
            free(a.block), free(b.block), free(img);
        }
}

int main(void)
{
    test_trainable_op_mask();
    test_biases_only();
    test_accumulation();
    test_optimizer_step_needs_rows();
    test_train_step_is_the_three_calls();
    return MT_TEST_END();
}
