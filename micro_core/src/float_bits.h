/*
 * A float's IEEE-754 binary32 bits and back, through memcpy (no aliasing, no union punning):
 * the core's own math (mt_math.c, mt_fma.c) reads signs, exponents and NaN payloads with them.
 */
#ifndef MT_FLOAT_BITS_H
#define MT_FLOAT_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t mt_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float mt_f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif /* MT_FLOAT_BITS_H */
