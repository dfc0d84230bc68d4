/*
 * Reader of the .mtm model image (docs/model_format.md). The image is read in
 * place, byte by byte in little-endian order, so it may sit in flash and the
 * host's endianness does not matter. mt_image_open() validates everything once;
 * the accessors below then trust the image and do no checks.
 */
#ifndef MT_MODEL_IMAGE_H
#define MT_MODEL_IMAGE_H

#include "microtrain.h"

#define MT_IMAGE_MAGIC "MTM1"
/* Versions this reader knows: 1, 2 (op entry byte 3 names the op's layer) and 3 (int8
 * tensors and the quantization section: header bytes 52..59, tensor entry bytes 28..31). */
#define MT_IMAGE_VERSION_MIN 1u
#define MT_IMAGE_VERSION 3u
/* Most channels of one quantization record (per-channel scales of a weight). */
#define MT_QUANT_MAX_CHANNELS 65535u
#define MT_IMAGE_HEADER_BYTES 64u
#define MT_IMAGE_ENTRY_BYTES 32u
#define MT_NO_TENSOR 0xFFFFu
#define MT_OP_MAX_INPUTS 4
#define MT_OP_MAX_OUTPUTS 2

typedef struct mt_image {
    const uint8_t *base;
    uint32_t version; /* MT_IMAGE_VERSION_MIN..MT_IMAGE_VERSION */
    uint32_t bytes; /* image_bytes from the header */
    uint32_t num_tensors, num_ops, num_inputs, num_outputs;
    uint32_t tensors_offset, ops_offset, io_offset, data_offset, data_bytes;
    uint32_t quant_offset, quant_bytes; /* version 3: the quantization section (else 0, 0) */
    uint32_t crc32;
} mt_image;

/* A tensor's quantization record (version 3): real = scale[c] · (q - zero_point[c]) for the
 * elements of channel c along `axis` (one channel: every element). */
typedef struct mt_quant {
    uint32_t channels; /* 1 (per tensor) or the size of dims[axis] (per channel) */
    uint32_t axis;
    const uint8_t *scales; /* channels little-endian f32 */
    const uint8_t *zero_points; /* channels little-endian i32 */
} mt_quant;

typedef struct mt_tensor_desc {
    uint8_t dtype;
    uint8_t ndim;
    uint16_t flags;
    uint32_t dims[MT_MAX_DIMS];
    uint32_t data_offset; /* relative to the data section */
    uint32_t data_bytes;
    uint32_t count;       /* product of dims */
    uint32_t quant;       /* version 3: offset of its quantization record in the image, 0: none */
} mt_tensor_desc;

typedef struct mt_op_desc {
    uint8_t type;
    uint8_t num_inputs;
    uint8_t num_outputs;
    uint8_t flags;   /* set by the planner: MT_OPF_* */
    uint16_t inputs[MT_OP_MAX_INPUTS];
    uint16_t outputs[MT_OP_MAX_OUTPUTS];
    uint32_t params[4];
} mt_op_desc;

/* mt_op_desc.flags, set by the planner */
#define MT_OPF_TRAINED 1u  /* op index >= the first trained op */
/* Operator fusion of frozen int8 ops (planner.c, conv_s8.c): a pointwise CONV2D_S8 whose only
 * reader is the DEPTHWISE_CONV2D_S8 after it runs inside that depthwise, row by row, so its
 * output is never whole in memory: a ring of KH rows holds it. */
#define MT_OPF_FUSED_INTO_NEXT 2u /* forward skipped: the next op computes this op's output */
#define MT_OPF_STREAMS_PREVIOUS 4u /* forward computes the previous op's output as it reads it */
/* A frozen int8 convolution whose output the planner laid over its own input
 * (plan_lifetimes.c, mt_plan_over_input): a DEPTHWISE_CONV2D_S8 copies the input rows it still
 * needs into a band of KH rows after the batch's samples, then writes each output row in
 * place; a CONV2D_S8, whose output starts before its input, computes a row at a time. */
