/*
 * The levels of kernels the entries of the kernel table take, for tests that run their cases
 * at each one this machine has: 0 the portable column, then on x86-64 the AVX2 and AVX-512
 * columns (select/x86_64.h). Header-only, as the other *_util.h.
 */
#ifndef MT_KERNEL_LEVELS_UTIL_H
#define MT_KERNEL_LEVELS_UTIL_H

#include "select/target.h"

#define MT_KERNEL_LEVELS 3

/* Put level in force where this machine runs it: 1, else 0 (off x86-64 only level 0 runs).
 *   for (int level = 0; level < MT_KERNEL_LEVELS; ++level) if (use_kernel_level(level)) ... */
static inline int use_kernel_level(int level)
{
#if MT_X86_KERNELS
    if (level > 0 && mt_x86_cpu_level() < level) return 0;
    return mt_x86_set_level(level) == level;
#else
    return level == 0;
#endif
}

/* Back to the CPU's own level. */
static inline void use_cpu_kernel_level(void)
{
#if MT_X86_KERNELS
    mt_x86_set_level(-1);
#endif
}

#endif /* MT_KERNEL_LEVELS_UTIL_H */
