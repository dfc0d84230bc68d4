/*
 * .mtm reader. Every offset and size that comes from the image is checked
 * against the image's bounds before anything is read through it, with 64-bit
 * arithmetic so that sums cannot wrap. Checks run once, at open; the
 * accessors afterwards trust the image.
 */
#include "model_image.h"

#include <string.h>

#include "microtrain.h"
#include "le_bytes.h"
#include "ops/kernel.h"



/* [offset, offset + bytes) lies inside [64, image_bytes). */
static int in_image(const mt_image *img, uint64_t offset, uint64_t bytes)
{
    return offset >= MT_IMAGE_HEADER_BYTES && offset + bytes <= img->bytes;
}

void mt_image_tensor(const mt_image *img, uint32_t index, mt_tensor_desc *t)
{
    const uint8_t *e = img->base + img->tensors_offset + index * MT_IMAGE_ENTRY_BYTES;
    t->dtype = e[0];
    t->ndim = e[1];
    t->flags = mt_get_u16(e + 2);
    t->count = 1;
    for (int d = 0; d < MT_MAX_DIMS; ++d) {
        t->dims[d] = mt_get_u32(e + 4 + 4 * d);
        if (d < t->ndim) t->count *= t->dims[d];
    }
    t->data_offset = mt_get_u32(e + 20);
    t->data_bytes = mt_get_u32(e + 24);
    t->quant = img->version >= 3u ? mt_get_u32(e + 28) : 0u;
}

uint32_t mt_dtype_bytes(uint32_t dtype)
{
    return dtype == MT_DTYPE_I8 ? 1u : 4u;
}

int mt_image_quant(const mt_image *img, const mt_tensor_desc *t, mt_quant *q)
{
    if (t->quant == 0) return 0;
    const uint8_t *r = img->base + t->quant;
    q->channels = mt_get_u32(r);
    q->axis = mt_get_u32(r + 4);
    q->scales = r + 8;
    q->zero_points = r + 8 + 4u * q->channels;
    return 1;
}

float mt_quant_scale(const mt_quant *q, uint32_t c)
{
    const uint32_t bits = mt_get_u32(q->scales + 4u * c);
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

int32_t mt_quant_zero_point(const mt_quant *q, uint32_t c)
{
    return (int32_t)mt_get_u32(q->zero_points + 4u * c);
}

void mt_image_op(const mt_image *img, uint32_t index, mt_op_desc *op)
{
    const uint8_t *e = img->base + img->ops_offset + index * MT_IMAGE_ENTRY_BYTES;
    op->type = e[0];
    op->num_inputs = e[1];
    op->num_outputs = e[2];
    op->flags = 0;
    for (int i = 0; i < MT_OP_MAX_INPUTS; ++i) op->inputs[i] = mt_get_u16(e + 4 + 2 * i);
    for (int i = 0; i < MT_OP_MAX_OUTPUTS; ++i) op->outputs[i] = mt_get_u16(e + 12 + 2 * i);
    for (int i = 0; i < 4; ++i) op->params[i] = mt_get_u32(e + 16 + 4 * i);
}

uint32_t mt_image_op_layer(const mt_image *img, uint32_t index)
{
    if (img->version < 2u) return index;
    return img->base[img->ops_offset + index * MT_IMAGE_ENTRY_BYTES + 3u];
}

uint32_t mt_image_io(const mt_image *img, int is_output, uint32_t position)
{
    uint32_t slot = is_output ? img->num_inputs + position : position;
    return mt_get_u16(img->base + img->io_offset + 2 * slot);
}

const float *mt_image_const_f32(const mt_image *img, const mt_tensor_desc *t)
{
    return (const float *)(const void *)(img->base + img->data_offset + t->data_offset);
}

uint32_t mt_image_fingerprint(const mt_image *img)
{
    uint32_t crc = mt_crc32_update(0, img->base + 16, MT_IMAGE_HEADER_BYTES - 16u);
    crc = mt_crc32_update(crc, img->base + img->tensors_offset, img->num_tensors * MT_IMAGE_ENTRY_BYTES);
    for (uint32_t o = 0; o < img->num_ops; ++o) { /* each op entry with its layer byte read as 0 */
        static const uint8_t no_layer = 0;
        const uint8_t *e = img->base + img->ops_offset + o * MT_IMAGE_ENTRY_BYTES;
        crc = mt_crc32_update(crc, e, 3);
        crc = mt_crc32_update(crc, &no_layer, 1);
        crc = mt_crc32_update(crc, e + 4, MT_IMAGE_ENTRY_BYTES - 4u);
    }
    return mt_crc32_update(crc, img->base + img->io_offset, 2u * (img->num_inputs + img->num_outputs));
}

int32_t mt_image_producer(const mt_image *img, uint32_t index)
{
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        /* also called while ops are being validated: never trust num_outputs here */
        for (int k = 0; k < op.num_outputs && k < MT_OP_MAX_OUTPUTS; ++k)
            if (op.outputs[k] == index) return (int32_t)o;
    }
    return -1;
}

