/*
 * guarded_session_util.h: what the session programs (test_session_plan.c,
 * test_session_train_step.c, test_session_eval_infer.c) share, header-only like mt_test.h:
 *   - guarded: a session on an arena of exactly plan.total_bytes between two guard zones,
 *     guards_intact() checks them;
 *   - fill_inputs / fill_targets: deterministic rows; config: optimizer, loss and batch size.
 * Weights are compared with session_util.h's param_data and same_params.
 * Glossary: B = batch size, n = valid rows, I/Hd/O = input/hidden/output features.
 */
#ifndef GUARDED_SESSION_UTIL_H
#define GUARDED_SESSION_UTIL_H

#include <math.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define GUARD 64 /* bytes before and after the arena, a multiple of MT_ARENA_ALIGN */
#define GUARD_BYTE 0xA5

/* An arena of exactly plan.total_bytes between two guard zones, itself pre-filled with
 * junk: init must not rely on zeroed memory (stack arenas are not zero). */
typedef struct guarded {
    uint8_t *block, *arena;
    size_t bytes;
    mt_session *s;
} guarded;

static inline mt_status open_guarded(guarded *g, const uint8_t *image, size_t image_bytes,
                              const mt_train_config *cfg)
{
    mt_memory_plan plan;
    mt_status st = mt_plan(image, image_bytes, cfg, &plan);
    memset(g, 0, sizeof *g);
    if (st != MT_OK)
        return st;
    g->bytes = plan.total_bytes;
    g->block = malloc(plan.total_bytes + 2 * GUARD + MT_ARENA_ALIGN);
    g->arena = g->block + GUARD + (MT_ARENA_ALIGN - (uintptr_t)(g->block + GUARD) % MT_ARENA_ALIGN) %
                                      MT_ARENA_ALIGN;
    memset(g->block, GUARD_BYTE, plan.total_bytes + 2 * GUARD + MT_ARENA_ALIGN);
    return mt_session_init(&g->s, image, image_bytes, cfg, g->arena, g->bytes);
}

static inline int guards_intact(const guarded *g)
{
    for (uint8_t *p = g->block; p < g->arena; p++)
        if (*p != GUARD_BYTE)
            return 0;
    for (size_t i = 0; i < GUARD; i++)
        if (g->arena[g->bytes + i] != GUARD_BYTE)
            return 0;
    return 1;
}

static inline void fill_inputs(mt_session *s, int rows, int in, unsigned seed)
{
    float *x;
    int32_t count;
    mt_test_seed(seed);
    CHECK_STATUS(mt_session_input(s, 0, &x, &count), MT_OK);
    for (int i = 0; i < rows * in && i < count; i++)
        x[i] = mt_test_uniform(-1.f, 1.f);
}

/* Float targets in [0, 1) (valid for every loss but the sparse one), or labels. */
static inline void fill_targets(mt_session *s, int rows, int out, int sparse, unsigned seed)
{
    void *t;
    int32_t bytes;
    mt_test_seed(seed);
    CHECK_STATUS(mt_session_target(s, &t, &bytes), MT_OK);
    for (int i = 0; i < rows * (sparse ? 1 : out) && 4 * i < bytes; i++) {
        if (sparse)
            ((int32_t *)t)[i] = (int32_t)(mt_test_rand_u32() % (unsigned)out);
        else
            ((float *)t)[i] = mt_test_uniform(0.f, 1.f);
    }
}

static inline void config(mt_train_config *cfg, int optimizer, int loss, int batch)
{
    mt_train_config_init(cfg);
    cfg->optimizer = optimizer, cfg->loss = loss, cfg->batch_size = batch;
}

#endif /* GUARDED_SESSION_UTIL_H */
