/*
 * What the host's kernel sibling tests share (test_kernel_siblings.c: every column's float rows;
 * test_kernel_siblings_x86.c: the x86 columns' own edges): random data, bitwise comparison,
 * copies. Header-only, as the other *_util.h.
 */
#ifndef MT_SIBLINGS_UTIL_H
#define MT_SIBLINGS_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "mt_test.h"

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

#endif /* MT_SIBLINGS_UTIL_H */
