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

/* The planner's table of shared buffers (an activation's or a gradient's each,
 * plan_lifetimes.c), on the stack while a session is planned (mt_plan, mt_session_init): 256
 * entries, 7 KiB. A firmware that plans one known model may build the core with a table of
 * that plan's size (CMake's MT_PLAN_MAX_BUFFERS, which `microtrain firmware` sets from the
 * host's plan of the same model and configuration: the count of its activation and gradient
 * buffers); a plan needing more entries is refused (MT_ERR_UNSUPPORTED), never laid out
 * otherwise, and the placement of one that fits does not depend on the table's size. */
#ifndef MT_PLAN_MAX_BUFFERS
#define MT_PLAN_MAX_BUFFERS 256u
#endif
#define MT_NO_BUFFER 0xFFFFu

typedef struct mt_share_buffer {
    uint32_t bytes;  /* already rounded to MT_ARENA_ALIGN; a root: the extent of its group */
    uint32_t offset; /* from the region start, once placed */
    uint16_t start, end; /* a root: the union of its group's lifetimes */
    uint16_t root;   /* itself, or the root of the group it shares storage with (in-place op) */
    uint32_t shift;  /* a child's bytes start this far into its root's (0 for a root) */
    uint32_t own_bytes;  /* the buffer's own bytes and lifetime, which placement keeps clear */
    uint16_t own_start, own_end; /* of every other group's buffers live at the same time */
} mt_share_buffer;

typedef struct mt_sharing {
    mt_share_buffer buf[MT_PLAN_MAX_BUFFERS];
    uint32_t count;
} mt_sharing;

/* Add a buffer; returns its id, or MT_NO_BUFFER when the table is full. */
uint16_t mt_share_add(mt_sharing *sh, uint32_t bytes, uint16_t start, uint16_t end);
/* Widen a buffer's lifetime to include time t. */
void mt_share_touch(mt_sharing *sh, uint16_t id, uint16_t t);
/* Let `child`, a root, and its group use root's storage from `shift` bytes in: one group,
 * placed as one block (root's bytes grow to its extent, its lifetime to the union), each
 * buffer of it kept clear of other groups' buffers over its own lifetime alone, not the
 * group's (plan_lifetimes.c says which layouts an op's kernel allows: in place, over its
 * input with a band, overlapped). */
void mt_share_alias_at(mt_sharing *sh, uint16_t child, uint16_t root, uint32_t shift);
/* Root of id's storage. */
uint16_t mt_share_root(const mt_sharing *sh, uint16_t id);
/* Where id's bytes start in its root's. */
uint32_t mt_share_shift(const mt_sharing *sh, uint16_t id);
/* A root without children takes `bytes` (an in-place depthwise's output and band). */
void mt_share_grow(mt_sharing *sh, uint16_t id, uint32_t bytes);
/* The most bytes live at one time over the buffers `counted` marks (NULL: all), a group's live
 * buffers counted by the union of their bytes in it. */
uint64_t mt_share_peak(const mt_sharing *sh, const uint8_t *counted);
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