static mt_status check_header(mt_image *img, const uint8_t *p, size_t image_bytes)
{
    if (image_bytes < MT_IMAGE_HEADER_BYTES) return MT_ERR_BAD_MODEL;
    if (memcmp(p, MT_IMAGE_MAGIC, 4) != 0) return MT_ERR_BAD_MODEL;
    img->version = mt_get_u16(p + 4);
    if (img->version < MT_IMAGE_VERSION_MIN || img->version > MT_IMAGE_VERSION) return MT_ERR_UNSUPPORTED;
    if (mt_get_u16(p + 6) != MT_IMAGE_HEADER_BYTES) return MT_ERR_BAD_MODEL;
    img->base = p;
    img->bytes = mt_get_u32(p + 8);
    if (img->bytes < MT_IMAGE_HEADER_BYTES || img->bytes > image_bytes) return MT_ERR_BAD_MODEL;
    img->crc32 = mt_get_u32(p + 12);

    img->num_tensors = mt_get_u32(p + 16);
    img->num_ops = mt_get_u32(p + 20);
    img->num_inputs = mt_get_u32(p + 24);
    img->num_outputs = mt_get_u32(p + 28);
    img->tensors_offset = mt_get_u32(p + 32);
    img->ops_offset = mt_get_u32(p + 36);
    img->io_offset = mt_get_u32(p + 40);
    img->data_offset = mt_get_u32(p + 44);
    img->data_bytes = mt_get_u32(p + 48);
    /* version 3: bytes 52..59 place the quantization section; reserved (zero) before */
    img->quant_offset = img->version >= 3u ? mt_get_u32(p + 52) : 0u;
    img->quant_bytes = img->version >= 3u ? mt_get_u32(p + 56) : 0u;
    for (int i = img->version >= 3u ? 60 : 52; i < 64; ++i)
        if (p[i] != 0) return MT_ERR_BAD_MODEL;

    if (img->num_tensors < 1 || img->num_tensors > MT_MAX_TENSORS) return MT_ERR_BAD_MODEL;
    if (img->num_ops < 1 || img->num_ops > MT_MAX_OPS) return MT_ERR_BAD_MODEL;
    if (img->num_inputs < 1 || img->num_inputs > img->num_tensors) return MT_ERR_BAD_MODEL;
    if (img->num_outputs < 1 || img->num_outputs > img->num_tensors) return MT_ERR_BAD_MODEL;
    if (img->tensors_offset % 4 || img->ops_offset % 4 || img->io_offset % 2) return MT_ERR_BAD_MODEL;
    if (img->data_offset % 16) return MT_ERR_BAD_MODEL;
    if (!in_image(img, img->tensors_offset, (uint64_t)img->num_tensors * MT_IMAGE_ENTRY_BYTES) ||
        !in_image(img, img->ops_offset, (uint64_t)img->num_ops * MT_IMAGE_ENTRY_BYTES) ||
        !in_image(img, img->io_offset, 2u * ((uint64_t)img->num_inputs + img->num_outputs)) ||
        !in_image(img, img->data_offset, img->data_bytes))
        return MT_ERR_BAD_MODEL;
    /* version 3 is written for images with quantized tensors only, so it always has a
     * quantization section (a version 2 image whose version field flipped to 3 is refused) */
    if (img->version >= 3u && (img->quant_bytes < 8u || img->quant_offset % 4 || img->quant_bytes % 4 ||
                               !in_image(img, img->quant_offset, img->quant_bytes)))
        return MT_ERR_BAD_MODEL;
    /* the five sections are disjoint: weights written back by export (or read as a
     * table) must never alias another section */
    const uint64_t start[5] = {img->tensors_offset, img->ops_offset, img->io_offset, img->data_offset,
                               img->quant_offset};
    const uint64_t size[5] = {(uint64_t)img->num_tensors * MT_IMAGE_ENTRY_BYTES,
                              (uint64_t)img->num_ops * MT_IMAGE_ENTRY_BYTES,
                              2u * ((uint64_t)img->num_inputs + img->num_outputs), img->data_bytes,
                              img->quant_bytes};
    for (int a = 0; a < 5; ++a)
        for (int b = a + 1; b < 5; ++b)
            if (start[a] < start[b] + size[b] && start[b] < start[a] + size[a]) return MT_ERR_BAD_MODEL;
    return MT_OK;
}

