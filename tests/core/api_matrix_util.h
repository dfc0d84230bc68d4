/*
 * api_matrix_util.h: what the bad-input matrix programs (test_api_model.c,
 * test_api_session.c, test_api_checkpoint.c) share, header-only like mt_test.h:
 *   - guarded: an arena with 64 guard bytes on each side; CALL / CALL2 check a call's status
 *     and, while `current` points at an arena, that its guard bytes are intact;
 *   - the model (x[3] -> Dense 4 tanh -> Dense 2, built by build_model()), its configuration
 *     (Adam, B = 4, accumulated gradients) and plan, and fill() for random rows;
 *   - mem: a memory-backed write / read callback pair that can fail every call.
 */
#ifndef API_MATRIX_UTIL_H
#define API_MATRIX_UTIL_H

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "microtrain_storage.h"
#include "mt_test.h"

#define GUARD 64
#define GUARD_BYTE 0xA5
#define B 4

/* ---- an arena with guard bytes on both sides -------------------------------------------- */

typedef struct guarded {
    uint8_t *raw;   /* from malloc */
    uint8_t *block; /* raw rounded up to 16 */
    uint8_t *arena;
    size_t bytes;
} guarded;

static inline guarded guarded_new(size_t bytes)
{
    guarded g;
    g.bytes = bytes;
    g.raw = malloc(2 * GUARD + bytes + 16);
    g.block = g.raw + ((16u - (uintptr_t)g.raw % 16u) % 16u);
    memset(g.block, GUARD_BYTE, 2 * GUARD + bytes);
    g.arena = g.block + GUARD;
    return g;
}

static inline int guards_ok(const guarded *g)
{
    for (size_t i = 0; i < GUARD; ++i)
        if (g->block[i] != GUARD_BYTE || g->block[GUARD + g->bytes + i] != GUARD_BYTE) return 0;
    return 1;
}

static guarded *current; /* checked by CALL after every call */

#define CALL(expr, want)                                                                     \
    do {                                                                                     \
        CHECK_STATUS((expr), (want));                                                        \
        if (current) CHECK(guards_ok(current));                                              \
    } while (0)

/* either of two statuses (where the header allows both, e.g. a zero-length image) */
#define CALL2(expr, want1, want2)                                                            \
    do {                                                                                     \
        mt_status st_ = (expr);                                                              \
        CHECK(st_ == (want1) || st_ == (want2));                                             \
        if (current) CHECK(guards_ok(current));                                              \
    } while (0)

/* ---- the model ---------------------------------------------------------------------------- */

static uint8_t *image;
static size_t image_bytes;

static inline void config(mt_train_config *cfg)
{
    mt_train_config_init(cfg);
    cfg->optimizer = MT_OPTIMIZER_ADAM;
    cfg->batch_size = B;
    cfg->accumulate_gradients = 1;
}

static inline size_t plan_bytes(const mt_train_config *cfg)
{
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(image, image_bytes, cfg, &plan), MT_OK);
    return plan.total_bytes;
}

/* A session of the model in a guarded arena of its planned size, which becomes `current`. */
static inline mt_session *guarded_session(const mt_train_config *cfg, guarded *g)
{
    mt_session *s = NULL;
    *g = guarded_new(plan_bytes(cfg));
    current = g;
    CALL(mt_session_init(&s, image, image_bytes, cfg, g->arena, g->bytes), MT_OK);
    return s;
}

static inline void fill(mt_session *s)
{
    float *x;
    void *y;
    int32_t count, bytes;
    if (mt_session_input(s, 0, &x, &count) != MT_OK || mt_session_target(s, &y, &bytes) != MT_OK) return;
    for (int32_t i = 0; i < count; ++i) x[i] = mt_test_uniform(-1.0f, 1.0f);
    for (int32_t i = 0; i < bytes / 4; ++i) ((float *)y)[i] = mt_test_uniform(-1.0f, 1.0f);
}

static inline void build_model(void)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 3, spec.hidden = 4, spec.out = 2, spec.hidden_act = MT_OP_TANH;
    image = ib_build_mlp(&spec, &image_bytes);
}

/* ---- callbacks ---------------------------------------------------------------------------- */

typedef struct mem {
    uint8_t data[8192];
    size_t size;
    mt_status fail_with; /* returned by every call when nonzero */
} mem;

static inline mt_status mem_write(void *user, const void *data, size_t bytes)
{
    mem *m = user;
    if (m->fail_with) return m->fail_with;
    if (bytes > sizeof m->data - m->size) return MT_ERR_IO;
    memcpy(m->data + m->size, data, bytes);
    m->size += bytes;
    return MT_OK;
}

static inline mt_status mem_read(void *user, size_t offset, void *data, size_t bytes)
{
    mem *m = user;
    if (m->fail_with) return m->fail_with;
    if (offset > m->size || bytes > m->size - offset) return MT_ERR_IO;
    memcpy(data, m->data + offset, bytes);
    return MT_OK;
}

#endif /* API_MATRIX_UTIL_H */
