/*
 * Memory-buffer forms of the streamed checkpoint and export calls, for the WebAssembly
 * module only (linked into microtrain.wasm, not into the core library).
 *
 * A JavaScript host cannot hand a JS function to the core as an mt_write_fn / mt_read_fn /
 * mt_property_fn (wasm function pointers are table indices of wasm functions), so these
 * wrappers supply C callbacks that write into, and read from, buffers the host placed in
 * linear memory. Loaded properties are collected into a buffer of records the host decodes:
 *
 *   u8 type (MT_PROPERTY_*), u8 name_bytes, u16 value_bytes (strings; 8 for int and float),
 *   the name, then the value: i64 or f64 little-endian, or the string's bytes (no NULs).
 */
#include <string.h>

#include "microtrain.h"

typedef struct wasm_buffer {
    uint8_t *data;
    size_t capacity;
    size_t used;
} wasm_buffer;

static mt_status append(void *user, const void *data, size_t bytes)
{
    wasm_buffer *out = (wasm_buffer *)user;
    if (bytes > out->capacity - out->used) return MT_ERR_IO;
    memcpy(out->data + out->used, data, bytes);
    out->used += bytes;
    return MT_OK;
}

static mt_status read_at(void *user, size_t offset, void *data, size_t bytes)
{
    const wasm_buffer *in = (const wasm_buffer *)user;
    if (offset > in->used || bytes > in->used - offset) return MT_ERR_IO;
    memcpy(data, in->data + offset, bytes);
    return MT_OK;
}

static mt_status collect_property(void *user, const mt_property *p)
{
    uint8_t header[4];
    const size_t name_bytes = strlen(p->name);
    size_t value_bytes = 8;
    const void *value = &p->int_value;
    if (p->type == MT_PROPERTY_FLOAT) value = &p->float_value;
    if (p->type == MT_PROPERTY_STRING) {
        value = p->str_value;
        value_bytes = strlen(p->str_value);
    }
    header[0] = (uint8_t)p->type;
    header[1] = (uint8_t)name_bytes;                 /* <= MT_PROPERTY_MAX_NAME */
    header[2] = (uint8_t)(value_bytes & 0xFFu);      /* <= MT_PROPERTY_MAX_STRING */
    header[3] = (uint8_t)(value_bytes >> 8);
    mt_status st = append(user, header, sizeof header);
    if (st == MT_OK) st = append(user, p->name, name_bytes);
    if (st == MT_OK) st = append(user, value, value_bytes); /* wasm32 is little-endian */
    return st;
}

/** mt_checkpoint_save() into @p out (capacity bytes); *written: the checkpoint's size. */
MT_API mt_status mt_wasm_checkpoint_save(const mt_session *s, int32_t include_optimizer,
                                         const mt_property *properties, int32_t num_properties,
                                         uint8_t *out, size_t capacity, size_t *written);
MT_API mt_status mt_wasm_checkpoint_save(const mt_session *s, int32_t include_optimizer,
                                         const mt_property *properties, int32_t num_properties,
                                         uint8_t *out, size_t capacity, size_t *written)
{
    if (out == NULL || written == NULL) return MT_ERR_BAD_ARGUMENT;
    wasm_buffer buffer = {out, capacity, 0};
    mt_status st = mt_checkpoint_save(s, include_optimizer, properties, num_properties, append,
                                      &buffer);
    *written = buffer.used;
    return st;
}

/** mt_checkpoint_load() of the @p bytes at @p checkpoint; the properties go to @p props as
 *  the records above (*props_used bytes). */
MT_API mt_status mt_wasm_checkpoint_load(mt_session *s, const uint8_t *checkpoint, size_t bytes,
                                         uint8_t *props, size_t props_capacity,
                                         size_t *props_used);
MT_API mt_status mt_wasm_checkpoint_load(mt_session *s, const uint8_t *checkpoint, size_t bytes,
                                         uint8_t *props, size_t props_capacity,
                                         size_t *props_used)
{
    if (checkpoint == NULL || props == NULL || props_used == NULL) return MT_ERR_BAD_ARGUMENT;
    wasm_buffer in = {(uint8_t *)checkpoint, bytes, bytes};
    wasm_buffer out = {props, props_capacity, 0};
    mt_status st = mt_checkpoint_load(s, bytes, read_at, &in, collect_property, &out);
    *props_used = out.used;
    return st;
}

/** mt_session_export_image() into @p out; *written: the image's size. */
MT_API mt_status mt_wasm_export_image(const mt_session *s, uint8_t *out, size_t capacity,
                                      size_t *written);
MT_API mt_status mt_wasm_export_image(const mt_session *s, uint8_t *out, size_t capacity,
                                      size_t *written)
{
    if (out == NULL || written == NULL) return MT_ERR_BAD_ARGUMENT;
    wasm_buffer buffer = {out, capacity, 0};
    mt_status st = mt_session_export_image(s, append, &buffer);
    *written = buffer.used;
    return st;
}
