/*
 * Checkpoints' reader (docs/checkpoint_format.md; the writer is checkpoint_save.c), through
 * the caller's random-access read callback: a device never holds a whole file.
 *
 * Load reads twice: pass 1 checks structure, CRC, contents and fit without writing anything;
 * pass 2 replaces weights, optimizer state, the FedProx reference and counters. So a bad
 * checkpoint leaves the session exactly as it was. Contents are checked as well as structure
 * because a CRC proves only that bytes were not damaged, not that their writer was honest: a
 * loaded session must never hold a value that no training run could have produced (a NaN
 * weight, a negative Adam v, an int8 weight that is not its float master copy's rounding).
 * Numbers are decoded little-endian byte by byte, whatever the host's order.
 */
#include <string.h>

#include "checkpoint_layout.h"
#include "float_bits.h"
#include "le_bytes.h"
#include "mt_math.h"
#include "optimizers.h"

/* ---- load ---- */

typedef struct reader {
    mt_read_fn read;
    void *user;
    uint32_t size;
} reader;

static mt_status fetch(const reader *r, uint32_t offset, void *data, uint32_t bytes)
{
    if ((uint64_t)offset + bytes > r->size) return MT_ERR_BAD_CHECKPOINT;
    if (bytes == 0) return MT_OK;
    mt_status st = r->read(r->user, offset, data, bytes);
    return st == MT_OK ? MT_OK : (st > 0 ? MT_ERR_IO : st);
}

typedef struct ck_header {
    uint32_t version, total, fingerprint, num_records, state_arrays, reference_arrays, num_properties;
    int32_t optimizer;
    int64_t step, epoch;
    float learning_rate, base_learning_rate; /* base: versions 2 and 3 */
    double beta1_power, beta2_power;
} ck_header;

static int known_optimizer(int32_t optimizer)
{
    return optimizer == MT_OPTIMIZER_SGD || optimizer == MT_OPTIMIZER_ADAM || optimizer == MT_OPTIMIZER_ADAMW;
}

/* The header's fields, each checked against what a writer can produce: an honest header
 * with a valid CRC is the only kind that passes. */
static mt_status parse_header(const uint8_t *h, uint32_t size, ck_header *c)
{
    c->version = mt_get_u16(h + 4);
    if (memcmp(h, CK_MAGIC, 4) != 0 || c->version < 1 || c->version > CK_VERSION_TYPED ||
        mt_get_u16(h + 6) != CK_HEADER_BYTES)
        return MT_ERR_BAD_CHECKPOINT;
    c->total = mt_get_u32(h + 8);
    c->fingerprint = mt_get_u32(h + 12);
    c->num_records = mt_get_u32(h + 16);
    c->optimizer = (int32_t)mt_get_u32(h + 20);
    c->state_arrays = mt_get_u32(h + 24);
    c->num_properties = mt_get_u32(h + 28);
    c->step = (int64_t)mt_get_u64(h + 32);
    c->epoch = (int64_t)mt_get_u64(h + 40);
    c->learning_rate = mt_f32_from_bits(mt_get_u32(h + 48));
    c->base_learning_rate = mt_f32_from_bits(mt_get_u32(h + 52)); /* version 1: reserved, 0 */
    c->beta1_power = mt_f64_from_bits(mt_get_u64(h + 56));
    c->beta2_power = mt_f64_from_bits(mt_get_u64(h + 64));
    c->reference_arrays = c->version >= CK_VERSION_REFERENCE ? mt_get_u32(h + 72) : 0u;
    if (c->total != size) return MT_ERR_BAD_CHECKPOINT;
    if (c->version == 1 ? mt_get_u32(h + 52) != 0
                        : !(mt_isfinitef(c->base_learning_rate) && c->base_learning_rate > 0.0f))
        return MT_ERR_BAD_CHECKPOINT; /* a base rate comes from a config: finite and > 0 */
    /* version 3 is written only with the reference (1 at offset 72), version 4 with (1) or
     * without (0); the rest is reserved, 0 */
    if (c->version == CK_VERSION_REFERENCE && c->reference_arrays != 1u) return MT_ERR_BAD_CHECKPOINT;
    if (c->version == CK_VERSION_TYPED && c->reference_arrays > 1u) return MT_ERR_BAD_CHECKPOINT;
    for (int i = c->version >= CK_VERSION_REFERENCE ? 76 : 72; i < 80; ++i)
        if (h[i] != 0) return MT_ERR_BAD_CHECKPOINT;
    /* the state a known optimizer keeps: none, momentum (SGD), or m and v (Adam, AdamW) */
    if (!known_optimizer(c->optimizer)) return MT_ERR_BAD_CHECKPOINT;
    if (c->state_arrays != 0 && c->state_arrays != mt_optimizer_state_arrays(c->optimizer, 1.0f))
        return MT_ERR_BAD_CHECKPOINT;
    if (c->step < 0 || c->epoch < 0) return MT_ERR_BAD_CHECKPOINT;
    if (!mt_isfinitef(c->learning_rate) || c->learning_rate < 0.0f) return MT_ERR_BAD_CHECKPOINT;
    /* β^t of a β in [0, 1) lies in [0, 1]: 0 is reachable (β1 = 0 after one step, or
     * β < 0.5 after some hundreds, the double underflowing), and without state the writer
     * stores exactly 1 */
    if (!(c->beta1_power >= 0.0 && c->beta1_power <= 1.0 && c->beta2_power >= 0.0 && c->beta2_power <= 1.0))
        return MT_ERR_BAD_CHECKPOINT;
    if (c->state_arrays == 0 && (c->beta1_power != 1.0 || c->beta2_power != 1.0)) return MT_ERR_BAD_CHECKPOINT;
    return MT_OK;
}

