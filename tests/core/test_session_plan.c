/*
 * Sessions end to end, on models from image_builder (guarded_session_util.h).
 * This program, the plan and the arena:
 *   - mt_plan's total is exactly the arena init needs, and its pieces add up to it;
 *   - the session stays inside its arena (guard bytes) and never writes the image;
 *   - num_trainable_ops picks what trains, and the plan shrinks with it; frozen weights are
 *     read in place from the image.
 */
#include "guarded_session_util.h"

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

int main(void)
{
    test_plan_is_exact();
    test_guards_and_image_untouched();
    test_trainable_ops();
    return MT_TEST_END();
}
