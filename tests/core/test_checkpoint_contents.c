/*
 * Checkpoint contents (docs/checkpoint_format.md, "Loading rules"), beside the structure tests of
 * test_checkpoint_refusals.c and its siblings:
 *   - lying checkpoints: a valid CRC over values no training run produces (NaN/Inf weights,
 *     momentum or Adam moments, a negative Adam v, an unknown optimizer or state size for it,
 *     β powers outside [0, 1] or not 1 without state, negative counters, bad learning rates)
 *     are MT_ERR_BAD_CHECKPOINT and leave the session's arena byte for byte as it was;
 *   - honest edge values load: β1^t = 0 (β1 = 0), v = 0, a huge but finite weight or rate,
 *     after which no step makes a weight non-finite;
 *   - another optimizer's checkpoint is MT_ERR_CHECKPOINT_MISMATCH, with or without state;
 *   - version 1 checkpoints still load; version 2 carries the base learning rate;
 *   - the buffer forms write and read exactly the streamed bytes.
 * Model: x[3] -> Dense(W1[4,3], b1) -> tanh -> Dense(W2[2,4], b2), MSE; B = 4 rows per step.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define B 4
#define HEADER 80

static uint8_t *image;
static size_t image_bytes;

static mt_train_config make_cfg(int optimizer, float momentum)
{
    mt_train_config c;
    mt_train_config_init(&c);
    c.optimizer = optimizer, c.batch_size = B, c.learning_rate = 0.05f, c.momentum = momentum;
    if (optimizer == MT_OPTIMIZER_ADAMW)
        c.weight_decay = 0.1f;
    return c;
}

#define feed(s, seed) feed_rows((s), 0, B, (seed), 3, 2)

static void train(mt_session *s, int steps, unsigned seed)
{
    for (int i = 0; i < steps; i++) {
        feed(s, seed + (unsigned)i);
        CHECK_STATUS(mt_session_train_step(s, B, NULL), MT_OK);
    }
}

static mt_status load(mt_session *s, const uint8_t *data, size_t size)
{
    source r = { data, size, 0, -1, 0, MT_OK };
    return mt_checkpoint_load(s, size, source_read, &r, NULL, NULL);
}

static void save(const mt_session *s, int include, sink *k)
{
    sink_clear(k);
    CHECK_STATUS(mt_checkpoint_save(s, include, NULL, 0, sink_write, k), MT_OK);
}

static void recrc(uint8_t *ck, size_t size)
{
    ib_put_u32(ck, size - 4, ib_crc32(ck, size - 4));
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static void put_f64(uint8_t *p, double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

/* Byte offset of record `record`'s 8-byte header (u32 tensor index, u32 count). */
static size_t record_at(const uint8_t *ck, int record)
{
    const uint32_t arrays = ib_get_u32(ck, 24);
    size_t off = HEADER;
    for (int r = 0; r < record; r++)
        off += 8 + 4u * (size_t)ib_get_u32(ck, off + 4) * (1 + arrays);
    return off;
}

/* Byte offset of element `index` of array `array` (0 weights, 1.. state) of record `record`. */
static size_t value_at(const uint8_t *ck, int record, uint32_t array, uint32_t index)
{
    const size_t off = record_at(ck, record);
    return off + 8 + 4u * ((size_t)ib_get_u32(ck, off + 4) * array + index);
}

/* The arena of t before a load that must be refused, and the check that it is untouched. */
static uint8_t *before;

static int refused(sess *t, const uint8_t *ck, size_t size, mt_status want)
{
    before = realloc(before, t->bytes);
    memcpy(before, t->arena, t->bytes);
    const mt_status st = load(t->s, ck, size);
    if (st != want)
        printf("    status %d, expected %d\n", st, want);
    return st == want && memcmp(before, t->arena, t->bytes) == 0;
}

/* ---- lying values ------------------------------------------------------------------------- */

