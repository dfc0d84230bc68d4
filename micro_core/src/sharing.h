/*
 * Time-shared arena region: buffers with lifetimes over the step's schedule get
 * offsets so that buffers live at the same time never overlap, and the region
 * approaches the lower bound (the most bytes live at once).
 *
 * Schedule of one train step over O ops (times are small integers):
 *     0            before the step: inputs and targets are written
 *     1 + o        forward of op o
 *     O + 1        loss and its gradient
 *     2·O + 1 - o  backward of op o (op O-1 first)
 * A buffer is live over [start, end] inclusive.
 */
#ifndef MT_SHARING_H
#define MT_SHARING_H

#include <stdint.h>

#define MT_PLAN_MAX_BUFFERS 256u
#define MT_NO_BUFFER 0xFFFFu

typedef struct mt_share_buffer {
    uint32_t bytes;  /* already rounded to MT_ARENA_ALIGN */
    uint32_t offset; /* from the region start, once placed */
    uint16_t start, end;
    uint16_t root;   /* itself, or the buffer it shares storage with (in-place op) */
} mt_share_buffer;

typedef struct mt_sharing {
    mt_share_buffer buf[MT_PLAN_MAX_BUFFERS];
    uint32_t count;
} mt_sharing;

/* Add a buffer; returns its id, or MT_NO_BUFFER when the table is full. */
uint16_t mt_share_add(mt_sharing *sh, uint32_t bytes, uint16_t start, uint16_t end);
/* Widen a buffer's lifetime to include time t. */
void mt_share_touch(mt_sharing *sh, uint16_t id, uint16_t t);
/* Let child use root's storage (same size); the pair becomes one buffer. */
void mt_share_alias(mt_sharing *sh, uint16_t child, uint16_t root);
/* Root of id's storage. */
uint16_t mt_share_root(const mt_sharing *sh, uint16_t id);
/* Place every root buffer (greedy, lowest fitting offset) in each order the planner knows,
 * keep the smallest region and return its size, or UINT64_MAX when it cannot be addressed in
 * 32 bits; *order receives the order kept (mt_memory_plan.placement_order). */
uint64_t mt_share_place(mt_sharing *sh, int32_t *order);
/* The same placement in a given order alone (a plan's: what mt_share_place() kept), or
 * UINT64_MAX for an order that is none of them. Every order gives a placement in which no two
 * buffers live at the same time overlap, only of another size. */
uint64_t mt_share_place_in(mt_sharing *sh, int32_t order);
/* The lower bound of any placement: the most bytes of root buffers live at one time. */
uint64_t mt_share_lower_bound(const mt_sharing *sh);

#endif /* MT_SHARING_H */
