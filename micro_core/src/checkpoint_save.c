/*
 * Checkpoints' writer (docs/checkpoint_format.md; the reader is checkpoint.c): front to back,
 * in small chunks through the caller's callback, so a device streams the file straight into
 * flash, with a running CRC for the trailer. Numbers are encoded little-endian byte by byte,
 * whatever the host's order. A session with an int8 layer trained in place writes version 4,
 * whose records say their layout (the weights' dtype, a master copy); a float session writes
 * version 2, or 3 with the FedProx reference: the bytes it always wrote.
 */
#include <string.h>

#include "checkpoint_layout.h"
#include "float_bits.h"
#include "le_bytes.h"
#include "optimizers.h"

/* strlen bounded by limit + 1, so an unterminated string cannot run away. */
static uint32_t bounded_length(const char *s, uint32_t limit)
{
    uint32_t n = 0;
    while (n <= limit && s[n] != '\0') ++n;
    return n;
}

/* ---- what a checkpoint of this session holds ---- */

static uint32_t state_arrays_of(const mt_session *s, int32_t include_optimizer)
{
    return include_optimizer ? mt_optimizer_state_arrays(s->cfg.optimizer, s->cfg.momentum) : 0u;
}

/* 1 when each record carries the proximal term's reference w_ref (FedProx, proximal_mu > 0):
 * it belongs to the resumable state, like the optimizer's, so it comes with it */
static uint32_t reference_arrays_of(const mt_session *s, int32_t include_optimizer)
{
    return include_optimizer && s->cfg.proximal_mu > 0.0f ? 1u : 0u;
}


static mt_status property_value_bytes(const mt_property *p, uint32_t *name_bytes, uint32_t *value_bytes)
{
    if (p->name == NULL) return MT_ERR_BAD_ARGUMENT;
    *name_bytes = bounded_length(p->name, MT_PROPERTY_MAX_NAME);
    if (*name_bytes == 0 || *name_bytes > MT_PROPERTY_MAX_NAME) return MT_ERR_BAD_ARGUMENT;
    switch (p->type) {
    case MT_PROPERTY_INT:
    case MT_PROPERTY_FLOAT: *value_bytes = 8; return MT_OK;
    case MT_PROPERTY_STRING:
        if (p->str_value == NULL) return MT_ERR_BAD_ARGUMENT;
        *value_bytes = bounded_length(p->str_value, MT_PROPERTY_MAX_STRING);
        return *value_bytes > MT_PROPERTY_MAX_STRING ? MT_ERR_BAD_ARGUMENT : MT_OK;
    default: return MT_ERR_BAD_ARGUMENT;
    }
}

/* What a record's values are: its weights' dtype (MT_DTYPE_*) and whether an int8 weight's
 * float master copy (MT_TENSOR_MASTER) follows them. Versions 1 to 3 hold f32 weights alone. */

mt_status mt_checkpoint_bytes(const mt_session *s, int32_t include_optimizer,
                              const mt_property *properties, int32_t num_properties, size_t *bytes)
{
    if (!mt_session_valid(s) || bytes == NULL || num_properties < 0 ||
        (num_properties > 0 && properties == NULL) || (include_optimizer != 0 && include_optimizer != 1))
        return MT_ERR_BAD_ARGUMENT;
    const uint32_t arrays = state_arrays_of(s, include_optimizer) + reference_arrays_of(s, include_optimizer);
    const uint32_t record_header = trains_quantized(s) ? CK_TYPED_RECORD_HEADER_BYTES : CK_RECORD_HEADER_BYTES;
    uint64_t total = CK_HEADER_BYTES + CK_TRAILER_BYTES;
    for (int32_t k = 0; k < s->num_trained; ++k) {
        const mt_tensor_rt *t = &s->tensors[s->trained[k]];
        total += record_header + values_bytes(layout_of(t), t->count, arrays);
    }
    for (int32_t k = 0; k < num_properties; ++k) {
        uint32_t name_bytes = 0, value_bytes = 0;
        mt_status st = property_value_bytes(&properties[k], &name_bytes, &value_bytes);
        if (st != MT_OK) return st;
        total += CK_PROPERTY_HEADER_BYTES + pad4(name_bytes + value_bytes);
    }
    if (total > 0xFFFFFFFFu) return MT_ERR_UNSUPPORTED; /* the format's sizes are 32-bit */
    *bytes = (size_t)total;
    return MT_OK;
}

