/*
 * Checkpoints (docs/checkpoint_format.md) and inference export, streamed in
 * small chunks through caller callbacks: a device never holds a whole file.
 *
 * Save writes front to back and keeps a running CRC for the trailer.
 * Load reads twice: pass 1 checks structure, CRC, contents and fit without
 * writing anything; pass 2 replaces weights, optimizer state, the FedProx reference and
 * counters. So a
 * bad checkpoint leaves the session exactly as it was. Contents are checked as
 * well as structure because a CRC proves only that bytes were not damaged, not
 * that their writer was honest: a loaded session must never hold a value that
 * no training run could have produced (a NaN weight, a negative Adam v).
 * Numbers are encoded little-endian byte by byte, whatever the host's order.
 */
#include <string.h>

#include "microtrain.h"
#include "float_bits.h"
#include "le_bytes.h"
#include "mt_math.h"
#include "optimizers.h"
#include "session.h"

#define CK_MAGIC "MTCK"
#define CK_VERSION 2u    /* written; 1 (no base learning rate) is still read */
#define CK_VERSION_REFERENCE 3u /* written when a record carries the FedProx reference */
#define CK_HEADER_BYTES 80u
#define CK_TRAILER_BYTES 4u
#define CK_RECORD_HEADER_BYTES 8u
#define CK_PROPERTY_HEADER_BYTES 8u
#define CHUNK 64u

static uint32_t pad4(uint32_t n)
{
    return (n + 3u) & ~3u;
}

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

/* 1 when an int8 layer trains in place (a trained int8 weight or int32 bias): the format's
 * records are f32 weights, so such a session has no checkpoint (MT_ERR_UNSUPPORTED) */
static int trains_quantized(const mt_session *s)
{
    for (int32_t k = 0; k < s->num_trained; ++k)
        if (s->tensors[s->trained[k]].dtype != MT_DTYPE_F32) return 1;
    return 0;
}

