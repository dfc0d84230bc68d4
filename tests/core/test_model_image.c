/*
 * The model-image queries describe what the writer wrote (image_builder here; the Python
 * writer in tests/test_image.py):
 *   - mt_model_op: type, operands (an absent optional input and unused slots are -1),
 *     params as stored, and the layer: byte 3 in version 2, the op's own index in version 1;
 *   - mt_model_tensor's data_offset: where a CONST tensor's floats lie in the image (-1 for
 *     activations), checked against the bytes the builder put there;
 *   - version 1 and version 2 images of one model both load, plan the same arena, train
 *     to the same bits and take each other's checkpoints (the fingerprint skips layers).
 */
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "model_zoo.h"
#include "mt_test.h"
#include "session_util.h"

/* x[3] -> Dense(W1, b1) -> ReLU -> Dense(W2, b2): layers 0 (dense + relu) and 1 (dense) */
static uint8_t *mlp(int version, size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.version = version;
    return ib_build_mlp(&spec, bytes);
}

static void test_ops_of_an_mlp(void)
{
    for (int version = 1; version <= 2; ++version) {
        size_t bytes;
        uint8_t *img = mlp(version, &bytes);
        mt_op_info op;
        /* tensors: 0 x, 1 W1, 2 b1, 3 h, 4 a, 5 W2, 6 b2, 7 z */
        static const int32_t type[3] = {MT_OP_DENSE, MT_OP_RELU, MT_OP_DENSE};
        static const int32_t in[3][4] = {{0, 1, 2, -1}, {3, -1, -1, -1}, {4, 5, 6, -1}};
        static const int32_t out[3] = {3, 4, 7};
        const int32_t layer[2][3] = {{0, 1, 2}, {0, 0, 1}};
        for (int32_t o = 0; o < 3; ++o) {
            CHECK_STATUS(mt_model_op(img, bytes, o, &op), MT_OK);
            CHECK(op.index == o && op.type == type[o] && op.num_outputs == 1);
            CHECK_EQ_INT(op.num_inputs, o == 1 ? 1 : 3);
            CHECK(memcmp(op.inputs, in[o], sizeof op.inputs) == 0);
            CHECK(op.outputs[0] == out[o] && op.outputs[1] == -1);
            CHECK(op.params[0] == 0 && op.params[1] == 0 && op.params[2] == 0 && op.params[3] == 0);
            CHECK_EQ_INT(op.layer, layer[version - 1][o]);
            CHECK_EQ_INT(op.reserved, 0);
        }
        CHECK_STATUS(mt_model_op(img, bytes, 3, &op), MT_ERR_BAD_ARGUMENT);
        free(img);
    }
}

/* Spatial params as stored, a convolution without its optional bias, a two-input op. */
static void test_ops_of_a_dag(void)
{
    static ib_model m;
    const int32_t xd[3] = {4, 4, 2}, wd[4] = {3, 3, 3, 2}, yd[3] = {2, 2, 3}, fd[1] = {12};
    static float w[3 * 3 * 3 * 2];
    int in[3], out[1];
    ib_init(&m);
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    int W = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, 4, wd, w);
    int y = ib_tensor(&m, MT_DTYPE_F32, 0, 3, yd, NULL);
    int f = ib_tensor(&m, MT_DTYPE_F32, 0, 1, fd, NULL);
    int g = ib_tensor(&m, MT_DTYPE_F32, 0, 1, fd, NULL);
    int s = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, fd, NULL);
    ib_input(&m, x);
    ib_output(&m, s);
    in[0] = x, in[1] = W, in[2] = -1, out[0] = y;
    ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, in, 1, out), 0, 0, 2, 2, MT_PADDING_SAME, MT_FUSED_RELU6);
    in[0] = y, out[0] = f;
    ib_op_layer(&m, ib_op(&m, MT_OP_RESHAPE, 1, in, 1, out), 0);
    in[0] = f, out[0] = g;
    ib_op(&m, MT_OP_RELU, 1, in, 1, out);
    ib_op_layer(&m, 2, 1);
    in[0] = f, in[1] = g, out[0] = s;
    ib_op_layer(&m, ib_op(&m, MT_OP_ADD, 2, in, 1, out), 2);
    size_t bytes;
    uint8_t *img = ib_build(&m, &bytes);
    mt_op_info op;
    CHECK_STATUS(mt_model_check(img, bytes, NULL), MT_OK);
    CHECK_STATUS(mt_model_op(img, bytes, 0, &op), MT_OK);
    CHECK(op.type == MT_OP_CONV2D && op.num_inputs == 3 && op.inputs[0] == x && op.inputs[1] == W);
    CHECK(op.inputs[2] == -1 && op.inputs[3] == -1 && op.outputs[0] == y && op.layer == 0);
    CHECK(op.params[0] == 0 && op.params[1] == (2u | 2u << 16) && op.params[2] == MT_PADDING_SAME &&
          op.params[3] == MT_FUSED_RELU6);
    CHECK_STATUS(mt_model_op(img, bytes, 1, &op), MT_OK);
    CHECK(op.type == MT_OP_RESHAPE && op.layer == 0);
    CHECK_STATUS(mt_model_op(img, bytes, 3, &op), MT_OK);
    CHECK(op.type == MT_OP_ADD && op.num_inputs == 2 && op.inputs[0] == f && op.inputs[1] == g);
    CHECK(op.inputs[2] == -1 && op.outputs[0] == s && op.outputs[1] == -1 && op.layer == 2);
    free(img);
}