/* Check count floats at offset: every one finite, and not negative when nonnegative. */
static mt_status check_floats(const reader *r, uint32_t offset, uint32_t count, int nonnegative)
{
    uint8_t buf[CHUNK];
    for (uint32_t done = 0; done < count;) {
        const uint32_t n = count - done < CHUNK / 4 ? count - done : CHUNK / 4;
        mt_status st = fetch(r, offset + 4u * done, buf, 4u * n);
        if (st != MT_OK) return st;
        for (uint32_t i = 0; i < n; ++i) {
            const float x = mt_f32_from_bits(mt_get_u32(buf + 4 * i));
            if (!mt_isfinitef(x) || (nonnegative && x < 0.0f)) return MT_ERR_BAD_CHECKPOINT;
        }
        done += n;
    }
    return MT_OK;
}

/* An int8 weight's float master copy: each m finite, in [−128, 127] (the image's W_q at
 * init, then clamped to [−127, 127] by every step) and the weight its rounding half to even
 * (ops/qas.c: W_q = round(m) after each step, m = W_q at init) */
static mt_status check_master(const reader *r, uint32_t weights_at, uint32_t master_at, uint32_t count)
{
    uint8_t m[CHUNK], q[CHUNK / 4];
    for (uint32_t done = 0; done < count;) {
        const uint32_t n = count - done < CHUNK / 4 ? count - done : CHUNK / 4;
        mt_status st = fetch(r, master_at + 4u * done, m, 4u * n);
        if (st == MT_OK) st = fetch(r, weights_at + done, q, n);
        if (st != MT_OK) return st;
        for (uint32_t i = 0; i < n; ++i) {
            const float x = mt_f32_from_bits(mt_get_u32(m + 4 * i));
            if (!(x >= -128.0f && x <= 127.0f) || mt_qas_round((double)x, -128, 127) != (int8_t)q[i])
                return MT_ERR_BAD_CHECKPOINT;
        }
        done += n;
    }
    return MT_OK;
}

/* A record's values: f32 weights, the master copy (check_master), momentum or Adam m, and
 * the reference finite; Adam v (array 2 of 2 state arrays) finite and >= 0 (a sum of
 * squares). An int8 weight or int32 bias may hold any value of its type (an image's int8
 * weight may be −128, which no step writes but an untrained one keeps). The record lies
 * inside the body (checked by the caller). */
static mt_status check_record_values(const reader *r, const ck_header *c, ck_layout l, uint32_t values_at,
                                     uint32_t count)
{
    mt_status st = MT_OK;
    if (l.dtype == MT_DTYPE_F32) st = check_floats(r, values_at, count, 0);
    uint32_t at = values_at + (uint32_t)weight_bytes(l, count);
    if (st == MT_OK && l.master) st = check_master(r, values_at, at, count), at += 4u * count;
    for (uint32_t a = 1; a <= c->state_arrays + c->reference_arrays && st == MT_OK; ++a)
        st = check_floats(r, at + 4u * count * (a - 1u), count, a == 2 && c->state_arrays == 2);
    return st;
}

