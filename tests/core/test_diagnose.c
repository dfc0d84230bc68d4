/*
 * Errors name what they concern:
 *   - mt_model_diagnose on images damaged one field at a time (CRC recomputed): the status
 *     is mt_model_check's / mt_plan's, and the detail names the op (index and type) whose
 *     check failed, or the tensor whose entry, io entry or operand is bad, or neither for
 *     the header and the configuration; a loss that does not fit names output 0;
 *   - mt_session_last_error after failing step calls: bad row counts, a label out of range
 *     and a non-finite loss (output 0), a call the mode forbids; a success keeps the record.
 * Default MLP (image_builder, version 2): tensors 0 x[3] (INPUT), 1 W1[4,3], 2 b1[4], 3 h[4],
 * 4 a[4], 5 W2[2,4], 6 b2[2], 7 z[2] (OUTPUT); ops 0 dense, 1 relu, 2 dense.
 */
#include <math.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

static uint8_t *fresh(int out, size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.out = out;
    return ib_build_mlp(&spec, bytes);
}

static void default_cfg(mt_train_config *cfg)
{
    mt_train_config_init(cfg);
    cfg->batch_size = 2;
}

/* diagnose with and without a configuration: the detail wanted, and the same status as
 * mt_model_check / mt_plan */
static void expect(const char *what, const uint8_t *img, size_t bytes, const mt_train_config *cfg, mt_status st,
                   int32_t op, int32_t type, int32_t tensor)
{
    mt_error_detail d = {12345, 12345, 12345, 12345};
    mt_memory_plan plan;
    const mt_status want_check = mt_model_check(img, bytes, NULL);
    const mt_status want_plan = cfg ? mt_plan(img, bytes, cfg, &plan) : want_check;
    int ok = CHECK_STATUS(mt_model_diagnose(img, bytes, cfg, &d), want_plan);
    ok &= CHECK_EQ_INT(want_plan, st);
    ok &= CHECK(d.status == st && d.op_index == op && d.op_type == type && d.tensor_index == tensor);
    if (!ok)
        printf("    %s: detail {status %d, op %d, type %d, tensor %d}\n", what, (int)d.status, (int)d.op_index,
               (int)d.op_type, (int)d.tensor_index);
    if (cfg != NULL && want_check != MT_OK) { /* the image alone tells the same */
        mt_error_detail alone;
        CHECK_STATUS(mt_model_diagnose(img, bytes, NULL, &alone), want_check);
        CHECK(alone.op_index == d.op_index && alone.tensor_index == d.tensor_index);
    }
}

#define PATCH32(off, v) (ib_put_u32(img, (off), (v)), ib_refresh_crc(img))
#define PATCH16(off, v) (ib_put_u16(img, (off), (v)), ib_refresh_crc(img))
#define PATCH8(off, v) (img[(off)] = (uint8_t)(v), ib_refresh_crc(img))
#define CASE(what, patch, st, op, type, tensor)                                                \
    do {                                                                                     \
        size_t bytes_;                                                                       \
        uint8_t *img = fresh(2, &bytes_);                                                    \
        patch;                                                                               \
        expect(what, img, bytes_, &cfg, st, op, type, tensor);                               \
        free(img);                                                                           \
    } while (0)