static void test_lying_values(int optimizer, float momentum)
{
    const mt_train_config cfg = make_cfg(optimizer, momentum);
    sess s, t;
    sink *k = sink_new();
    CHECK_STATUS(sess_open(&s, image, image_bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&t, image, image_bytes, &cfg), MT_OK);
    train(s.s, 3, 10u), train(t.s, 2, 20u);
    save(s.s, 1, k);
    const uint32_t arrays = ib_get_u32(k->data, 24);
    uint8_t *m = malloc(k->size);
    const float lies[] = { NAN, -NAN, INFINITY, -INFINITY };
    const float negative[] = { -1.0f, -1e-45f, -FLT_MAX };
    int wrong = 0, cases = 0;
    for (int record = 0; record < 4; record += 3) /* W1 and b2: first and last record */
        for (uint32_t array = 0; array <= arrays; array++)
            for (uint32_t index = 0; index < 2; index++) {
                const uint32_t element = index ? ib_get_u32(k->data, record_at(k->data, record) + 4) - 1 : 0;
                const size_t at = value_at(k->data, record, array, element);
                const int is_v = array == 2;
                for (size_t v = 0; v < 4 + (is_v ? 3u : 0u); v++, cases++) {
                    memcpy(m, k->data, k->size);
                    ib_put_u32(m, at, f32_bits(v < 4 ? lies[v] : negative[v - 4]));
                    recrc(m, k->size);
                    if (!refused(&t, m, k->size, MT_ERR_BAD_CHECKPOINT) && wrong++ < 4)
                        printf("    optimizer %d: record %d array %u element %u value %zu accepted\n", optimizer,
                               record, array, element, v);
                }
            }
    CHECK_EQ_INT(wrong, 0);
    CHECK(cases >= 16);

    /* honest extremes load, and the next steps keep every weight finite: a huge weight, the
     * largest momentum or m, v = 0 */
    for (uint32_t array = 0; array <= arrays; array++) {
        memcpy(m, k->data, k->size);
        ib_put_u32(m, value_at(m, 3, array, 0), f32_bits(array == 2 ? 0.0f : FLT_MAX));
        recrc(m, k->size);
        if (!CHECK_STATUS(load(t.s, m, k->size), MT_OK))
            printf("    optimizer %d: extreme value in array %u refused\n", optimizer, array);
        for (int i = 0; i < 3; i++) {
            feed(t.s, 30u + (unsigned)i);
            const mt_status st = mt_session_train_step(t.s, B, NULL);
            CHECK(st == MT_OK || st == MT_ERR_NUMERIC);
            CHECK(weights_finite(t.s));
        }
    }
    free(s.block), free(t.block), free(k), free(m);
}

/* ---- lying header ------------------------------------------------------------------------- */

static void test_lying_header(void)
{
    const mt_train_config adam = make_cfg(MT_OPTIMIZER_ADAM, 0.f), sgdm = make_cfg(MT_OPTIMIZER_SGD, 0.9f);
    sess a, t, g;
    sink *k = sink_new(), *k0 = sink_new(), *km = sink_new();
    CHECK_STATUS(sess_open(&a, image, image_bytes, &adam), MT_OK);
    CHECK_STATUS(sess_open(&t, image, image_bytes, &adam), MT_OK);
    CHECK_STATUS(sess_open(&g, image, image_bytes, &sgdm), MT_OK);
    train(a.s, 3, 40u), train(t.s, 2, 50u), train(g.s, 2, 60u);
    save(a.s, 1, k), save(a.s, 0, k0), save(g.s, 1, km);
    uint8_t *m = malloc(k->size);
    const struct { int which; size_t at; int bytes; uint64_t value; const char *what; } fields[] = {
        /* which: 0 Adam with state, 1 Adam without, 2 SGD + momentum with state */
        { 0, 20, 4, 3, "optimizer 3" }, { 1, 20, 4, 0xFFFFFFFFu, "optimizer -1" },
        { 0, 20, 4, MT_OPTIMIZER_SGD, "SGD with 2 state arrays" }, { 2, 20, 4, MT_OPTIMIZER_ADAM, "Adam with 1 array" },
        { 0, 32, 8, UINT64_MAX, "step -1" }, { 0, 40, 8, 1ull << 63, "epoch INT64_MIN" },
        { 0, 48, 4, 0x7FC00000u, "lr NaN" }, { 0, 48, 4, 0xBF800000u, "lr -1" },
        { 0, 48, 4, 0x7F800000u, "lr +inf" }, { 0, 48, 4, 0x80000001u, "lr -denormal" },
        { 0, 52, 4, 0, "base lr 0" }, { 0, 52, 4, 0x80000000u, "base lr -0" },
        { 0, 52, 4, 0xBF800000u, "base lr -1" }, { 0, 52, 4, 0x7F800000u, "base lr +inf" },
        { 0, 52, 4, 0xFFC00000u, "base lr NaN" } };
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        const sink *src = fields[f].which == 0 ? k : fields[f].which == 1 ? k0 : km;
        sess *into = fields[f].which == 2 ? &g : &t;
        memcpy(m, src->data, src->size);
        for (int i = 0; i < fields[f].bytes; i++)
            m[fields[f].at + (size_t)i] = (uint8_t)(fields[f].value >> (8 * i));
        recrc(m, src->size);
        if (!CHECK(refused(into, m, src->size, MT_ERR_BAD_CHECKPOINT)))
            printf("    %s\n", fields[f].what);
    }
    /* β powers: outside [0, 1], or other than exactly 1 where no state is stored */
    const double powers[] = { NAN, -0.5, 1.5, INFINITY, -0.0 - 1e-300, 1.0 + 1e-15 };
    for (size_t p = 0; p < sizeof powers / sizeof powers[0]; p++)
        for (size_t at = 56; at <= 64; at += 8) {
            memcpy(m, k->data, k->size);
            put_f64(m + at, powers[p]);
            recrc(m, k->size);
            if (!CHECK(refused(&t, m, k->size, MT_ERR_BAD_CHECKPOINT)))
                printf("    beta power at %zu: %g\n", at, powers[p]);
        }
    for (size_t at = 56; at <= 64; at += 8) {
        memcpy(m, k0->data, k0->size);
        put_f64(m + at, 0.5);
        recrc(m, k0->size);
        CHECK(refused(&t, m, k0->size, MT_ERR_BAD_CHECKPOINT));
    }
    /* a huge but finite learning rate is a legal rate: it loads, and the guard refuses the
     * update it would make (Adam: lr / (1 - β1^t) overflows) */
    memcpy(m, k->data, k->size);
    ib_put_u32(m, 48, f32_bits(FLT_MAX));
    recrc(m, k->size);
    CHECK_STATUS(load(t.s, m, k->size), MT_OK);
    feed(t.s, 70u);
    CHECK_STATUS(mt_session_train_step(t.s, B, NULL), MT_ERR_NUMERIC);
    CHECK(weights_finite(t.s));
    free(a.block), free(t.block), free(g.block), free(k), free(k0), free(km), free(m);
}

