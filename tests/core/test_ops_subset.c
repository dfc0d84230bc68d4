/*
 * A core built with MT_OPS=dense;relu;softmax (tests/core/CMakeLists.txt links this test
 * against microtrain_core_mlp, which compiles no other op's source): the link itself shows
 * that nothing references a kernel left out. Here:
 *   - mt_op_built() says which ops the build has, mt_op_name() still names every op;
 *   - a digits-shaped MLP (64 -> 32 relu -> 10 softmax, Adam, cross-entropy) trains: the
 *     loss falls and it classifies its training data;
 *   - a model using an op left out is refused with MT_ERR_UNSUPPORTED, by mt_model_check,
 *     mt_plan and mt_session_init alike, and mt_model_diagnose names that op.
 */
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "model_zoo.h"
#include "mt_test.h"

#define IN 64
#define HIDDEN 32
#define CLASSES 10
#define ROWS 160
#define BATCH 16

static void test_which_ops_are_built(void)
{
    static const int32_t built[] = {MT_OP_DENSE, MT_OP_RELU, MT_OP_SOFTMAX};
    static const int32_t left_out[] = {MT_OP_SIGMOID, MT_OP_TANH, MT_OP_CONV2D, MT_OP_DEPTHWISE_CONV2D,
                                       MT_OP_MAX_POOL2D, MT_OP_AVERAGE_POOL2D, MT_OP_GLOBAL_AVERAGE_POOL,
                                       MT_OP_RESHAPE, MT_OP_ADD, MT_OP_CONCATENATION, MT_OP_RELU6,
                                       MT_OP_LEAKY_RELU, MT_OP_PAD, MT_OP_MUL, MT_OP_SUB,
                                       MT_OP_TRANSPOSE};
    for (size_t i = 0; i < sizeof built / sizeof built[0]; i++) CHECK_EQ_INT(mt_op_built(built[i]), 1);
    for (size_t i = 0; i < sizeof left_out / sizeof left_out[0]; i++) {
        CHECK_EQ_INT(mt_op_built(left_out[i]), 0);
        CHECK(mt_op_name(left_out[i]) != NULL); /* names come from the table, not the kernels */
    }
    CHECK(strcmp(mt_op_name(MT_OP_CONV2D), "conv2d") == 0);
    CHECK(strcmp(mt_op_name(MT_OP_DENSE), "dense") == 0);
    CHECK_EQ_INT(mt_op_built(0), 0);
    CHECK_EQ_INT(mt_op_built(20), 0);
    CHECK(mt_op_name(20) == NULL && mt_op_name(-1) == NULL);
}

/* Ten class prototypes in [0, 1]^64 and noisy rows around them, like 8x8 digit images. */
static void make_data(float *x, float *y)
{
    float proto[CLASSES][IN];
    mt_test_seed(2024u);
    for (int c = 0; c < CLASSES; c++)
        for (int i = 0; i < IN; i++) proto[c][i] = mt_test_uniform(0.0f, 1.0f) > 0.6f ? 1.0f : 0.0f;
    for (int r = 0; r < ROWS; r++) {
        const int c = r % CLASSES;
        for (int i = 0; i < IN; i++) x[r * IN + i] = proto[c][i] + mt_test_uniform(-0.3f, 0.3f);
        for (int k = 0; k < CLASSES; k++) y[r * CLASSES + k] = k == c ? 1.0f : 0.0f;
    }
}

static float epoch(mt_session *s, const float *x, const float *y, int train, int *correct)
{
    float *in, *target, total = 0.0f;
    const float *out;
    int32_t count;
    void *t;
    mt_session_input(s, 0, &in, &count);
    mt_session_target(s, &t, &count);
    target = (float *)t;
    *correct = 0;
    for (int r = 0; r < ROWS; r += BATCH) {
        float loss = 0.0f;
        memcpy(in, x + r * IN, sizeof(float) * BATCH * IN);
        memcpy(target, y + r * CLASSES, sizeof(float) * BATCH * CLASSES);
        CHECK_STATUS(train ? mt_session_train_step(s, BATCH, &loss) : mt_session_eval_step(s, BATCH, &loss),
                     MT_OK);
        total += loss;
        mt_session_output(s, 0, &out, &count);
        for (int b = 0; b < BATCH; b++) {
            int best = 0;
            for (int k = 1; k < CLASSES; k++)
                if (out[b * CLASSES + k] > out[b * CLASSES + best]) best = k;
            *correct += y[(r + b) * CLASSES + best] == 1.0f;
        }
    }
    return total / (float)(ROWS / BATCH);
}

