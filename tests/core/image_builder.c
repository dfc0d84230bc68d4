/* image_builder.c: see image_builder.h for the layout written. */
#include "image_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "microtrain.h"

/* The builder's limits hold in every build type: assert() vanishes under NDEBUG (the tests'
 * RelWithDebInfo), and a model past IB_MAX_FLOATS then overwrote the static model. */
#define IB_REQUIRE(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: image_builder: %s does not hold\n", __FILE__, __LINE__, #cond); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

void ib_init(ib_model *m)
{
    memset(m, 0, sizeof *m);
    m->version = 2;
}

int ib_tensor(ib_model *m, int dtype, int flags, int ndim, const int32_t *dims, const float *data)
{
    int i = m->num_tensors++;
    uint32_t count = 1;
    IB_REQUIRE(i < IB_MAX_TENSORS && ndim >= 0 && ndim <= 4);
    m->tensors[i].dtype = (uint8_t)dtype;
    m->tensors[i].ndim = (uint8_t)ndim;
    m->tensors[i].flags = (uint16_t)flags;
    for (int d = 0; d < ndim; d++) {
        m->tensors[i].dims[d] = (uint32_t)dims[d];
        count *= (uint32_t)dims[d];
    }
    m->tensors[i].count = count;
    m->tensors[i].data_start = -1;
    if (flags & MT_TENSOR_CONST) {
        IB_REQUIRE(m->num_floats + (int)count <= IB_MAX_FLOATS);
        m->tensors[i].data_start = m->num_floats;
        for (uint32_t k = 0; k < count; k++)
            m->floats[m->num_floats + (int)k] = data ? data[k] : 0.0f;
        m->num_floats += (int)count;
    }
    return i;
}

int ib_op(ib_model *m, int type, int num_in, const int *in, int num_out, const int *out)
{
    int i = m->num_ops++;
    IB_REQUIRE(i < IB_MAX_OPS && num_in <= 4 && num_out <= 2);
    m->ops[i].type = (uint8_t)type;
    m->ops[i].num_in = (uint8_t)num_in;
    m->ops[i].num_out = (uint8_t)num_out;
    for (int k = 0; k < 4; k++)
        m->ops[i].in[k] = (k < num_in && in[k] >= 0) ? (uint16_t)in[k] : 0xFFFFu;
    for (int k = 0; k < 2; k++)
        m->ops[i].out[k] = k < num_out ? (uint16_t)out[k] : 0xFFFFu;
    for (int k = 0; k < 4; k++)
        m->ops[i].params[k] = 0;
    m->ops[i].layer = (uint8_t)i;
    return i;
}

void ib_op_layer(ib_model *m, int op, int layer)
{
    IB_REQUIRE(op >= 0 && op < m->num_ops && layer >= 0 && layer <= 255);
    m->ops[op].layer = (uint8_t)layer;
}

void ib_op_params(ib_model *m, int op, uint32_t p0, uint32_t p1, uint32_t p2, uint32_t p3)
{
    IB_REQUIRE(op >= 0 && op < m->num_ops);
    m->ops[op].params[0] = p0;
    m->ops[op].params[1] = p1;
    m->ops[op].params[2] = p2;
    m->ops[op].params[3] = p3;
}

void ib_spatial_params(ib_model *m, int op, uint32_t kh, uint32_t kw, uint32_t sh, uint32_t sw,
                       uint32_t padding, uint32_t activation)
{
    ib_op_params(m, op, kh | kw << 16, sh | sw << 16, padding, activation);
}

void ib_input(ib_model *m, int tensor)
{
    IB_REQUIRE(m->num_inputs < IB_MAX_IO);
    m->inputs[m->num_inputs++] = (uint16_t)tensor;
}

void ib_output(ib_model *m, int tensor)
{
    IB_REQUIRE(m->num_outputs < IB_MAX_IO);
    m->outputs[m->num_outputs++] = (uint16_t)tensor;
}

uint32_t ib_get_u32(const uint8_t *p, size_t o)
{
    return (uint32_t)p[o] | (uint32_t)p[o + 1] << 8 | (uint32_t)p[o + 2] << 16 |
           (uint32_t)p[o + 3] << 24;
}

void ib_put_u32(uint8_t *p, size_t o, uint32_t v)
{
    p[o] = (uint8_t)v;
    p[o + 1] = (uint8_t)(v >> 8);
    p[o + 2] = (uint8_t)(v >> 16);
    p[o + 3] = (uint8_t)(v >> 24);
}

uint16_t ib_get_u16(const uint8_t *p, size_t o)
{
    return (uint16_t)(p[o] | p[o + 1] << 8);
}