static void test_images(void)
{
    size_t n;
    uint8_t *probe = fresh(2, &n);
    const size_t t3 = ib_tensor_entry(probe, 3), t4 = ib_tensor_entry(probe, 4), t5 = ib_tensor_entry(probe, 5);
    const size_t o1 = ib_op_entry(probe, 1), o2 = ib_op_entry(probe, 2), io = ib_get_u32(probe, 40);
    mt_train_config cfg;
    default_cfg(&cfg);
    expect("a fine model", probe, n, &cfg, MT_OK, -1, 0, -1);
    expect("a fine model, no configuration", probe, n, NULL, MT_OK, -1, 0, -1);
    free(probe);

    /* an op's own check: a shape that does not fit it */
    CASE("relu output of 5", PATCH32(t4 + 4, 5), MT_ERR_SHAPE, 1, MT_OP_RELU, -1);
    CASE("W2 [2, 3] for a[4]", PATCH32(t5 + 8, 3), MT_ERR_BAD_MODEL, -1, 0, 5); /* data bytes no longer fit */
    CASE("W2 [2, 3], data bytes to match", (ib_put_u32(img, t5 + 8, 3), PATCH32(t5 + 24, 24)), MT_ERR_SHAPE, 2,
         MT_OP_DENSE, -1);
    CASE("dense 2 with a param", PATCH32(o2 + 16, 7), MT_ERR_BAD_MODEL, 2, MT_OP_DENSE, -1);
    CASE("op type 200", PATCH8(o1, 200), MT_ERR_UNSUPPORTED, 1, 200, -1);
    CASE("op 2 in a layer before op 1's", (img[o1 + 3] = 2, PATCH8(o2 + 3, 1)), MT_ERR_BAD_MODEL, 2,
         MT_OP_DENSE, -1);
    /* an op's operands */
    CASE("relu reads its own output", PATCH16(o1 + 4, 4), MT_ERR_BAD_MODEL, 1, MT_OP_RELU, 4);
    CASE("relu writes a constant", PATCH16(o1 + 12, 2), MT_ERR_BAD_MODEL, 1, MT_OP_RELU, 2);
    CASE("relu input index past the table", PATCH16(o1 + 4, 8), MT_ERR_BAD_MODEL, 1, MT_OP_RELU, -1);
    /* a tensor entry, an io entry, an activation nobody writes */
    CASE("h has a dim 0", PATCH32(t3 + 4, 0), MT_ERR_BAD_MODEL, -1, 0, 3);
    CASE("h, an activation, with data bytes", PATCH32(t3 + 24, 16), MT_ERR_BAD_MODEL, -1, 0, 3);
    CASE("output io names W2", PATCH16(io + 2, 5), MT_ERR_BAD_MODEL, -1, 0, 5);
    CASE("dense 2 writes nothing listed", (ib_put_u16(img, o2 + 12, 0xFFFF), PATCH8(o2 + 2, 0)), MT_ERR_BAD_MODEL,
         2, MT_OP_DENSE, -1);
    /* the header */
    CASE("version 4", ib_put_u16(img, 4, 4), MT_ERR_UNSUPPORTED, -1, 0, -1);
    CASE("a flipped bit", img[100] ^= 1, MT_ERR_BAD_MODEL, -1, 0, -1);

    /* the configuration, and a loss that does not fit output 0 */
    size_t bytes;
    uint8_t *img = fresh(2, &bytes);
    cfg.batch_size = 0;
    expect("batch 0", img, bytes, &cfg, MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    default_cfg(&cfg);
    cfg.learning_rate = NAN;
    expect("learning rate NaN", img, bytes, &cfg, MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    free(img);
    img = fresh(1, &bytes);
    default_cfg(&cfg);
    cfg.loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
    expect("cross-entropy over 1 class", img, bytes, &cfg, MT_ERR_SHAPE, -1, 0, 7);
    cfg.batch_size = MT_MAX_BATCH_SIZE; /* still fits: the check above comes first */
    expect("cross-entropy over 1 class, big batch", img, bytes, &cfg, MT_ERR_SHAPE, -1, 0, 7);
    free(img);

    /* arguments */
    mt_error_detail d;
    img = fresh(2, &bytes);
    default_cfg(&cfg);
    CHECK_STATUS(mt_model_diagnose(img, bytes, &cfg, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_diagnose(NULL, bytes, &cfg, &d), MT_ERR_BAD_ARGUMENT);
    CHECK(d.status == MT_ERR_BAD_ARGUMENT && d.op_index == -1 && d.op_type == 0 && d.tensor_index == -1);
    free(img);
}

/* An element count too large for the batch names the tensor. */
static void test_tensor_too_large_for_the_batch(void)
{
    static ib_model m;
    const int32_t big[1] = {1 << 20};
    size_t bytes;
    ib_init(&m);
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 1, big, NULL);
    int y = ib_tensor(&m, MT_DTYPE_F32, 0, 1, big, NULL);
    int z = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, big, NULL);
    int in[1] = {x}, out[1] = {y};
    ib_op(&m, MT_OP_RELU, 1, in, 1, out);
    in[0] = y, out[0] = z;
    ib_op(&m, MT_OP_SIGMOID, 1, in, 1, out);
    ib_input(&m, x);
    ib_output(&m, z);
    uint8_t *img = ib_build(&m, &bytes);
    mt_train_config cfg;
    default_cfg(&cfg);
    cfg.batch_size = 512; /* 512 · 2^20 > MT_MAX_ELEMENTS = 2^28 */
    expect("x [2^20] in batches of 512", img, bytes, &cfg, MT_ERR_SHAPE, -1, 0, x);
    free(img);
}

static void expect_last(mt_session *s, const char *what, mt_status st, int32_t op, int32_t type, int32_t tensor)
{
    mt_error_detail d;
    CHECK_STATUS(mt_session_last_error(s, &d), MT_OK);
    if (!CHECK(d.status == st && d.op_index == op && d.op_type == type && d.tensor_index == tensor))
        printf("    %s: detail {status %d, op %d, type %d, tensor %d}\n", what, (int)d.status, (int)d.op_index,
               (int)d.op_type, (int)d.tensor_index);
}

static void test_session_last_error(void)
{
    size_t bytes;
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.out = 3, spec.out_act = MT_OP_SOFTMAX;
    uint8_t *img = ib_build_mlp(&spec, &bytes); /* output 0: tensor 8, the softmax */
    mt_train_config cfg;
    default_cfg(&cfg);
    cfg.loss = MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    sess g;
    CHECK_STATUS(sess_open(&g, img, bytes, &cfg), MT_OK);
    mt_session *s = g.s;
    float loss, *x;
    void *t;
    int32_t count;
    mt_error_detail d;
    expect_last(s, "fresh session", MT_OK, -1, 0, -1);
    CHECK_STATUS(mt_session_last_error(s, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_last_error(NULL, &d), MT_ERR_BAD_ARGUMENT);

    mt_session_input(s, 0, &x, &count);
    for (int i = 0; i < count; ++i) x[i] = 0.1f * (float)i;
    mt_session_target(s, &t, &count);
    int32_t *labels = (int32_t *)t;
    labels[0] = 0, labels[1] = 2;
    CHECK_STATUS(mt_session_train_step(s, 2, &loss), MT_OK);
    expect_last(s, "after a good step", MT_OK, -1, 0, -1);

    CHECK_STATUS(mt_session_train_step(s, 3, &loss), MT_ERR_BAD_ARGUMENT);
    expect_last(s, "3 rows of 2", MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    CHECK_STATUS(mt_session_eval_step(s, 2, &loss), MT_OK);
    expect_last(s, "a success keeps it", MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    CHECK_STATUS(mt_session_zero_grad(s), MT_ERR_STATE); /* fused updates */
    expect_last(s, "zero_grad, fused", MT_ERR_STATE, -1, 0, -1);
    CHECK_STATUS(mt_session_accumulate(s, 1, &loss), MT_ERR_STATE);
    expect_last(s, "accumulate, fused", MT_ERR_STATE, -1, 0, -1);
    CHECK_STATUS(mt_session_infer(s, 0), MT_ERR_BAD_ARGUMENT);
    expect_last(s, "infer 0 rows", MT_ERR_BAD_ARGUMENT, -1, 0, -1);

    labels[1] = 3; /* 3 classes: 0..2 */
    CHECK_STATUS(mt_session_train_step(s, 2, &loss), MT_ERR_BAD_ARGUMENT);
    expect_last(s, "label 3 in training", MT_ERR_BAD_ARGUMENT, -1, 0, 8);
    CHECK_STATUS(mt_session_infer(s, 1), MT_OK);
    CHECK_STATUS(mt_session_eval_step(s, 2, &loss), MT_ERR_BAD_ARGUMENT);
    expect_last(s, "label 3 in evaluation", MT_ERR_BAD_ARGUMENT, -1, 0, 8);
    labels[1] = 1;
    x[0] = NAN;
    CHECK_STATUS(mt_session_train_step(s, 2, &loss), MT_ERR_NUMERIC);
    expect_last(s, "a NaN input", MT_ERR_NUMERIC, -1, 0, 8);
    CHECK_STATUS(mt_session_infer(s, 1), MT_OK);
    CHECK_STATUS(mt_session_eval_step(s, 1, &loss), MT_ERR_NUMERIC);
    expect_last(s, "a NaN input, evaluated", MT_ERR_NUMERIC, -1, 0, 8);
    free(g.block);

    /* accumulation: a state error of accumulate, a NaN found by the loss */
    cfg.accumulate_gradients = 1;
    CHECK_STATUS(sess_open(&g, img, bytes, &cfg), MT_OK);
    s = g.s;
    mt_session_input(s, 0, &x, &count);
    for (int i = 0; i < count; ++i) x[i] = INFINITY;
    mt_session_target(s, &t, &count);
    ((int32_t *)t)[0] = 0;
    CHECK_STATUS(mt_session_accumulate(s, 1, &loss), MT_ERR_NUMERIC);
    expect_last(s, "accumulate, an infinite input", MT_ERR_NUMERIC, -1, 0, 8);
    CHECK_STATUS(mt_session_train_step(s, 0, &loss), MT_ERR_BAD_ARGUMENT);
    expect_last(s, "train_step 0 rows, accumulating", MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    free(g.block);
    free(img);
}

int main(void)
{
    test_images();
    test_tensor_too_large_for_the_batch();
    test_session_last_error();
    return MT_TEST_END();
}
