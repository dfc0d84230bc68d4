/*
 * A float's IEEE-754 binary32 bits and back, through memcpy (no aliasing, no union punning):
 * the core's own math (mt_math.c, mt_fma.c) reads signs, exponents and NaN payloads with them;
 * checkpoints store floats and doubles (binary64) as these bits.
 */
#ifndef MT_FLOAT_BITS_H
#define MT_FLOAT_BITS_H

#include <stdint.h>
#include <string.h>

/* static inline To name(From v): v's bytes as a To, the same size */
#define MT_BIT_CAST(name, To, From)                                                          \
    static inline To name(From v)                                                            \
    {                                                                                        \
        To r;                                                                                \
        memcpy(&r, &v, sizeof r);                                                            \
        return r;                                                                            \
    }

MT_BIT_CAST(mt_f32_bits, uint32_t, float)
MT_BIT_CAST(mt_f32_from_bits, float, uint32_t)
MT_BIT_CAST(mt_f64_bits, uint64_t, double)
MT_BIT_CAST(mt_f64_from_bits, double, uint64_t)

#endif /* MT_FLOAT_BITS_H */