/* data_offset: CONST tensors' bytes in the image, -1 for the rest. */
static void test_data_offsets(void)
{
    size_t bytes;
    uint8_t *img = mz_residual_dag(&bytes);
    mt_model_info info;
    CHECK_STATUS(mt_model_check(img, bytes, &info), MT_OK);
    int consts = 0;
    for (int32_t i = 0; i < info.num_tensors; ++i) {
        mt_tensor_info t;
        CHECK_STATUS(mt_model_tensor(img, bytes, i, &t), MT_OK);
        if (!(t.flags & MT_TENSOR_CONST)) {
            CHECK_EQ_INT(t.data_offset, -1);
            continue;
        }
        ++consts;
        CHECK(t.data_offset > 0 && t.data_offset % 16 == 0);
        CHECK((size_t)t.data_offset + 4u * (size_t)t.count <= bytes);
        CHECK(memcmp(img + t.data_offset, ib_const_data(img, i), 4u * (size_t)t.count) == 0);
    }
    CHECK_EQ_INT(consts, 6);
    free(img);
}

/* The MLP written as version 1 and as version 2, each checked, and an Adam session of each. */
typedef struct two_versions {
    size_t b1, b2;
    uint8_t *v1, *v2;
    mt_model_info i1, i2;
    sess s1, s2;
} two_versions;

static void open_both_versions(two_versions *t, int32_t batch)
{
    t->v1 = mlp(1, &t->b1), t->v2 = mlp(2, &t->b2);
    CHECK_STATUS(mt_model_check(t->v1, t->b1, &t->i1), MT_OK);
    CHECK_STATUS(mt_model_check(t->v2, t->b2, &t->i2), MT_OK);
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = MT_OPTIMIZER_ADAM, cfg.batch_size = batch;
    CHECK_STATUS(sess_open(&t->s1, t->v1, t->b1, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&t->s2, t->v2, t->b2, &cfg), MT_OK);
}

static void close_both_versions(two_versions *t)
{
    free(t->s1.block), free(t->s2.block), free(t->v1), free(t->v2);
}

/* The same model as version 1 and 2: same plan, same training, bit for bit. */
static void test_both_versions_train_alike(void)
{
    two_versions t;
    open_both_versions(&t, 3);
    CHECK(t.i1.version == 1 && t.i2.version == 2 && t.b1 == t.b2);
    sess s1 = t.s1, s2 = t.s2;
    mt_memory_plan p1, p2;
    mt_session_plan(s1.s, &p1), mt_session_plan(s2.s, &p2);
    CHECK(memcmp(&p1, &p2, offsetof(mt_memory_plan, image)) == 0); /* the figures; the binding names each image */
    for (unsigned step = 0; step < 4; ++step) {
        float l1 = 0.0f, l2 = 1.0f;
        feed_rows(s1.s, 0, 3, 50u + step, 3, 2);
        feed_rows(s2.s, 0, 3, 50u + step, 3, 2);
        CHECK_STATUS(mt_session_train_step(s1.s, 3, &l1), MT_OK);
        CHECK_STATUS(mt_session_train_step(s2.s, 3, &l2), MT_OK);
        CHECK_BITS_EQ(l1, l2);
    }
    CHECK(same_params(s1.s, s2.s));
    close_both_versions(&t);
}

/* Layers are not architecture: the version 1 and 2 images of one model (2 writes op layers
 * in byte 3 of op entries) have one fingerprint and take each other's checkpoints. */
static void test_checkpoints_fit_both_versions(void)
{
    two_versions t;
    open_both_versions(&t, 2);
    CHECK(t.i1.crc32 != t.i2.crc32); /* the bytes differ ... */
    sess s1 = t.s1, s2 = t.s2;
    feed_rows(s1.s, 0, 2, 900u, 3, 2);
    CHECK_STATUS(mt_session_train_step(s1.s, 2, NULL), MT_OK);
    sink *k = sink_new(); /* ... the checkpoint of one loads into the other */
    CHECK_STATUS(mt_checkpoint_save(s1.s, 1, NULL, 0, sink_write, k), MT_OK);
    source r = {k->data, k->size, 0, -1, 0, MT_OK};
    CHECK_STATUS(mt_checkpoint_load(s2.s, k->size, source_read, &r, NULL, NULL), MT_OK);
    CHECK(same_params(s1.s, s2.s) && same_counters(s1.s, s2.s));
    free(k);
    close_both_versions(&t);
}

int main(void)
{
    test_ops_of_an_mlp();
    test_ops_of_a_dag();
    test_data_offsets();
    test_both_versions_train_alike();
    test_checkpoints_fit_both_versions();
    return MT_TEST_END();
}
