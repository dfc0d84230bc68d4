/*
 * Checkpoints of a session whose int8 layers train in place (docs/checkpoint_format.md,
 * version 4): the int8 weights, int32 biases, their SGD momentum and float master copies
 * saved and restored bit for bit, and a resumed run equal to an uninterrupted one, byte for
 * byte of their checkpoints. Model: int8_in_place_util.h (tests/convert's int8 CNN: Conv2D
 * 3x3, DepthwiseConv2D 3x3, Add, AveragePool, FullyConnected; its three weighted layers train
 * in place), x f32 [5, 5, 2] -> y f32 [4], MSE, B = 4 rows a step.
 *
 * What a reader refuses here and nowhere else: a record's layout byte that no writer sets
 * (an unknown dtype, a master flag other than 0/1 or on an int32 bias, the reserved bytes),
 * a master copy out of [-128, 127] or whose rounding is not its int8 weight, and a float
 * checkpoint of the same tensors (version 2's layout) loaded into the int8 session. Each is
 * a fault planted in a valid checkpoint (CRC recomputed), and the arena stays unchanged.
 */
#include "checkpoint_util.h"
#include "int8_in_place_util.h"

static uint8_t *master_image; /* the model with float master copies */
static size_t master_bytes;

#define IN 50  /* x [5, 5, 2] */
#define OUT 4  /* y [4] */
#define TYPED_RECORD 12u

/* steps of B rows: train steps, or (accumulating) two accumulations of 2 rows then the
 * optimizer's step, with the gradients left for the next steps to clear */
static void train_int8(mt_session *s, int steps, unsigned seed, int accumulate)
{
    for (int i = 0; i < steps; i++) {
        feed_rows(s, 0, B, seed + (unsigned)i, IN, OUT);
        if (!accumulate) {
            CHECK_STATUS(mt_session_train_step(s, B, NULL), MT_OK);
            continue;
        }
        CHECK_STATUS(mt_session_zero_grad(s), MT_OK);
        CHECK_STATUS(mt_session_accumulate(s, B, NULL), MT_OK);
        CHECK_STATUS(mt_session_optimizer_step(s), MT_OK);
    }
}

static void int8_cfg(mt_train_config *c, float momentum, int accumulate)
{
    mt_train_config_init(c);
    c->optimizer = MT_OPTIMIZER_SGD, c->batch_size = B, c->learning_rate = 0.2f;
    c->momentum = momentum, c->accumulate_gradients = accumulate;
}

static uint32_t get_le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Offset of record k's header in checkpoint ck (version 4: 12-byte headers; int8 weights
 * padded to 4 bytes, then the master copy and `arrays` f32 arrays) */
static size_t record_at(const uint8_t *ck, int k, uint32_t arrays)
{
    size_t off = HEADER;
    for (int j = 0; j < k; j++) {
        const uint32_t count = get_le(ck + off + 4), dtype = ck[off + 8], master = ck[off + 9];
        off += TYPED_RECORD + (dtype == MT_DTYPE_I8 ? (count + 3u) & ~3u : 4u * count) + 4u * count * (master + arrays);
    }
    return off;
}

/* A copy of ck (of size bytes) */
static uint8_t *dup(const uint8_t *ck, size_t size)
{
    uint8_t *c = malloc(size);
    memcpy(c, ck, size);
    return c;
}

/* Save through a session trained `steps` then `more` steps with a load between, against one
 * trained straight through: their checkpoints after the last step are the same bytes. */