/* The header's CRC-32 of bytes 16.. of the image: the one pass over the whole image. */
static mt_status check_crc(const mt_image *img)
{
    return mt_crc32_update(0, img->base + 16, img->bytes - 16u) == img->crc32 ? MT_OK : MT_ERR_BAD_MODEL;
}

/* A tensor's quantization record (version 3): an I8 tensor has one, an I32 one may (a bias
 * scaled by input scale · weight scale), an F32 one has none. The record lies in the
 * quantization section, 4-aligned: channels (1, or dims[axis] of a CONST tensor), axis
 * (< ndim; 0 for one channel), scales finite and > 0, zero points within the dtype's range
 * (I8: -128..127; I32: 0), and for several channels all zero (symmetric weights, which
 * is what TFLite's per-channel kernels assume). */
static mt_status check_quant(const mt_image *img, const mt_tensor_desc *t)
{
    if (t->quant == 0) return t->dtype == MT_DTYPE_I8 ? MT_ERR_BAD_MODEL : MT_OK;
    if (t->dtype == MT_DTYPE_F32) return MT_ERR_BAD_MODEL;
    const uint64_t end = (uint64_t)img->quant_offset + img->quant_bytes;
    if (t->quant % 4 || t->quant < img->quant_offset || (uint64_t)t->quant + 8u > end) return MT_ERR_BAD_MODEL;
    mt_quant q;
    mt_image_quant(img, t, &q);
    if (q.channels == 0 || q.channels > MT_QUANT_MAX_CHANNELS) return MT_ERR_BAD_MODEL;
    if ((uint64_t)t->quant + 8u + 8u * q.channels > end) return MT_ERR_BAD_MODEL;
    if (q.channels == 1) {
        if (q.axis != 0) return MT_ERR_BAD_MODEL;
    } else if (!(t->flags & MT_TENSOR_CONST) || q.axis >= t->ndim || t->dims[q.axis] != q.channels) {
        return MT_ERR_BAD_MODEL;
    }
    for (uint32_t c = 0; c < q.channels; ++c) {
        const float scale = mt_quant_scale(&q, c);
        const int32_t zero_point = mt_quant_zero_point(&q, c);
        if (!(scale > 0.0f) || scale > 3.4e38f) return MT_ERR_BAD_MODEL; /* NaN, <= 0, infinite */
        if (t->dtype == MT_DTYPE_I8 && (zero_point < -128 || zero_point > 127)) return MT_ERR_BAD_MODEL;
        if ((t->dtype == MT_DTYPE_I32 || q.channels > 1) && zero_point != 0) return MT_ERR_BAD_MODEL;
    }
    return MT_OK;
}