/* ---- save ---- */

typedef struct writer {
    mt_write_fn write;
    void *user;
    uint32_t crc;
    mt_status status;
} writer;

/* Hand bytes to the callback in pieces of at most CHUNK, so a device can program flash
 * page by page from a small buffer. */
static void emit(writer *w, const void *data, size_t bytes)
{
    const uint8_t *p = (const uint8_t *)data;
    while (w->status == MT_OK && bytes > 0) {
        const size_t n = bytes < CHUNK ? bytes : CHUNK;
        w->crc = mt_crc32_update(w->crc, p, n);
        w->status = w->write(w->user, p, n);
        if (w->status > 0) w->status = MT_ERR_IO; /* a callback must return a status */
        p += n;
        bytes -= n;
    }
}

static void emit_floats(writer *w, const float *x, uint32_t count)
{
    uint8_t buf[CHUNK];
    uint32_t done = 0;
    while (done < count) {
        uint32_t n = count - done < CHUNK / 4 ? count - done : CHUNK / 4;
        for (uint32_t i = 0; i < n; ++i) mt_put_u32(buf + 4 * i, mt_f32_bits(x[done + i]));
        emit(w, buf, 4u * n);
        done += n;
    }
}

/* count zero bytes */
static void emit_zero_bytes(writer *w, uint32_t count)
{
    static const uint8_t zeros[CHUNK];
    while (count > 0) {
        const uint32_t n = count < CHUNK ? count : CHUNK;
        emit(w, zeros, n);
        count -= n;
    }
}

/* Trained tensor t's weights at their width, little-endian: f32, int32, or int8 bytes
 * padded with zeros to a multiple of 4 */
static void emit_weights(writer *w, const mt_tensor_rt *t)
{
    if (t->dtype == MT_DTYPE_F32) { /* the arena's rows, then those read from the image (mt_weight_row) */
        const uint32_t held = mt_held_elements(t);
        emit_floats(w, t->mutable_data, held);
        emit_floats(w, t->data + held, t->count - held);
    } else if (t->dtype == MT_DTYPE_I8) { /* the arena's rows, then the image's (mt_weight_row_s8) */
        const uint32_t held = mt_held_elements(t);
        emit(w, t->mutable_data, held);
        emit(w, (const uint8_t *)(const void *)t->data + held, t->count - held);
        emit_zero_bytes(w, (4u - t->count % 4u) % 4u);
    } else {
        const int32_t *q = (const int32_t *)(const void *)t->data;
        uint8_t buf[CHUNK];
        for (uint32_t done = 0; done < t->count;) {
            const uint32_t n = t->count - done < CHUNK / 4 ? t->count - done : CHUNK / 4;
            for (uint32_t i = 0; i < n; ++i) mt_put_u32(buf + 4 * i, (uint32_t)q[done + i]);
            emit(w, buf, 4u * n);
            done += n;
        }
    }
}

/* The optimizer state of trained weight t in the weight's layout, array by array: a sparse
 * update's state holds its trained channels only (session.h, mt_weight_part), and the
 * checkpoint has zeros where the frozen ones are, so a checkpoint's records are the same
 * for every part (a state that starts at 0, as a frozen channel's would). */
static void emit_state(writer *w, const mt_session *s, const mt_tensor_rt *t, uint32_t arrays)
{
    const mt_weight_part p = mt_weight_part_of(s, t);
    const float *state = state_of(s, t);
    for (uint32_t a = 0; a < arrays; ++a)
        for (uint32_t j = 0; j < p.blocks; ++j) {
            emit_floats(w, state + (size_t)a * mt_part_elements(p) + (size_t)j * p.len, p.len);
            emit_zero_bytes(w, 4u * (p.stride - p.len));
        }
}

