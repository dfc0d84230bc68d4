/*
 * Checkpoints and inference export (docs/checkpoint_format.md), through memory-backed
 * read/write callbacks (checkpoint_util.h). Model: x[3] -> Dense(W1[4,3], b1) -> tanh ->
 * Dense(W2[2,4], b2), MSE; B = 4 rows per step. Lying contents: test_checkpoint_contents.c.
 *
 * This program, what a save writes and a load restores:
 *   - mt_checkpoint_bytes is what save writes, in small chunks, ending in the CRC-32 trailer;
 *   - resume is bit-identical (SGD+momentum, Adam, AdamW); without optimizer state the
 *     optimizer restarts from the restored weights, counters and learning rate;
 *   - properties round-trip exactly; invalid ones are refused before a byte is written.
 */
#include "checkpoint_util.h"

/* ---- size, chunks, trailer ---------------------------------------------------------------- */

static void test_size_chunks_crc(void)
{
    static const int cases[][3] = { /* optimizer, momentum?, state arrays when included */
        { MT_OPTIMIZER_SGD, 0, 0 }, { MT_OPTIMIZER_SGD, 1, 1 },
        { MT_OPTIMIZER_ADAM, 0, 2 }, { MT_OPTIMIZER_ADAMW, 0, 2 } };
    size_t ib;
    uint8_t *img = model(4, 7u, &ib);
    sink *k = sink_new();
    size_t largest = 0;
    for (size_t c = 0; c < 4; c++) {
        mt_train_config cfg;
        sess g;
        make_cfg(&cfg, cases[c][0]);
        cfg.momentum = cases[c][1] ? 0.9f : 0.f;
        CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
        train(g.s, 2, 10u, NULL);
        for (int include = 0; include < 2; include++)
            for (int np = 0; np <= 2; np += 2) {
                size_t bytes = 0;
                int arrays = include ? cases[c][2] : 0;
                CHECK_STATUS(mt_checkpoint_bytes(g.s, include, two_props, np, &bytes), MT_OK);
                CHECK_STATUS(save(g.s, include, two_props, np, k), MT_OK);
                CHECK_EQ_INT(k->size, bytes);
                /* "run"+"resume-test" = 14 -> 16, "seen"+i64 = 12 */
                CHECK_EQ_INT(bytes, HEADER + records_bytes(arrays) + (np ? 8 + 16 + 8 + 12 : 0) + 4);
                CHECK(memcmp(k->data, "MTCK", 4) == 0);
                CHECK_EQ_INT(ib_get_u32(k->data, 8), bytes);
                CHECK_EQ_INT(ib_get_u32(k->data, 24), arrays);
                CHECK_EQ_INT(ib_get_u32(k->data, 28), np);
                CHECK_EQ_INT(ib_get_u32(k->data, bytes - 4), ib_crc32(k->data, bytes - 4));
                if (k->max_call > largest)
                    largest = k->max_call;
            }
        free(g.block);
    }
    /* "called with small chunks": the core's own chunk is 64 bytes, so a device can stream
     * into a 64-byte buffer; no write needs to be larger */
    if (!CHECK(largest <= 64))
        printf("    largest single write of a checkpoint: %zu bytes\n", largest);
    free(k), free(img);
}

/* ---- resume ------------------------------------------------------------------------------- */

