/*
 * The bad-input matrix (see also test_api_session.c and test_api_checkpoint.c): every public
 * C function (microtrain.h and microtrain_storage.h) with NULL pointers, zero and huge sizes
 * and counts, out-of-range positions and values, calls in the wrong state, misaligned arenas
 * and images, and arenas too small by one byte. Every call must return its documented status,
 * and the 64 guard bytes on each side of the arena must be intact after every call (a write
 * out of bounds). Run under ASan + UBSan by tools/run_sanitizers.sh, where an over-read fails
 * too.
 *
 * This program: misaligned images, mt_session_init's arguments, every session call, the calls
 * a session's mode forbids, sessions that are not sessions (a zeroed or garbage session, the
 * arena overwritten after init) and init twice into the same arena. The cases run in the
 * order they always did, so the rows fill() draws are the same numbers.
 */
#include "api_matrix_util.h"

/* ---- every session call on a session that is not one ---------------------------------- */

static void every_session_call(mt_session *s, mt_status want)
{
    mt_memory_plan plan;
    float *x;
    const float *out;
    void *y;
    int32_t count;
    float value;
    int64_t step;
    mt_param_info info;
    size_t bytes;
    mem m;
    memset(&m, 0, sizeof m);
    CALL(mt_session_plan(s, &plan), want);
    CALL(mt_session_input(s, 0, &x, &count), want);
    CALL(mt_session_output(s, 0, &out, &count), want);
    CALL(mt_session_target(s, &y, &count), want);
    CALL(mt_session_train_step(s, 1, &value), want);
    CALL(mt_session_zero_grad(s), want);
    CALL(mt_session_accumulate(s, 1, &value), want);
    CALL(mt_session_optimizer_step(s), want);
    CALL(mt_session_eval_step(s, 1, &value), want);
    CALL(mt_session_infer(s, 1), want);
    static const float row[4 * 3] = {0.5f, -0.5f, 1.0f}; /* B rows of the model's 3 inputs */
    const float *rows[1] = {row};
    CALL(mt_session_train_step_rows(s, 1, rows, &value), want);
    CALL(mt_session_eval_step_rows(s, 1, rows, &value), want);
    CALL(mt_session_infer_rows(s, 1, rows), want);
    CALL(mt_session_set_learning_rate(s, 0.1f), want);
    CALL(mt_session_get_learning_rate(s, &value), want);
    CALL(mt_session_get_base_learning_rate(s, &value), want);
    CALL(mt_session_set_reference(s), want);
    CALL(mt_session_counters(s, &step, &step), want);
    CALL(mt_session_set_epoch(s, 1), want);
    CALL(mt_session_param_count(s, &count), want);
    CALL(mt_session_param(s, 0, &info), want);
    CALL(mt_checkpoint_bytes(s, 1, NULL, 0, &bytes), want);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, mem_write, &m), want);
    CALL(mt_checkpoint_load(s, 100, mem_read, &m, NULL, NULL), want);
    CALL(mt_session_export_image(s, mem_write, &m), want);
    mt_error_detail detail;
    CALL(mt_session_last_error(s, &detail), want);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, m.data, sizeof m.data, &bytes), want);
    CALL(mt_checkpoint_load_buffer(s, m.data, 100, NULL, NULL), want);
    CALL(mt_session_export_image_buffer(s, m.data, sizeof m.data, &bytes), want);
}

/* ---- the matrix: sessions ---------------------------------------------------------------- */

/* Images at every offset from an aligned address: 4-byte-aligned ones work and compute the
 * same bits (weights are read in place), others are refused. */
static void test_misaligned_image(void)
{
    uint8_t *raw = malloc(image_bytes + 48);
    uint8_t *block = raw + ((16u - (uintptr_t)raw % 16u) % 16u);
    mt_train_config cfg;
    config(&cfg);
    float reference = 0.0f;
    for (size_t shift = 0; shift < 16; ++shift) {
        uint8_t *img = block + shift;
        memcpy(img, image, image_bytes);
        const mt_status want = shift % 4 ? MT_ERR_BAD_ARGUMENT : MT_OK;
        mt_memory_plan plan;
        CALL(mt_model_check(img, image_bytes, NULL), want);
        CALL(mt_plan(img, image_bytes, &cfg, &plan), want);
        guarded g = guarded_new(plan_bytes(&cfg));
        current = &g;
        mt_session *s = NULL;
        CALL(mt_session_init(&s, img, image_bytes, &cfg, g.arena, g.bytes), want);
        if (want == MT_OK) {
            mt_test_seed(5);
            fill(s);
            float loss;
            CALL(mt_session_train_step(s, B, &loss), MT_OK);
            CALL(mt_session_eval_step(s, B, &loss), MT_OK);
            if (shift == 0) reference = loss;
            CHECK_BITS_EQ(loss, reference);
        }
        current = NULL;
        free(g.raw);
    }
    free(raw);
}

