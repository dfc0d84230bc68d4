/*
 * Everything that comes from outside is checked and answered with a status, never a crash
 * (bad_input_util.h; the whole-API matrix with guard bytes: test_api_model.c and its siblings).
 *
 * This program: status names and the ABI's struct sizes, bad configuration values, NULL
 * pointers, out-of-range positions and row counts and misaligned arenas given to the session
 * calls, and bad data inside the buffers (out-of-range labels, NaN inputs).
 */
#include "bad_input_util.h"

static void test_status_and_abi(void)
{
    static const int statuses[] = { MT_OK, MT_ERR_BAD_ARGUMENT, MT_ERR_BAD_MODEL, MT_ERR_SHAPE,
                                    MT_ERR_STATE, MT_ERR_UNSUPPORTED, MT_ERR_ARENA_TOO_SMALL,
                                    MT_ERR_NUMERIC, MT_ERR_BAD_CHECKPOINT,
                                    MT_ERR_CHECKPOINT_MISMATCH, MT_ERR_IO,
                                    1, -11, 12345, INT_MIN, INT_MAX };
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        const char *s = mt_status_str(statuses[i]);
        CHECK(s != NULL && s[0] != '\0');
        for (size_t j = 0; j < i && j < 11; j++) /* the eleven real statuses are told apart */
            CHECK(s == NULL || strcmp(s, mt_status_str(statuses[j])) != 0);
    }
    CHECK_EQ_INT(mt_abi_version(), MT_ABI_VERSION);
    CHECK_EQ_INT(mt_struct_size(0), sizeof(mt_train_config));
    CHECK_EQ_INT(mt_struct_size(1), sizeof(mt_memory_plan));
    CHECK_EQ_INT(mt_struct_size(2), sizeof(mt_tensor_info));
    CHECK_EQ_INT(mt_struct_size(3), sizeof(mt_model_info));
    CHECK_EQ_INT(mt_struct_size(4), sizeof(mt_param_info));
    CHECK_EQ_INT(mt_struct_size(5), sizeof(mt_property));
    CHECK_EQ_INT(mt_struct_size(6), sizeof(mt_buffer_info));
    CHECK_EQ_INT(mt_struct_size(7), sizeof(mt_op_info));
    CHECK_EQ_INT(mt_struct_size(8), sizeof(mt_error_detail));
    CHECK_EQ_INT(mt_struct_size(9), 0);
    CHECK_EQ_INT(mt_struct_size(-1), 0);
}

static void test_config_values(void)
{
    size_t bytes;
    uint8_t *img = fresh(&bytes);
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_session *s = NULL;
#define BAD_CFG(field, value, opt)                                                           \
    do {                                                                                     \
        default_cfg(&cfg);                                                                   \
        cfg.optimizer = (opt);                                                               \
        cfg.field = (value);                                                                 \
        if (!CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_ERR_BAD_ARGUMENT))            \
            printf("    config %s = %s\n", #field, #value);                                  \
        CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage,                    \
                                     sizeof arena_storage), MT_ERR_BAD_ARGUMENT);            \
    } while (0)
    BAD_CFG(batch_size, 0, MT_OPTIMIZER_SGD);
    BAD_CFG(batch_size, -3, MT_OPTIMIZER_SGD);
    BAD_CFG(learning_rate, 0.f, MT_OPTIMIZER_SGD);
    BAD_CFG(learning_rate, -0.1f, MT_OPTIMIZER_ADAM);
    BAD_CFG(learning_rate, NAN, MT_OPTIMIZER_SGD);
    BAD_CFG(learning_rate, INFINITY, MT_OPTIMIZER_SGD);
    BAD_CFG(beta1, 1.f, MT_OPTIMIZER_ADAM);
    BAD_CFG(beta1, -0.1f, MT_OPTIMIZER_ADAM);
    BAD_CFG(beta2, 1.f, MT_OPTIMIZER_ADAMW);
    BAD_CFG(beta2, 1.5f, MT_OPTIMIZER_ADAM);
    BAD_CFG(beta2, NAN, MT_OPTIMIZER_ADAM);
    BAD_CFG(epsilon, 0.f, MT_OPTIMIZER_ADAM);
    BAD_CFG(epsilon, -1e-8f, MT_OPTIMIZER_ADAM);
    BAD_CFG(momentum, 1.f, MT_OPTIMIZER_SGD);
    BAD_CFG(momentum, -0.5f, MT_OPTIMIZER_SGD);
    BAD_CFG(weight_decay, -0.01f, MT_OPTIMIZER_ADAMW);
    BAD_CFG(weight_decay, NAN, MT_OPTIMIZER_SGD);
    BAD_CFG(proximal_mu, -0.01f, MT_OPTIMIZER_SGD);
    BAD_CFG(proximal_mu, NAN, MT_OPTIMIZER_ADAM);
    BAD_CFG(proximal_mu, INFINITY, MT_OPTIMIZER_SGD);
    BAD_CFG(optimizer, 3, MT_OPTIMIZER_SGD);
    BAD_CFG(optimizer, -1, MT_OPTIMIZER_SGD);
    BAD_CFG(loss, 5, MT_OPTIMIZER_SGD);
    BAD_CFG(loss, -1, MT_OPTIMIZER_SGD);
    BAD_CFG(reduction, 2, MT_OPTIMIZER_SGD);
    BAD_CFG(reduction, -1, MT_OPTIMIZER_SGD);
    BAD_CFG(num_trainable_ops, -2, MT_OPTIMIZER_SGD);
