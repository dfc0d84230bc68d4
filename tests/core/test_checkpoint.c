/*
 * Checkpoints and inference export (docs/checkpoint_format.md), through memory-backed
 * read/write callbacks:
 *   - mt_checkpoint_bytes is what save writes, in small chunks, ending in the CRC-32 trailer;
 *   - resume is bit-identical (SGD+momentum, Adam, AdamW); without optimizer state the
 *     optimizer restarts from the restored weights, counters and learning rate;
 *   - properties round-trip exactly; invalid ones are refused before a byte is written;
 *   - every refusal (truncation, bit flip, bad field with a valid CRC, other model, other
 *     trained set, other optimizer, with or without state) leaves the session's arena byte
 *     for byte as it was; lying contents: test_checkpoint_contents.c;
 *   - the model fingerprint ignores weight data; callback failures; export; bad arguments.
 * Model: x[3] -> Dense(W1[4,3], b1) -> tanh -> Dense(W2[2,4], b2), MSE; B = 4 rows per step.
 */
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define B 4
#define HEADER 80

/* Load size bytes; the core must never ask past them. */
static mt_status load(mt_session *s, const uint8_t *data, size_t size, mt_property_fn fn, void *user)
{
    source r = { data, size, 0, -1, 0, MT_OK };
    mt_status st = mt_checkpoint_load(s, size, source_read, &r, fn, user);
    CHECK_EQ_INT(r.out_of_bounds, 0);
    return st;
}

static mt_status save(mt_session *s, int include, const mt_property *p, int np, sink *k)
{
    k->size = 0, k->calls = 0, k->max_call = 0;
    return mt_checkpoint_save(s, include, p, np, sink_write, k);
}

static uint8_t *model(int hidden, unsigned seed, size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.hidden = hidden, spec.hidden_act = MT_OP_TANH, spec.seed = seed;
    return ib_build_mlp(&spec, bytes);
}

static void make_cfg(mt_train_config *c, int optimizer)
{
    mt_train_config_init(c);
    c->optimizer = optimizer, c->batch_size = B, c->learning_rate = 0.05f;
    if (optimizer == MT_OPTIMIZER_SGD)
        c->momentum = 0.9f, c->weight_decay = 0.01f;
    if (optimizer == MT_OPTIMIZER_ADAMW)
        c->weight_decay = 0.1f;
}

/* All B rows: inputs in [-1, 1), targets in [0, 1). */
#define feed(s, seed) feed_rows((s), 0, B, (seed), 3, 2)

static void train(mt_session *s, int steps, unsigned seed, float *losses)
{
    for (int i = 0; i < steps; i++) {
        float l = 0.f;
        feed(s, seed + (unsigned)i);
        CHECK_STATUS(mt_session_train_step(s, B, &l), MT_OK);
        if (losses)
            losses[i] = l;
    }
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void recrc(uint8_t *ck, size_t size)
{
    put_le(ck + size - 4, ib_crc32(ck, size - 4), 4);
}

/* Records of the 4 trained tensors W1[12] b1[4] W2[8] b2[2]: 8-byte headers, 26 floats each
 * of weights and of every optimizer state array. */
static size_t records_bytes(int arrays)
{
    return 4 * 8 + 4u * 26u * (size_t)(1 + arrays);
}

static const mt_property two_props[2] = {
    { "run", MT_PROPERTY_STRING, 0, 0, 0.0, "resume-test" },
    { "seen", MT_PROPERTY_INT, 0, 1234, 0.0, NULL },
};

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

typedef struct seen {
    int count;
    struct {
        char name[MT_PROPERTY_MAX_NAME + 2], str[MT_PROPERTY_MAX_STRING + 2];
        int32_t type, str_null;
        int64_t i;
        double f;
    } p[16];
    mt_status fail_at_second;
} seen;

static mt_status on_property(void *user, const mt_property *p)
{
    seen *v = user;
    if (v->count >= 16)
        return MT_ERR_IO;
    int n = v->count++;
    strncpy(v->p[n].name, p->name, sizeof v->p[n].name - 1);
    v->p[n].type = p->type, v->p[n].i = p->int_value, v->p[n].f = p->float_value;
    v->p[n].str_null = p->str_value == NULL;
    if (p->str_value)
        strncpy(v->p[n].str, p->str_value, sizeof v->p[n].str - 1);
    return n == 1 ? v->fail_at_second : MT_OK;
}

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

/* ---- refusals ----------------------------------------------------------------------------- */

static uint8_t *snapshot;

static void snap(const sess *g)
{
    snapshot = realloc(snapshot, g->bytes);
    memcpy(snapshot, g->arena, g->bytes);
}

/* A load of (data, size) into t must fail with want and leave every arena byte as it was. */
static int refused(sess *t, const uint8_t *data, size_t size, mt_status want)
{
    mt_status st = load(t->s, data, size, NULL, NULL);
    int same = memcmp(t->arena, snapshot, t->bytes) == 0;
    return st == want && same;
}

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
    test_size_chunks_crc();
    test_resume_bit_identical(MT_OPTIMIZER_SGD);
    test_resume_bit_identical(MT_OPTIMIZER_ADAM);
    test_resume_bit_identical(MT_OPTIMIZER_ADAMW);
    test_resume_without_state(MT_OPTIMIZER_SGD);
    test_resume_without_state(MT_OPTIMIZER_ADAM);
    test_resume_without_state(MT_OPTIMIZER_ADAMW);
    test_properties();
    test_refusals();
    test_fingerprint_ignores_weights();
    test_io_errors();
    test_export();
    test_bad_arguments();
    free(snapshot);
    return MT_TEST_END();
}