#define MT_OPF_IN_PLACE 8u
/* a depthwise streaming its expansion (MT_OPF_STREAMS_PREVIOUS) whose ring is followed by the
 * two row kernels' constants (planner.c: where the arena is no larger so) */
#define MT_OPF_ROW_CONSTANTS 16u

/* Validate the whole image and fill img. Statuses as mt_model_check(). */
mt_status mt_image_open(mt_image *img, const void *image, size_t image_bytes);
/* The same, and where (if not NULL) receives what failed first: the op (index and type as
 * stored) when an op's check failed, the tensor when a tensor entry, an io entry or an
 * op's operand is at fault; {MT_OK, -1, 0, -1} when nothing did (mt_model_diagnose). */
mt_status mt_image_open_at(mt_image *img, const void *image, size_t image_bytes, mt_error_detail *where);
/* The header alone: its fields, and its sections inside the image and disjoint (O(1)); not
 * the CRC over the whole image, the tables or the ops. For an image mt_image_open() accepted
 * before and that has not changed since (mt_session_init_from_plan() proves the second by the
 * plan's binding); the tables may then be read within their sections' bounds. */
mt_status mt_image_open_header(mt_image *img, const void *image, size_t image_bytes);
/* Record status and what it concerns in *where (ignored when NULL; op_type is 0 for op -1);
 * returns status, so a check ends with `return mt_fail_at(where, st, ...)`. */
mt_status mt_fail_at(mt_error_detail *where, mt_status status, int32_t op, int32_t op_type, int32_t tensor);

void mt_image_tensor(const mt_image *img, uint32_t index, mt_tensor_desc *t);
/* Tensor index of an opened image as mt_tensor_info (mt_model_tensor() without the
 * validation): MT_ERR_UNSUPPORTED for a CONST tensor's data past what data_offset holds. */
mt_status mt_image_tensor_info(const mt_image *img, uint32_t index, mt_tensor_info *info);
void mt_image_op(const mt_image *img, uint32_t index, mt_op_desc *op);
/* The layer op index belongs to: byte 3 of its entry in version 2, the op's own index in
 * version 1 (where every op is a layer of its own). */
uint32_t mt_image_op_layer(const mt_image *img, uint32_t index);
/* Tensor index of input (is_output = 0) or output (1) number position. */
uint32_t mt_image_io(const mt_image *img, int is_output, uint32_t position);
/* Bytes of one element of dtype (f32, i32: 4; i8: 1). */
uint32_t mt_dtype_bytes(uint32_t dtype);
/* The quantization record of tensor t (0 when it has none, 1 when *q is filled). */
int mt_image_quant(const mt_image *img, const mt_tensor_desc *t, mt_quant *q);
/* Scale and zero point of channel c of a record. */
float mt_quant_scale(const mt_quant *q, uint32_t c);
int32_t mt_quant_zero_point(const mt_quant *q, uint32_t c);
/* A record's scales as floats in place: 4-aligned in the image (check_quant) and
 * little-endian, as the core reads its float weights (it runs on little-endian targets) */
static inline const float *mt_quant_scales_f32(const mt_quant *q)
{
    return (const float *)(const void *)q->scales;
}
/* The float data of a CONST tensor, in place. */
const float *mt_image_const_f32(const mt_image *img, const mt_tensor_desc *t);
/* CRC-32 of the image's structure (header fields, tensor, op and io tables; not the
 * weight data, and not the layer byte of op entries, which is 0 in version 1): checkpoints
 * use it to recognise the same architecture, so the version 1 and 2 images of one model
 * take the same checkpoints. */
uint32_t mt_image_fingerprint(const mt_image *img);
/* Index of the op writing tensor index, or -1. */
int32_t mt_image_producer(const mt_image *img, uint32_t index);

#endif /* MT_MODEL_IMAGE_H */
