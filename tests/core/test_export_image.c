/*
 * Checkpoints and inference export (docs/checkpoint_format.md), through memory-backed
 * read/write callbacks (checkpoint_util.h). Model: x[3] -> Dense(W1[4,3], b1) -> tanh ->
 * Dense(W2[2,4], b2), MSE; B = 4 rows per step. Lying contents: test_checkpoint_contents.c.
 *
 * This program: mt_session_export_image writes the original image with the trained weights
 * (and a new CRC) in small chunks, which an inference session then runs with the same
 * outputs; with nothing trained or nothing stepped it is the original, byte for byte.
 */
#include "checkpoint_util.h"

/* ---- export ------------------------------------------------------------------------------- */

static void test_export(void)
{
    size_t ib;
    uint8_t *img = model(4, 7u, &ib);
    uint8_t *orig = malloc(ib);
    memcpy(orig, img, ib);
    mt_train_config cfg, inf;
    sess t, e, z;
    sink *k = sink_new(), *k2 = sink_new(); /* k holds the export session e runs on */
    make_cfg(&cfg, MT_OPTIMIZER_ADAM);
    cfg.num_trainable_ops = 1; /* W2, b2 train; W1, b1 stay frozen in the image */
    CHECK_STATUS(sess_open(&t, img, ib, &cfg), MT_OK);
    train(t.s, 3, 1000u, NULL);
    CHECK_STATUS(mt_session_export_image(t.s, sink_write, k), MT_OK);
    CHECK_EQ_INT(k->size, ib);
    CHECK(k->max_call <= 64);
    CHECK_STATUS(mt_model_check(k->data, k->size, NULL), MT_OK);
    CHECK(memcmp(img, orig, ib) == 0); /* the source image was not written */
    /* every byte but the CRC and the trained weights is the original's */
    uint8_t *expect = malloc(ib);
    memcpy(expect, orig, ib);
    for (int p = 0; p < 4; p++) {
        mt_param_info pi;
        mt_session_param(t.s, p, &pi);
        CHECK_EQ_INT(pi.trained, p >= 2);
        if (pi.trained)
            memcpy((uint8_t *)ib_const_data(expect, pi.tensor_index), pi.data, 4u * (size_t)pi.count);
    }
    memcpy(expect + 12, k->data + 12, 4);
    CHECK(memcmp(expect, k->data, ib) == 0);
    CHECK(memcmp(expect, orig, ib) != 0);

    mt_train_config_init(&inf);
    inf.batch_size = B, inf.num_trainable_ops = 0;
    CHECK_STATUS(sess_open(&e, k->data, k->size, &inf), MT_OK);
    CHECK(same_params(t.s, e.s));
    feed(t.s, 1100u), feed(e.s, 1100u);
    CHECK_STATUS(mt_session_infer(t.s, B), MT_OK);
    CHECK_STATUS(mt_session_infer(e.s, B), MT_OK);
    const float *yt, *ye;
    int32_t ct, ce;
    mt_session_output(t.s, 0, &yt, &ct), mt_session_output(e.s, 0, &ye, &ce);
    CHECK(ct == ce && memcmp(yt, ye, 4u * (size_t)ct) == 0);

    /* nothing trained, or nothing stepped: the original image, byte for byte */
    CHECK_STATUS(mt_session_export_image(e.s, sink_write, sink_clear(k2)), MT_OK);
    CHECK(k2->size == ib && memcmp(k2->data, k->data, ib) == 0);
    CHECK_STATUS(sess_open(&z, img, ib, &inf), MT_OK);
    CHECK_STATUS(mt_session_export_image(z.s, sink_write, sink_clear(k2)), MT_OK);
    CHECK(k2->size == ib && memcmp(k2->data, orig, ib) == 0);
    free(z.block);
    CHECK_STATUS(sess_open(&z, img, ib, &cfg), MT_OK);
    CHECK_STATUS(mt_session_export_image(z.s, sink_write, sink_clear(k2)), MT_OK);
    CHECK(k2->size == ib && memcmp(k2->data, orig, ib) == 0);
    free(z.block), free(t.block), free(e.block), free(expect), free(orig), free(k), free(k2), free(img);
}

int main(void)
{
    test_export();
    return MT_TEST_END();
}
