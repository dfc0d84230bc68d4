/*
 * Checkpoints and inference export (docs/checkpoint_format.md), through memory-backed
 * read/write callbacks (checkpoint_util.h). Model: x[3] -> Dense(W1[4,3], b1) -> tanh ->
 * Dense(W2[2,4], b2), MSE; B = 4 rows per step. Lying contents: test_checkpoint_contents.c.
 *
 * This program, what a load refuses and what it accepts:
 *   - every refusal (truncation, bit flip, bad field with a valid CRC, other model, other
 *     trained set, other optimizer, with or without state) leaves the session's arena byte
 *     for byte as it was;
 *   - the model fingerprint ignores weight data;
 *   - bad arguments to every checkpoint and export call.
 */
#include "checkpoint_util.h"

/* ---- refusals ----------------------------------------------------------------------------- */

static void test_refusals(void)
{
    size_t ib, ib5;
    uint8_t *img = model(4, 7u, &ib), *img5 = model(5, 7u, &ib5);
    mt_train_config cfg, other;
    sess s, t, w, x, sg;
    sink *k = sink_new(), *k0 = sink_new(), *km = sink_new();
    make_cfg(&cfg, MT_OPTIMIZER_ADAM);
    CHECK(sess_open(&s, img, ib, &cfg) == MT_OK && sess_open(&t, img, ib, &cfg) == MT_OK &&
          sess_open(&w, img, ib, &cfg) == MT_OK); /* w: t's twin, same history, no loads */
    train(s.s, 5, 400u, NULL);
    mt_session_set_learning_rate(s.s, 0.02f), mt_session_set_epoch(s.s, 4);
    CHECK_STATUS(save(s.s, 1, two_props, 2, k), MT_OK);
    CHECK_STATUS(save(s.s, 0, NULL, 0, k0), MT_OK);
    train(t.s, 2, 500u, NULL), train(w.s, 2, 500u, NULL);
    mt_session_set_epoch(t.s, 1), mt_session_set_epoch(w.s, 1);
    snap(&t);
    const size_t size = k->size;
    uint8_t *m = malloc(size + 8);

    int wrong = 0;
    for (size_t len = 0; len < size; len++) { /* every truncation, read from an exact copy */
        uint8_t *cut = malloc(len ? len : 1);
        memcpy(cut, k->data, len);
        if (!refused(&t, cut, len, MT_ERR_BAD_CHECKPOINT) && wrong++ < 3)
            printf("    truncation to %zu bytes not refused cleanly\n", len);
        free(cut);
    }
    for (size_t bit = 0; bit < 8 * size; bit++) { /* every single-bit flip */
        memcpy(m, k->data, size);
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (!refused(&t, m, size, MT_ERR_BAD_CHECKPOINT) && wrong++ < 6)
            printf("    flip of bit %zu of byte %zu not refused cleanly\n", bit % 8, bit / 8);
    }
    CHECK_EQ_INT(wrong, 0);

    /* structurally wrong, CRC recomputed: {offset, bytes, value} */
    const size_t props_at = HEADER + records_bytes(2);
    const double qnan = NAN;
    uint64_t nan_bits, over_one, neg_half;
    double d = 1.5, d2 = -0.5;
    memcpy(&nan_bits, &qnan, 8), memcpy(&over_one, &d, 8), memcpy(&neg_half, &d2, 8);
    const struct { size_t at; int bytes; uint64_t value; const char *what; } fields[] = {
        { 3, 1, 'X', "magic" }, { 4, 2, 3, "version 3" }, { 4, 2, 0, "version 0" },
        { 6, 2, 84, "header size" }, { 8, 4, size + 4, "total +4" }, { 8, 4, size - 4, "total -4" },
        { 16, 4, 5, "5 records" }, { 16, 4, 0xFFFFFFFFu, "2^32-1 records" }, { 24, 4, 3, "3 arrays" },
        { 28, 4, 3, "3 properties" }, { 28, 4, 1, "1 property" }, { 32, 8, UINT64_MAX, "step -1" },
        { 32, 8, 1ull << 63, "step INT64_MIN" }, { 40, 8, UINT64_MAX, "epoch -1" }, { 48, 4, 0xFF800000u, "lr -inf" },
        { 48, 4, 0xBF000000u, "lr -0.5" }, { 48, 4, 0x7FC00000u, "lr NaN" }, { 48, 4, 0x7F800000u, "lr inf" },
        { 52, 4, 0, "base lr 0" }, { 52, 4, 0x7FC00000u, "base lr NaN" }, { 79, 1, 1, "reserved byte" }, { 56, 8, over_one, "beta1^t 1.5" },
        { 64, 8, over_one, "beta2^t 1.5" }, { 56, 8, nan_bits, "beta1^t NaN" }, { 64, 8, neg_half, "beta2^t -0.5" },
        { HEADER + 4, 4, 0xFFFFFFFFu, "record count" }, { props_at, 2, 0, "property name 0 bytes" },
        { props_at, 2, 64, "property name 64 bytes" }, { props_at + 2, 1, 9, "property type 9" },
        { props_at + 3, 1, 1, "property reserved" }, { props_at + 4, 4, 300, "string of 300 bytes" },
        { props_at + 24 + 4, 4, 4, "int of 4 bytes" } };
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        memcpy(m, k->data, size);
        put_le(m + fields[f].at, fields[f].value, fields[f].bytes);
        recrc(m, size);
        if (!CHECK(refused(&t, m, size, MT_ERR_BAD_CHECKPOINT)))
            printf("    %s\n", fields[f].what);
    }
    memcpy(m, k->data, size); /* 4 stray bytes before the trailer, sizes and CRC consistent */
    put_le(m + size - 4, 0, 4), put_le(m + 8, size + 4, 4);
    recrc(m, size + 4);
    CHECK(refused(&t, m, size + 4, MT_ERR_BAD_CHECKPOINT));

    /* valid checkpoints that do not fit t: SGD + momentum state into Adam */
    make_cfg(&other, MT_OPTIMIZER_SGD);
    CHECK_STATUS(sess_open(&sg, img, ib, &other), MT_OK);
    train(sg.s, 2, 600u, NULL);
    CHECK_STATUS(save(sg.s, 1, NULL, 0, km), MT_OK);
    CHECK(refused(&t, km->data, km->size, MT_ERR_CHECKPOINT_MISMATCH));
    make_cfg(&other, MT_OPTIMIZER_ADAMW); /* Adam state into AdamW: same size, other optimizer */
    CHECK_STATUS(sess_open(&x, img, ib, &other), MT_OK);
    snap(&x);
    CHECK(refused(&x, k->data, size, MT_ERR_CHECKPOINT_MISMATCH));
    free(x.block);
    for (int variant = 0; variant < 4; variant++) {
        /* 0: hidden width 5; 1: last op only; 2: biases only; 3: biases only, no state */
        other = cfg;
        other.num_trainable_ops = variant == 1 ? 1 : -1;
        other.biases_only = variant >= 2;
        CHECK_STATUS(sess_open(&x, variant ? img : img5, variant ? ib : ib5, &other), MT_OK);
        snap(&x);
        if (!CHECK(refused(&x, variant == 3 ? k0->data : k->data, variant == 3 ? k0->size : size,
                           MT_ERR_CHECKPOINT_MISMATCH)))
            printf("    mismatch variant %d\n", variant);
        free(x.block);
    }

    /* t was never changed: its next step is its twin's */
    float lt, lw;
    feed(t.s, 700u), feed(w.s, 700u);
    CHECK_STATUS(mt_session_train_step(t.s, B, &lt), MT_OK);
    CHECK_STATUS(mt_session_train_step(w.s, B, &lw), MT_OK);
    CHECK_BITS_EQ(lt, lw);
    CHECK(same_params(t.s, w.s) && same_counters(t.s, w.s));
    /* without optimizer state, a checkpoint of another optimizer is refused too: its learning
     * rate and counters belong to another run (it used to replace the session's rate) */
    CHECK_STATUS(save(sg.s, 0, NULL, 0, km), MT_OK);
    snap(&t);
    CHECK(refused(&t, km->data, km->size, MT_ERR_CHECKPOINT_MISMATCH));
    snap(&sg);
    CHECK(refused(&sg, k0->data, k0->size, MT_ERR_CHECKPOINT_MISMATCH));
    CHECK_STATUS(load(s.s, k0->data, k0->size, NULL, NULL), MT_OK); /* its own optimizer: fine */
    free(s.block), free(t.block), free(w.block), free(sg.block), free(m);
    free(k), free(k0), free(km), free(img), free(img5);
}

