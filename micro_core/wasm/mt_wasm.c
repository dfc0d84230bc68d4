/*
 * Checkpoint loading for the WebAssembly module only (linked into microtrain.wasm, not into
 * the core library). A JavaScript host cannot hand a JS function to the core as an
 * mt_property_fn (wasm function pointers are table indices of wasm functions), so this
 * wrapper of mt_checkpoint_load_buffer() supplies one that collects the loaded properties
 * into a buffer of records the host decodes (saving and export use the core's own
 * mt_checkpoint_save_buffer() / mt_session_export_image_buffer()):
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
    wasm_buffer out = {props, props_capacity, 0};
    mt_status st = mt_checkpoint_load_buffer(s, checkpoint, bytes, collect_property, &out);
    *props_used = out.used;
    return st;
}