static void test_init_arguments(void)
{
    mt_train_config cfg;
    config(&cfg);
    const size_t need = plan_bytes(&cfg);
    mt_session *s = NULL;

    /* too small by one byte, by 16, empty: refused, and not a byte of the arena written */
    const size_t shortfall[] = {1, 16, need};
    for (size_t k = 0; k < 3; ++k) {
        guarded g = guarded_new(need - shortfall[k]);
        current = &g;
        memset(g.arena, 0x3C, g.bytes);
        CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_ERR_ARENA_TOO_SMALL);
        int untouched = 1;
        for (size_t i = 0; i < g.bytes; ++i) untouched &= g.arena[i] == 0x3C;
        CHECK(untouched);
        current = NULL;
        free(g.raw);
    }

    guarded g = guarded_new(need + 16);
    current = &g;
    CALL(mt_session_init(NULL, image, image_bytes, &cfg, g.arena, need), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_init(&s, NULL, image_bytes, &cfg, g.arena, need), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_init(&s, image, image_bytes, NULL, g.arena, need), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_init(&s, image, image_bytes, &cfg, NULL, need), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_init(&s, image, 0, &cfg, g.arena, need), MT_ERR_BAD_MODEL);
    /* misaligned arenas (the guard after the arena still catches a write past need) */
    g.bytes = need + 16; /* guards after the whole block */
    for (size_t shift = 1; shift < 16; ++shift)
        CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena + shift, need), MT_ERR_BAD_ARGUMENT);
    /* a huge arena size is fine: only plan.total_bytes is used */
    g.bytes = need;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, SIZE_MAX), MT_OK);
    current = NULL;
    free(g.raw);
}

