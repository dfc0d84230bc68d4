/*
 * _microtrain's weights and training state (modmicrotrain.c describes the module): which
 * weights train, reading and writing them (a frozen weight of an image read in place from a
 * read-only buffer moves the session onto a heap copy of the image first), all weights as
 * bytes or their CRC-32, the learning rates, counters, the proximal reference and the count
 * of refused steps.
 */
#include "backend.h"

/* The copy-on-write of modmicrotrain.c's comment: the image to a heap copy, the session onto it. */
static void move_to_writable_image(backend_obj_t *self) {
    snapshot saved;
    mtmod_take_snapshot(self, &saved, "keeping the state while the image is copied");
    int64_t errors = 0;
    mt_session_numeric_errors(self->session, &errors);
    size_t block_bytes = self->image_bytes + IMAGE_ALIGN - 1;
    uint8_t *block = m_new(uint8_t, block_bytes);
    uint8_t *copy = (uint8_t *)(((uintptr_t)block + IMAGE_ALIGN - 1) & ~(uintptr_t)(IMAGE_ALIGN - 1));
    memcpy(copy, self->image, self->image_bytes);
    mt_session *session;
    /* The same image bytes, config and arena as the session that works: this cannot fail. */
    int status = mt_session_init(&session, copy, self->image_bytes, &self->cfg, self->arena,
        self->arena_bytes);
    if (status == MT_OK) {
        status = mt_checkpoint_load(session, saved.used, mtmod_read_snapshot, &saved, NULL, NULL);
    }
    m_del(uint8_t, saved.data, saved.bytes);
    if (status < 0) {
        m_del(uint8_t, block, block_bytes);
        mtmod_forget(self);
        mtmod_raise_error(status, "mt_session_init", "moving the session onto a copy of its image");
    }
    if (self->image_block != NULL) {
        m_del(uint8_t, self->image_block, self->image_block_bytes);
    }
    self->session = session;
    self->image = copy;
    self->image_block = block;
    self->image_block_bytes = block_bytes;
    self->image_obj = MP_OBJ_NULL;
    self->image_writable = true;
    self->numeric_errors_before += errors;
}

/* ------------------------------------------------------------------ weights */

static int32_t param_count(backend_obj_t *self) {
    int32_t count;
    mtmod_check(mt_session_param_count(self->session, &count), "mt_session_param_count");
    return count;
}

static void param_info(backend_obj_t *self, mp_obj_t position_in, mt_param_info *info) {
    int32_t position = mtmod_get_i32(position_in, "position", "mt_session_param");
    int status = mt_session_param(self->session, position, info);
    if (status < 0) {
        mtmod_raise_error(status, "mt_session_param", "the model has %d weights, not %s",
            (int)param_count(self), mtmod_repr(mp_obj_new_int_from_ll((long long)position + 1)));
    }
}

static const float *param_data(const mt_param_info *info) {
    return info->trained ? info->data : info->image_data;
}

/* trained() -> [bool, ...] per weight */
static mp_obj_t backend_trained(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "trained");
    int32_t count = param_count(self);
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int32_t position = 0; position < count; ++position) {
        mt_param_info info;
        mtmod_check(mt_session_param(self->session, position, &info), "mt_session_param");
        mp_obj_list_append(list, mp_obj_new_bool(info.trained));
    }
    return list;
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_trained_obj, backend_trained);

/* read_param(position) -> array('f') */
static mp_obj_t backend_read_param(mp_obj_t self_in, mp_obj_t position_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "read_param");
    mt_param_info info;
    param_info(self, position_in, &info);
    mp_obj_array_t *values = mtmod_new_float_array((size_t)info.count);
    memcpy(values->items, param_data(&info), 4 * (size_t)info.count);
    return MP_OBJ_FROM_PTR(values);
}
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_read_param_obj, backend_read_param);

/* write_param(position, values): every element, in the arena or (frozen) in the image */
static mp_obj_t backend_write_param(mp_obj_t self_in, mp_obj_t position_in, mp_obj_t values) {
    backend_obj_t *self = mtmod_session_of(self_in, "write_param");
    mt_param_info info;
    param_info(self, position_in, &info);
    /* Copied through a temporary so that a bad value leaves the weight as it was. */
    float *fresh = m_new(float, (size_t)info.count + 1);
    size_t count = mtmod_copy_values(self, values, fresh, (size_t)info.count + 1, false,
        "write_param"); /* checks the lent buffers after any Python code it ran */
    if (count != (size_t)info.count) {
        m_del(float, fresh, (size_t)info.count + 1);
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "write_param", "%lu values for a weight of %lu",
            (unsigned long)count, (unsigned long)info.count);
    }
    if (!info.trained && !self->image_writable
        && memcmp(fresh, info.image_data, 4 * count) != 0) {
        move_to_writable_image(self);
        param_info(self, position_in, &info);
    }
    float *target = info.trained ? info.data : (float *)(uintptr_t)info.image_data;
    memcpy(target, fresh, 4 * count);
    m_del(float, fresh, (size_t)info.count + 1);
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_3(mtmod_write_param_obj, backend_write_param);

