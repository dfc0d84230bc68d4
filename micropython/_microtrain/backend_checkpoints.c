/*
 * _microtrain's checkpoints and export (modmicrotrain.c describes the module): whole-state
 * snapshots in memory (to restore a session after a failed load, or to move it onto a copy
 * of its image), and checkpoint_bytes / checkpoint_save / checkpoint_load / export_image
 * through Python callables. An exception a callable raises is caught inside the core call,
 * the core sees MT_ERR_IO, and the exception is raised again once the core has returned, so
 * no non-local jump crosses the core.
 */
#include "backend.h"

static mt_status write_snapshot(void *user, const void *data, size_t bytes) {
    snapshot *s = user;
    if (s->used + bytes > s->bytes) {
        return MT_ERR_IO;
    }
    memcpy(s->data + s->used, data, bytes);
    s->used += bytes;
    return MT_OK;
}

mt_status mtmod_read_snapshot(void *user, size_t offset, void *data, size_t bytes) {
    snapshot *s = user;
    if (offset + bytes > s->used) {
        return MT_ERR_IO;
    }
    memcpy(data, s->data + offset, bytes);
    return MT_OK;
}

/* Save the session's whole state into a heap snapshot (the caller m_del's it). */
void mtmod_take_snapshot(backend_obj_t *self, snapshot *saved, const char *why) {
    saved->used = 0;
    mtmod_check(mt_checkpoint_bytes(self->session, 1, NULL, 0, &saved->bytes),
        "mt_checkpoint_bytes");
    saved->data = m_new(uint8_t, saved->bytes);
    int status = mt_checkpoint_save(self->session, 1, NULL, 0, write_snapshot, saved);
    if (status < 0) {
        m_del(uint8_t, saved->data, saved->bytes);
        mtmod_raise_error(status, "mt_checkpoint_save", "%s", why);
    }
}

/* ------------------------------------------------------------------ checkpoints, export */

/* What a core callback into Python needs, and what it left behind. */
typedef struct {
    mp_obj_t callable;   /* write(chunk) or read(offset, count) */
    mp_obj_t error;      /* the exception the callable raised, or MP_OBJ_NULL */
    size_t short_offset; /* a read that returned the wrong length: where, and how much */
    size_t short_wanted, short_got;
    bool short_read;
    mp_obj_t properties; /* checkpoint_load: the list of (name, value) */
    backend_obj_t *self; /* whose lent buffers the callable might have moved */
    bool moved;          /* it did: the core was stopped (backend_buffers.c) */
} callback_ctx;

static mt_status write_to_python(void *user, const void *data, size_t bytes) {
    callback_ctx *ctx = user;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_call_function_1(ctx->callable, mp_obj_new_bytes(data, bytes));
        nlr_pop();
        ctx->moved = mtmod_lent_moved(ctx->self);
        return ctx->moved ? MT_ERR_IO : MT_OK;
    }
    ctx->error = MP_OBJ_FROM_PTR(nlr.ret_val);
    return MT_ERR_IO;
}

static mt_status read_from_python(void *user, size_t offset, void *data, size_t bytes) {
    callback_ctx *ctx = user;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_obj_t chunk = mp_call_function_2(ctx->callable, mp_obj_new_int_from_uint(offset),
            mp_obj_new_int_from_uint(bytes));
        mp_buffer_info_t buffer;
        mp_get_buffer_raise(chunk, &buffer, MP_BUFFER_READ);
        nlr_pop();
        if (mtmod_lent_moved(ctx->self)) {
            ctx->moved = true; /* nothing goes into the session's old memory */
            return MT_ERR_IO;
        }
        if (buffer.len != bytes) {
            ctx->short_read = true;
            ctx->short_offset = offset;
            ctx->short_wanted = bytes;
            ctx->short_got = buffer.len;
            return MT_ERR_IO;
        }
        memcpy(data, buffer.buf, bytes);
        return MT_OK;
    }
    ctx->error = MP_OBJ_FROM_PTR(nlr.ret_val);
    return MT_ERR_IO;
}

static mt_status property_to_python(void *user, const mt_property *property) {
    callback_ctx *ctx = user;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_obj_t pair[2];
        pair[0] = mp_obj_new_str(property->name, strlen(property->name));
        if (property->type == MT_PROPERTY_INT) {
            pair[1] = mp_obj_new_int_from_ll(property->int_value);
        } else if (property->type == MT_PROPERTY_FLOAT) {
            pair[1] = mp_obj_new_float_from_d(property->float_value);
        } else {
            pair[1] = mp_obj_new_str(property->str_value, strlen(property->str_value));
        }
        mp_obj_list_append(ctx->properties, mp_obj_new_tuple(2, pair));
        nlr_pop();
        return MT_OK;
    }
    ctx->error = MP_OBJ_FROM_PTR(nlr.ret_val);
    return MT_ERR_IO;
}

/* After a core call that ran Python callbacks: raise what they raised, else check status. */
static void finish_callbacks(const callback_ctx *ctx, int status, const char *function) {
    if (ctx->moved) {
        mtmod_check_lent(ctx->self, function); /* raises: the session is forgotten */
    }
    if (ctx->error != MP_OBJ_NULL) {
        nlr_raise(ctx->error);
    }
    if (ctx->short_read) {
        mtmod_raise_error(MT_ERR_IO, function, "read(%lu, %lu) returned %lu bytes",
            (unsigned long)ctx->short_offset, (unsigned long)ctx->short_wanted,
            (unsigned long)ctx->short_got);
    }
    mtmod_check(status, function);
}

static void init_ctx(callback_ctx *ctx, mp_obj_t callable, backend_obj_t *self) {
    ctx->callable = callable;
    ctx->self = self;
    ctx->moved = false;
    ctx->error = MP_OBJ_NULL;
    ctx->short_read = false;
    ctx->short_offset = ctx->short_wanted = ctx->short_got = 0;
    ctx->properties = MP_OBJ_NULL;
}