/* A record's header at buf: its tensor, count and layout (version 4's bytes 8-11: a known
 * dtype, a master copy 0 or 1 and only for int8, zeros) */
static mt_status parse_record(const uint8_t *buf, uint32_t version, uint32_t *index, uint32_t *count, ck_layout *l)
{
    *index = mt_get_u32(buf), *count = mt_get_u32(buf + 4);
    l->dtype = MT_DTYPE_F32, l->master = 0;
    if (version < CK_VERSION_TYPED) return MT_OK;
    l->dtype = buf[8], l->master = buf[9];
    const int known = l->dtype == MT_DTYPE_F32 || l->dtype == MT_DTYPE_I32 || l->dtype == MT_DTYPE_I8;
    if (!known || l->master > 1 || (l->master && l->dtype != MT_DTYPE_I8) || buf[10] != 0 || buf[11] != 0)
        return MT_ERR_BAD_CHECKPOINT;
    return MT_OK;
}

/* Whether the values at offset of trained weight t's rows the arena does not hold (rows_held..,
 * ops/kernel.h) are the image's, byte for byte: the session reads those in place (flash on a
 * device) and cannot write them, so a checkpoint whose frozen rows differ is another run's. */
static int held_rows_only(const reader *r, uint32_t offset, const mt_tensor_rt *t)
{
    const uint32_t held = mt_held_elements(t), width = (uint32_t)mt_dtype_bytes(t->dtype);
    const uint8_t *image = (const uint8_t *)(const void *)t->data + (size_t)held * width;
    uint8_t buf[CHUNK];
    for (uint32_t done = 0, bytes = width * (t->count - held); done < bytes;) {
        const uint32_t n = bytes - done < CHUNK ? bytes - done : CHUNK;
        /* the image's floats lie little-endian, as the checkpoint's (the core runs on such
         * targets); an int8 weight's bytes as they are */
        if (fetch(r, offset + width * held + done, buf, n) != MT_OK || memcmp(buf, image + done, n) != 0) return 0;
        done += n;
    }
    return 1;
}

/* Pass 1: CRC of every byte before the trailer, then the records' bounds and values and the
 * properties' encoding, then whether the checkpoint fits this session. */
static mt_status validate(const mt_session *s, const reader *r, ck_header *c)
{
    uint8_t buf[CK_HEADER_BYTES];
    mt_status st;
    if (r->size < CK_HEADER_BYTES + CK_TRAILER_BYTES) return MT_ERR_BAD_CHECKPOINT;
    if ((st = fetch(r, 0, buf, CK_HEADER_BYTES)) != MT_OK) return st;
    if ((st = parse_header(buf, r->size, c)) != MT_OK) return st;

    const uint32_t body = r->size - CK_TRAILER_BYTES;
    uint32_t crc = 0;
    for (uint32_t off = 0; off < body; off += CHUNK) {
        uint32_t n = body - off < CHUNK ? body - off : CHUNK;
        if ((st = fetch(r, off, buf, n)) != MT_OK) return st;
        crc = mt_crc32_update(crc, buf, n);
    }
    if ((st = fetch(r, body, buf, CK_TRAILER_BYTES)) != MT_OK) return st;
    if (mt_get_u32(buf) != crc) return MT_ERR_BAD_CHECKPOINT;

    /* walk the records: bounds first (a corrupt count must not read past the end) */
    uint64_t off = CK_HEADER_BYTES;
    int fits = c->fingerprint == s->model_fingerprint && c->num_records == (uint32_t)s->num_trained;
    const uint32_t record_header = c->version >= CK_VERSION_TYPED ? CK_TYPED_RECORD_HEADER_BYTES
                                                                  : CK_RECORD_HEADER_BYTES;
    for (uint32_t k = 0; k < c->num_records; ++k) {
        if (off + record_header > body) return MT_ERR_BAD_CHECKPOINT;
        if ((st = fetch(r, (uint32_t)off, buf, record_header)) != MT_OK) return st;
        uint32_t index, count;
        ck_layout l;
        if ((st = parse_record(buf, c->version, &index, &count, &l)) != MT_OK) return st;
        const uint32_t values_at = (uint32_t)off + record_header;
        off += record_header + values_bytes(l, count, c->state_arrays + c->reference_arrays);
        if (off > body) return MT_ERR_BAD_CHECKPOINT;
        if ((st = check_record_values(r, c, l, values_at, count)) != MT_OK) return st;
        if (fits && index != s->trained[k]) fits = 0;
        if (fits) { /* the same tensor at the same width: a float checkpoint of an int8 layer is another run's */
            const ck_layout mine = layout_of(&s->tensors[index]);
            fits = count == s->tensors[index].count && l.dtype == mine.dtype && l.master == mine.master &&
                   held_rows_only(r, values_at, &s->tensors[index]);
        }
    }
    for (uint32_t k = 0; k < c->num_properties; ++k) {
        if (off + CK_PROPERTY_HEADER_BYTES > body) return MT_ERR_BAD_CHECKPOINT;
        if ((st = fetch(r, (uint32_t)off, buf, CK_PROPERTY_HEADER_BYTES)) != MT_OK) return st;
        const uint32_t name_bytes = mt_get_u16(buf), type = buf[2], value_bytes = mt_get_u32(buf + 4);
        if (name_bytes == 0 || name_bytes > MT_PROPERTY_MAX_NAME || buf[3] != 0) return MT_ERR_BAD_CHECKPOINT;
        if (type == MT_PROPERTY_INT || type == MT_PROPERTY_FLOAT) {
            if (value_bytes != 8) return MT_ERR_BAD_CHECKPOINT;
        } else if (type != MT_PROPERTY_STRING || value_bytes > MT_PROPERTY_MAX_STRING) {
            return MT_ERR_BAD_CHECKPOINT;
        }
        off += CK_PROPERTY_HEADER_BYTES + pad4(name_bytes + value_bytes);
        if (off > body) return MT_ERR_BAD_CHECKPOINT;
    }
    if (off != body) return MT_ERR_BAD_CHECKPOINT;

    /* another optimizer's checkpoint is refused even without state: its learning rate and
     * counters belong to another run */
    if (!fits || c->optimizer != s->cfg.optimizer) return MT_ERR_CHECKPOINT_MISMATCH;
    if (c->state_arrays != 0 && c->state_arrays != mt_optimizer_state_arrays(s->cfg.optimizer, s->cfg.momentum))
        return MT_ERR_CHECKPOINT_MISMATCH;
    return MT_OK;
}