/* The fingerprint covers structure only: a checkpoint loads into an image of other weights. */
static void test_fingerprint_ignores_weights(void)
{
    size_t ia, ibb;
    uint8_t *a = model(4, 7u, &ia), *b = model(4, 99u, &ibb);
    mt_train_config cfg;
    sess s, u;
    sink *k = sink_new();
    make_cfg(&cfg, MT_OPTIMIZER_ADAM);
    CHECK(ia == ibb && memcmp(a, b, ia) != 0);
    CHECK_STATUS(sess_open(&s, a, ia, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&u, b, ibb, &cfg), MT_OK);
    train(s.s, 2, 800u, NULL);
    CHECK_STATUS(save(s.s, 1, NULL, 0, k), MT_OK);
    CHECK(!same_params(s.s, u.s));
    CHECK_STATUS(load(u.s, k->data, k->size, NULL, NULL), MT_OK);
    CHECK(same_params(s.s, u.s) && same_counters(s.s, u.s));
    free(s.block), free(u.block), free(k), free(a), free(b);
}

/* ---- bad arguments ------------------------------------------------------------------------ */

static void test_bad_arguments(void)
{
    static uint64_t zeros[1024]; /* not a session: its magic is 0 */
    mt_session *bogus = (mt_session *)(void *)zeros;
    size_t ib, bytes = 0;
    uint8_t *img = model(4, 7u, &ib);
    mt_train_config cfg;
    sess g;
    sink *k = sink_new();
    make_cfg(&cfg, MT_OPTIMIZER_ADAM);
    CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
    mt_session *sessions[2] = { NULL, bogus };
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(mt_checkpoint_bytes(sessions[i], 1, NULL, 0, &bytes), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(save(sessions[i], 1, NULL, 0, k), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_checkpoint_load(sessions[i], 100, source_read, k, NULL, NULL),
                     MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_export_image(sessions[i], sink_write, k), MT_ERR_BAD_ARGUMENT);
    }
    CHECK_STATUS(mt_checkpoint_bytes(g.s, 1, NULL, 0, NULL), MT_ERR_BAD_ARGUMENT);
    const int includes[] = { -1, 2, 255 };
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(mt_checkpoint_bytes(g.s, includes[i], NULL, 0, &bytes), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(save(g.s, includes[i], NULL, 0, k), MT_ERR_BAD_ARGUMENT);
    }
    for (int np = -1; np <= 1; np += 2) { /* negative count; NULL list with a count */
        const mt_property *list = np < 0 ? two_props : NULL;
        CHECK_STATUS(mt_checkpoint_bytes(g.s, 1, list, np, &bytes), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(save(g.s, 1, list, np, k), MT_ERR_BAD_ARGUMENT);
    }
    CHECK_EQ_INT(k->calls, 0);
    CHECK_STATUS(mt_checkpoint_save(g.s, 1, NULL, 0, NULL, k), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_checkpoint_load(g.s, 100, NULL, k, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_export_image(g.s, NULL, k), MT_ERR_BAD_ARGUMENT);
    /* zero properties with a NULL list are fine */
    CHECK_STATUS(mt_checkpoint_bytes(g.s, 0, NULL, 0, &bytes), MT_OK);
    free(g.block), free(k), free(img);
}

int main(void)
{
    test_refusals();
    test_fingerprint_ignores_weights();
    test_bad_arguments();
    free(snapshot);
    return MT_TEST_END();
}
