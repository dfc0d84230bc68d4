/*
 * Checkpoints and inference export (docs/checkpoint_format.md), through memory-backed
 * read/write callbacks (checkpoint_util.h). Model: x[3] -> Dense(W1[4,3], b1) -> tanh ->
 * Dense(W2[2,4], b2), MSE; B = 4 rows per step. Lying contents: test_checkpoint_contents.c.
 *
 * This program: callbacks that fail. A write failing at any call ends save and export with
 * MT_ERR_IO and no further writes; a read failing at any call ends a load with MT_ERR_IO
 * (and, in the first, validating pass, leaves the arena as it was); a property callback's
 * own status comes back.
 */
#include "checkpoint_util.h"

/* ---- callback failures -------------------------------------------------------------------- */

static void test_io_errors(void)
{
    size_t ib;
    uint8_t *img = model(4, 7u, &ib);
    mt_train_config cfg, sgd;
    sess t, x;
    sink *k = sink_new(), *f = sink_new();
    make_cfg(&cfg, MT_OPTIMIZER_ADAM);
    CHECK_STATUS(sess_open(&t, img, ib, &cfg), MT_OK);
    train(t.s, 2, 900u, NULL);

    for (int exporting = 0; exporting < 2; exporting++) {
        mt_status st = exporting ? mt_session_export_image(t.s, sink_write, sink_clear(k))
                                 : save(t.s, 1, two_props, 2, k);
        CHECK_STATUS(st, MT_OK);
        int wrong = 0;
        for (int at = 0; at < k->calls; at++) /* fail at every call; positive = not a status */
            for (int positive = 0; positive < 2; positive++) {
                f->size = 0, f->calls = 0, f->calls_after_fail = 0;
                f->fail_at = at, f->fail_with = positive ? 1 : MT_ERR_IO;
                st = exporting ? mt_session_export_image(t.s, sink_write, f)
                               : mt_checkpoint_save(t.s, 1, two_props, 2, sink_write, f);
                if ((st != MT_ERR_IO || f->calls_after_fail != 0) && wrong++ < 3)
                    printf("    %s: write failing at call %d (%d): status %d, %d calls after\n",
                           exporting ? "export" : "save", at, positive, st, f->calls_after_fail);
            }
        CHECK_EQ_INT(wrong, 0);
    }
    CHECK_STATUS(save(t.s, 1, two_props, 2, k), MT_OK);

    /* pass 1 reads: counted on a session the checkpoint does not fit, so every read happens */
    make_cfg(&sgd, MT_OPTIMIZER_SGD);
    CHECK_STATUS(sess_open(&x, img, ib, &sgd), MT_OK);
    source r = { k->data, k->size, 0, -1, 0, MT_OK };
    CHECK_STATUS(mt_checkpoint_load(x.s, k->size, source_read, &r, NULL, NULL),
                 MT_ERR_CHECKPOINT_MISMATCH);
    const int pass1 = r.calls;
    r.calls = 0;
    CHECK_STATUS(mt_checkpoint_load(t.s, k->size, source_read, &r, NULL, NULL), MT_OK);
    CHECK(pass1 > 0 && r.calls > pass1);
    const int all = r.calls;
    snap(&t);
    int wrong = 0;
    for (int at = 0; at < pass1; at++)
        for (int positive = 0; positive < 2; positive++) {
            source e = { k->data, k->size, 0, at, 0, positive ? 2 : MT_ERR_IO };
            mt_status st = mt_checkpoint_load(t.s, k->size, source_read, &e, NULL, NULL);
            if ((st != MT_ERR_IO || memcmp(snapshot, t.arena, t.bytes) != 0) && wrong++ < 3)
                printf("    read failing at call %d (%d): status %d\n", at, positive, st);
        }
    CHECK_EQ_INT(wrong, 0);
    for (int at = pass1; at < all; at++) { /* pass 2: the status at least */
        source e = { k->data, k->size, 0, at, 0, MT_ERR_IO };
        CHECK_STATUS(mt_checkpoint_load(t.s, k->size, source_read, &e, NULL, NULL), MT_ERR_IO);
    }
    static seen v;
    v.fail_at_second = MT_ERR_STATE; /* the callback's own status comes back */
    CHECK_STATUS(load(t.s, k->data, k->size, on_property, &v), MT_ERR_STATE);
    CHECK_EQ_INT(v.count, 2);
    v.count = 0, v.fail_at_second = MT_ERR_IO;
    CHECK_STATUS(load(t.s, k->data, k->size, on_property, &v), MT_ERR_IO);
    free(t.block), free(x.block), free(k), free(f), free(img);
}

int main(void)
{
    test_io_errors();
    free(snapshot);
    return MT_TEST_END();
}
