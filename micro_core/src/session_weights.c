/*
 * The weights of an int8 layer trained in place, beside the float ones (mt_session_param):
 * its int8 weights and int32 biases are the image's TRAINABLE quantized CONST tensors
 * ("quantized parameters", in tensor-table order), readable and writable where the session
 * keeps them, and the weights' CRC-32 covers them with the float weights.
 *
 * The CRC is the one a firmware prints and the host tools compute (zlib.crc32): over every
 * weight in tensor-table order, each as its values' little-endian bytes at their own width
 * (f32 4 bytes, int32 4, int8 1). A model without quantized parameters has the CRC it always
 * had: the float weights' bytes alone.
 */
#include "microtrain.h"
#include "ops/quant_grad.h"
#include "session.h"

/* A TRAINABLE quantized CONST tensor (mt_session_qparam), whether this session trains it or not */
static int is_qparam(const mt_tensor_rt *t)
{
    return (t->flags & MT_TENSOR_CONST) && (t->flags & MT_TENSOR_TRAINABLE) && t->dtype != MT_DTYPE_F32;
}

mt_status mt_session_qparam_count(const mt_session *s, int32_t *count)
{
    if (!mt_session_valid(s) || count == NULL) return MT_ERR_BAD_ARGUMENT;
    int32_t n = 0;
    for (uint32_t i = 0; i < s->img.num_tensors; ++i) n += is_qparam(&s->tensors[i]);
    *count = n;
    return MT_OK;
}

/* Tensor index of quantized parameter `position`, or -1 */
static int32_t qparam_tensor(const mt_session *s, int32_t position)
{
    for (uint32_t i = 0; i < s->img.num_tensors && position >= 0; ++i)
        if (is_qparam(&s->tensors[i]) && position-- == 0) return (int32_t)i;
    return -1;
}

/* info of tensor `index`: a float weight or a quantized parameter */
static void describe(const mt_session *s, uint32_t index, mt_param_info *info)
{
    const mt_tensor_rt *t = &s->tensors[index];
    mt_tensor_desc d;
    mt_image_tensor(&s->img, index, &d);
    info->tensor_index = (int32_t)index;
    info->count = (int32_t)t->count;
    info->trained = t->trained;
    info->dtype = t->dtype;
    info->data = t->trained ? t->mutable_data : NULL;
    info->image_data = mt_image_const_f32(&s->img, &d); /* the tensor's data, at its width */
    info->held = t->trained ? (int32_t)mt_held_elements(t) : 0; /* the rest: image_data's */
}

mt_status mt_session_qparam(mt_session *s, int32_t position, mt_param_info *info)
{
    const int32_t index = mt_session_valid(s) ? qparam_tensor(s, position) : -1;
    if (index < 0 || info == NULL) return MT_ERR_BAD_ARGUMENT;
    describe(s, (uint32_t)index, info);
    return MT_OK;
}

mt_status mt_session_param(mt_session *s, int32_t position, mt_param_info *info)
{
    if (!mt_session_valid(s) || info == NULL || position < 0 || position >= s->num_params) return MT_ERR_BAD_ARGUMENT;
    describe(s, s->params[position], info);
    return MT_OK;
}

mt_status mt_session_qparam_written(mt_session *s, int32_t position)
{
    const int32_t index = mt_session_valid(s) ? qparam_tensor(s, position) : -1;
    if (index < 0) return MT_ERR_BAD_ARGUMENT;
    const mt_tensor_rt *t = &s->tensors[index];
    float *master = mt_q_master_of(t); /* m ← W_q: the next step starts from the weight written */
    for (uint32_t e = 0; master && e < t->count; ++e) master[e] = (float)((const int8_t *)(const void *)t->data)[e];
    return MT_OK;
}

mt_status mt_session_weights_crc32(const mt_session *s, uint32_t *crc)
{
    if (!mt_session_valid(s) || crc == NULL) return MT_ERR_BAD_ARGUMENT;
    uint32_t c = 0;
    for (uint32_t i = 0; i < s->img.num_tensors; ++i) {
        const mt_tensor_rt *t = &s->tensors[i];
        if (!(t->flags & MT_TENSOR_CONST) || (t->dtype != MT_DTYPE_F32 && !is_qparam(t))) continue;
        mt_tensor_desc d;
        mt_image_tensor(&s->img, i, &d);
        const uint8_t *image = (const uint8_t *)(const void *)mt_image_const_f32(&s->img, &d);
        const size_t width = mt_dtype_bytes(t->dtype), held = t->trained ? mt_held_elements(t) : 0;
        /* the bytes as they lie: little-endian, as the image holds them (the core reads its
         * float weights in place, so it runs on little-endian targets only); the arena's
         * elements first, then the image's (a weight whose first rows alone the arena holds) */
        c = mt_crc32_update(c, t->mutable_data, held * width);
        c = mt_crc32_update(c, image + held * width, (t->count - held) * width);
    }
    *crc = c;
    return MT_OK;
}
