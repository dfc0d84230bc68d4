/*
 * The weights of int8 layers trained in place as weights (mt_session_qparam,
 * mt_session_qparam_written, mt_session_weights_crc32; session_weights.c): the int8 weights
 * and int32 biases listed in tensor-table order with their dtype, readable where the session
 * keeps them, writable (a master copy following the weight written), and covered by the
 * weights' CRC, which a float model keeps as it was (its f32 weights' bytes alone).
 * Model: int8_in_place_util.h (the int8 CNN whose three weighted layers train in place).
 */
#include "checkpoint_util.h"
#include "int8_in_place_util.h"

static uint8_t *master_image; /* the model with float master copies */
static size_t master_bytes;

#define IN 50
#define OUT 4

static void step(mt_session *s, unsigned seed)
{
    feed_rows(s, 0, B, seed, IN, OUT);
    CHECK_STATUS(mt_session_train_step(s, B, NULL), MT_OK);
}

static void sgd(mt_train_config *c, float lr)
{
    mt_train_config_init(c);
    c->optimizer = MT_OPTIMIZER_SGD, c->batch_size = B, c->learning_rate = lr;
}

/* zlib.crc32 over every weight in table order, written out here: the f32 params and the
 * quantized ones, merged by tensor index, each count * width bytes */
static uint32_t crc_by_hand(mt_session *s)
{
    int32_t np = 0, nq = 0, p = 0, q = 0;
    mt_session_param_count(s, &np), mt_session_qparam_count(s, &nq);
    uint32_t crc = 0;
    while (p < np || q < nq) {
        mt_param_info a, b;
        const int has_a = p < np && mt_session_param(s, p, &a) == MT_OK;
        const int has_b = q < nq && mt_session_qparam(s, q, &b) == MT_OK;
        const int take_a = has_a && (!has_b || a.tensor_index < b.tensor_index);
        const mt_param_info *i = take_a ? &a : &b;
        take_a ? ++p : ++q;
        const void *data = i->trained ? (const void *)i->data : (const void *)i->image_data;
        crc = ib_crc32_update(crc, data, (size_t)i->count * (i->dtype == MT_DTYPE_I8 ? 1u : 4u));
    }
    return crc;
}

static void test_listing_and_crc(void)
{
    mt_train_config cfg;
    sess g;
    sgd(&cfg, 0.2f);
    CHECK_STATUS(sess_open(&g, int8_in_place, sizeof int8_in_place, &cfg), MT_OK);
    int32_t nq = -1, np = -1;
    CHECK_STATUS(mt_session_qparam_count(g.s, &nq), MT_OK);
    CHECK_STATUS(mt_session_param_count(g.s, &np), MT_OK);
    CHECK_EQ_INT(nq, 6);
    CHECK_EQ_INT(np, 0); /* no f32 CONST tensor: the requantization constants are int32, not TRAINABLE */
    static const int32_t tensors[6] = {2, 3, 6, 7, 13, 14}, counts[6] = {54, 3, 27, 3, 48, 4};
    for (int32_t q = 0; q < nq; q++) {
        mt_param_info info;
        CHECK_STATUS(mt_session_qparam(g.s, q, &info), MT_OK);
        CHECK_EQ_INT(info.tensor_index, tensors[q]);
        CHECK_EQ_INT(info.count, counts[q]);
        CHECK_EQ_INT(info.dtype, q % 2 ? MT_DTYPE_I32 : MT_DTYPE_I8);
        CHECK_EQ_INT(info.trained, 1);
        CHECK(info.data != NULL && (const void *)info.data != (const void *)info.image_data);
    }
    mt_param_info info;
    CHECK_STATUS(mt_session_qparam(g.s, 6, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_qparam(g.s, -1, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_qparam(g.s, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_qparam_written(g.s, 6), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_weights_crc32(g.s, NULL), MT_ERR_BAD_ARGUMENT);

    uint32_t before = 0, after = 0;
    CHECK_STATUS(mt_session_weights_crc32(g.s, &before), MT_OK);
    CHECK_EQ_INT(before, crc_by_hand(g.s));
    /* before a step the arena holds the image's values: the image's bytes' CRC */
    uint32_t image_crc = 0;
    for (int32_t q = 0; q < nq; q++) {
        mt_session_qparam(g.s, q, &info);
        image_crc = ib_crc32_update(image_crc, info.image_data, (size_t)info.count * (q % 2 ? 4u : 1u));
    }
    CHECK_EQ_INT(before, image_crc);
    step(g.s, 3u);
    CHECK_STATUS(mt_session_weights_crc32(g.s, &after), MT_OK);
    CHECK_EQ_INT(after, crc_by_hand(g.s));
    CHECK(after != before); /* the steps moved int8 weights, and the CRC sees them */
    /* planted fault: one int8 weight moved changes the CRC */
    mt_session_qparam(g.s, 0, &info);
    ((int8_t *)(void *)info.data)[5] ^= 1;
    uint32_t moved = 0;
    CHECK_STATUS(mt_session_weights_crc32(g.s, &moved), MT_OK);
    CHECK(moved != after);
    free(g.block);
}

/* A float model's CRC is its f32 weights' bytes, in mt_session_param order, as before */
static void test_float_crc_unchanged(void)
{
    size_t ib;
    uint8_t *img = model(4, 7u, &ib);
    mt_train_config cfg;
    sess g;
    make_cfg(&cfg, MT_OPTIMIZER_SGD);
    CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
    train(g.s, 2, 9u, NULL);
    int32_t np = 0, nq = -1;
    mt_session_param_count(g.s, &np), mt_session_qparam_count(g.s, &nq);
    CHECK_EQ_INT(nq, 0);
    uint32_t crc = 0, want = 0;
    for (int32_t p = 0; p < np; p++) {
        int32_t count = 0;
        const float *w = param_data(g.s, p, &count);
        want = ib_crc32_update(want, w, 4u * (size_t)count);
        mt_param_info info;
        mt_session_param(g.s, p, &info);
        CHECK_EQ_INT(info.dtype, MT_DTYPE_F32);
    }
    CHECK_STATUS(mt_session_weights_crc32(g.s, &crc), MT_OK);
    CHECK_EQ_INT(crc, want);
    free(g.block), free(img);
}

/* An int8 weight written through its data pointer, then mt_session_qparam_written(): a step
 * too small to move it keeps the value written (its master copy restarted from it); without
 * the call (the planted fault) the master copy's old value comes back. */
static void test_written_weight_takes_its_master_copy(void)
{
    mt_train_config cfg;
    sgd(&cfg, 1e-6f);
    for (int call = 1; call >= 0; call--) {
        sess g;
        CHECK_STATUS(sess_open(&g, master_image, master_bytes, &cfg), MT_OK);
        mt_param_info info;
        CHECK_STATUS(mt_session_qparam(g.s, 0, &info), MT_OK);
        int8_t *w = (int8_t *)(void *)info.data;
        const int8_t old = w[7], written = (int8_t)(old > 0 ? old - 40 : old + 40);
        w[7] = written;
        if (call) CHECK_STATUS(mt_session_qparam_written(g.s, 0), MT_OK);
        step(g.s, 4u);
        if (call) CHECK_EQ_INT(w[7], written);
        else CHECK_EQ_INT(w[7], old);
        free(g.block);
    }
}

int main(void)
{
    master_image = int8_in_place_master(&master_bytes);
    test_listing_and_crc();
    test_float_crc_unchanged();
    test_written_weight_takes_its_master_copy();
    free(master_image);
    return MT_TEST_END();
}
