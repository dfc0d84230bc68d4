/*
 * checkpoint_util.h: what the checkpoint programs (test_checkpoint_roundtrip.c,
 * test_checkpoint_refusals.c, test_checkpoint_callbacks.c, test_export_image.c) share,
 * header-only like session_util.h, whose sessions, sinks and sources they use:
 *   - save / load through memory (a load must never read past the size it was given);
 *   - the model x[3] -> Dense(W1[4,3], b1) -> tanh -> Dense(W2[2,4], b2), MSE, B = 4 rows per
 *     step, its configurations per optimizer, and train() over deterministic rows;
 *   - put_le / recrc to patch a checkpoint and keep its CRC valid; records_bytes;
 *   - seen / on_property: a property callback that records what it is given;
 *   - snap / refused: a refused load must leave every arena byte as it was.
 */
#ifndef CHECKPOINT_UTIL_H
#define CHECKPOINT_UTIL_H

#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define B 4
#define HEADER 80

/* Load size bytes; the core must never ask past them. */
static inline mt_status load(mt_session *s, const uint8_t *data, size_t size, mt_property_fn fn, void *user)
{
    source r = { data, size, 0, -1, 0, MT_OK };
    mt_status st = mt_checkpoint_load(s, size, source_read, &r, fn, user);
    CHECK_EQ_INT(r.out_of_bounds, 0);
    return st;
}

static inline mt_status save(mt_session *s, int include, const mt_property *p, int np, sink *k)
{
    k->size = 0, k->calls = 0, k->max_call = 0;
    return mt_checkpoint_save(s, include, p, np, sink_write, k);
}

static inline uint8_t *model(int hidden, unsigned seed, size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.hidden = hidden, spec.hidden_act = MT_OP_TANH, spec.seed = seed;
    return ib_build_mlp(&spec, bytes);
}

static inline void make_cfg(mt_train_config *c, int optimizer)
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

static inline void train(mt_session *s, int steps, unsigned seed, float *losses)
{
    for (int i = 0; i < steps; i++) {
        float l = 0.f;
        feed(s, seed + (unsigned)i);
        CHECK_STATUS(mt_session_train_step(s, B, &l), MT_OK);
        if (losses)
            losses[i] = l;
    }
}

static inline void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void recrc(uint8_t *ck, size_t size)
{
    put_le(ck + size - 4, ib_crc32(ck, size - 4), 4);
}

/* Records of the 4 trained tensors W1[12] b1[4] W2[8] b2[2]: 8-byte headers, 26 floats each
 * of weights and of every optimizer state array. */
static inline size_t records_bytes(int arrays)
{
    return 4 * 8 + 4u * 26u * (size_t)(1 + arrays);
}

static const mt_property two_props[2] = {
    { "run", MT_PROPERTY_STRING, 0, 0, 0.0, "resume-test" },
    { "seen", MT_PROPERTY_INT, 0, 1234, 0.0, NULL },
};

/* ---- a property callback ----------------------------------------------------------------- */

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

static inline mt_status on_property(void *user, const mt_property *p)
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

/* ---- the arena before a load that must be refused ---------------------------------------- */

static uint8_t *snapshot;

static inline void snap(const sess *g)
{
    snapshot = realloc(snapshot, g->bytes);
    memcpy(snapshot, g->arena, g->bytes);
}

/* A load of (data, size) into t must fail with want and leave every arena byte as it was. */
static inline int refused(sess *t, const uint8_t *data, size_t size, mt_status want)
{
    mt_status st = load(t->s, data, size, NULL, NULL);
    int same = memcmp(t->arena, snapshot, t->bytes) == 0;
    return st == want && same;
}

#endif /* CHECKPOINT_UTIL_H */
