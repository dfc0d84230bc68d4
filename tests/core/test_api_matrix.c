/*
 * The bad-input matrix: every public C function (microtrain.h and microtrain_storage.h) with
 * NULL pointers, zero and huge sizes and counts, out-of-range positions and values, calls in
 * the wrong state (a zeroed or garbage session, the arena overwritten after init, init twice
 * into the same arena, steps that the session's mode forbids), misaligned arenas and images,
 * and arenas too small by one byte. Every call must return its documented status, and the
 * 64 guard bytes on each side of the arena must be intact after every call (a write out of
 * bounds). Run under ASan + UBSan by tools/run_sanitizers.sh, where an over-read fails too.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "microtrain_storage.h"
#include "mt_test.h"

#define GUARD 64
#define GUARD_BYTE 0xA5
#define B 4

/* ---- an arena with guard bytes on both sides -------------------------------------------- */

typedef struct guarded {
    uint8_t *raw;   /* from malloc */
    uint8_t *block; /* raw rounded up to 16 */
    uint8_t *arena;
    size_t bytes;
} guarded;

static guarded guarded_new(size_t bytes)
{
    guarded g;
    g.bytes = bytes;
    g.raw = malloc(2 * GUARD + bytes + 16);
    g.block = g.raw + ((16u - (uintptr_t)g.raw % 16u) % 16u);
    memset(g.block, GUARD_BYTE, 2 * GUARD + bytes);
    g.arena = g.block + GUARD;
    return g;
}

static int guards_ok(const guarded *g)
{
    for (size_t i = 0; i < GUARD; ++i)
        if (g->block[i] != GUARD_BYTE || g->block[GUARD + g->bytes + i] != GUARD_BYTE) return 0;
    return 1;
}

static guarded *current; /* checked by CALL after every call */

#define CALL(expr, want)                                                                     \
    do {                                                                                     \
        CHECK_STATUS((expr), (want));                                                        \
        if (current) CHECK(guards_ok(current));                                              \
    } while (0)

/* either of two statuses (where the header allows both, e.g. a zero-length image) */
#define CALL2(expr, want1, want2)                                                            \
    do {                                                                                     \
        mt_status st_ = (expr);                                                              \
        CHECK(st_ == (want1) || st_ == (want2));                                             \
        if (current) CHECK(guards_ok(current));                                              \
    } while (0)

/* ---- the model ---------------------------------------------------------------------------- */

static uint8_t *image;
static size_t image_bytes;

static void config(mt_train_config *cfg)
{
    mt_train_config_init(cfg);
    cfg->optimizer = MT_OPTIMIZER_ADAM;
    cfg->batch_size = B;
    cfg->accumulate_gradients = 1;
}

static size_t plan_bytes(const mt_train_config *cfg)
{
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(image, image_bytes, cfg, &plan), MT_OK);
    return plan.total_bytes;
}

static void fill(mt_session *s)
{
    float *x;
    void *y;
    int32_t count, bytes;
    if (mt_session_input(s, 0, &x, &count) != MT_OK || mt_session_target(s, &y, &bytes) != MT_OK) return;
    for (int32_t i = 0; i < count; ++i) x[i] = mt_test_uniform(-1.0f, 1.0f);
    for (int32_t i = 0; i < bytes / 4; ++i) ((float *)y)[i] = mt_test_uniform(-1.0f, 1.0f);
}

/* ---- callbacks ---------------------------------------------------------------------------- */

typedef struct mem {
    uint8_t data[8192];
    size_t size;
    mt_status fail_with; /* returned by every call when nonzero */
} mem;

static mt_status mem_write(void *user, const void *data, size_t bytes)
{
    mem *m = user;
    if (m->fail_with) return m->fail_with;
    if (bytes > sizeof m->data - m->size) return MT_ERR_IO;
    memcpy(m->data + m->size, data, bytes);
    m->size += bytes;
    return MT_OK;
}

static mt_status mem_read(void *user, size_t offset, void *data, size_t bytes)
{
    mem *m = user;
    if (m->fail_with) return m->fail_with;
    if (offset > m->size || bytes > m->size - offset) return MT_ERR_IO;
    memcpy(data, m->data + offset, bytes);
    return MT_OK;
}

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

/* ---- the matrix ------------------------------------------------------------------------- */

static void test_library_queries(void)
{
    for (int st = -40; st <= 40; ++st) CHECK(mt_status_str(st) != NULL);
    CHECK(mt_status_str(INT_MIN) != NULL);
    CHECK(mt_status_str(INT_MAX) != NULL);
    CHECK_EQ_INT(mt_abi_version(), MT_ABI_VERSION);
    for (int w = 0; w <= 8; ++w) CHECK(mt_struct_size(w) > 0);
    CHECK_EQ_INT(mt_struct_size(-1), 0);
    CHECK_EQ_INT(mt_struct_size(9), 0);
    CHECK_EQ_INT(mt_struct_size(INT_MAX), 0);
    CHECK_EQ_INT(mt_struct_size(INT_MIN), 0);
    mt_train_config_init(NULL); /* documented: ignored */
}

