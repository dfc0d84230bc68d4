/*
 * The stack measured, not assumed: the startup paints every word between the end of .bss and
 * a little below its own frame with a pattern before main(); mt_board_stack_used() scans up
 * from the end of .bss to the first word the program changed. The stack grows down from
 * __stack_top, so __stack_top minus that word's address is the most stack used so far (a
 * frame that wrote the pattern itself would hide a word: 1 in 2^32). Header-only, for the
 * startups of common/cortex-m and common/riscv.
 */
#ifndef MT_STACK_PAINT_H
#define MT_STACK_PAINT_H

#include <stdint.h>

#define MT_STACK_PAINT 0x57AC4B1Du

/* volatile: kept as written (a memset call could run before what it needs is set up) */
static inline void mt_stack_paint(uint32_t *from, const uint32_t *below)
{
    for (volatile uint32_t *p = from; p < below;)
        *p++ = MT_STACK_PAINT;
}

static inline uint32_t mt_stack_high_water(const uint32_t *from, const uint32_t *top)
{
    const volatile uint32_t *p = from;
    while (p < top && *p == MT_STACK_PAINT)
        ++p;
    return (uint32_t)((uintptr_t)top - (uintptr_t)p);
}

#endif /* MT_STACK_PAINT_H */