mt_status mt_checkpoint_save(const mt_session *s, int32_t include_optimizer,
                             const mt_property *properties, int32_t num_properties,
                             mt_write_fn write, void *user)
{
    size_t total;
    mt_status st = mt_checkpoint_bytes(s, include_optimizer, properties, num_properties, &total);
    if (st != MT_OK) return st;
    if (write == NULL) return MT_ERR_BAD_ARGUMENT;
    const uint32_t state_arrays = state_arrays_of(s, include_optimizer);
    const uint32_t reference = reference_arrays_of(s, include_optimizer);
    const int typed = trains_quantized(s);

    uint8_t h[CK_HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, CK_MAGIC, 4);
    /* a float session without reference: version 2's bytes, as before versions 3 and 4 */
    mt_put_u16(h + 4, typed ? CK_VERSION_TYPED : (reference ? CK_VERSION_REFERENCE : CK_VERSION));
    mt_put_u16(h + 6, CK_HEADER_BYTES);
    mt_put_u32(h + 8, (uint32_t)total);
    mt_put_u32(h + 12, s->model_fingerprint);
    mt_put_u32(h + 16, (uint32_t)s->num_trained);
    mt_put_u32(h + 20, (uint32_t)s->cfg.optimizer);
    mt_put_u32(h + 24, state_arrays);
    mt_put_u32(h + 28, (uint32_t)num_properties);
    mt_put_u64(h + 32, (uint64_t)s->step);
    mt_put_u64(h + 40, (uint64_t)s->epoch);
    mt_put_u32(h + 48, mt_f32_bits(s->learning_rate));
    mt_put_u32(h + 52, mt_f32_bits(s->base_learning_rate));
    mt_put_u64(h + 56, mt_f64_bits(state_arrays ? s->beta1_power : 1.0));
    mt_put_u64(h + 64, mt_f64_bits(state_arrays ? s->beta2_power : 1.0));
    mt_put_u32(h + 72, reference);

    writer w = {write, user, 0, MT_OK};
    emit(&w, h, sizeof h);
    for (int32_t k = 0; k < s->num_trained; ++k) {
        const mt_tensor_rt *t = &s->tensors[s->trained[k]];
        uint8_t r[CK_TYPED_RECORD_HEADER_BYTES] = {0};
        const ck_layout l = layout_of(t);
        mt_put_u32(r, s->trained[k]);
        mt_put_u32(r + 4, t->count);
        r[8] = l.dtype, r[9] = l.master;
        emit(&w, r, typed ? CK_TYPED_RECORD_HEADER_BYTES : CK_RECORD_HEADER_BYTES);
        emit_weights(&w, t);
        if (l.master) emit_floats(&w, mt_q_master_of(t), t->count);
        emit_state(&w, s, t, state_arrays);
        if (reference) { /* rows the arena does not hold: frozen, their reference their values */
            emit_floats(&w, mt_reference_of(s, t), mt_held_elements(t));
            emit_floats(&w, t->data + mt_held_elements(t), t->count - mt_held_elements(t));
        }
    }
    for (int32_t k = 0; k < num_properties; ++k) {
        const mt_property *p = &properties[k];
        uint32_t name_bytes = 0, value_bytes = 0;
        property_value_bytes(p, &name_bytes, &value_bytes); /* checked by mt_checkpoint_bytes */
        uint8_t ph[CK_PROPERTY_HEADER_BYTES] = {0};
        mt_put_u16(ph, (uint16_t)name_bytes);
        ph[2] = (uint8_t)p->type;
        mt_put_u32(ph + 4, value_bytes);
        emit(&w, ph, sizeof ph);
        emit(&w, p->name, name_bytes);
        uint8_t v[8];
        if (p->type == MT_PROPERTY_INT) mt_put_u64(v, (uint64_t)p->int_value);
        if (p->type == MT_PROPERTY_FLOAT) mt_put_u64(v, mt_f64_bits(p->float_value));
        emit(&w, p->type == MT_PROPERTY_STRING ? (const void *)p->str_value : (const void *)v, value_bytes);
        const uint8_t zeros[4] = {0};
        emit(&w, zeros, pad4(name_bytes + value_bytes) - (name_bytes + value_bytes));
    }
    uint8_t trailer[CK_TRAILER_BYTES];
    mt_put_u32(trailer, w.crc);
    if (w.status == MT_OK) {
        w.status = write(user, trailer, sizeof trailer);
        if (w.status > 0) w.status = MT_ERR_IO;
    }
    return w.status;
}