/* Read count floats at offset into x (little-endian bytes, decoded in place). */
static mt_status fetch_floats(const reader *r, uint32_t offset, float *x, uint32_t count)
{
    mt_status st = fetch(r, offset, x, 4u * count);
    if (st != MT_OK) return st;
    uint8_t *bytes = (uint8_t *)x;
    for (uint32_t i = 0; i < count; ++i) x[i] = mt_f32_from_bits(mt_get_u32(bytes + 4 * i));
    return MT_OK;
}

/* Read count int32 values at offset into q (little-endian bytes, decoded in place). */
static mt_status fetch_int32s(const reader *r, uint32_t offset, int32_t *q, uint32_t count)
{
    mt_status st = fetch(r, offset, q, 4u * count);
    if (st != MT_OK) return st;
    uint8_t *bytes = (uint8_t *)q;
    for (uint32_t i = 0; i < count; ++i) q[i] = (int32_t)mt_get_u32(bytes + 4 * i);
    return MT_OK;
}

/* Read trained tensor t's weights at offset, at their width (emit_weights) */
static mt_status fetch_weights(const reader *r, uint32_t offset, mt_tensor_rt *t)
{
    /* a weight whose first rows alone the arena holds: those (the others are the image's, which
     * held_rows_only has compared) */
    if (t->dtype == MT_DTYPE_F32) return fetch_floats(r, offset, t->mutable_data, mt_held_elements(t));
    if (t->dtype == MT_DTYPE_I8) return fetch(r, offset, t->mutable_data, mt_held_elements(t));
    return fetch_int32s(r, offset, (int32_t *)(void *)t->mutable_data, t->count);
}

/* Pass 2: replace weights, state, the reference, counters; then hand over the properties. A
 * reference goes to a session with a proximal term and is skipped by one without (it has no
 * w_ref); a checkpoint without one leaves the session's reference as it is. */