static mt_status check_tensor(const mt_image *img, uint32_t index)
{
    const uint8_t *e = img->base + img->tensors_offset + index * MT_IMAGE_ENTRY_BYTES;
    const uint16_t known = MT_TENSOR_CONST | MT_TENSOR_TRAINABLE | MT_TENSOR_INPUT | MT_TENSOR_OUTPUT | MT_TENSOR_MASTER;
    mt_tensor_desc t;
    uint8_t ndim = e[1];
    if (e[0] != MT_DTYPE_F32 && e[0] != MT_DTYPE_I32 && !(e[0] == MT_DTYPE_I8 && img->version >= 3u))
        return MT_ERR_BAD_MODEL;
    if (ndim < 1 || ndim > MT_MAX_DIMS) return MT_ERR_BAD_MODEL;
    uint64_t count = 1;
    for (int d = 0; d < MT_MAX_DIMS; ++d) {
        uint32_t dim = mt_get_u32(e + 4 + 4 * d);
        if (d < ndim) {
            if (dim == 0) return MT_ERR_BAD_MODEL;
            count *= dim;
            if (count > MT_MAX_ELEMENTS) return MT_ERR_BAD_MODEL;
        } else if (dim != 0) {
            return MT_ERR_BAD_MODEL;
        }
    }
    if (img->version < 3u && mt_get_u32(e + 28) != 0) return MT_ERR_BAD_MODEL;
    mt_image_tensor(img, index, &t);
    mt_status st = check_quant(img, &t);
    if (st != MT_OK) return st;
    if (t.flags & ~known) return MT_ERR_BAD_MODEL;
    /* TRAINABLE: a CONST f32 weight, or an int8 weight or int32 bias with its quantization
     * record (an int8 layer trained in place: plan_qas.c says which ops may read it) */
    mt_quant tq;
    if ((t.flags & MT_TENSOR_TRAINABLE) &&
        (!(t.flags & MT_TENSOR_CONST) || (t.dtype != MT_DTYPE_F32 && !mt_image_quant(img, &t, &tq))))
        return MT_ERR_BAD_MODEL;
    /* MASTER: a TRAINABLE int8 weight's float master copy (ops/qas.c) */
    if ((t.flags & MT_TENSOR_MASTER) && (!(t.flags & MT_TENSOR_TRAINABLE) || t.dtype != MT_DTYPE_I8))
        return MT_ERR_BAD_MODEL;
    if (t.flags & MT_TENSOR_CONST) {
        if (t.flags & (MT_TENSOR_INPUT | MT_TENSOR_OUTPUT)) return MT_ERR_BAD_MODEL;
        if (t.data_offset % 16 || (uint64_t)t.data_offset + t.data_bytes > img->data_bytes)
            return MT_ERR_BAD_MODEL;
        if (t.data_bytes != count * mt_dtype_bytes(t.dtype)) return MT_ERR_BAD_MODEL;
    } else if (t.data_offset != 0 || t.data_bytes != 0) {
        return MT_ERR_BAD_MODEL;
    }
    return MT_OK;
}

mt_status mt_fail_at(mt_error_detail *where, mt_status status, int32_t op, int32_t op_type, int32_t tensor)
{
    if (where != NULL) {
        where->status = status;
        where->op_index = op;
        where->op_type = op < 0 ? 0 : op_type;
        where->tensor_index = tensor;
    }
    return status;
}

/* A check that fails on tensor idx: MT_ERR_BAD_MODEL, naming it in *tensor. */
static mt_status bad_tensor(int32_t *tensor, uint32_t idx)
{
    *tensor = (int32_t)idx;
    return MT_ERR_BAD_MODEL;
}

/* Inputs (or outputs) listed once each, and exactly the tensors flagged so. A failure names
 * in *tensor the listed tensor at fault, when the list names a valid one. */