void ib_put_u16(uint8_t *p, size_t o, uint16_t v)
{
    p[o] = (uint8_t)v;
    p[o + 1] = (uint8_t)(v >> 8);
}

/* Reflected CRC-32, polynomial 0xEDB88320, init and final xor 0xFFFFFFFF (zlib.crc32). */
uint32_t ib_crc32_update(uint32_t crc, const void *data, size_t bytes)
{
    const uint8_t *p = (const uint8_t *)data;
    crc ^= 0xFFFFFFFFu;
    for (size_t i = 0; i < bytes; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

uint32_t ib_crc32(const void *data, size_t bytes)
{
    return ib_crc32_update(0, data, bytes);
}

void ib_refresh_crc(uint8_t *image)
{
    uint32_t bytes = ib_get_u32(image, 8);
    ib_put_u32(image, 12, ib_crc32(image + 16, bytes - 16));
}

size_t ib_tensor_entry(const uint8_t *image, int i)
{
    return ib_get_u32(image, 32) + 32u * (size_t)i;
}

size_t ib_op_entry(const uint8_t *image, int i)
{
    return ib_get_u32(image, 36) + 32u * (size_t)i;
}

const float *ib_const_data(const uint8_t *image, int i)
{
    size_t e = ib_tensor_entry(image, i);
    return (const float *)(const void *)(image + ib_get_u32(image, 44) + ib_get_u32(image, e + 20));
}

static size_t align16(size_t x)
{
    return (x + 15u) & ~(size_t)15u;
}

uint8_t *ib_build(const ib_model *m, size_t *image_bytes)
{
    size_t tensors_offset = 64;
    size_t ops_offset = tensors_offset + 32u * (size_t)m->num_tensors;
    size_t io_offset = ops_offset + 32u * (size_t)m->num_ops;
    size_t data_offset = align16(io_offset + 2u * (size_t)(m->num_inputs + m->num_outputs));
    size_t data_bytes = 0;
    uint32_t rel[IB_MAX_TENSORS];

    for (int i = 0; i < m->num_tensors; i++) {
        rel[i] = 0;
        if (m->tensors[i].data_start >= 0) {
            rel[i] = (uint32_t)data_bytes;
            data_bytes = align16(data_bytes + 4u * m->tensors[i].count);
        }
    }
    size_t total = data_offset + data_bytes;
    uint8_t *img = (uint8_t *)calloc(1, total);
    /* the core reads images at any 4-byte aligned address (mt_model_check); malloc gives 16
     * on x86-64 and 8 on 32-bit ARM Linux, where the C tests run too */
    IB_REQUIRE(img != NULL && ((uintptr_t)img & 3u) == 0);

    memcpy(img, "MTM1", 4);
    ib_put_u16(img, 4, (uint16_t)m->version);
    ib_put_u16(img, 6, 64);
    ib_put_u32(img, 8, (uint32_t)total);
    ib_put_u32(img, 16, (uint32_t)m->num_tensors);
    ib_put_u32(img, 20, (uint32_t)m->num_ops);
    ib_put_u32(img, 24, (uint32_t)m->num_inputs);
    ib_put_u32(img, 28, (uint32_t)m->num_outputs);
    ib_put_u32(img, 32, (uint32_t)tensors_offset);
    ib_put_u32(img, 36, (uint32_t)ops_offset);
    ib_put_u32(img, 40, (uint32_t)io_offset);
    ib_put_u32(img, 44, (uint32_t)data_offset);
    ib_put_u32(img, 48, (uint32_t)data_bytes);

    for (int i = 0; i < m->num_tensors; i++) {
        size_t e = tensors_offset + 32u * (size_t)i;
        img[e] = m->tensors[i].dtype;
        img[e + 1] = m->tensors[i].ndim;
        ib_put_u16(img, e + 2, m->tensors[i].flags);
        for (int d = 0; d < 4; d++)
            ib_put_u32(img, e + 4 + 4u * (size_t)d, m->tensors[i].dims[d]);
        if (m->tensors[i].data_start >= 0) {
            ib_put_u32(img, e + 20, rel[i]);
            ib_put_u32(img, e + 24, 4u * m->tensors[i].count);
            for (uint32_t k = 0; k < m->tensors[i].count; k++) {
                uint32_t bits;
                memcpy(&bits, &m->floats[m->tensors[i].data_start + (int)k], 4);
                ib_put_u32(img, data_offset + rel[i] + 4u * k, bits);
            }
        }
    }
    for (int i = 0; i < m->num_ops; i++) {
        size_t e = ops_offset + 32u * (size_t)i;
        img[e] = m->ops[i].type;
        img[e + 1] = m->ops[i].num_in;
        img[e + 2] = m->ops[i].num_out;
        img[e + 3] = m->version >= 2 ? m->ops[i].layer : 0;
        for (int k = 0; k < 4; k++)
            ib_put_u16(img, e + 4 + 2u * (size_t)k, m->ops[i].in[k]);
        for (int k = 0; k < 2; k++)
            ib_put_u16(img, e + 12 + 2u * (size_t)k, m->ops[i].out[k]);
        for (int k = 0; k < 4; k++)
            ib_put_u32(img, e + 16 + 4u * (size_t)k, m->ops[i].params[k]);
    }
    for (int i = 0; i < m->num_inputs; i++)
        ib_put_u16(img, io_offset + 2u * (size_t)i, m->inputs[i]);
    for (int i = 0; i < m->num_outputs; i++)
        ib_put_u16(img, io_offset + 2u * (size_t)(m->num_inputs + i), m->outputs[i]);

    ib_refresh_crc(img);
    *image_bytes = total;
    return img;
}

void ib_mlp_defaults(ib_mlp_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->in = 3;
    spec->hidden = 4;
    spec->out = 2;
    spec->hidden_act = MT_OP_RELU;
    spec->use_bias = 1;
    spec->seed = 12345u;
    spec->version = 2;
}

/* Weights: the given ones, or uniform [-0.5, 0.5) from a xorshift32 stream. */
static const float *weights_or_random(const float *given, float *buf, int count, unsigned *state)
{
    if (given)
        return given;
    for (int i = 0; i < count; i++) {
        unsigned x = *state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *state = x;
        buf[i] = (float)((double)(x >> 8) / 16777216.0 - 0.5);
    }
    return buf;
}

uint8_t *ib_build_mlp(const ib_mlp_spec *s, size_t *image_bytes)
{
    static ib_model m; /* big; keep it off the stack */
    static float buf[IB_MAX_FLOATS];
    unsigned state = s->seed ? s->seed : 1u;
    int wflags = MT_TENSOR_CONST | MT_TENSOR_TRAINABLE;
    int first_flags = s->frozen_first ? MT_TENSOR_CONST : wflags;
    int first_units = s->hidden > 0 ? s->hidden : s->out;
    int32_t d[2];
    int in[3], out[1];

    ib_init(&m);
    m.version = s->version ? s->version : 2;
    d[0] = s->in;
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 1, d, NULL);
    ib_input(&m, x);

    d[0] = first_units;
    d[1] = s->in;
    int w1 = ib_tensor(&m, MT_DTYPE_F32, first_flags, 2, d,
                       weights_or_random(s->w1, buf, first_units * s->in, &state));
    int b1 = -1;
    if (s->use_bias)
        b1 = ib_tensor(&m, MT_DTYPE_F32, first_flags, 1, d,
                       weights_or_random(s->b1, buf, first_units, &state));
    int cur = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
    in[0] = x, in[1] = w1, in[2] = b1, out[0] = cur;
    ib_op(&m, MT_OP_DENSE, s->use_bias ? 3 : 2, in, 1, out);
    int layer = 0;

    if (s->hidden > 0) {
        if (s->hidden_act) {
            int a = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
            in[0] = cur, out[0] = a;
            ib_op_layer(&m, ib_op(&m, s->hidden_act, 1, in, 1, out), layer);
            cur = a;
        }
        d[0] = s->out;
        d[1] = s->hidden;
        int w2 = ib_tensor(&m, MT_DTYPE_F32, wflags, 2, d,
                           weights_or_random(s->w2, buf, s->out * s->hidden, &state));
        int b2 = -1;
        if (s->use_bias)
            b2 = ib_tensor(&m, MT_DTYPE_F32, wflags, 1, d,
                           weights_or_random(s->b2, buf, s->out, &state));
        int z = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
        in[0] = cur, in[1] = w2, in[2] = b2, out[0] = z;
        ib_op_layer(&m, ib_op(&m, MT_OP_DENSE, s->use_bias ? 3 : 2, in, 1, out), ++layer);
        cur = z;
    }
    if (s->out_act) {
        d[0] = s->out;
        int y = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d, NULL);
        in[0] = cur, out[0] = y;
        ib_op_layer(&m, ib_op(&m, s->out_act, 1, in, 1, out), layer);
        cur = y;
    }
    m.tensors[cur].flags |= MT_TENSOR_OUTPUT;
    ib_output(&m, cur);
    return ib_build(&m, image_bytes);
}