mt_status mt_checkpoint_bytes(const mt_session *s, int32_t include_optimizer,
                              const mt_property *properties, int32_t num_properties, size_t *bytes)
{
    if (!mt_session_valid(s) || bytes == NULL || num_properties < 0 ||
        (num_properties > 0 && properties == NULL) || (include_optimizer != 0 && include_optimizer != 1))
        return MT_ERR_BAD_ARGUMENT;
    if (trains_quantized(s)) return MT_ERR_UNSUPPORTED;
    const uint64_t per_element =
        4u * (1u + state_arrays_of(s, include_optimizer) + reference_arrays_of(s, include_optimizer));
    uint64_t total = CK_HEADER_BYTES + CK_TRAILER_BYTES;
    for (int32_t k = 0; k < s->num_trained; ++k)
        total += CK_RECORD_HEADER_BYTES + per_element * s->tensors[s->trained[k]].count;
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

    uint8_t h[CK_HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, CK_MAGIC, 4);
    mt_put_u16(h + 4, reference ? CK_VERSION_REFERENCE : CK_VERSION); /* without: version 2's bytes */
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
        uint8_t r[CK_RECORD_HEADER_BYTES];
        mt_put_u32(r, s->trained[k]);
        mt_put_u32(r + 4, t->count);
        emit(&w, r, sizeof r);
        emit_floats(&w, t->data, t->count);
        emit_floats(&w, t->opt_state, t->count * state_arrays);
        if (reference) emit_floats(&w, mt_reference_of(s, t), t->count);
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
    if (memcmp(h, CK_MAGIC, 4) != 0 || c->version < 1 || c->version > CK_VERSION_REFERENCE ||
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
    c->reference_arrays = c->version == CK_VERSION_REFERENCE ? mt_get_u32(h + 72) : 0u;
    if (c->total != size) return MT_ERR_BAD_CHECKPOINT;
    if (c->version == 1 ? mt_get_u32(h + 52) != 0
                        : !(mt_isfinitef(c->base_learning_rate) && c->base_learning_rate > 0.0f))
        return MT_ERR_BAD_CHECKPOINT; /* a base rate comes from a config: finite and > 0 */
    /* version 3 is written only with the reference (1 at offset 72); the rest is reserved, 0 */
    if (c->version == CK_VERSION_REFERENCE && c->reference_arrays != 1u) return MT_ERR_BAD_CHECKPOINT;
    for (int i = c->version == CK_VERSION_REFERENCE ? 76 : 72; i < 80; ++i)
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

/* A record's values: weights, momentum or Adam m, and the reference finite; Adam v (array 2
 * of 2 state arrays) finite and >= 0 (a sum of squares). The record lies inside the body
 * (checked by the caller). */
static mt_status check_record_values(const reader *r, const ck_header *c, uint32_t values_at, uint32_t count)
{
    mt_status st = MT_OK;
    for (uint32_t a = 0; a <= c->state_arrays + c->reference_arrays && st == MT_OK; ++a)
        st = check_floats(r, values_at + 4u * count * a, count, a == 2 && c->state_arrays == 2);
    return st;
}

/* Pass 1: CRC of every byte before the trailer, then the records' bounds and values and the
 * properties' encoding, then whether the checkpoint fits this session. */
static mt_status validate(const mt_session *s, const reader *r, ck_header *c)
{
    uint8_t buf[CK_HEADER_BYTES];
    mt_status st;
    if (trains_quantized(s)) return MT_ERR_UNSUPPORTED;
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
    for (uint32_t k = 0; k < c->num_records; ++k) {
        if (off + CK_RECORD_HEADER_BYTES > body) return MT_ERR_BAD_CHECKPOINT;
        if ((st = fetch(r, (uint32_t)off, buf, CK_RECORD_HEADER_BYTES)) != MT_OK) return st;
        const uint32_t index = mt_get_u32(buf), count = mt_get_u32(buf + 4);
        const uint32_t values_at = (uint32_t)off + CK_RECORD_HEADER_BYTES;
        off += CK_RECORD_HEADER_BYTES + 4ull * count * (1u + c->state_arrays + c->reference_arrays);
        if (off > body) return MT_ERR_BAD_CHECKPOINT;
        if ((st = check_record_values(r, c, values_at, count)) != MT_OK) return st;
        if (fits && (index != s->trained[k] || count != s->tensors[index].count)) fits = 0;
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

/* Pass 2: replace weights, state, the reference, counters; then hand over the properties. A
 * reference goes to a session with a proximal term and is skipped by one without (it has no
 * w_ref); a checkpoint without one leaves the session's reference as it is. */
static mt_status apply(mt_session *s, const reader *r, const ck_header *c, mt_property_fn on_property,
                       void *property_user)
{
    mt_status st;
    uint32_t off = CK_HEADER_BYTES;
    const uint32_t arrays = mt_optimizer_state_arrays(s->cfg.optimizer, s->cfg.momentum);
    for (int32_t k = 0; k < s->num_trained; ++k) {
        mt_tensor_rt *t = &s->tensors[s->trained[k]];
        off += CK_RECORD_HEADER_BYTES;
        if ((st = fetch_floats(r, off, t->mutable_data, t->count)) != MT_OK) return st;
        off += 4u * t->count;
        if (c->state_arrays) {
            if ((st = fetch_floats(r, off, t->opt_state, t->count * arrays)) != MT_OK) return st;
            off += 4u * t->count * arrays;
        } else if (arrays) {
            memset(t->opt_state, 0, 4u * t->count * arrays);
        }
        if (c->reference_arrays) {
            float *reference = mt_reference_of(s, t);
            if (reference && (st = fetch_floats(r, off, reference, t->count)) != MT_OK) return st;
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

/* ---- export for inference ---- */

/* Bytes [from, from + n) of the image with trained weights substituted. */
static void exported_bytes(const mt_session *s, uint32_t from, uint32_t n, uint8_t *out)
{
    memcpy(out, s->img.base + from, n);
    for (int32_t k = 0; k < s->num_trained; ++k) {
        mt_tensor_desc d;
        mt_image_tensor(&s->img, s->trained[k], &d);
        const uint32_t start = s->img.data_offset + d.data_offset, end = start + d.data_bytes;
        const uint32_t lo = from > start ? from : start, hi = from + n < end ? from + n : end;
        const mt_tensor_rt *t = &s->tensors[s->trained[k]];
        for (uint32_t b = lo; b < hi; ++b) { /* little-endian, as the image holds them */
            const uint32_t rel = b - start;
            uint32_t bits;
            if (t->dtype == MT_DTYPE_I8) bits = ((const uint8_t *)(const void *)t->data)[rel];
            else if (t->dtype == MT_DTYPE_I32) bits = (uint32_t)((const int32_t *)(const void *)t->data)[rel / 4];
            else bits = mt_f32_bits(t->data[rel / 4]);
            out[b - from] = (uint8_t)(bits >> (t->dtype == MT_DTYPE_I8 ? 0 : 8 * (rel % 4)));
        }
    }
}

mt_status mt_session_export_image(const mt_session *s, mt_write_fn write, void *user)
{
    if (!mt_session_valid(s) || write == NULL) return MT_ERR_BAD_ARGUMENT;
    const uint32_t size = s->img.bytes;
    uint8_t buf[CHUNK];
    uint32_t crc = 0;
    for (uint32_t off = 16; off < size; off += CHUNK) { /* the image CRC covers [16, size) */
        uint32_t n = size - off < CHUNK ? size - off : CHUNK;
        exported_bytes(s, off, n, buf);
        crc = mt_crc32_update(crc, buf, n);
    }
    memcpy(buf, s->img.base, 12);
    mt_put_u32(buf + 12, crc);
    mt_status st = write(user, buf, 16);
    for (uint32_t off = 16; off < size && st == MT_OK; off += CHUNK) {
        uint32_t n = size - off < CHUNK ? size - off : CHUNK;
        exported_bytes(s, off, n, buf);
        st = write(user, buf, n);
    }
    return st == MT_OK ? MT_OK : (st > 0 ? MT_ERR_IO : st);
}
