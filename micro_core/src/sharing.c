/*
 * Greedy placement (TFLite Micro's greedy planner takes buffers largest first):
 * take buffers in some order; put each at the lowest offset where it overlaps no
 * already-placed buffer that is live at the same time. Several orders are tried
 * and the smallest result kept. Everything here is on the caller's stack: O(n²)
 * scans instead of sorted arrays.
 */
#include <stddef.h>

#include "sharing.h"

uint16_t mt_share_add(mt_sharing *sh, uint32_t bytes, uint16_t start, uint16_t end)
{
    if (sh->count >= MT_PLAN_MAX_BUFFERS) return MT_NO_BUFFER;
    uint16_t id = (uint16_t)sh->count++;
    mt_share_buffer *b = &sh->buf[id];
    b->bytes = bytes;
    b->offset = 0;
    b->start = start;
    b->end = end;
    b->root = id;
    b->shift = 0;
    b->own_bytes = bytes;
    b->own_start = start;
    b->own_end = end;
    return id;
}

uint16_t mt_share_root(const mt_sharing *sh, uint16_t id)
{
    while (sh->buf[id].root != id) id = sh->buf[id].root;
    return id;
}

void mt_share_touch(mt_sharing *sh, uint16_t id, uint16_t t)
{
    mt_share_buffer *o = &sh->buf[id], *b = &sh->buf[mt_share_root(sh, id)];
    if (t < o->own_start) o->own_start = t;
    if (t > o->own_end) o->own_end = t;
    if (t < b->start) b->start = t;
    if (t > b->end) b->end = t;
}

uint32_t mt_share_shift(const mt_sharing *sh, uint16_t id)
{
    return sh->buf[id].shift; /* every child points at its root: alias_at keeps it so */
}

void mt_share_grow(mt_sharing *sh, uint16_t id, uint32_t bytes)
{
    sh->buf[id].bytes = sh->buf[id].own_bytes = bytes;
}

void mt_share_alias_at(mt_sharing *sh, uint16_t child, uint16_t root, uint32_t shift)
{
    root = mt_share_root(sh, root);
    mt_share_buffer *c = &sh->buf[child], *r = &sh->buf[root];
    if (c->start < r->start) r->start = c->start;
    if (c->end > r->end) r->end = c->end;
    if ((uint64_t)shift + c->bytes > r->bytes) r->bytes = shift + c->bytes; /* < 4 GiB: the planner's sizes */
    for (uint32_t i = 0; i < sh->count; ++i) /* child's group moves with it */
        if (i != child && sh->buf[i].root == child) sh->buf[i].root = root, sh->buf[i].shift += shift;
    c->root = root;
    c->shift = shift;
}

static int own_live_together(const mt_share_buffer *a, const mt_share_buffer *b)
{
    return a->own_start <= b->own_end && b->own_start <= a->own_end;
}

static int live_together(const mt_share_buffer *a, const mt_share_buffer *b)
{
    return a->start <= b->end && b->start <= a->end;
}

/* Orders the greedy placement can take buffers in (mt_memory_plan.placement_order); the
 * planner keeps the best result. */
enum { BY_SIZE, BY_LIFETIME, BY_AREA, BY_START, STRATEGIES };

/* Larger key = placed earlier. */
static uint64_t order_key(const mt_share_buffer *b, int strategy)
{
    const uint64_t duration = (uint64_t)(b->end - b->start) + 1u;
    switch (strategy) {
    case BY_LIFETIME: return (duration << 32) | b->bytes;
    case BY_AREA: return duration * b->bytes;
    case BY_START: return ((uint64_t)(0xFFFFu - b->start) << 32) | b->bytes;
    default: return ((uint64_t)b->bytes << 16) | duration;
    }
}

/* One greedy pass in the given order; offsets are left in the buffers. Returns the
 * region's size, or UINT64_MAX when it cannot be addressed in 32 bits. */
