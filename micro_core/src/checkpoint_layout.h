/*
 * What a checkpoint of a session holds, which its writer (checkpoint_save.c) and its reader
 * (checkpoint.c) both need: the format's constants (docs/checkpoint_format.md) and a trained
 * tensor's record layout.
 */
#ifndef MT_CHECKPOINT_LAYOUT_H
#define MT_CHECKPOINT_LAYOUT_H

#include "microtrain.h"
#include "ops/quant_grad.h"
#include "session.h"

#define CK_MAGIC "MTCK"
#define CK_VERSION 2u    /* written; 1 (no base learning rate) is still read */
#define CK_VERSION_REFERENCE 3u /* written when a record carries the FedProx reference */
#define CK_VERSION_TYPED 4u /* written when an int8 layer trains in place: records say their layout */
#define CK_HEADER_BYTES 80u
#define CK_TRAILER_BYTES 4u
#define CK_RECORD_HEADER_BYTES 8u        /* versions 1 to 3: tensor index, count */
#define CK_TYPED_RECORD_HEADER_BYTES 12u /* version 4: + dtype, master copy, 2 reserved bytes */
#define CK_PROPERTY_HEADER_BYTES 8u
#define CHUNK 64u

static inline uint32_t pad4(uint32_t n)
{
    return (n + 3u) & ~3u;
}

/* What a record's values are: its weights' dtype (MT_DTYPE_*) and whether an int8 weight's
 * float master copy (MT_TENSOR_MASTER) follows them. Versions 1 to 3 hold f32 weights alone. */
typedef struct ck_layout {
    uint8_t dtype, master;
} ck_layout;

static inline ck_layout layout_of(const mt_tensor_rt *t)
{
    const ck_layout l = {t->dtype, mt_q_master_of(t) != NULL};
    return l;
}

/* Bytes of a record's weights at their own width: int8 padded to a multiple of 4 bytes, so
 * what follows stays aligned; int32 and f32 4 bytes an element */
static inline uint64_t weight_bytes(ck_layout l, uint64_t count)
{
    return l.dtype == MT_DTYPE_I8 ? (count + 3u) & ~(uint64_t)3u : 4u * count;
}

/* Bytes of a record's values, `arrays` being its optimizer state arrays and reference: the
 * weights, then 4 bytes an element for the master copy and for each of those arrays */
static inline uint64_t values_bytes(ck_layout l, uint64_t count, uint32_t arrays)
{
    return weight_bytes(l, count) + 4u * count * (l.master + arrays);
}

/* 1 when an int8 layer trains in place (a trained int8 weight or int32 bias): its records
 * need version 4's layout */
static inline int trains_quantized(const mt_session *s)
{
    for (int32_t k = 0; k < s->num_trained; ++k)
        if (s->tensors[s->trained[k]].dtype != MT_DTYPE_F32) return 1;
    return 0;
}

/* Where trained tensor t's optimizer state starts: a float weight's at opt_state; a quantized
 * one's after its record of scales, if any (ops/quant_grad.h), as its QAS view finds it (NULL without
 * momentum: it then has no state arrays) */
static inline float *state_of(const mt_session *s, const mt_tensor_rt *t)
{
    if (t->dtype == MT_DTYPE_F32) return t->opt_state;
    int k = 0;
    const int32_t o = mt_reader_of(s, (uint16_t)(t - s->tensors), &k);
    mt_qas_tensor v;
    mt_qas_tensor_of(&s->img, &s->ops[o], k, (mt_tensor_rt *)(uintptr_t)t, NULL, s->cfg.momentum, &v);
    return v.buf;
}

#endif /* MT_CHECKPOINT_LAYOUT_H */