/* A trains 2N steps; B trains N, saves with optimizer state; a fresh C loads and trains N more. */
static void test_resume_bit_identical(int optimizer)
{
    enum { N = 4 };
    size_t ib;
    uint8_t *img = model(4, 7u, &ib);
    mt_train_config cfg;
    sess a, b, c;
    float la[2 * N], lb[N], lc[N];
    sink *k = sink_new();
    make_cfg(&cfg, optimizer);
    CHECK(sess_open(&a, img, ib, &cfg) == MT_OK && sess_open(&b, img, ib, &cfg) == MT_OK);
    cfg.accumulate_gradients = 1; /* c steps unfused: the state carries across the two modes */
    CHECK_STATUS(sess_open(&c, img, ib, &cfg), MT_OK);
    for (int r = 0; r < 2; r++) { /* a scheduler changed the rate; an epoch ended */
        sess *g = r ? &b : &a;
        train(g->s, N, 100u, r ? lb : la);
        CHECK_STATUS(mt_session_set_learning_rate(g->s, 0.03f), MT_OK);
        CHECK_STATUS(mt_session_set_epoch(g->s, 1), MT_OK);
    }
    CHECK_STATUS(save(b.s, 1, two_props, 2, k), MT_OK);
    train(c.s, 2, 150u, NULL); /* state of its own, which the load must replace entirely */
    CHECK_STATUS(load(c.s, k->data, k->size, NULL, NULL), MT_OK);
    CHECK(same_params(b.s, c.s) && same_counters(b.s, c.s));
    train(a.s, N, 100u + N, la + N);
    train(c.s, N, 100u + N, lc);
    for (int i = 0; i < N; i++) {
        CHECK_BITS_EQ(lb[i], la[i]);
        CHECK_BITS_EQ(lc[i], la[N + i]);
    }
    if (!CHECK(same_params(a.s, c.s)))
        printf("    optimizer %d: resumed weights differ\n", optimizer);
    CHECK(same_counters(a.s, c.s));
    int64_t step = 0;
    mt_session_counters(c.s, &step, NULL);
    CHECK_EQ_INT(step, 2 * N);
    free(a.block), free(b.block), free(c.block), free(k), free(img);
}

/* Without optimizer state: weights, counters and rate come back, moments restart at zero, so
 * the next step equals a fresh session's first step from those weights (built from an export). */
static void test_resume_without_state(int optimizer)
{
    size_t ib;
    uint8_t *img = model(4, 7u, &ib);
    mt_train_config cfg;
    sess b, c, d;
    float lc, ld, lb;
    sink *k = sink_new(), *e = sink_new();
    make_cfg(&cfg, optimizer);
    CHECK_STATUS(sess_open(&b, img, ib, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&c, img, ib, &cfg), MT_OK);
    train(b.s, 3, 200u, NULL);
    mt_session_set_learning_rate(b.s, 0.02f);
    mt_session_set_epoch(b.s, 2);
    CHECK_STATUS(save(b.s, 0, NULL, 0, k), MT_OK);
    train(c.s, 2, 250u, NULL); /* moments and bias correction of its own, to be reset */
    CHECK_STATUS(load(c.s, k->data, k->size, NULL, NULL), MT_OK);
    CHECK(same_params(b.s, c.s) && same_counters(b.s, c.s));
    CHECK_STATUS(mt_session_export_image(b.s, sink_write, e), MT_OK);
    CHECK_STATUS(sess_open(&d, e->data, e->size, &cfg), MT_OK);
    CHECK_STATUS(mt_session_set_learning_rate(d.s, 0.02f), MT_OK);
    CHECK(same_params(c.s, d.s));
    feed(b.s, 300u), feed(c.s, 300u), feed(d.s, 300u);
    CHECK_STATUS(mt_session_train_step(b.s, B, &lb), MT_OK);
    CHECK_STATUS(mt_session_train_step(c.s, B, &lc), MT_OK);
    CHECK_STATUS(mt_session_train_step(d.s, B, &ld), MT_OK);
    CHECK_BITS_EQ(lc, ld);
    if (!CHECK(same_params(c.s, d.s)))
        printf("    optimizer %d: step after a state-less load is not a first step\n", optimizer);
    CHECK(!same_params(b.s, c.s)); /* the moments mattered: dropping them changed the step */
    int64_t step = 0, epoch = 0;
    mt_session_counters(c.s, &step, &epoch);
    CHECK(step == 4 && epoch == 2);
    free(b.block), free(c.block), free(d.block), free(k), free(e), free(img);
}

/* ---- properties --------------------------------------------------------------------------- */