static uint64_t place_in_order(mt_sharing *sh, int strategy)
{
    uint64_t region = 0;
    uint32_t placed = 0, roots = 0;
    for (uint32_t i = 0; i < sh->count; ++i) {
        roots += sh->buf[i].root == i;
        sh->buf[i].offset = UINT32_MAX; /* marks a root not yet placed */
    }
    while (placed < roots) {
        /* next: the unplaced root with the largest key (ties: lowest id, for a deterministic plan) */
        uint32_t next = MT_NO_BUFFER;
        uint64_t best = 0;
        for (uint32_t i = 0; i < sh->count; ++i) {
            const mt_share_buffer *b = &sh->buf[i];
            if (b->root != i || b->offset != UINT32_MAX) continue;
            const uint64_t key = order_key(b, strategy);
            if (next == MT_NO_BUFFER || key > best) next = i, best = key;
        }
        mt_share_buffer *nb = &sh->buf[next];
        /* lowest offset at which no buffer of the group overlaps a placed buffer of another
         * group live at the same time: a conflict at `offset` rules out everything up to
         * where that buffer ends, so jump there and rescan */
        uint64_t offset = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (uint32_t i = 0; i < sh->count; ++i) {
                const mt_share_buffer *b = &sh->buf[i];
                const uint32_t at = sh->buf[b->root].offset;
                if (b->root == next || at == UINT32_MAX || !live_together(b, nb)) continue;
                const uint64_t lo = (uint64_t)at + b->shift, hi = lo + b->own_bytes; /* b's bytes */
                if (hi <= offset || lo >= offset + nb->bytes) continue; /* clear of the group */
                for (uint32_t m = 0; m < sh->count; ++m) {
                    const mt_share_buffer *g = &sh->buf[m];
                    if (g->root != next || !own_live_together(g, b)) continue;
                    if (offset + g->shift < hi && lo < offset + g->shift + g->own_bytes) {
                        offset = hi - g->shift; /* > offset: they overlapped */
                        moved = 1;
                    }
                }
            }
        }
        if (offset + nb->bytes >= UINT32_MAX) return UINT64_MAX;
        nb->offset = (uint32_t)offset;
        if (offset + nb->bytes > region) region = offset + nb->bytes;
        ++placed;
    }
    return region;
}

/* Aliases share their root's bytes, from their shift on. */
static void place_aliases(mt_sharing *sh)
{
    for (uint32_t i = 0; i < sh->count; ++i)
        if (sh->buf[i].root != i)
            sh->buf[i].offset = sh->buf[mt_share_root(sh, (uint16_t)i)].offset + mt_share_shift(sh, (uint16_t)i);
}

uint64_t mt_share_place(mt_sharing *sh, int32_t *order)
{
    /* Greedy placement is a heuristic: no single order is best for every graph (a long-lived
     * residual branch is best placed first, a big short-lived map by size). Try each order,
     * keep the smallest region (ties: the earliest strategy), then lay that one out again. */
    uint64_t best_region = UINT64_MAX;
    int best = BY_SIZE;
    for (int strategy = 0; strategy < STRATEGIES; ++strategy) {
        const uint64_t region = place_in_order(sh, strategy);
        if (region < best_region) best_region = region, best = strategy;
    }
    *order = best;
    return best_region == UINT64_MAX ? UINT64_MAX : mt_share_place_in(sh, best);
}

uint64_t mt_share_place_in(mt_sharing *sh, int32_t order)
{
    if (order < 0 || order >= STRATEGIES) return UINT64_MAX;
    const uint64_t region = place_in_order(sh, order);
    if (region != UINT64_MAX) place_aliases(sh);
    return region;
}

/* Bytes of the union of group r's buffers marked in `counted` and live at time t: the
 * ranges [shift, shift + own_bytes) merged from the lowest start up (groups are small). */
static uint64_t group_live_bytes(const mt_sharing *sh, uint16_t r, const uint8_t *counted, uint16_t t)
{
    uint64_t total = 0, cursor = 0;
    for (;;) {
        uint64_t from = UINT64_MAX;
        for (uint32_t m = 0; m < sh->count; ++m) {
            const mt_share_buffer *g = &sh->buf[m];
            if (g->root != r || (counted && !counted[m]) || g->own_start > t || t > g->own_end) continue;
            const uint64_t lo = g->shift > cursor ? g->shift : cursor;
            if ((uint64_t)g->shift + g->own_bytes > cursor && lo < from) from = lo;
        }
        if (from == UINT64_MAX) return total;
        uint64_t to = from;
        for (int grown = 1; grown;) {
            grown = 0;
            for (uint32_t m = 0; m < sh->count; ++m) {
                const mt_share_buffer *g = &sh->buf[m];
                if (g->root != r || (counted && !counted[m]) || g->own_start > t || t > g->own_end) continue;
                if (g->shift <= to && (uint64_t)g->shift + g->own_bytes > to) to = (uint64_t)g->shift + g->own_bytes, grown = 1;
            }
        }
        total += to - from;
        cursor = to;
    }
}

uint64_t mt_share_peak(const mt_sharing *sh, const uint8_t *counted)
{
    /* the peak is reached at some buffer's start */
    uint64_t most = 0;
    for (uint32_t i = 0; i < sh->count; ++i) {
        if (counted && !counted[i]) continue;
        const uint16_t t = sh->buf[i].own_start;
        uint64_t live = 0;
        for (uint32_t r = 0; r < sh->count; ++r)
            if (sh->buf[r].root == r && sh->buf[r].start <= t && t <= sh->buf[r].end)
                live += group_live_bytes(sh, (uint16_t)r, counted, t);
        if (live > most) most = live;
    }
    return most;
}

uint64_t mt_share_lower_bound(const mt_sharing *sh)
{
    return mt_share_peak(sh, NULL);
}