#undef BAD_CFG

    /* NULLs, a misaligned arena, a tiny arena */
    default_cfg(&cfg);
    CHECK_STATUS(mt_plan(NULL, bytes, &cfg, &plan), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_plan(img, bytes, NULL, &plan), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init(NULL, img, bytes, &cfg, arena_storage, sizeof arena_storage),
                 MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init(&s, NULL, bytes, &cfg, arena_storage, sizeof arena_storage),
                 MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init(&s, img, bytes, NULL, arena_storage, sizeof arena_storage),
                 MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, NULL, sizeof arena_storage),
                 MT_ERR_BAD_ARGUMENT);
    for (int off = 1; off < (int)MT_ARENA_ALIGN; off += 3)
        CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage + off,
                                     sizeof arena_storage - 16), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, 0), MT_ERR_ARENA_TOO_SMALL);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, 16), MT_ERR_ARENA_TOO_SMALL);
    free(img);
}

/* Every session call with a NULL session, NULL outputs and out-of-range values; none of
 * them may change the session (step counter and weights stay as they were). */
static void test_session_arguments(void)
{
    size_t bytes;
    uint8_t *img = fresh(&bytes);
    mt_train_config cfg;
    mt_session *s = NULL;
    mt_memory_plan plan;
    mt_param_info pi;
    float *x, lr, loss;
    const float *out;
    void *t;
    int32_t count;
    int64_t step, epoch;
    default_cfg(&cfg); /* B = 2 */
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, sizeof arena_storage),
                 MT_OK);

    CHECK_STATUS(mt_session_plan(NULL, &plan), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_plan(s, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_input(NULL, 0, &x, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_input(s, 0, NULL, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_input(s, 0, &x, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_input(s, 1, &x, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_input(s, -1, &x, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_output(NULL, 0, &out, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_output(s, 0, NULL, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_output(s, 0, &out, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_output(s, 1, &out, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_output(s, -1, &out, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_target(NULL, &t, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_target(s, NULL, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_target(s, &t, NULL), MT_ERR_BAD_ARGUMENT);

    static const int32_t bad_n[] = { 0, -1, 3, INT32_MAX, INT32_MIN };
    for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++) {
        CHECK_STATUS(mt_session_train_step(s, bad_n[i], &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_accumulate(s, bad_n[i], &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_eval_step(s, bad_n[i], &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_infer(s, bad_n[i]), MT_ERR_BAD_ARGUMENT);
    }
    CHECK_STATUS(mt_session_train_step(NULL, 1, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_accumulate(NULL, 1, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_eval_step(NULL, 1, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_infer(NULL, 1), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_zero_grad(NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_optimizer_step(NULL), MT_ERR_BAD_ARGUMENT);

    CHECK_STATUS(mt_session_set_learning_rate(NULL, 0.1f), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_set_learning_rate(s, -1e-30f), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_set_learning_rate(s, -1.f), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_set_learning_rate(s, NAN), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_set_learning_rate(s, INFINITY), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_get_learning_rate(NULL, &lr), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_get_learning_rate(s, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_get_learning_rate(s, &lr), MT_OK);
    CHECK_BITS_EQ(lr, cfg.learning_rate); /* the refused values did not stick */
    CHECK_STATUS(mt_session_counters(NULL, &step, &epoch), MT_ERR_BAD_ARGUMENT);
    mt_status st = mt_session_counters(s, NULL, NULL); /* optional outputs or refused: no crash */
    CHECK(st == MT_OK || st == MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_set_epoch(NULL, 1), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_set_epoch(s, -1), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_param_count(NULL, &count), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_param_count(s, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_param(NULL, 0, &pi), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_param(s, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_param(s, -1, &pi), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_param(s, 4, &pi), MT_ERR_BAD_ARGUMENT);

    CHECK_STATUS(mt_session_counters(s, &step, &epoch), MT_OK);
    CHECK(step == 0 && epoch == 0);
    CHECK_STATUS(mt_session_param(s, 0, &pi), MT_OK);
    CHECK(memcmp(pi.data, pi.image_data, 4u * (size_t)pi.count) == 0);
    free(img);
}

/* Bad data inside the buffers: an out-of-range label is a bad argument, a NaN input makes a
 * non-finite loss; either way no weight, gradient or counter changes. A session with nothing
 * to train refuses to step. */
static void test_bad_step_data(void)
{
    ib_mlp_spec spec;
    mt_train_config cfg;
    mt_session *s = NULL;
    mt_param_info pi;
    float *x, loss, w0[12];
    void *t;
    int32_t count, bytes32;
    int64_t step, epoch;
    size_t bytes;
    ib_mlp_defaults(&spec);
    spec.out_act = MT_OP_SOFTMAX;
    spec.hidden_act = MT_OP_TANH; /* carries a NaN through to the loss */
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    default_cfg(&cfg);
    cfg.loss = MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    cfg.accumulate_gradients = 1; /* so the accumulate path below is reachable */
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, sizeof arena_storage),
                 MT_OK);
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, &t, &bytes32);
    CHECK_EQ_INT(bytes32, 2 * 4);
    for (int i = 0; i < count; i++)
        x[i] = 0.25f * (float)i;
    mt_session_param(s, 0, &pi);
    memcpy(w0, pi.data, sizeof w0);

    static const int32_t bad_labels[] = { 2, -1, 1000 };
    for (size_t k = 0; k < 3; k++) {
        ((int32_t *)t)[0] = 1, ((int32_t *)t)[1] = bad_labels[k];
        CHECK_STATUS(mt_session_train_step(s, 2, &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_eval_step(s, 2, &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_train_step(s, 1, &loss), MT_OK); /* row 1 not read */
        memcpy(pi.data, w0, sizeof w0);                          /* undo that step's W1 */
    }
    CHECK_STATUS(mt_session_counters(s, &step, &epoch), MT_OK);
    CHECK_EQ_INT(step, 3);

    /* NaN input: MT_ERR_NUMERIC, no update, no step counted */
    ((int32_t *)t)[1] = 0;
    float before[4][12];
    for (int p = 0; p < 4; p++) {
        mt_session_param(s, p, &pi);
        memcpy(before[p], pi.data, 4u * (size_t)pi.count);
    }
    x[1] = NAN;
    CHECK_STATUS(mt_session_train_step(s, 2, &loss), MT_ERR_NUMERIC);
    CHECK(isnan(loss) || isinf(loss)); /* the loss is reported even so */
    CHECK_STATUS(mt_session_counters(s, &step, &epoch), MT_OK);
    CHECK_EQ_INT(step, 3);
    for (int p = 0; p < 4; p++) {
        mt_session_param(s, p, &pi);
        CHECK(memcmp(before[p], pi.data, 4u * (size_t)pi.count) == 0);
    }
    /* accumulate on a NaN batch leaves the gradients as they were and counts no rows,
     * so there is nothing for an optimizer step to apply: a state error, weights kept. */
    CHECK_STATUS(mt_session_zero_grad(s), MT_OK);
    CHECK_STATUS(mt_session_accumulate(s, 2, &loss), MT_ERR_NUMERIC);
    CHECK_STATUS(mt_session_optimizer_step(s), MT_ERR_STATE);
    for (int p = 0; p < 4; p++) {
        mt_session_param(s, p, &pi);
        CHECK(memcmp(before[p], pi.data, 4u * (size_t)pi.count) == 0);
    }

    /* nothing trainable: stepping is a state error, inference is fine */
    cfg.num_trainable_ops = 0;
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, sizeof arena_storage),
                 MT_OK);
    CHECK_STATUS(mt_session_train_step(s, 1, &loss), MT_ERR_STATE);
    CHECK_STATUS(mt_session_accumulate(s, 1, &loss), MT_ERR_STATE);
    CHECK_STATUS(mt_session_optimizer_step(s), MT_ERR_STATE);
    CHECK_STATUS(mt_session_infer(s, 2), MT_OK);
    free(img);
}

/* A NaN input in a ReLU network: either the step is refused (MT_ERR_NUMERIC), or it is
 * accepted and every weight is still finite. What must not happen is an accepted step that
 * writes NaN into the weights (relu(NaN) -> 0 hides the NaN from the loss check, while
 * dense's dW += dy·x still multiplies by the NaN x). */
static void test_nan_through_relu(void)
{
    ib_mlp_spec spec;
    mt_train_config cfg;
    mt_session *s = NULL;
    mt_param_info pi;
    float *x, loss;
    void *t;
    int32_t count, tb;
    size_t bytes;
    ib_mlp_defaults(&spec); /* relu hidden layer */
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    default_cfg(&cfg);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, sizeof arena_storage),
                 MT_OK);
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, &t, &tb);
    for (int i = 0; i < count; i++)
        x[i] = 0.3f * (float)i;
    for (int i = 0; i < tb / 4; i++)
        ((float *)t)[i] = 0.5f;
    x[1] = NAN;
    mt_status st = mt_session_train_step(s, 2, &loss);
    int finite = 1;
    for (int p = 0; p < 4; p++) {
        mt_session_param(s, p, &pi);
        for (int k = 0; k < pi.count; k++)
            finite &= isfinite(pi.data[k]) != 0;
    }
    if (!CHECK(st == MT_ERR_NUMERIC || (st == MT_OK && finite)))
        printf("    NaN input through relu: status %d, weights finite %d\n", (int)st, finite);
    free(img);
}

int main(void)
{
    test_status_and_abi();
    test_config_values();
    test_session_arguments();
    test_bad_step_data();
    test_nan_through_relu();
    return MT_TEST_END();
}
