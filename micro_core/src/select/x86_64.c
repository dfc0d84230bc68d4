/*
 * The x86-64 columns' run-time choice (select/x86_64.h): the best level the CPU runs, unless a
 * test forced one. Compiles to nothing on other targets.
 */
#include "select/target.h"

#if MT_X86_KERNELS
static int forced = -1; /* a level chosen by mt_x86_set_level, else -1 */
static int detected = -1;

int mt_x86_cpu_level(void)
{
    if (detected < 0) { /* a benign race: every thread computes the same value */
        __builtin_cpu_init();
        detected = __builtin_cpu_supports("avx512f") ? MT_X86_AVX512
                   : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? MT_X86_AVX2
                                                                                     : MT_X86_PORTABLE;
    }
    return detected;
}

int mt_x86_level(void)
{
    return forced >= 0 ? forced : mt_x86_cpu_level();
}

int mt_x86_set_level(int level)
{
    if (level < 0) forced = -1;
    else if (level <= mt_x86_cpu_level()) forced = level;
    return mt_x86_level();
}
#else
typedef int mt_select_x86_64_unused; /* ISO C: a translation unit is not empty */
#endif