/* β1 = 0 is a legal configuration and gives β1^t = 0 after one step: such a checkpoint loads
 * and resumes bit for bit. */
static void test_beta_power_zero_loads(void)
{
    mt_train_config cfg = make_cfg(MT_OPTIMIZER_ADAM, 0.f);
    cfg.beta1 = 0.0f;
    sess a, b;
    sink *k = sink_new();
    CHECK_STATUS(sess_open(&a, image, image_bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, image, image_bytes, &cfg), MT_OK);
    train(a.s, 2, 80u);
    save(a.s, 1, k);
    int zero = 1;
    for (int i = 56; i < 64; i++) /* β1^t = +0.0 */
        zero = zero && k->data[i] == 0;
    CHECK(zero);
    CHECK_STATUS(load(b.s, k->data, k->size), MT_OK);
    train(a.s, 2, 90u), train(b.s, 2, 90u);
    CHECK(same_params(a.s, b.s) && same_counters(a.s, b.s));
    free(a.block), free(b.block), free(k);
}

/* ---- another optimizer -------------------------------------------------------------------- */

/* Two checkpoints of this model hold the same weights, counters and learning rates. */
static int same_weights_and_counters(const uint8_t *a, const uint8_t *b)
{
    int same = memcmp(a + 32, b + 32, 24) == 0; /* step, epoch, lr, base lr */
    for (int r = 0; r < 4; r++)
        same = same && memcmp(a + value_at(a, r, 0, 0), b + value_at(b, r, 0, 0),
                              4u * ib_get_u32(a, record_at(a, r) + 4)) == 0;
    return same;
}