static void test_model_queries(void)
{
    mt_model_info info;
    mt_tensor_info t;
    int32_t index;
    CALL(mt_model_check(NULL, image_bytes, &info), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_check(image, image_bytes, NULL), MT_OK);
    CALL2(mt_model_check(image, 0, &info), MT_ERR_BAD_MODEL, MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_check(image, 63, &info), MT_ERR_BAD_MODEL);
    CALL(mt_model_check(image, image_bytes - 1, &info), MT_ERR_BAD_MODEL);
    CALL(mt_model_check(image, SIZE_MAX, &info), MT_OK); /* the header's own size governs */
    CALL(mt_model_tensor(NULL, image_bytes, 0, &t), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_tensor(image, image_bytes, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_tensor(image, 10, 0, &t), MT_ERR_BAD_MODEL);
    const int32_t bad_index[] = {-1, 8, 1000, INT32_MAX, INT32_MIN};
    for (size_t k = 0; k < sizeof bad_index / sizeof *bad_index; ++k)
        CALL(mt_model_tensor(image, image_bytes, bad_index[k], &t), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(NULL, image_bytes, 0, 0, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 0, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 2, 0, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, -1, 0, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 0, 1, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 1, -1, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 1, INT32_MAX, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 1, 0, &index), MT_OK);
    mt_op_info op;
    CALL(mt_model_op(NULL, image_bytes, 0, &op), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_op(image, image_bytes, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_op(image, 10, 0, &op), MT_ERR_BAD_MODEL);
    const int32_t bad_op[] = {-1, 3, 256, INT32_MAX, INT32_MIN};
    for (size_t k = 0; k < sizeof bad_op / sizeof *bad_op; ++k)
        CALL(mt_model_op(image, image_bytes, bad_op[k], &op), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_op(image, image_bytes, 2, &op), MT_OK);
    CALL(mt_model_op(image + 2, image_bytes, 0, &op), MT_ERR_BAD_ARGUMENT); /* misaligned */
    for (int32_t type = -2; type <= 300; ++type) {
        const char *name = mt_op_name(type);
        CHECK((name != NULL) == ((type >= MT_OP_DENSE && type <= MT_OP_TRANSPOSE) ||
                                 (type >= MT_OP_QUANTIZE && type <= MT_OP_PAD_S8)));
        CHECK_EQ_INT(mt_op_built(type), name != NULL);
    }
    CHECK(mt_op_name(INT32_MIN) == NULL && mt_op_name(INT32_MAX) == NULL);
    CHECK_EQ_INT(mt_op_built(INT32_MIN), 0);
    CHECK_EQ_INT(mt_op_built(INT32_MAX), 0);
}

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

static void test_config_values(void)
{
    mt_memory_plan plan;
    mt_train_config cfg;
    config(&cfg);
    CALL(mt_plan(NULL, image_bytes, &cfg, &plan), MT_ERR_BAD_ARGUMENT);
    CALL(mt_plan(image, image_bytes, NULL, &plan), MT_ERR_BAD_ARGUMENT);
    mt_error_detail detail;
    CALL(mt_model_diagnose(image, image_bytes, &cfg, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_diagnose(NULL, image_bytes, &cfg, &detail), MT_ERR_BAD_ARGUMENT);
    CHECK(detail.status == MT_ERR_BAD_ARGUMENT && detail.op_index == -1 && detail.tensor_index == -1);
    CALL(mt_model_diagnose(image, 10, NULL, &detail), MT_ERR_BAD_MODEL);
    CALL(mt_model_diagnose(image, SIZE_MAX, &cfg, &detail), MT_OK);
    CALL(mt_model_diagnose(image + 1, image_bytes, &cfg, &detail), MT_ERR_BAD_ARGUMENT);
    CALL(mt_plan(image, image_bytes, &cfg, NULL), MT_ERR_BAD_ARGUMENT);
#define BAD_FIELD(field, value)                                                              \
    do {                                                                                     \
        config(&cfg);                                                                        \
        cfg.field = value;                                                                   \
        CALL(mt_plan(image, image_bytes, &cfg, &plan), MT_ERR_BAD_ARGUMENT);                 \
    } while (0)
    BAD_FIELD(optimizer, -1);
    BAD_FIELD(optimizer, 3);
    BAD_FIELD(optimizer, INT32_MAX);
    BAD_FIELD(loss, -1);
    BAD_FIELD(loss, 5);
    BAD_FIELD(reduction, 2);
    BAD_FIELD(reduction, -1);
    BAD_FIELD(batch_size, 0);
    BAD_FIELD(batch_size, -1);
    BAD_FIELD(batch_size, 65536);
    BAD_FIELD(batch_size, INT32_MAX);
    BAD_FIELD(num_trainable_ops, -2);
    BAD_FIELD(num_trainable_ops, INT32_MIN);
    BAD_FIELD(biases_only, 2);
    BAD_FIELD(biases_only, -1);
    BAD_FIELD(learning_rate, 0.0f);
    BAD_FIELD(learning_rate, -0.1f);
    BAD_FIELD(learning_rate, NAN);
    BAD_FIELD(learning_rate, INFINITY);
    BAD_FIELD(beta1, 1.0f);
    BAD_FIELD(beta1, -0.1f);
    BAD_FIELD(beta1, NAN);
    BAD_FIELD(beta2, 1.0f);
    BAD_FIELD(beta2, INFINITY);
    BAD_FIELD(epsilon, 0.0f);
    BAD_FIELD(epsilon, -1.0f);
    BAD_FIELD(epsilon, NAN);
    BAD_FIELD(momentum, 1.0f);
    BAD_FIELD(momentum, -0.5f);
    BAD_FIELD(weight_decay, -1.0f);
    BAD_FIELD(weight_decay, NAN);
    BAD_FIELD(accumulate_gradients, 2);
    BAD_FIELD(accumulate_gradients, -1);
#undef BAD_FIELD
    /* a huge num_trainable_ops means "all": valid */
    config(&cfg);
    cfg.num_trainable_ops = INT32_MAX;
    CALL(mt_plan(image, image_bytes, &cfg, &plan), MT_OK);
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
    guarded g = guarded_new(plan_bytes(&cfg));
    current = &g;
    mt_session *s = NULL;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
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
    for (size_t k = 0; k < 5; ++k) {
        CALL(mt_session_train_step(s, bad_rows[k], &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_accumulate(s, bad_rows[k], &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_eval_step(s, bad_rows[k], &value), MT_ERR_BAD_ARGUMENT);
        CALL(mt_session_infer(s, bad_rows[k]), MT_ERR_BAD_ARGUMENT);
    }
    /* loss outputs are optional */
    CALL(mt_session_train_step(s, B, NULL), MT_OK);
    CALL(mt_session_eval_step(s, 1, NULL), MT_OK);
    CALL(mt_session_accumulate(s, B, NULL), MT_OK);
    CALL(mt_session_optimizer_step(s), MT_OK);
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
    guarded g = guarded_new(plan_bytes(&cfg));
    current = &g;
    mt_session *s;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
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

static mt_status positive_status(void *user, const void *data, size_t bytes)
{
    (void)user, (void)data, (void)bytes;
    return (mt_status)5; /* not a status: must become MT_ERR_IO */
}

static mt_status positive_read(void *user, size_t offset, void *data, size_t bytes)
{
    (void)user, (void)offset, (void)data, (void)bytes;
    return (mt_status)5;
}

static void test_checkpoint_calls(void)
{
    mt_train_config cfg;
    config(&cfg);
    guarded g = guarded_new(plan_bytes(&cfg));
    current = &g;
    mt_session *s;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    static mem m;
    size_t bytes;
    CALL(mt_checkpoint_bytes(s, 1, NULL, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 2, NULL, 0, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, -1, NULL, 0, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, -1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, 1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, INT32_MAX, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, INT32_MIN, &bytes), MT_ERR_BAD_ARGUMENT);

    char long_name[80], long_text[300];
    memset(long_name, 'n', sizeof long_name);
    long_name[MT_PROPERTY_MAX_NAME + 1] = '\0';
    memset(long_text, 't', sizeof long_text);
    long_text[MT_PROPERTY_MAX_STRING + 1] = '\0';
    const mt_property bad[] = {
        {NULL, MT_PROPERTY_INT, 0, 1, 0.0, NULL},
        {"", MT_PROPERTY_INT, 0, 1, 0.0, NULL},
        {long_name, MT_PROPERTY_INT, 0, 1, 0.0, NULL},
        {"t", 0, 0, 1, 0.0, NULL},
        {"t", 4, 0, 1, 0.0, NULL},
        {"t", -1, 0, 1, 0.0, NULL},
        {"t", MT_PROPERTY_STRING, 0, 0, 0.0, NULL},
        {"t", MT_PROPERTY_STRING, 0, 0, 0.0, long_text},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        memset(&m, 0, sizeof m);
        CALL(mt_checkpoint_bytes(s, 1, &bad[k], 1, &bytes), MT_ERR_BAD_ARGUMENT);
        CALL(mt_checkpoint_save(s, 1, &bad[k], 1, mem_write, &m), MT_ERR_BAD_ARGUMENT);
        CHECK_EQ_INT(m.size, 0); /* refused before a byte is written */
    }
    memset(&m, 0, sizeof m);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, NULL, &m), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, positive_status, NULL), MT_ERR_IO);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, mem_write, &m), MT_OK);
    CALL(mt_checkpoint_load(s, m.size, NULL, &m, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load(s, 0, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, 3, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, m.size - 1, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, SIZE_MAX, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, (size_t)UINT32_MAX, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, m.size, positive_read, NULL, NULL, NULL), MT_ERR_IO);
    m.fail_with = MT_ERR_IO;
    CALL(mt_checkpoint_load(s, m.size, mem_read, &m, NULL, NULL), MT_ERR_IO);
    m.fail_with = MT_OK;
    CALL(mt_checkpoint_load(s, m.size, mem_read, &m, NULL, NULL), MT_OK);
    CALL(mt_session_export_image(s, NULL, &m), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image(s, positive_status, NULL), MT_ERR_IO);
    /* the buffer forms: NULL, short, overlapping the arena; then a round trip */
    static uint8_t ck[8192];
    float rate;
    CALL(mt_session_get_base_learning_rate(s, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_get_base_learning_rate(s, &rate), MT_OK);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, NULL, sizeof ck, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, ck, m.size - 1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, ck, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 2, NULL, 0, ck, sizeof ck, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, g.arena + g.bytes - 8, SIZE_MAX, &bytes),
         MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, ck, sizeof ck, NULL), MT_OK);
    CALL(mt_checkpoint_load_buffer(s, NULL, m.size, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load_buffer(s, g.arena, m.size, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load_buffer(s, ck, 0, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load_buffer(s, ck, m.size - 1, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    /* a size past 4 GiB: too big for the format, or (by where the arena lies) reaching into it */
    CALL2(mt_checkpoint_load_buffer(s, ck, SIZE_MAX / 2, NULL, NULL), MT_ERR_BAD_CHECKPOINT, MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load_buffer(s, ck, m.size, NULL, NULL), MT_OK);
    CALL(mt_session_export_image_buffer(s, NULL, sizeof ck, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image_buffer(s, ck, image_bytes - 1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image_buffer(s, image, image_bytes, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image_buffer(s, ck, image_bytes, NULL), MT_OK);
    current = NULL;
    free(g.raw);
}

/* microtrain_storage.h: argument checks (the power-loss behaviour is test_storage.c) */
static mt_status no_erase(void *u, size_t o)
{
    (void)u, (void)o;
    return MT_ERR_IO;
}

static mt_status no_program(void *u, size_t o, const void *d, size_t n)
{
    (void)u, (void)o, (void)d, (void)n;
    return MT_ERR_IO;
}

static mt_status blank_read(void *u, size_t o, void *d, size_t n)
{
    (void)u, (void)o;
    memset(d, 0xFF, n);
    return MT_OK;
}

static void test_storage_calls(void)
{
    mt_train_config cfg;
    config(&cfg);
    guarded g = guarded_new(plan_bytes(&cfg));
    current = &g;
    mt_session *s;
    CALL(mt_session_init(&s, image, image_bytes, &cfg, g.arena, g.bytes), MT_OK);
    mt_flash fl = {no_erase, no_program, blank_read, NULL, 256, 4, {0, 4096}, 4096};
    mt_storage_info info;
    CALL(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, -1);
    CALL(mt_storage_load(s, &fl, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_storage_save(s, 1, NULL, 0, &fl), MT_ERR_IO); /* the erase fails */
    CALL(mt_storage_save(s, 1, NULL, -1, &fl), MT_ERR_BAD_ARGUMENT);
    CALL(mt_storage_save(s, 3, NULL, 0, &fl), MT_ERR_BAD_ARGUMENT);
    memset(g.arena, 0, g.bytes);
    CALL(mt_storage_save(s, 1, NULL, 0, &fl), MT_ERR_BAD_ARGUMENT); /* not a session any more */
    fl.slot_bytes = SIZE_MAX;
    CALL(mt_storage_scan(&fl, &info), MT_ERR_BAD_ARGUMENT);
    fl.slot_bytes = 0;
    CALL(mt_storage_scan(&fl, &info), MT_ERR_BAD_ARGUMENT);
    current = NULL;
    free(g.raw);
}

int main(void)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 3, spec.hidden = 4, spec.out = 2, spec.hidden_act = MT_OP_TANH;
    image = ib_build_mlp(&spec, &image_bytes);
    test_library_queries();
    test_model_queries();
    test_misaligned_image();
    test_config_values();
    test_init_arguments();
    test_session_calls();
    test_modes_and_state();
    test_not_a_session();
    test_init_twice();
    test_checkpoint_calls();
    test_storage_calls();
    free(image);
    return MT_TEST_END();
}