static mt_status apply(mt_session *s, const reader *r, const ck_header *c, mt_property_fn on_property,
                       void *property_user)
{
    mt_status st;
    uint32_t off = CK_HEADER_BYTES;
    const uint32_t arrays = mt_optimizer_state_arrays(s->cfg.optimizer, s->cfg.momentum);
    const uint32_t record_header = c->version >= CK_VERSION_TYPED ? CK_TYPED_RECORD_HEADER_BYTES
                                                                  : CK_RECORD_HEADER_BYTES;
    for (int32_t k = 0; k < s->num_trained; ++k) {
        mt_tensor_rt *t = &s->tensors[s->trained[k]];
        const ck_layout l = layout_of(t); /* the record's: validate() compared them */
        off += record_header;
        if ((st = fetch_weights(r, off, t)) != MT_OK) return st;
        off += (uint32_t)weight_bytes(l, t->count);
        if (l.master) {
            if ((st = fetch_floats(r, off, mt_q_master_of(t), t->count)) != MT_OK) return st;
            off += 4u * t->count;
        }
        const mt_weight_part p = mt_weight_part_of(s, t);
        float *const state_at = state_of(s, t);
        if (c->state_arrays) { /* the trained part of each array in the weight's layout (emit_state) */
            for (uint32_t a = 0; a < arrays; ++a)
                for (uint32_t j = 0; j < p.blocks; ++j) {
                    float *state = state_at + (size_t)a * mt_part_elements(p) + (size_t)j * p.len;
                    if ((st = fetch_floats(r, off + 4u * (a * t->count + j * p.stride), state, p.len)) != MT_OK)
                        return st;
                }
            off += 4u * t->count * arrays;
        } else if (arrays) {
            memset(state_at, 0, 4u * mt_part_elements(p) * arrays); /* not a quantized one's scales */
        }
        if (c->reference_arrays) {
            float *reference = mt_reference_of(s, t);
            if (reference && (st = fetch_floats(r, off, reference, mt_held_elements(t))) != MT_OK) return st;
            off += 4u * t->count;
        }
        /* accumulated gradients start again; fused ones (a tile, for a weight updated in
         * tiles) are zeroed by every step before their first writer */
        if (!s->plan.fused_update) memset(t->grad, 0, 4u * t->count);
    }
    s->accumulated_rows = 0;
    s->step = c->step;
    s->epoch = c->epoch;
    s->learning_rate = c->learning_rate;
    if (c->version >= 2) s->base_learning_rate = c->base_learning_rate;
    s->beta1_power = c->state_arrays ? c->beta1_power : 1.0;
    s->beta2_power = c->state_arrays ? c->beta2_power : 1.0;

    for (uint32_t k = 0; k < c->num_properties; ++k) {
        uint8_t ph[CK_PROPERTY_HEADER_BYTES];
        char name[MT_PROPERTY_MAX_NAME + 1];
        char text[MT_PROPERTY_MAX_STRING + 1];
        uint8_t v[8];
        if ((st = fetch(r, off, ph, sizeof ph)) != MT_OK) return st;
        const uint32_t name_bytes = mt_get_u16(ph), value_bytes = mt_get_u32(ph + 4);
        mt_property p;
        memset(&p, 0, sizeof p);
        p.type = ph[2];
        if ((st = fetch(r, off + CK_PROPERTY_HEADER_BYTES, name, name_bytes)) != MT_OK) return st;
        name[name_bytes] = '\0';
        p.name = name;
        const uint32_t value_at = off + CK_PROPERTY_HEADER_BYTES + name_bytes;
        if (p.type == MT_PROPERTY_STRING) {
            if ((st = fetch(r, value_at, text, value_bytes)) != MT_OK) return st;
            text[value_bytes] = '\0';
            p.str_value = text;
        } else {
            if ((st = fetch(r, value_at, v, 8)) != MT_OK) return st;
            if (p.type == MT_PROPERTY_INT) p.int_value = (int64_t)mt_get_u64(v);
            else p.float_value = mt_f64_from_bits(mt_get_u64(v));
        }
        off += CK_PROPERTY_HEADER_BYTES + pad4(name_bytes + value_bytes);
        if (on_property && (st = on_property(property_user, &p)) != MT_OK) return st;
    }
    return MT_OK;
}

mt_status mt_checkpoint_load(mt_session *s, size_t checkpoint_bytes, mt_read_fn read, void *user,
                             mt_property_fn on_property, void *property_user)
{
    if (!mt_session_valid(s) || read == NULL) return MT_ERR_BAD_ARGUMENT;
    if (checkpoint_bytes > 0xFFFFFFFFu) return MT_ERR_BAD_CHECKPOINT;
    reader r = {read, user, (uint32_t)checkpoint_bytes};
    ck_header c;
    mt_status st = validate(s, &r, &c);
    if (st != MT_OK) return st;
    return apply(s, &r, &c, on_property, property_user);
}