static void test_session_calls(void)
{
    mt_train_config cfg;
    config(&cfg);
    guarded g;
    mt_session *s = guarded_session(&cfg, &g);
    fill(s);

    float *x;
    const float *out;
    void *y;
    int32_t count;
    float value;
    int64_t step, epoch;
    mt_param_info info;
    mt_memory_plan plan;
    CALL(mt_session_plan(s, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_input(s, 0, NULL, &count), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_input(s, 0, &x, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_output(s, 0, NULL, &count), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_output(s, 0, &out, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_target(s, NULL, &count), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_target(s, &y, NULL), MT_ERR_BAD_ARGUMENT);
    const int32_t bad_position[] = {-1, 1, 1000, INT32_MAX, INT32_MIN};
    for (size_t k = 0; k < 5; ++k) {
        CALL(mt_session_input(s, bad_position[k], &x, &count), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_output(s, bad_position[k], &out, &count), MT_ERR_BAD_ARGUMENT);
    }
    const int32_t bad_rows[] = {0, -1, B + 1, INT32_MAX, INT32_MIN};
    const float *unreadable[1] = {(const float *)(uintptr_t)16}; /* a refused n reads no row */
    for (size_t k = 0; k < 5; ++k) {
        CALL(mt_session_train_step(s, bad_rows[k], &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_accumulate(s, bad_rows[k], &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_eval_step(s, bad_rows[k], &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_infer(s, bad_rows[k]), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_train_step_rows(s, bad_rows[k], unreadable, &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_eval_step_rows(s, bad_rows[k], unreadable, &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_infer_rows(s, bad_rows[k], unreadable), MT_ERR_BAD_ARGUMENT);
    }
    CALL(mt_session_train_step_rows(s, 1, NULL, &value), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_eval_step_rows(s, 1, NULL, &value), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_infer_rows(s, 1, NULL), MT_ERR_BAD_ARGUMENT);
    /* loss outputs are optional */
    CALL(mt_session_train_step(s, B, NULL), MT_OK);
    CALL(mt_session_eval_step(s, 1, NULL), MT_OK);
    CALL(mt_session_accumulate(s, B, NULL), MT_OK);
    CALL(mt_session_optimizer_step(s), MT_OK);
    const float *own[1] = {NULL}; /* NULL: the input buffer's rows */
    CALL(mt_session_eval_step_rows(s, B, own, NULL), MT_OK);
    CALL(mt_session_infer_rows(s, B, own), MT_OK);
    /* wrong order: an optimizer step with nothing accumulated */
    CALL(mt_session_zero_grad(s), MT_OK);
    CALL(mt_session_optimizer_step(s), MT_ERR_STATE);

    /* 0 is a valid rate (a linear schedule ends there); anything below it or not finite is not */
    const float bad_lr[] = {-1e-30f, -1.0f, NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < 5; ++k) CALL(mt_session_set_learning_rate(s, bad_lr[k]), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_get_learning_rate(s, &value), MT_OK);
    CHECK_BITS_EQ(value, cfg.learning_rate);
    CALL(mt_session_set_learning_rate(s, 1e-45f), MT_OK); /* the smallest positive float */
    CALL(mt_session_set_learning_rate(s, 0.0f), MT_OK);
    CALL(mt_session_get_learning_rate(s, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_counters(s, NULL, NULL), MT_OK);
    CALL(mt_session_counters(s, &step, &epoch), MT_OK);
    CALL(mt_session_set_epoch(s, -1), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_set_epoch(s, INT64_MIN), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_set_epoch(s, INT64_MAX), MT_OK);
    CALL(mt_session_param_count(s, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_param_count(s, &count), MT_OK);
    CALL(mt_session_param(s, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_param(s, count, &info), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_param(s, -1, &info), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_param(s, INT32_MAX, &info), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_plan(s, &plan), MT_OK);
    mt_error_detail detail;
    CALL(mt_session_last_error(s, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_last_error(s, &detail), MT_OK);
    current = NULL;
    free(g.raw);
}

static void test_modes_and_state(void)
{
    mt_train_config cfg;
    float value;
    /* fused updates (the default): no separate accumulate / optimizer step */
    mt_train_config_init(&cfg);
    cfg.batch_size = B;
    guarded g;
    mt_session *s = guarded_session(&cfg, &g);
    fill(s);
    CALL(mt_session_train_step(s, B, &value), MT_OK);
    CALL(mt_session_zero_grad(s), MT_ERR_STATE);
    CALL(mt_session_optimizer_step(s), MT_ERR_STATE);
    CALL2(mt_session_accumulate(s, B, &value), MT_ERR_STATE, MT_OK);
    CALL(mt_session_eval_step(s, B, &value), MT_OK);
    current = NULL;
    free(g.raw);

    /* inference only: nothing to train */
    config(&cfg);
    cfg.num_trainable_ops = 0;
    g = guarded_new(plan_bytes(&cfg));
    current = &g;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    fill(s);
    CALL(mt_session_train_step(s, B, &value), MT_ERR_STATE);
    CALL(mt_session_accumulate(s, B, &value), MT_ERR_STATE);
    CALL(mt_session_optimizer_step(s), MT_ERR_STATE);
    CALL(mt_session_infer(s, B), MT_OK);
    CALL(mt_session_eval_step(s, B, &value), MT_OK);
    current = NULL;
    free(g.raw);
}

/* Sessions that are not sessions: NULL, zeroed, garbage, and a real one whose arena was
 * overwritten after init. Every call refuses; nothing is written. */
static void test_not_a_session(void)
{
    every_session_call(NULL, MT_ERR_BAD_ARGUMENT);

    mt_train_config cfg;
    config(&cfg);
    guarded g = guarded_new(plan_bytes(&cfg));
    current = &g;
    memset(g.arena, 0, g.bytes);
    every_session_call((mt_session *)(void *)g.arena, MT_ERR_BAD_ARGUMENT); /* step before init */
    mt_test_seed(99);
    for (size_t i = 0; i < g.bytes; ++i) g.arena[i] = (uint8_t)mt_test_rand_u32();
    every_session_call((mt_session *)(void *)g.arena, MT_ERR_BAD_ARGUMENT);

    mt_session *s;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    memset(g.arena, 0, g.bytes); /* use after the arena was reused by someone else */
    every_session_call(s, MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    memset(g.arena, 0xFF, g.bytes);
    every_session_call(s, MT_ERR_BAD_ARGUMENT);
    current = NULL;
    free(g.raw);
}

/* Init twice into the same arena: the second session is a fresh one (weights from the image,
 * counters zero) and works; a failed re-init (arena too small for a bigger plan) leaves the
 * first session working. */
static void test_init_twice(void)
{
    mt_train_config cfg, big;
    config(&cfg);
    big = cfg;
    big.batch_size = 64;
    const size_t need = plan_bytes(&cfg);
    CHECK(plan_bytes(&big) > need);
    guarded g = guarded_new(need);
    current = &g;
    mt_session *s1, *s2;
    float first, again, value;
    CALL(mt_session_init(&s1, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    mt_test_seed(3);
    fill(s1);
    CALL(mt_session_eval_step(s1, B, &first), MT_OK);
    CALL(mt_session_train_step(s1, B, &value), MT_OK);
    CALL(mt_session_init(&s2, image, image_bytes, &big, g.arena, g.bytes), MT_ERR_ARENA_TOO_SMALL);
    CALL(mt_session_train_step(s1, B, &value), MT_OK); /* still alive */
    CALL(mt_session_init(&s2, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    mt_test_seed(3);
    fill(s2);
    CALL(mt_session_eval_step(s2, B, &again), MT_OK);
    CHECK_BITS_EQ(again, first); /* fresh weights */
    int64_t step;
    CALL(mt_session_counters(s2, &step, NULL), MT_OK);
    CHECK_EQ_INT(step, 0);
    current = NULL;
    free(g.raw);
}

int main(void)
{
    build_model();
    test_misaligned_image();
    test_init_arguments();
    test_session_calls();
    test_modes_and_state();
    test_not_a_session();
    test_init_twice();
    free(image);
    return MT_TEST_END();
}