static mt_status check_io_list(const mt_image *img, int is_output, int32_t *tensor)
{
    const uint32_t n = is_output ? img->num_outputs : img->num_inputs;
    const uint16_t flag = is_output ? MT_TENSOR_OUTPUT : MT_TENSOR_INPUT;
    uint32_t flagged = 0;
    for (uint32_t i = 0; i < img->num_tensors; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if (t.flags & flag) ++flagged;
    }
    if (flagged != n) return MT_ERR_BAD_MODEL;
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t idx = mt_image_io(img, is_output, k);
        if (idx >= img->num_tensors) return MT_ERR_BAD_MODEL;
        mt_tensor_desc t;
        mt_image_tensor(img, idx, &t);
        /* outputs are f32 (the loss and the caller read floats); an input may also be int8,
         * quantized by the caller (a camera's pixels), so no f32 copy of it need exist */
        const int dtype_ok = t.dtype == MT_DTYPE_F32 || (!is_output && t.dtype == MT_DTYPE_I8);
        if (!(t.flags & flag) || !dtype_ok) return bad_tensor(tensor, idx);
        for (uint32_t j = 0; j < k; ++j)
            if (mt_image_io(img, is_output, j) == idx) return bad_tensor(tensor, idx);
    }
    return MT_OK;
}

/* Byte 3 of op entries: reserved (0) in version 1; in version 2 the op's layer, where the
 * ops of a layer are consecutive, so from op to op the number stays or grows. It may skip
 * numbers: a layer of the model that emits no op (a BatchNorm folded into the layer before
 * it) keeps its position, so layer numbers are positions in the builder's model.layers. */
static mt_status check_layer(const mt_image *img, uint32_t index)
{
    const uint8_t layer = img->base[img->ops_offset + index * MT_IMAGE_ENTRY_BYTES + 3u];
    if (img->version < 2u) return layer == 0 ? MT_OK : MT_ERR_BAD_MODEL;
    if (index == 0) return MT_OK;
    const uint32_t previous = mt_image_op_layer(img, index - 1u);
    return layer >= previous ? MT_OK : MT_ERR_BAD_MODEL;
}

/* Operand indices in range, execution order respected, each activation written once, the
 * layer numbered by the rule, and the op's own checks. A failure on one operand names it in
 * *tensor. */
