/*
 * session_util.h: helpers shared by the session-level tests (header-only, like mt_test.h).
 *   - sess: a session on a malloc'ed arena of exactly mt_plan()'s total_bytes, pre-filled
 *     with junk (init must not rely on zeroed memory), laid out from that plan;
 *   - param_data / param_value / weights_finite / same_params / same_counters: the weights a
 *     session uses (arena copy or image, or both: mt_param_info.held), finite, and its counters, compared bit for bit; feed_rows:
 *     deterministic batches;
 *   - sink / source: memory-backed mt_write_fn / mt_read_fn that record their calls and can
 *     fail on a chosen call, for checkpoints and exported images.
 */
#ifndef SESSION_UTIL_H
#define SESSION_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "microtrain.h"
#include "mt_test.h"

typedef struct sess {
    uint8_t *block, *arena; /* block from malloc; arena = block aligned to MT_ARENA_ALIGN */
    size_t bytes;
    mt_session *s;
} sess;

static inline mt_status sess_open(sess *g, const uint8_t *img, size_t ib, const mt_train_config *cfg)
{
    mt_memory_plan plan;
    memset(g, 0, sizeof *g);
    mt_status st = mt_plan(img, ib, cfg, &plan);
    if (st != MT_OK)
        return st;
    g->bytes = plan.total_bytes;
    g->block = (uint8_t *)malloc(g->bytes + MT_ARENA_ALIGN);
    g->arena = g->block + (MT_ARENA_ALIGN - (uintptr_t)g->block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    memset(g->arena, 0x5A, g->bytes);
    return mt_session_init_from_plan(&g->s, &plan, cfg, g->arena, g->bytes);
}

/* The weights at position p as the session uses them, in one array: its arena copy or the
 * image's; NULL for a weight whose first rows alone the arena holds (param_value reads it). */
static inline const float *param_data(mt_session *s, int p, int32_t *count)
{
    mt_param_info info;
    if (mt_session_param(s, p, &info) != MT_OK || (info.held != 0 && info.held != info.count))
        return NULL;
    *count = info.count;
    return info.trained ? info.data : info.image_data;
}

/* Element i of the weight info describes as the session uses it: the arena's (the first
 * info.held elements), else the image's (mt_param_info.held). */
static inline float param_value(const mt_param_info *info, int32_t i)
{
    return i < info->held ? info->data[i] : info->image_data[i];
}

/* Every weight the session uses is finite. */
static inline int weights_finite(mt_session *s)
{
    int32_t n = 0;
    mt_session_param_count(s, &n);
    for (int p = 0; p < n; p++) {
        mt_param_info info;
        if (mt_session_param(s, p, &info) != MT_OK) return 0;
        for (int32_t i = 0; i < info.count; i++)
            if (!isfinite(param_value(&info, i))) return 0;
    }
    return 1;
}

/* Every weight of a and b equal bit for bit. */
static inline int same_params(mt_session *a, mt_session *b)
{
    int32_t na = 0, nb = 0;
    mt_session_param_count(a, &na), mt_session_param_count(b, &nb);
    for (int p = 0; p < na && na == nb; p++) {
        mt_param_info ia, ib;
        if (mt_session_param(a, p, &ia) != MT_OK || mt_session_param(b, p, &ib) != MT_OK || ia.count != ib.count)
            return 0;
        for (int32_t i = 0; i < ia.count; i++) {
            const float va = param_value(&ia, i), vb = param_value(&ib, i);
            if (memcmp(&va, &vb, 4) != 0) return 0;
        }
    }
    return na == nb;
}

/* Same step and epoch counters and bitwise the same learning rate. */
static inline int same_counters(const mt_session *a, const mt_session *b)
{
    int64_t sa = -1, ea = -1, sb = -2, eb = -2;
    float la = 0.f, lb = 1.f;
    mt_session_counters(a, &sa, &ea), mt_session_counters(b, &sb, &eb);
    mt_session_get_learning_rate(a, &la), mt_session_get_learning_rate(b, &lb);
    return sa == sb && ea == eb && memcmp(&la, &lb, sizeof la) == 0;
}

/* Rows first..first+rows-1 of input 0 (in features, uniform in [-1, 1)), drawn from seed
 * with mt_test.h's generator; returns the session's target buffer (its bytes in *tb), which
 * the caller fills from the generator next. */
static inline void *feed_inputs(mt_session *s, int first, int rows, unsigned seed, int in, int32_t *tb)
{
    float *x;
    void *t;
    int32_t count;
    mt_test_seed(seed);
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, &t, tb);
    for (int i = 0; i < rows * in && (first * in + i) < count; i++)
        x[first * in + i] = mt_test_uniform(-1.f, 1.f);
    return t;
}

/* feed_inputs, and rows first..first+rows-1 of the float targets (out values, uniform in
 * [0, 1)). */
static inline void feed_rows(mt_session *s, int first, int rows, unsigned seed, int in, int out)
{
    int32_t tb;
    void *t = feed_inputs(s, first, rows, seed, in, &tb);
    for (int i = 0; i < rows * out && 4 * (first * out + i) < tb; i++)
        ((float *)t)[first * out + i] = mt_test_uniform(0.f, 1.f);
}

#define SINK_CAP 16384 /* bytes a sink holds */

typedef struct sink {
    uint8_t data[SINK_CAP];
    size_t size, max_call;                /* bytes held; largest single write */
    int calls, fail_at, calls_after_fail; /* fail_at: number of the call that fails, -1 none */
    mt_status fail_with;                  /* what the failing call returns */
} sink;

static inline sink *sink_clear(sink *k)
{
    memset(k, 0, sizeof *k);
    k->fail_at = -1;
    return k;
}

static inline sink *sink_new(void)
{
    return sink_clear((sink *)malloc(sizeof(sink)));
}

static inline mt_status sink_write(void *user, const void *data, size_t bytes)
{
    sink *k = (sink *)user;
    int call = k->calls++;
    if (k->fail_at >= 0 && call > k->fail_at)
        k->calls_after_fail++;
    if (bytes > k->max_call)
        k->max_call = bytes;
    if (call == k->fail_at)
        return k->fail_with;
    if (bytes > SINK_CAP - k->size)
        return MT_ERR_IO;
    memcpy(k->data + k->size, data, bytes);
    k->size += bytes;
    return MT_OK;
}

typedef struct source {
    const uint8_t *data;
    size_t size; /* bytes readable: a read past them counts in out_of_bounds and fails */
    int calls, fail_at, out_of_bounds;
    mt_status fail_with;
} source;

static inline mt_status source_read(void *user, size_t offset, void *out, size_t bytes)
{
    source *r = (source *)user;
    int call = r->calls++;
    if (call == r->fail_at)
        return r->fail_with;
    if (offset > r->size || bytes > r->size - offset) {
        r->out_of_bounds++;
        return MT_ERR_IO;
    }
    memcpy(out, r->data + offset, bytes);
    return MT_OK;
}

#endif /* SESSION_UTIL_H */
