/*
 * What the kernel sibling tests share (test_kernel_siblings.c: the portable siblings and the
 * spatial kernels at every path; test_kernel_siblings_x86.c: the x86 Dense, exp and optimizer
 * kernels): random data, bitwise comparison, copies, and the x86 level a test runs.
 * Header-only, as the other *_util.h.
 */
#ifndef MT_SIBLINGS_UTIL_H
#define MT_SIBLINGS_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "mt_test.h"
#include "ops/x86/x86.h"

static inline void fill(float *v, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) v[i] = mt_test_uniform(-scale, scale);
}

static inline int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

static inline float *copy_of(const float *v, size_t n)
{
    float *c = malloc(sizeof(float) * (n ? n : 1));
    memcpy(c, v, sizeof(float) * n);
    return c;
}

#if MT_X86_KERNELS
/* the level whose build X86(name) calls: name_avx512 or name_avx2, the same source built twice */
static int x86_level = MT_X86_AVX512;
#define X86(name) (x86_level == MT_X86_AVX512 ? name##_avx512 : name##_avx2)
#endif

#endif /* MT_SIBLINGS_UTIL_H */