/* weights() -> bytes: every weight, float32 little-endian, mt_session_param order */
static mp_obj_t backend_weights(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "weights");
    int32_t count = param_count(self);
    size_t total = 0;
    mt_param_info info;
    for (int32_t position = 0; position < count; ++position) {
        mtmod_check(mt_session_param(self->session, position, &info), "mt_session_param");
        total += 4 * (size_t)info.count;
    }
    vstr_t bytes;
    vstr_init_len(&bytes, total);
    size_t offset = 0;
    for (int32_t position = 0; position < count; ++position) {
        mtmod_check(mt_session_param(self->session, position, &info), "mt_session_param");
        memcpy(vstr_str(&bytes) + offset, param_data(&info), 4 * (size_t)info.count);
        offset += 4 * (size_t)info.count;
    }
    return mp_obj_new_bytes_from_vstr(&bytes);
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_weights_obj, backend_weights);

/* weights_crc32() -> int: the core's mt_session_weights_crc32, the figure a firmware prints:
 * zlib.crc32 of weights() and then of the int8 weights and int32 biases of int8 layers trained
 * in place (which weights() does not list), without building either */
static mp_obj_t backend_weights_crc32(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "weights_crc32");
    uint32_t crc = 0;
    mtmod_check(mt_session_weights_crc32(self->session, &crc), "mt_session_weights_crc32");
    return mp_obj_new_int_from_uint(crc);
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_weights_crc32_obj, backend_weights_crc32);

/* ------------------------------------------------------------------ rates and counters */

static mp_obj_t backend_set_learning_rate(mp_obj_t self_in, mp_obj_t rate) {
    const float value = mp_obj_get_float_to_f(rate); /* may run Python code: before the check */
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_set_learning_rate");
    mtmod_check(mt_session_set_learning_rate(self->session, value),
        "mt_session_set_learning_rate");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_set_learning_rate_obj, backend_set_learning_rate);

/* a rate the session reports through `read` (the core's function named `function`) */
static mp_obj_t read_rate(mp_obj_t self_in, mt_status (*read)(const mt_session *, float *),
    const char *function) {
    backend_obj_t *self = mtmod_session_of(self_in, function);
    float rate;
    mtmod_check(read(self->session, &rate), function);
    return mp_obj_new_float_from_f(rate);
}

static mp_obj_t backend_get_learning_rate(mp_obj_t self_in) {
    return read_rate(self_in, mt_session_get_learning_rate, "mt_session_get_learning_rate");
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_get_learning_rate_obj, backend_get_learning_rate);

static mp_obj_t backend_base_learning_rate(mp_obj_t self_in) {
    return read_rate(self_in, mt_session_get_base_learning_rate,
        "mt_session_get_base_learning_rate");
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_base_learning_rate_obj, backend_base_learning_rate);

static mp_obj_t backend_set_reference(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_set_reference");
    mtmod_check(mt_session_set_reference(self->session), "mt_session_set_reference");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_set_reference_obj, backend_set_reference);

static mp_obj_t backend_counters(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_counters");
    int64_t step, epoch;
    mtmod_check(mt_session_counters(self->session, &step, &epoch), "mt_session_counters");
    mp_obj_t both[2] = {mp_obj_new_int_from_ll(step), mp_obj_new_int_from_ll(epoch)};
    return mp_obj_new_tuple(2, both);
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_counters_obj, backend_counters);

static mp_obj_t backend_set_epoch(mp_obj_t self_in, mp_obj_t epoch) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_set_epoch");
    long long value;
    if (!mtmod_int_in(epoch, INT64_MIN, INT64_MAX, &value, "epoch", "mt_session_set_epoch")) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "mt_session_set_epoch",
            "epoch %s does not fit in 64 bits", mtmod_repr(epoch));
    }
    mtmod_check(mt_session_set_epoch(self->session, value), "mt_session_set_epoch");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_set_epoch_obj, backend_set_epoch);

static mp_obj_t backend_numeric_errors(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_numeric_errors");
    int64_t count;
    mtmod_check(mt_session_numeric_errors(self->session, &count), "mt_session_numeric_errors");
    return mp_obj_new_int_from_ll(count + self->numeric_errors_before);
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_numeric_errors_obj, backend_numeric_errors);