static void test_resume(const uint8_t *img, size_t ib, int master, float momentum, int accumulate)
{
    mt_train_config cfg;
    sess a, b;
    int8_cfg(&cfg, momentum, accumulate);
    CHECK_STATUS(sess_open(&a, img, ib, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, img, ib, &cfg), MT_OK);
    sink *k = sink_new(), *ka = sink_new(), *kb = sink_new(), *k0 = sink_new();
    const uint32_t arrays = momentum > 0.0f ? 1u : 0u;

    CHECK_STATUS(save(a.s, 1, NULL, 0, k0), MT_OK);
    train_int8(a.s, 3, 11u, accumulate);
    size_t bytes = 0;
    CHECK_STATUS(mt_checkpoint_bytes(a.s, 1, NULL, 0, &bytes), MT_OK);
    CHECK_STATUS(save(a.s, 1, NULL, 0, k), MT_OK);
    CHECK_EQ_INT(k->size, bytes);
    CHECK_EQ_INT(k->data[4], 4); /* version 4: records say their layout */
    /* 6 records: conv W int8 [3,3,3,2] and b int32 [3], depthwise W [1,3,3,3] and b [3], dense W [4,12] and b [4] */
    CHECK_EQ_INT(get_le(k->data + 16), 6);
    static const uint32_t counts[6] = {54, 3, 27, 3, 48, 4};
    for (int r = 0; r < 6; r++) {
        const size_t at = record_at(k->data, r, arrays);
        CHECK_EQ_INT(get_le(k->data + at + 4), counts[r]);
        CHECK_EQ_INT(k->data[at + 8], r % 2 ? MT_DTYPE_I32 : MT_DTYPE_I8);
        CHECK_EQ_INT(k->data[at + 9], r % 2 ? 0 : master);
    }
    CHECK_EQ_INT(record_at(k->data, 6, arrays) + 4u, bytes); /* the records, then the trailer */
    /* the steps moved the int8 weights: the comparison below is of trained values */
    CHECK(memcmp(k->data + HEADER, k0->data + HEADER, bytes - HEADER - 4u) != 0);

    CHECK_STATUS(load(b.s, k->data, k->size, NULL, NULL), MT_OK);
    CHECK(same_counters(a.s, b.s));
    train_int8(a.s, 3, 21u, accumulate);
    train_int8(b.s, 3, 21u, accumulate);
    CHECK_STATUS(save(a.s, 1, NULL, 0, ka), MT_OK);
    CHECK_STATUS(save(b.s, 1, NULL, 0, kb), MT_OK);
    if (!CHECK(ka->size == kb->size && memcmp(ka->data, kb->data, ka->size) == 0))
        printf("    master %d, momentum %g, accumulate %d: the resumed run differs\n", master, momentum, accumulate);
    CHECK(memcmp(ka->data + HEADER, k->data + HEADER, bytes - HEADER - 4u) != 0);

    /* planted fault: one int8 weight one step off in the checkpoint (its master copy with it,
     * so the load accepts it) makes the resumed run differ, which the check above sees */
    uint8_t *off_by_one = dup(k->data, k->size);
    size_t w = record_at(off_by_one, 0, arrays) + TYPED_RECORD, e = 0;
    while (e + 1 < counts[0] && ((int8_t)off_by_one[w + e] > 60 || (int8_t)off_by_one[w + e] < -60)) ++e; /* not one the steps saturate */
    const int8_t q = (int8_t)off_by_one[w + e], moved = (int8_t)(q + 1);
    w += e;
    off_by_one[w] = (uint8_t)moved;
    if (master) {
        const float m = (float)moved;
        uint32_t bits;
        memcpy(&bits, &m, 4);
        put_le(off_by_one + w - e + ((counts[0] + 3u) & ~3u) + 4u * e, bits, 4);
    }
    recrc(off_by_one, k->size);
    CHECK_STATUS(load(b.s, off_by_one, k->size, NULL, NULL), MT_OK);
    train_int8(b.s, 3, 21u, accumulate);
    CHECK_STATUS(save(b.s, 1, NULL, 0, kb), MT_OK);
    if (!CHECK(memcmp(ka->data, kb->data, ka->size) != 0))
        printf("    master %d momentum %g acc %d: q %d moved %d, saved %d %d\n", master, momentum, accumulate, q, moved,
               (int8_t)kb->data[w], (int8_t)ka->data[w]);

    /* without the optimizer state: the weights and master copies come back, the momentum restarts */
    CHECK_STATUS(save(a.s, 0, NULL, 0, k), MT_OK);
    CHECK_EQ_INT(k->data[4], 4);
    CHECK_STATUS(load(b.s, k->data, k->size, NULL, NULL), MT_OK);
    CHECK_STATUS(save(b.s, 0, NULL, 0, kb), MT_OK);
    CHECK(kb->size == k->size && memcmp(kb->data, k->data, k->size) == 0);
    free(off_by_one), free(k), free(ka), free(kb), free(k0), free(a.block), free(b.block);
}

/* ck with the float bits of x at offset at, CRC recomputed */
static void put_float(uint8_t *ck, size_t size, size_t at, float x)
{
    uint32_t bits;
    memcpy(&bits, &x, 4);
    put_le(ck + at, bits, 4);
    recrc(ck, size);
}

/* The faults a version 4 reader refuses, each planted in a valid checkpoint (SGD with
 * momentum, master copies); the arena stays as it was. */