static mt_status check_op(const mt_image *img, uint32_t index, int32_t *tensor)
{
    mt_op_desc op;
    mt_image_op(img, index, &op);
    if (op.num_inputs < 1 || op.num_inputs > MT_OP_MAX_INPUTS) return MT_ERR_BAD_MODEL;
    if (op.num_outputs < 1 || op.num_outputs > MT_OP_MAX_OUTPUTS) return MT_ERR_BAD_MODEL;
    for (int i = 0; i < MT_OP_MAX_INPUTS; ++i) {
        uint32_t idx = op.inputs[i];
        if (idx == MT_NO_TENSOR) continue; /* absent, optional operand: the kernel check decides */
        if (i >= op.num_inputs || idx >= img->num_tensors) return MT_ERR_BAD_MODEL;
        mt_tensor_desc t;
        mt_image_tensor(img, idx, &t);
        if (t.flags & (MT_TENSOR_CONST | MT_TENSOR_INPUT)) continue;
        int32_t producer = mt_image_producer(img, idx);
        if (producer < 0 || (uint32_t)producer >= index) return bad_tensor(tensor, idx);
    }
    if (op.inputs[0] == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    for (int k = 0; k < MT_OP_MAX_OUTPUTS; ++k) {
        uint32_t idx = op.outputs[k];
        if (k >= op.num_outputs) {
            if (idx != MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
            continue;
        }
        if (idx >= img->num_tensors) return MT_ERR_BAD_MODEL;
        mt_tensor_desc t;
        mt_image_tensor(img, idx, &t);
        if (t.flags & (MT_TENSOR_CONST | MT_TENSOR_INPUT)) return bad_tensor(tensor, idx);
        /* the first writer found must be this op, and no later op may write it again */
        if (mt_image_producer(img, idx) != (int32_t)index) return bad_tensor(tensor, idx);
        for (uint32_t later = index + 1; later < img->num_ops; ++later) {
            mt_op_desc other;
            mt_image_op(img, later, &other);
            for (int j = 0; j < other.num_outputs && j < MT_OP_MAX_OUTPUTS; ++j)
                if (other.outputs[j] == idx) return bad_tensor(tensor, idx);
        }
        for (int j = 0; j < k; ++j)
            if (op.outputs[j] == idx) return bad_tensor(tensor, idx);
    }
    if (check_layer(img, index) != MT_OK) return MT_ERR_BAD_MODEL;
    const mt_op_kernel *kernel = mt_op_kernel_for(op.type);
    if (kernel == NULL) return MT_ERR_UNSUPPORTED;
    return kernel->check(img, &op);
}

mt_status mt_image_open_at(mt_image *img, const void *image, size_t image_bytes, mt_error_detail *where)
{
    int32_t tensor = -1; /* the tensor an io or op check names, if any */
    if (img == NULL || image == NULL) return mt_fail_at(where, MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    if (((uintptr_t)image) % 4u) return mt_fail_at(where, MT_ERR_BAD_ARGUMENT, -1, 0, -1);
    mt_status st = check_header(img, (const uint8_t *)image, image_bytes);
    if (st == MT_OK) st = check_crc(img);
    if (st != MT_OK) return mt_fail_at(where, st, -1, 0, -1);
    for (uint32_t i = 0; i < img->num_tensors; ++i)
        if ((st = check_tensor(img, i)) != MT_OK) return mt_fail_at(where, st, -1, 0, (int32_t)i);
    for (int is_output = 0; is_output <= 1; ++is_output)
        if ((st = check_io_list(img, is_output, &tensor)) != MT_OK) return mt_fail_at(where, st, -1, 0, tensor);
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        if ((st = check_op(img, o, &tensor)) == MT_OK) continue;
        const uint8_t type = img->base[img->ops_offset + o * MT_IMAGE_ENTRY_BYTES]; /* as stored */
        return mt_fail_at(where, st, (int32_t)o, type, tensor);
    }
    /* every activation is written by some op (else it would be read uninitialised) */
    for (uint32_t i = 0; i < img->num_tensors; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if (!(t.flags & (MT_TENSOR_CONST | MT_TENSOR_INPUT)) && mt_image_producer(img, i) < 0)
            return mt_fail_at(where, MT_ERR_BAD_MODEL, -1, 0, (int32_t)i);
    }
    return mt_fail_at(where, MT_OK, -1, 0, -1);
}

mt_status mt_image_open(mt_image *img, const void *image, size_t image_bytes)
{
    return mt_image_open_at(img, image, image_bytes, NULL);
}

mt_status mt_image_open_header(mt_image *img, const void *image, size_t image_bytes)
{
    if (img == NULL || image == NULL || ((uintptr_t)image) % 4u) return MT_ERR_BAD_ARGUMENT;
    return check_header(img, (const uint8_t *)image, image_bytes);
}

/* ---- public model queries ---- */

mt_status mt_model_check(const void *image, size_t image_bytes, mt_model_info *info)
{
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK || info == NULL) return st;
    memset(info, 0, sizeof *info);
    info->version = (int32_t)img.version;
    info->num_tensors = (int32_t)img.num_tensors;
    info->num_ops = (int32_t)img.num_ops;
    info->num_inputs = (int32_t)img.num_inputs;
    info->num_outputs = (int32_t)img.num_outputs;
    info->crc32 = img.crc32;
    for (uint32_t i = 0; i < img.num_tensors; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(&img, i, &t);
        if (t.flags & MT_TENSOR_TRAINABLE) {
            info->num_params += 1;
            info->param_count += (int32_t)t.count;
        }
    }
    return MT_OK;
}

mt_status mt_image_tensor_info(const mt_image *img, uint32_t index, mt_tensor_info *info)
{
    mt_tensor_desc t;
    mt_image_tensor(img, index, &t);
    const uint64_t data_at = (uint64_t)img->data_offset + t.data_offset; /* inside the image */
    if ((t.flags & MT_TENSOR_CONST) && data_at > INT32_MAX) return MT_ERR_UNSUPPORTED;
    memset(info, 0, sizeof *info);
    info->index = (int32_t)index;
    info->dtype = t.dtype;
    info->flags = t.flags;
    info->ndim = t.ndim;
    for (int d = 0; d < t.ndim; ++d) info->dims[d] = (int32_t)t.dims[d];
    info->count = (int32_t)t.count;
    info->producer = mt_image_producer(img, index);
    info->data_offset = (t.flags & MT_TENSOR_CONST) ? (int32_t)data_at : -1;
    return MT_OK;
}

static void op_info_of(const mt_image *img, uint32_t index, mt_op_info *info)
{
    mt_op_desc op;
    mt_image_op(img, index, &op);
    memset(info, 0, sizeof *info);
    info->index = (int32_t)index;
    info->type = op.type;
    info->num_inputs = op.num_inputs;
    info->num_outputs = op.num_outputs;
    for (int i = 0; i < MT_OP_MAX_INPUTS; ++i)
        info->inputs[i] = (i < op.num_inputs && op.inputs[i] != MT_NO_TENSOR) ? (int32_t)op.inputs[i] : -1;
    for (int k = 0; k < MT_OP_MAX_OUTPUTS; ++k)
        info->outputs[k] = k < op.num_outputs ? (int32_t)op.outputs[k] : -1;
    for (int p = 0; p < 4; ++p) info->params[p] = op.params[p];
    info->layer = (int32_t)mt_image_op_layer(img, index);
}

/* first..first+count-1 within n entries (count 0 is an empty range anywhere up to n) */
static int range_inside(int32_t first, int32_t count, uint32_t n)
{
    return first >= 0 && count >= 0 && (uint32_t)first <= n && (uint32_t)count <= n - (uint32_t)first;
}

/* One validation of the image for a whole range: a backend describing a model calls these
 * once, where a call per tensor validated (and checksummed) the whole image per tensor. */
mt_status mt_model_tensors(const void *image, size_t image_bytes, int32_t first, int32_t count,
                           mt_tensor_info *infos)
{
    if (infos == NULL) return MT_ERR_BAD_ARGUMENT;
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK) return st;
    if (!range_inside(first, count, img.num_tensors)) return MT_ERR_BAD_ARGUMENT;
    for (int32_t k = 0; k < count; ++k)
        if ((st = mt_image_tensor_info(&img, (uint32_t)(first + k), &infos[k])) != MT_OK) return st;
    return MT_OK;
}