static void test_mlp_trains(void)
{
    static float x[ROWS * IN], y[ROWS * CLASSES];
    ib_mlp_spec spec;
    size_t bytes;
    ib_mlp_defaults(&spec);
    spec.in = IN, spec.hidden = HIDDEN, spec.out = CLASSES;
    spec.hidden_act = MT_OP_RELU, spec.out_act = MT_OP_SOFTMAX;
    spec.seed = 7u;
    uint8_t *img = ib_build_mlp(&spec, &bytes);
    make_data(x, y);

    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = MT_OPTIMIZER_ADAM;
    cfg.loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
    cfg.learning_rate = 0.01f;
    cfg.batch_size = BATCH;
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
    uint8_t *block = malloc(plan.total_bytes + MT_ARENA_ALIGN);
    uint8_t *arena = block + (MT_ARENA_ALIGN - (uintptr_t)block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    mt_session *s = NULL;
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes), MT_OK);
    if (s != NULL) {
        int correct = 0;
        const float before = epoch(s, x, y, 0, &correct);
        for (int e = 0; e < 10; e++) epoch(s, x, y, 1, &correct);
        const float after = epoch(s, x, y, 0, &correct);
        printf("    mlp-only core: loss %.4f -> %.4f, %d/%d correct\n", (double)before, (double)after, correct,
               ROWS);
        CHECK(after < 0.1f * before);
        CHECK(correct >= ROWS * 9 / 10);
    }
    free(block);
    free(img);
}

/* An op this build lacks is refused by every entry point that validates the image, and
 * diagnosed as op number op of that type. */
static void expect_refused(const char *what, const uint8_t *img, size_t bytes, int32_t op, int32_t type)
{
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_session *s = NULL;
    static uint8_t block[1024 + MT_ARENA_ALIGN];
    uint8_t *arena = block + (MT_ARENA_ALIGN - (uintptr_t)block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    mt_train_config_init(&cfg);
    cfg.loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
    printf("  %s\n", what);
    CHECK_STATUS(mt_model_check(img, bytes, NULL), MT_ERR_UNSUPPORTED);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_ERR_UNSUPPORTED);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, 1024), MT_ERR_UNSUPPORTED);
    mt_error_detail detail;
    for (int with_cfg = 0; with_cfg <= 1; ++with_cfg) {
        CHECK_STATUS(mt_model_diagnose(img, bytes, with_cfg ? &cfg : NULL, &detail), MT_ERR_UNSUPPORTED);
        CHECK(detail.status == MT_ERR_UNSUPPORTED && detail.op_index == op && detail.op_type == type &&
              detail.tensor_index == -1);
    }
    printf("    op %d (%s): %s\n", (int)detail.op_index, mt_op_name(detail.op_type), mt_status_str(detail.status));
}

/* x[64] -> Dense 16 -> ReLU -> LeakyReLU (left out: op 2) -> Dense 10 -> Softmax */
static uint8_t *mlp_with_leaky_relu(size_t *bytes)
{
    static ib_model m;
    static float w1[16 * IN], w2[CLASSES * 16];
    int32_t d[2];
    int in[3], out[1];
    ib_init(&m);
    d[0] = IN;
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 1, d, NULL);
    d[0] = 16, d[1] = IN;
    int W1 = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, 2, d, w1);
    int h = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
    int a = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
    int l = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
    d[0] = CLASSES, d[1] = 16;
    int W2 = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, 2, d, w2);
    int z = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
    int p = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, d, NULL);
    ib_input(&m, x);
    ib_output(&m, p);
    in[0] = x, in[1] = W1, out[0] = h;
    ib_op(&m, MT_OP_DENSE, 2, in, 1, out);
    in[0] = h, out[0] = a;
    ib_op(&m, MT_OP_RELU, 1, in, 1, out);
    in[0] = a, out[0] = l;
    ib_op(&m, MT_OP_LEAKY_RELU, 1, in, 1, out); /* α = 0 */
    in[0] = l, in[1] = W2, out[0] = z;
    ib_op(&m, MT_OP_DENSE, 2, in, 1, out);
    in[0] = z, out[0] = p;
    ib_op(&m, MT_OP_SOFTMAX, 1, in, 1, out);
    return ib_build(&m, bytes);
}

static void test_models_with_ops_left_out(void)
{
    size_t bytes;
    uint8_t *cnn = mz_digits_cnn(&bytes); /* conv2d is op 0 */
    expect_refused("digits CNN (conv2d, max_pool2d, global_average_pool)", cnn, bytes, 0, MT_OP_CONV2D);
    free(cnn);
    uint8_t *leaky = mlp_with_leaky_relu(&bytes);
    expect_refused("MLP with a leaky_relu at op 2", leaky, bytes, 2, MT_OP_LEAKY_RELU);
    free(leaky);
}

int main(void)
{
    test_which_ops_are_built();
    test_mlp_trains();
    test_models_with_ops_left_out();
    return MT_TEST_END();
}
