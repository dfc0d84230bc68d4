/*
 * Greedy-by-size placement (the strategy of TFLite Micro's greedy planner):
 * take buffers from the largest down; put each at the lowest offset where it
 * overlaps no already-placed buffer that is live at the same time. Large
 * buffers placed first leave gaps small ones fill. Everything here is on the
 * caller's stack: O(n²) scans instead of sorted arrays.
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

uint64_t mt_share_place(mt_sharing *sh, uint64_t *lower_bound)
{
    uint64_t region = 0;
    uint32_t placed = 0, roots = 0;
    for (uint32_t i = 0; i < sh->count; ++i) roots += sh->buf[i].root == i;

    /* offset UINT32_MAX marks a root not yet placed */
    for (uint32_t i = 0; i < sh->count; ++i) sh->buf[i].offset = UINT32_MAX;
    while (placed < roots) {
        /* next: the largest unplaced root (ties: lowest id, for a deterministic plan) */
        uint32_t next = MT_NO_BUFFER;
        for (uint32_t i = 0; i < sh->count; ++i) {
            const mt_share_buffer *b = &sh->buf[i];
            if (b->root != i || b->offset != UINT32_MAX) continue;
            if (next == MT_NO_BUFFER || b->bytes > sh->buf[next].bytes) next = i;
        }
        mt_share_buffer *nb = &sh->buf[next];
        /* lowest offset clear of every placed, simultaneously live buffer */
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
        if (offset + nb->bytes >= UINT32_MAX) return UINT64_MAX; /* no 32-bit arena holds it */
        nb->offset = (uint32_t)offset;
        if (offset + nb->bytes > region) region = offset + nb->bytes;
        ++placed;
    }
    for (uint32_t i = 0; i < sh->count; ++i) /* aliases share their root's bytes */
        if (sh->buf[i].root != i) sh->buf[i].offset = sh->buf[mt_share_root(sh, i)].offset;

    /* lower bound: the largest total of root buffers live at one time */
    uint64_t best = 0;
    for (uint32_t i = 0; i < sh->count; ++i) {
        if (sh->buf[i].root != i) continue;
        const uint16_t t = sh->buf[i].start; /* the peak is reached at some buffer's start */
        uint64_t live = 0;
        for (uint32_t j = 0; j < sh->count; ++j)
            if (sh->buf[j].root == j && sh->buf[j].start <= t && t <= sh->buf[j].end) live += sh->buf[j].bytes;
        if (live > best) best = live;
    }
    *lower_bound = best;
    return region;
}