mt_status mt_model_tensor(const void *image, size_t image_bytes, int32_t index, mt_tensor_info *info)
{
    return mt_model_tensors(image, image_bytes, index, 1, info);
}

mt_status mt_model_ops(const void *image, size_t image_bytes, int32_t first, int32_t count, mt_op_info *infos)
{
    if (infos == NULL) return MT_ERR_BAD_ARGUMENT;
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK) return st;
    if (!range_inside(first, count, img.num_ops)) return MT_ERR_BAD_ARGUMENT;
    for (int32_t k = 0; k < count; ++k) op_info_of(&img, (uint32_t)(first + k), &infos[k]);
    return MT_OK;
}

mt_status mt_model_op(const void *image, size_t image_bytes, int32_t index, mt_op_info *info)
{
    return mt_model_ops(image, image_bytes, index, 1, info);
}

mt_status mt_model_io(const void *image, size_t image_bytes, int32_t is_output, int32_t position,
                      int32_t *tensor_index)
{
    if (tensor_index == NULL || (is_output != 0 && is_output != 1)) return MT_ERR_BAD_ARGUMENT;
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK) return st;
    uint32_t n = is_output ? img.num_outputs : img.num_inputs;
    if (position < 0 || (uint32_t)position >= n) return MT_ERR_BAD_ARGUMENT;
    *tensor_index = (int32_t)mt_image_io(&img, is_output, (uint32_t)position);
    return MT_OK;
}
