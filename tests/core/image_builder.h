/*
 * image_builder: a small C writer of valid .mtm model images (micro_core/docs/model_format.md),
 * so tests can build models with chosen weights and then corrupt them field by field.
 *
 * Layout written (every offset from the image start):
 *   [0, 64)           header
 *   [64, ...)         tensor table, 32 bytes per tensor
 *   then              op table, 32 bytes per op
 *   then              io table: num_inputs then num_outputs u16 tensor indices
 *   16-aligned        data section: each CONST tensor's floats at a 16-aligned offset
 * image_bytes = data_offset + data_bytes; CRC-32 (IEEE) over [16, image_bytes).
 * Version 2 by default, each op its own layer unless ib_op_layer() groups them (the format's
 * rule is the caller's to keep, so tests can break it); version = 1 writes a version 1
 * image, whose op entries have byte 3 zero.
 *
 * Images come from malloc (16-byte aligned on every host we run on); release with free().
 */
#ifndef IMAGE_BUILDER_H
#define IMAGE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#define IB_MAX_TENSORS 64
#define IB_MAX_OPS 32
#define IB_MAX_IO 8
#define IB_MAX_FLOATS 8192

typedef struct ib_model {
    int version; /* of the image written: 2 (ib_init), or 1 */
    int num_tensors, num_ops, num_inputs, num_outputs;
    struct {
        uint8_t dtype, ndim;
        uint16_t flags;
        uint32_t dims[4];
        int data_start; /* index into floats[] of a CONST tensor's data, else -1 */
        uint32_t count;
    } tensors[IB_MAX_TENSORS];
    struct {
        uint8_t type, num_in, num_out;
        uint16_t in[4], out[2];
        uint32_t params[4]; /* op parameters; ib_op() sets them to zero */
        uint8_t layer;      /* version 2: the op's layer; ib_op() sets the op's index */
    } ops[IB_MAX_OPS];
    uint16_t inputs[IB_MAX_IO], outputs[IB_MAX_IO];
    float floats[IB_MAX_FLOATS];
    int num_floats;
} ib_model;

void ib_init(ib_model *m);
/* Declare a tensor; data (count floats) is copied for CONST tensors, ignored otherwise.
 * Returns its index. */
int ib_tensor(ib_model *m, int dtype, int flags, int ndim, const int32_t *dims, const float *data);
/* Declare an op; an input index < 0 writes 0xFFFF (absent optional input). Returns its index. */
int ib_op(ib_model *m, int type, int num_in, const int *in, int num_out, const int *out);
/* Set the four u32 parameters of op number op (docs/model_format.md, "Op entry"). */
void ib_op_params(ib_model *m, int op, uint32_t p0, uint32_t p1, uint32_t p2, uint32_t p3);
/* Set the layer (op entry byte 3 in version 2) of op number op. */
void ib_op_layer(ib_model *m, int op, int layer);
/* Parameters of a spatial op: kernel (pools only; 0 for convolutions), strides, padding
 * (MT_PADDING_*) and fused activation (MT_FUSED_*, convolutions only). */
void ib_spatial_params(ib_model *m, int op, uint32_t kh, uint32_t kw, uint32_t sh, uint32_t sw,
                       uint32_t padding, uint32_t activation);
void ib_input(ib_model *m, int tensor);
void ib_output(ib_model *m, int tensor);
/* Serialize; returns a malloc'ed image and writes its size. */
uint8_t *ib_build(const ib_model *m, size_t *image_bytes);

/* Byte-level access for corruption tests (little-endian, as the format). */
uint32_t ib_get_u32(const uint8_t *image, size_t offset);
void ib_put_u32(uint8_t *image, size_t offset, uint32_t value);
uint16_t ib_get_u16(const uint8_t *image, size_t offset);
void ib_put_u16(uint8_t *image, size_t offset, uint16_t value);
/* CRC-32 IEEE (zlib.crc32), written independently of the core's so it checks it. */
uint32_t ib_crc32(const void *data, size_t bytes);
/* The same continued from crc (a CRC so far; 0 to start): zlib.crc32(data, crc). */
uint32_t ib_crc32_update(uint32_t crc, const void *data, size_t bytes);
/* Recompute the header CRC over [16, image_bytes field) after a corruption. */
void ib_refresh_crc(uint8_t *image);
/* Offset of tensor entry / op entry number i. */
size_t ib_tensor_entry(const uint8_t *image, int i);
size_t ib_op_entry(const uint8_t *image, int i);
/* The float data of CONST tensor i, in place inside the image. */
const float *ib_const_data(const uint8_t *image, int i);

/*
 * A multilayer perceptron:
 *   x[in] -> Dense(W1 [hidden,in], b1) -> hidden_act -> Dense(W2 [out,hidden], b2) -> out_act
 * or, with hidden == 0, x -> Dense(W1 [out,in], b1) -> out_act.
 * Tensor table order: x, W1, b1, h, (a), W2, b2, z, (y); params are therefore W1, b1, W2, b2.
 * Layers (version 2) as a Dense with its activation writes them: each Dense and the
 * activation after it form one layer.
 * Weights that are NULL are drawn uniformly in [-0.5, 0.5) from seed.
 */
typedef struct ib_mlp_spec {
    int in, hidden, out;
    int hidden_act;     /* MT_OP_RELU / SIGMOID / TANH, or 0 for none */
    int out_act;        /* MT_OP_SOFTMAX / SIGMOID / ..., or 0 for none */
    int use_bias;       /* 0: dense ops without the optional bias */
    int frozen_first;   /* 1: W1, b1 are CONST without TRAINABLE */
    const float *w1, *b1, *w2, *b2;
    unsigned seed;
    int version;        /* of the image: 2 (ib_mlp_defaults) or 1 */
} ib_mlp_spec;

void ib_mlp_defaults(ib_mlp_spec *spec);
uint8_t *ib_build_mlp(const ib_mlp_spec *spec, size_t *image_bytes);

#endif /* IMAGE_BUILDER_H */