static void test_properties(void)
{
    static char name63[MT_PROPERTY_MAX_NAME + 1], name64[MT_PROPERTY_MAX_NAME + 2];
    static char str255[MT_PROPERTY_MAX_STRING + 1], str256[MT_PROPERTY_MAX_STRING + 2];
    for (int i = 0; i < MT_PROPERTY_MAX_NAME + 1; i++)
        name64[i] = (char)('a' + i % 26);
    memcpy(name63, name64, MT_PROPERTY_MAX_NAME);
    for (int i = 0; i < MT_PROPERTY_MAX_STRING + 1; i++)
        str256[i] = (char)(' ' + 1 + i % 94);
    memcpy(str255, str256, MT_PROPERTY_MAX_STRING);
    const mt_property props[] = {
        { "i", MT_PROPERTY_INT, 0, INT64_MIN, 0.0, NULL }, { "ab", MT_PROPERTY_INT, 0, INT64_MAX, 0.0, NULL },
        { "abc", MT_PROPERTY_INT, 0, -1, 0.0, NULL }, { "lr_decay", MT_PROPERTY_FLOAT, 0, 0, -0.1, NULL },
        { "tiny", MT_PROPERTY_FLOAT, 0, 0, 4.9406564584124654e-324, NULL }, /* denormal */
        { "note", MT_PROPERTY_STRING, 0, 0, 0.0, "hello, world" },
        { "empty", MT_PROPERTY_STRING, 0, 0, 0.0, "" }, { name63, MT_PROPERTY_STRING, 0, 0, 0.0, str255 } };
    const int np = (int)(sizeof props / sizeof props[0]);
    size_t ib, bytes = 0;
    uint8_t *img = model(4, 7u, &ib);
    mt_train_config cfg;
    sess g;
    sink *k = sink_new();
    static seen v;
    make_cfg(&cfg, MT_OPTIMIZER_ADAM);
    CHECK_STATUS(sess_open(&g, img, ib, &cfg), MT_OK);
    CHECK_STATUS(mt_checkpoint_bytes(g.s, 1, props, np, &bytes), MT_OK);
    CHECK_STATUS(save(g.s, 1, props, np, k), MT_OK);
    CHECK_EQ_INT(k->size, bytes);
    if (!CHECK(k->max_call <= 64)) /* as in test_size_chunks_crc, with a 255-byte string */
        printf("    largest single write: %zu bytes\n", k->max_call);
    CHECK_STATUS(load(g.s, k->data, k->size, on_property, &v), MT_OK);
    CHECK_EQ_INT(v.count, np);
    for (int i = 0; i < np && i < v.count; i++) {
        if (!CHECK(strcmp(v.p[i].name, props[i].name) == 0))
            printf("    property %d: name '%s'\n", i, v.p[i].name);
        CHECK_EQ_INT(v.p[i].type, props[i].type);
        if (props[i].type == MT_PROPERTY_INT)
            CHECK(v.p[i].i == props[i].int_value);
        if (props[i].type == MT_PROPERTY_FLOAT)
            CHECK(memcmp(&v.p[i].f, &props[i].float_value, sizeof(double)) == 0);
        if (props[i].type == MT_PROPERTY_STRING)
            CHECK(!v.p[i].str_null && strcmp(v.p[i].str, props[i].str_value) == 0);
    }
    CHECK_STATUS(load(g.s, k->data, k->size, NULL, NULL), MT_OK); /* no callback: fine */

    /* invalid properties, after a valid one: refused by the query and by save, nothing written */
    const mt_property bad[] = {
        { NULL, MT_PROPERTY_INT, 0, 1, 0.0, NULL }, { "", MT_PROPERTY_INT, 0, 1, 0.0, NULL },
        { name64, MT_PROPERTY_INT, 0, 1, 0.0, NULL }, { "t", 0, 0, 1, 0.0, NULL },
        { "t", 4, 0, 1, 0.0, NULL }, { "t", -1, 0, 1, 0.0, NULL },
        { "s", MT_PROPERTY_STRING, 0, 0, 0.0, NULL }, { "s", MT_PROPERTY_STRING, 0, 0, 0.0, str256 } };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        mt_property list[2] = { props[3], bad[b] };
        bytes = 12345;
        CHECK_STATUS(mt_checkpoint_bytes(g.s, 1, list, 2, &bytes), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(save(g.s, 1, list, 2, k), MT_ERR_BAD_ARGUMENT);
        if (!CHECK_EQ_INT(k->calls, 0))
            printf("    bad property %zu\n", b);
    }
    free(g.block), free(k), free(img);
}

int main(void)
{
    test_size_chunks_crc();
    test_resume_bit_identical(MT_OPTIMIZER_SGD);
    test_resume_bit_identical(MT_OPTIMIZER_ADAM);
    test_resume_bit_identical(MT_OPTIMIZER_ADAMW);
    test_resume_without_state(MT_OPTIMIZER_SGD);
    test_resume_without_state(MT_OPTIMIZER_ADAM);
    test_resume_without_state(MT_OPTIMIZER_ADAMW);
    test_properties();
    return MT_TEST_END();
}