static void test_other_optimizer(void)
{
    const int optimizers[4][2] = { /* optimizer, momentum in tenths */
        { MT_OPTIMIZER_SGD, 0 }, { MT_OPTIMIZER_SGD, 9 }, { MT_OPTIMIZER_ADAM, 0 }, { MT_OPTIMIZER_ADAMW, 0 } };
    sess s[4];
    sink *k[4][2], *again = sink_new();
    for (int i = 0; i < 4; i++) {
        const mt_train_config cfg = make_cfg(optimizers[i][0], 0.1f * (float)optimizers[i][1]);
        CHECK_STATUS(sess_open(&s[i], image, image_bytes, &cfg), MT_OK);
        train(s[i].s, 2 + i, 100u * (unsigned)i);
        CHECK_STATUS(mt_session_set_learning_rate(s[i].s, 0.001f * (float)(i + 1)), MT_OK);
        for (int include = 0; include < 2; include++)
            save(s[i].s, include, k[i][include] = sink_new());
    }
    for (int from = 0; from < 4; from++)
        for (int into = 0; into < 4; into++)
            for (int include = 0; include < 2; include++) {
                const int same = optimizers[from][0] == optimizers[into][0];
                /* SGD momentum state does not fit plain SGD; everything else of SGD does */
                const int fits = same && !(include && optimizers[from][1] && !optimizers[into][1]);
                const sink *c = k[from][include];
                if (fits) {
                    CHECK_STATUS(load(s[into].s, c->data, c->size), MT_OK);
                    save(s[into].s, 0, again);
                    if (!CHECK(same_weights_and_counters(c->data, again->data)))
                        printf("    optimizer %d%s into %d\n", from, include ? " with state" : "", into);
                } else if (!CHECK(refused(&s[into], c->data, c->size, MT_ERR_CHECKPOINT_MISMATCH))) {
                    printf("    optimizer %d%s into %d\n", from, include ? " with state" : "", into);
                }
            }
    for (int i = 0; i < 4; i++)
        free(s[i].block), free(k[i][0]), free(k[i][1]);
    free(again);
}

/* ---- versions and the base learning rate -------------------------------------------------- */

static void test_base_rate_and_version_1(void)
{
    mt_train_config cfg = make_cfg(MT_OPTIMIZER_ADAM, 0.f), other = cfg;
    other.learning_rate = 0.2f;
    sess a, b, c;
    sink *k = sink_new();
    float rate = 0.f;
    CHECK_STATUS(sess_open(&a, image, image_bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, image, image_bytes, &other), MT_OK);
    CHECK_STATUS(sess_open(&c, image, image_bytes, &other), MT_OK);
    CHECK_STATUS(mt_session_get_base_learning_rate(a.s, &rate), MT_OK);
    CHECK_BITS_EQ(rate, 0.05f);
    train(a.s, 3, 200u);
    CHECK_STATUS(mt_session_set_learning_rate(a.s, 0.0125f), MT_OK); /* a schedule decayed it */
    CHECK_STATUS(mt_session_get_base_learning_rate(a.s, &rate), MT_OK);
    CHECK_BITS_EQ(rate, 0.05f); /* the base stays */
    save(a.s, 1, k);
    CHECK_EQ_INT(ib_get_u16(k->data, 4), 2);
    CHECK_EQ_INT(ib_get_u32(k->data, 48), f32_bits(0.0125f));
    CHECK_EQ_INT(ib_get_u32(k->data, 52), f32_bits(0.05f));

    CHECK_STATUS(load(b.s, k->data, k->size), MT_OK); /* version 2: the base comes along */
    CHECK(same_params(a.s, b.s) && same_counters(a.s, b.s));
    CHECK_STATUS(mt_session_get_base_learning_rate(b.s, &rate), MT_OK);
    CHECK_BITS_EQ(rate, 0.05f);

    /* the same checkpoint as version 1 wrote it: offset 52 reserved, 0 */
    ib_put_u16(k->data, 4, 1);
    ib_put_u32(k->data, 52, 0);
    recrc(k->data, k->size);
    CHECK_STATUS(load(c.s, k->data, k->size), MT_OK);
    CHECK(same_params(a.s, c.s) && same_counters(a.s, c.s));
    CHECK_STATUS(mt_session_get_base_learning_rate(c.s, &rate), MT_OK);
    CHECK_BITS_EQ(rate, 0.2f); /* the session's own */
    train(a.s, 2, 300u), train(c.s, 2, 300u); /* and it resumes bit for bit */
    CHECK(same_params(a.s, c.s) && same_counters(a.s, c.s));
    ib_put_u32(k->data, 52, f32_bits(0.05f)); /* version 1 with a value in its reserved field */
    recrc(k->data, k->size);
    CHECK(refused(&c, k->data, k->size, MT_ERR_BAD_CHECKPOINT));
    free(a.block), free(b.block), free(c.block), free(k);
}

/* ---- buffers ------------------------------------------------------------------------------ */

static int properties_seen;

static mt_status count_property(void *user, const mt_property *p)
{
    (void)user, (void)p;
    properties_seen++;
    return MT_OK;
}

