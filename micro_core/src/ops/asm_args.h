/*
 * The argument blocks of the naked assembly kernels (ops/dsp, ops/mve): each is described once,
 * by a list of its fields with the byte offset the assembly loads it from,
 *
 *   #define MT_EXAMPLE_FIELDS(F, S) \
 *       F(S, 0, const float *, x, )  \
 *       F(S, 4, uint32_t, w, [3])
 *
 * (F(S, offset, type, name, array dimensions or nothing)), and MT_ASM_ARGS(name, fields, size)
 * makes of that list both the struct and the check that every field stands at its offset and the
 * struct has its size: a field moved in the list without the assembly's "[r0, #offset]" loads
 * stops the build (a typedef of an array of negative size: C99 has no _Static_assert).
 * A naked function may hold only basic asm, which cannot take offsetof() as an operand, so the
 * loads keep their offsets as literals; the list beside them is the one place that says which
 * field each literal means.
 */
#ifndef MT_OPS_ASM_ARGS_H
#define MT_OPS_ASM_ARGS_H

#include <stddef.h>

/* a field's declaration; and the term of the check that it stands at its offset */
#define MT_ASM_FIELD_DECLARE(S, offset, type, name, dims) type name dims;
#define MT_ASM_FIELD_AT(S, offset, type, name, dims) offsetof(S, name) == (offset) &&

/* typedef struct name {...} name, and name_offsets, of a negative size where a field is not at
 * its offset or the struct not of size bytes */
#define MT_ASM_ARGS(name, fields, size)                \
    typedef struct name {                              \
        fields(MT_ASM_FIELD_DECLARE, name)             \
    } name;                                            \
    typedef char name##_offsets[fields(MT_ASM_FIELD_AT, name) sizeof(name) == (size) ? 1 : -1]

#endif /* MT_OPS_ASM_ARGS_H */