/* [(name, kind, value)] -> mt_property array (heap; names and strings borrowed from the
 * Python str objects, which MicroPython keeps NUL-terminated). */
static mt_property *read_properties(mp_obj_t list, int32_t *count) {
    size_t n;
    mp_obj_t *items;
    mp_obj_get_array(list, &n, &items);
    mt_property *properties = m_new0(mt_property, n == 0 ? 1 : n);
    for (size_t i = 0; i < n; ++i) {
        mp_obj_t *triple;
        mp_obj_get_array_fixed_n(items[i], 3, &triple);
        mt_property *p = &properties[i];
        p->name = mp_obj_str_get_str(triple[0]);
        p->type = mtmod_get_i32(triple[1], "property kind", "mt_checkpoint_save");
        if (p->type == MT_PROPERTY_INT) {
            long long value;
            if (!mtmod_int_in(triple[2], INT64_MIN, INT64_MAX, &value, "a property",
                "mt_checkpoint_save")) {
                m_del(mt_property, properties, n == 0 ? 1 : n);
                mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "mt_checkpoint_save",
                    "property %s = %s does not fit in 64 bits", p->name, mtmod_repr(triple[2]));
            }
            p->int_value = value;
        } else if (p->type == MT_PROPERTY_FLOAT) {
            p->float_value = mp_obj_get_float_to_d(triple[2]);
        } else {
            p->str_value = mp_obj_str_get_str(triple[2]);
        }
    }
    *count = (int32_t)n;
    return properties;
}

static mp_obj_t backend_checkpoint_bytes(mp_obj_t self_in, mp_obj_t include_optimizer,
    mp_obj_t properties_in) {
    /* the arguments first (they may run Python code), then the session's check */
    const int include = mp_obj_is_true(include_optimizer);
    int32_t count;
    mt_property *properties = read_properties(properties_in, &count);
    backend_obj_t *self = mtmod_session_of(self_in, "mt_checkpoint_bytes");
    size_t bytes;
    int status = mt_checkpoint_bytes(self->session, include, properties, count, &bytes);
    m_del(mt_property, properties, count == 0 ? 1 : count);
    mtmod_check(status, "mt_checkpoint_bytes");
    return mp_obj_new_int_from_uint(bytes);
}
MP_DEFINE_CONST_FUN_OBJ_3(mtmod_checkpoint_bytes_obj, backend_checkpoint_bytes);

/* checkpoint_save(include_optimizer, properties, write) */
static mp_obj_t backend_checkpoint_save(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    const int include = mp_obj_is_true(args[1]); /* arguments first, then the check */
    int32_t count;
    mt_property *properties = read_properties(args[2], &count);
    backend_obj_t *self = mtmod_session_of(args[0], "mt_checkpoint_save");
    callback_ctx ctx;
    init_ctx(&ctx, args[3], self);
    int status = mt_checkpoint_save(self->session, include, properties, count, write_to_python,
        &ctx);
    m_del(mt_property, properties, count == 0 ? 1 : count);
    finish_callbacks(&ctx, status, "mt_checkpoint_save");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_checkpoint_save_obj, 4, 4,
    backend_checkpoint_save);

/* checkpoint_load(size, read) -> [(name, value), ...] */
static mp_obj_t backend_checkpoint_load(mp_obj_t self_in, mp_obj_t size_in, mp_obj_t read) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_checkpoint_load");
    long long bytes;
    if (!mtmod_int_in(size_in, 0, SIZE_MAX < INT64_MAX ? (long long)SIZE_MAX : INT64_MAX, &bytes,
        "size", "mt_checkpoint_load")) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "mt_checkpoint_load",
            "size %s is not a byte count of this machine", mtmod_repr(size_in));
    }
    size_t size = (size_t)bytes;
    /* The core validates the whole checkpoint before it changes anything, but its second
     * pass reads in place: keep the state to put back if that pass fails. */
    snapshot saved;
    mtmod_take_snapshot(self, &saved, "keeping the state to restore");
    callback_ctx ctx;
    init_ctx(&ctx, read, self);
    ctx.properties = mp_obj_new_list(0, NULL);
    int status = mt_checkpoint_load(self->session, size, read_from_python, &ctx, property_to_python,
        &ctx);
    if (ctx.moved) { /* the session's memory is gone: nothing to restore into */
        m_del(uint8_t, saved.data, saved.bytes);
        finish_callbacks(&ctx, status, "mt_checkpoint_load");
    }
    if (status < 0 || ctx.error != MP_OBJ_NULL) {
        int restored = mt_checkpoint_load(self->session, saved.used, mtmod_read_snapshot, &saved,
            NULL, NULL);
        m_del(uint8_t, saved.data, saved.bytes);
        if (restored < 0) {
            mtmod_raise_error(restored, "mt_checkpoint_load", "restoring the state after a failed "
                "load (status %d)", status);
        }
        finish_callbacks(&ctx, status < 0 ? status : MT_ERR_IO, "mt_checkpoint_load");
    }
    m_del(uint8_t, saved.data, saved.bytes);
    return ctx.properties;
}
MP_DEFINE_CONST_FUN_OBJ_3(mtmod_checkpoint_load_obj, backend_checkpoint_load);

/* export_image(write) */
static mp_obj_t backend_export_image(mp_obj_t self_in, mp_obj_t write) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_export_image");
    callback_ctx ctx;
    init_ctx(&ctx, write, self);
    int status = mt_session_export_image(self->session, write_to_python, &ctx);
    finish_callbacks(&ctx, status, "mt_session_export_image");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_export_image_obj, backend_export_image);