static void test_buffers(void)
{
    static const mt_property props[2] = { { "run", MT_PROPERTY_STRING, 0, 0, 0.0, "buffers" },
                                          { "seen", MT_PROPERTY_INT, 0, 77, 0.0, NULL } };
    const mt_train_config cfg = make_cfg(MT_OPTIMIZER_ADAMW, 0.f);
    sess a, b, c;
    sink *k = sink_new(), *e = sink_new(), *again = sink_new();
    static uint8_t buf[SINK_CAP + 1];
    size_t written = 0, bytes = 0;
    CHECK_STATUS(sess_open(&a, image, image_bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, image, image_bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&c, image, image_bytes, &cfg), MT_OK);
    train(a.s, 3, 400u), train(b.s, 1, 500u), train(c.s, 1, 500u);
    for (int include = 0; include < 2; include++) {
        sink_clear(k);
        CHECK_STATUS(mt_checkpoint_save(a.s, include, props, 2, sink_write, k), MT_OK);
        CHECK_STATUS(mt_checkpoint_bytes(a.s, include, props, 2, &bytes), MT_OK);
        memset(buf, 0xEE, sizeof buf);
        CHECK_STATUS(mt_checkpoint_save_buffer(a.s, include, props, 2, buf + 1, bytes, &written), MT_OK);
        CHECK_EQ_INT(written, k->size);
        CHECK(memcmp(buf + 1, k->data, k->size) == 0); /* unaligned, exact capacity: same bytes */
        CHECK(buf[0] == 0xEE && buf[1 + bytes] == 0xEE);
        CHECK_STATUS(mt_checkpoint_save_buffer(a.s, include, props, 2, buf, bytes - 1, &written),
                     MT_ERR_BAD_ARGUMENT);
    }
    /* load from the (unaligned) buffer = load through the stream */
    properties_seen = 0;
    CHECK_STATUS(mt_checkpoint_load_buffer(b.s, buf + 1, written, count_property, NULL), MT_OK);
    CHECK_EQ_INT(properties_seen, 2);
    CHECK_STATUS(mt_checkpoint_load(c.s, k->size, source_read, &(source){ k->data, k->size, 0, -1, 0, MT_OK },
                                    NULL, NULL),
                 MT_OK);
    CHECK(same_params(a.s, b.s) && same_counters(a.s, b.s) && same_params(b.s, c.s));
    save(b.s, 1, again);
    save(c.s, 1, e);
    CHECK(again->size == e->size && memcmp(again->data, e->data, e->size) == 0);
    /* a refused buffer load leaves the session as it was */
    buf[1 + HEADER + 8] ^= 1;
    before = realloc(before, b.bytes);
    memcpy(before, b.arena, b.bytes);
    CHECK_STATUS(mt_checkpoint_load_buffer(b.s, buf + 1, written, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CHECK(memcmp(before, b.arena, b.bytes) == 0);

    /* export */
    sink_clear(e);
    CHECK_STATUS(mt_session_export_image(a.s, sink_write, e), MT_OK);
    CHECK_STATUS(mt_session_export_image_buffer(a.s, buf + 3, image_bytes, &written), MT_OK);
    CHECK_EQ_INT(written, image_bytes);
    CHECK(e->size == image_bytes && memcmp(buf + 3, e->data, image_bytes) == 0);
    CHECK_STATUS(mt_session_export_image_buffer(a.s, buf, image_bytes - 1, &written), MT_ERR_BAD_ARGUMENT);
    /* buffers inside the arena or the image are refused: writing there would corrupt the session */
    CHECK_STATUS(mt_checkpoint_save_buffer(a.s, 1, NULL, 0, a.arena + a.bytes / 2, SINK_CAP, &written),
                 MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_export_image_buffer(a.s, a.arena, a.bytes, &written), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_export_image_buffer(a.s, image, image_bytes, &written), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_checkpoint_load_buffer(a.s, a.arena, k->size, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    free(a.block), free(b.block), free(c.block), free(k), free(e), free(again);
}

int main(void)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.hidden = 4, spec.hidden_act = MT_OP_TANH, spec.seed = 7u;
    image = ib_build_mlp(&spec, &image_bytes);
    test_lying_values(MT_OPTIMIZER_SGD, 0.f);
    test_lying_values(MT_OPTIMIZER_SGD, 0.9f);
    test_lying_values(MT_OPTIMIZER_ADAM, 0.f);
    test_lying_values(MT_OPTIMIZER_ADAMW, 0.f);
    test_lying_header();
    test_beta_power_zero_loads();
    test_other_optimizer();
    test_base_rate_and_version_1();
    test_buffers();
    free(image), free(before);
    return MT_TEST_END();
}
