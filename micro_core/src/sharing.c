/*
 * Greedy placement (TFLite Micro's greedy planner takes buffers largest first):
 * take buffers in some order; put each at the lowest offset where it overlaps no
 * already-placed buffer that is live at the same time. Several orders are tried
 * and the smallest result kept. Everything here is on the caller's stack: O(n²)
 * scans instead of sorted arrays.
 */
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
    return id;
}

uint16_t mt_share_root(const mt_sharing *sh, uint16_t id)
{
    while (sh->buf[id].root != id) id = sh->buf[id].root;
    return id;
}

void mt_share_touch(mt_sharing *sh, uint16_t id, uint16_t t)
{
    mt_share_buffer *b = &sh->buf[mt_share_root(sh, id)];
    if (t < b->start) b->start = t;
    if (t > b->end) b->end = t;
}

void mt_share_alias(mt_sharing *sh, uint16_t child, uint16_t root)
{
    root = mt_share_root(sh, root);
    mt_share_buffer *c = &sh->buf[child], *r = &sh->buf[root];
    if (c->start < r->start) r->start = c->start;
    if (c->end > r->end) r->end = c->end;
    c->root = root;
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
        /* lowest offset clear of every placed, simultaneously live buffer: a conflict at
         * `offset` rules out everything up to that buffer's end, so jump there and rescan */
        uint64_t offset = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (uint32_t i = 0; i < sh->count; ++i) {
                const mt_share_buffer *b = &sh->buf[i];
                if (b->root != i || b->offset == UINT32_MAX || !live_together(b, nb)) continue;
                if (offset < (uint64_t)b->offset + b->bytes && b->offset < offset + nb->bytes) {
                    offset = (uint64_t)b->offset + b->bytes;
                    moved = 1;
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

/* Aliases share their root's bytes. */
static void place_aliases(mt_sharing *sh)
{
    for (uint32_t i = 0; i < sh->count; ++i)
        if (sh->buf[i].root != i) sh->buf[i].offset = sh->buf[mt_share_root(sh, i)].offset;
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

uint64_t mt_share_lower_bound(const mt_sharing *sh)
{
    /* the largest total of root buffers live at one time */
    uint64_t most = 0;
    for (uint32_t i = 0; i < sh->count; ++i) {
        if (sh->buf[i].root != i) continue;
        const uint16_t t = sh->buf[i].start; /* the peak is reached at some buffer's start */
        uint64_t live = 0;
        for (uint32_t j = 0; j < sh->count; ++j)
            if (sh->buf[j].root == j && sh->buf[j].start <= t && t <= sh->buf[j].end) live += sh->buf[j].bytes;
        if (live > most) most = live;
    }
    return most;
}