static void test_refusals(void)
{
    mt_train_config cfg;
    sess g, plain;
    int8_cfg(&cfg, 0.9f, 0);
    CHECK_STATUS(sess_open(&g, master_image, master_bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&plain, int8_in_place, sizeof int8_in_place, &cfg), MT_OK);
    train_int8(g.s, 2, 5u, 0);
    sink *k = sink_new();
    CHECK_STATUS(save(g.s, 1, NULL, 0, k), MT_OK);
    const size_t size = k->size, r0 = record_at(k->data, 0, 1), r1 = record_at(k->data, 1, 1);
    const size_t master_at = r0 + TYPED_RECORD + 56u; /* after 54 int8 weights padded to 56 */
    const size_t momentum_at = master_at + 4u * 54u;
    snap(&g);

    struct { size_t at; uint8_t value; const char *what; } bytes[] = {
        {r0 + 8, 9, "an unknown dtype"},
        {r0 + 8, MT_DTYPE_F32, "f32 where an int8 weight is (its values then misread)"},
        {r0 + 9, 2, "a master flag other than 0 or 1"},
        {r1 + 9, 1, "a master copy of an int32 bias"},
        {r0 + 10, 1, "reserved byte 10"},
        {r0 + 11, 1, "reserved byte 11"},
        {4, 3, "version 3 (8-byte records)"},
        {4, 5, "version 5"},
        {72, 2, "offset 72 neither 0 nor 1"},
    };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        uint8_t *bad = dup(k->data, size);
        bad[bytes[i].at] = bytes[i].value;
        recrc(bad, size);
        if (!CHECK(refused(&g, bad, size, MT_ERR_BAD_CHECKPOINT)))
            printf("    accepted %s\n", bytes[i].what);
        free(bad);
    }

    /* a master copy whose rounding is not its weight, one out of [-128, 127] (its weight set
     * to the saturated rounding, so the range alone refuses it), a NaN one, NaN momentum */
    const int8_t q0 = (int8_t)k->data[r0 + TYPED_RECORD];
    struct { size_t at; float value; int weight; const char *what; } floats[] = {
        {master_at, (float)q0 + 1.0f, 256, "a master copy one step from its weight"},
        {master_at, 200.0f, 127, "a master copy of 200 over a weight of 127"},
        {master_at, -128.5f, -128, "a master copy of -128.5 over a weight of -128"},
        {master_at, NAN, 256, "a NaN master copy"},
        {momentum_at, INFINITY, 256, "an infinite momentum"},
    };
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        uint8_t *bad = dup(k->data, size);
        if (floats[i].weight != 256) bad[r0 + TYPED_RECORD] = (uint8_t)(int8_t)floats[i].weight;
        put_float(bad, size, floats[i].at, floats[i].value);
        if (!CHECK(refused(&g, bad, size, MT_ERR_BAD_CHECKPOINT)))
            printf("    accepted %s\n", floats[i].what);
        free(bad);
    }
    /* the edge values a run writes load: a weight of -128 with its master copy (the image's
     * int8 weight, untouched), and 127 */
    uint8_t *edge = dup(k->data, size);
    edge[r0 + TYPED_RECORD] = 0x80;
    put_float(edge, size, master_at, -128.0f);
    CHECK_STATUS(load(g.s, edge, size, NULL, NULL), MT_OK);
    edge[r0 + TYPED_RECORD] = 127;
    put_float(edge, size, master_at, 126.5f); /* a tie: rounds to 126, not the weight */
    snap(&g);
    CHECK(refused(&g, edge, size, MT_ERR_BAD_CHECKPOINT));
    free(edge);

    /* another run's checkpoint: the session without master copies refuses this one */
    CHECK_STATUS(load(plain.s, k->data, size, NULL, NULL), MT_ERR_CHECKPOINT_MISMATCH);

    /* the same tensors saved in version 2's float layout (8-byte records, f32 weights, no
     * master copy) are another run's: refused as a mismatch, not read as int8 */
    uint8_t *v2 = malloc(size * 4);
    size_t in = HEADER, outp = HEADER;
    memcpy(v2, k->data, HEADER);
    put_le(v2 + 4, 2, 2);
    for (int r = 0; r < 6; r++) {
        const uint32_t count = get_le(k->data + in + 4), dtype = k->data[in + 8], master = k->data[in + 9];
        memcpy(v2 + outp, k->data + in, 8);
        outp += 8, in += TYPED_RECORD;
        for (uint32_t e = 0; e < count; e++) {
            const float x = dtype == MT_DTYPE_I8 ? (float)(int8_t)k->data[in + e] : (float)(int32_t)get_le(k->data + in + 4 * e);
            uint32_t bits;
            memcpy(&bits, &x, 4);
            put_le(v2 + outp + 4 * e, bits, 4);
        }
        outp += 4u * count;
        in += (dtype == MT_DTYPE_I8 ? (count + 3u) & ~3u : 4u * count) + 4u * count * master;
        memcpy(v2 + outp, k->data + in, 4u * count); /* the momentum */
        outp += 4u * count, in += 4u * count;
    }
    put_le(v2 + 8, outp + 4, 4);
    recrc(v2, outp + 4);
    CHECK(refused(&g, v2, outp + 4, MT_ERR_CHECKPOINT_MISMATCH));
    free(v2), free(k), free(g.block), free(plain.block);
}

int main(void)
{
    master_image = int8_in_place_master(&master_bytes);
    for (int master = 0; master < 2; master++) {
        const uint8_t *img = master ? master_image : int8_in_place;
        const size_t ib = master ? master_bytes : sizeof int8_in_place;
        test_resume(img, ib, master, 0.0f, 0);
        test_resume(img, ib, master, 0.9f, 0);
        test_resume(img, ib, master, 0.9f, 1);
    }
    test_refusals();
    free(master_image);
    return MT_TEST_END();
}
