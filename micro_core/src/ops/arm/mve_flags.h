/* FPSCR's cumulative flags around a block of MVE arithmetic (ops/arm/ *_mve.c only). */
#ifndef MT_OPS_ARM_MVE_FLAGS_H
#define MT_OPS_ARM_MVE_FLAGS_H

#include <arm_mve.h>
#include <stdint.h>

#define MT_FPSCR_IDC 0x80u /* an input subnormal was flushed to zero */
#define MT_FPSCR_UFC 0x08u /* a subnormal result was flushed to zero */

/* Clear the cumulative flags; the memory clobber keeps the block's loads after it. */
static inline void mt_mve_flags_clear(void)
{
    uint32_t r;
    __asm volatile("vmrs %0, fpscr" : "=r"(r)::"memory");
    r &= ~0x9Fu;
    __asm volatile("vmsr fpscr, %0" ::"r"(r) : "memory");
}

/* 1 when the arithmetic since the clear flushed a subnormal. a..d are the block's results
 * still in registers (the read cannot move before the arithmetic that makes them); results
 * already stored are ordered by the memory clobber. */
static inline int mt_mve_flushed(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    uint32_t r;
    __asm volatile("vmrs %0, fpscr" : "=r"(r) : "w"(a), "w"(b), "w"(c), "w"(d) : "memory");
    return (r & (MT_FPSCR_IDC | MT_FPSCR_UFC)) != 0;
}

#endif /* MT_OPS_ARM_MVE_FLAGS_H */
