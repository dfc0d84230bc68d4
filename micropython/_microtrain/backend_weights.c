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

/* The weights as the facade numbers them (describe()'s "params", Session.get_weights()): the
 * CONST f32 tensors of mt_session_param and the int8 weights / int32 biases of int8 layers
 * trained in place of mt_session_qparam, merged in tensor-table order. Each list is in
 * tensor-table order itself, so the merge takes, of the two lists' next entries, the one of
 * the lower tensor index. This walk is the one place that maps a weight's position to (list,
 * position in it). */
typedef struct {
    int32_t next[2], count[2]; /* [0] mt_session_param, [1] mt_session_qparam */
} weight_walk;

typedef struct {
    mt_param_info info;
    int32_t quantized; /* its position in mt_session_qparam, or -1: an f32 weight */
} weight;

static const char *const LIST_NAMES[2] = {"mt_session_param", "mt_session_qparam"};

static void walk_start(backend_obj_t *self, weight_walk *walk) {
    walk->next[0] = walk->next[1] = 0;
    mtmod_check(mt_session_param_count(self->session, &walk->count[0]),
        "mt_session_param_count");
    mtmod_check(mt_session_qparam_count(self->session, &walk->count[1]),
        "mt_session_qparam_count");
}

/* The walk's next weight into *w; false after the last. */
static bool walk_next(backend_obj_t *self, weight_walk *walk, weight *w) {
    mt_param_info heads[2];
    int chosen = -1;
    for (int list = 0; list < 2; ++list) {
        if (walk->next[list] == walk->count[list]) {
            continue;
        }
        mtmod_check(list == 0 ? mt_session_param(self->session, walk->next[0], &heads[0])
                              : mt_session_qparam(self->session, walk->next[1], &heads[1]),
            LIST_NAMES[list]);
        if (chosen < 0 || heads[list].tensor_index < heads[chosen].tensor_index) {
            chosen = list;
        }
    }
    if (chosen < 0) {
        return false;
    }
    w->info = heads[chosen];
    w->quantized = chosen == 1 ? walk->next[1] : -1;
    walk->next[chosen] += 1;
    return true;
}

/* Weight number `position_in` of that order into *w (the position as an int32). */
static int32_t weight_at(backend_obj_t *self, mp_obj_t position_in, weight *w) {
    int32_t position = mtmod_get_i32(position_in, "position", "mt_session_param");
    weight_walk walk;
    walk_start(self, &walk);
    const int32_t count = walk.count[0] + walk.count[1];
    if (position < 0 || position >= count) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "mt_session_param",
            "the model has %d weights, not %s", (int)count,
            mtmod_repr(mp_obj_new_int_from_ll((long long)position + 1)));
    }
    for (int32_t k = 0; k <= position; ++k) {
        walk_next(self, &walk, w);
    }
    return position;
}

/* Its type: array typecode and bytes a value ('f' 4, 'b' 1, 'i' 4). */
static char weight_typecode(const weight *w) {
    return w->info.dtype == MT_DTYPE_I8 ? 'b' : w->info.dtype == MT_DTYPE_I32 ? 'i' : 'f';
}

static size_t weight_width(const weight *w) {
    return w->info.dtype == MT_DTYPE_I8 ? 1 : 4;
}

/* Bytes of its values the arena holds (mt_param_info.held: all of a weight trained whole, the
 * first rows of a float layer a sparse update trains the first channels of, none of a frozen
 * one); the rest are the image's, read there in place. */
static size_t held_bytes(const weight *w) {
    return weight_width(w) * (size_t)w->info.held;
}

/* Its values now, into out: the arena's, then the image's. */
static void weight_values(const weight *w, void *out) {
    const size_t held = held_bytes(w), bytes = weight_width(w) * (size_t)w->info.count;
    if (held > 0) {
        memcpy(out, w->info.data, held);
    }
    memcpy((uint8_t *)out + held, (const uint8_t *)w->info.image_data + held, bytes - held);
}

static const char *weight_type_name(const weight *w) {
    return w->info.dtype == MT_DTYPE_I8 ? "int8" : w->info.dtype == MT_DTYPE_I32 ? "int32"
                                                                                 : "float32";
}

/* trained() -> [bool, ...] per weight */
static mp_obj_t backend_trained(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "trained");
    mp_obj_t list = mp_obj_new_list(0, NULL);
    weight_walk walk;
    weight w;
    walk_start(self, &walk);
    while (walk_next(self, &walk, &w)) {
        mp_obj_list_append(list, mp_obj_new_bool(w.info.trained));
    }
    return list;
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_trained_obj, backend_trained);

/* read_param(position) -> array('f'), array('b') (int8) or array('i') (int32) */
static mp_obj_t backend_read_param(mp_obj_t self_in, mp_obj_t position_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "read_param");
    weight w;
    weight_at(self, position_in, &w);
    mp_obj_array_t *values = mtmod_new_array(weight_typecode(&w), (size_t)w.info.count);
    weight_values(&w, values->items);
    return MP_OBJ_FROM_PTR(values);
}
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_read_param_obj, backend_read_param);

/* Weight `position`'s values from `values` into `fresh` (its count + 1 slots of 4 bytes),
 * converted to its type: float32, or an integer weight's int32 values within its type's
 * range (an int8 weight narrowed into fresh's first bytes); a value that does not fit raises
 * naming the weight and its type. */
static void copy_weight(backend_obj_t *self, mp_obj_t values, const weight *w, int32_t position,
    void *fresh) {
    const size_t capacity = (size_t)w->info.count + 1;
    size_t count;
    if (w->quantized < 0) {
        count = mtmod_copy_values(self, values, fresh, capacity, NULL, "write_param");
    } else {
        const bool int8 = w->info.dtype == MT_DTYPE_I8;
        vstr_t values_words, one_words;
        mp_print_t print;
        vstr_init_print(&values_words, 32, &print);
        mp_printf(&print, "the values of weight %d (%s)", (int)position, weight_type_name(w));
        vstr_init_print(&one_words, 32, &print);
        mp_printf(&print, "weight %d (%s, %s)", (int)position, weight_type_name(w),
            int8 ? "-128..127" : "-2147483648..2147483647");
        const mtmod_integers integers = {int8 ? -128 : INT32_MIN, int8 ? 127 : INT32_MAX,
            vstr_null_terminated_str(&values_words), vstr_null_terminated_str(&one_words)};
        count = mtmod_copy_values(self, values, fresh, capacity, &integers, "write_param");
        if (int8) { /* each value fits: narrow in place, front to back */
            for (size_t i = 0; i < count; ++i) {
                ((int8_t *)fresh)[i] = (int8_t)((const int32_t *)fresh)[i];
            }
        }
    }
    if (count != (size_t)w->info.count) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "write_param", "%lu values for a weight of %lu",
            (unsigned long)count, (unsigned long)w->info.count);
    }
}

/* write_param(position, values): every element, in the arena or (frozen) in the image; an int8
 * layer's trained weight then restarts its float master copy (mt_session_qparam_written) */
static mp_obj_t backend_write_param(mp_obj_t self_in, mp_obj_t position_in, mp_obj_t values) {
    backend_obj_t *self = mtmod_session_of(self_in, "write_param");
    weight w;
    const int32_t position = weight_at(self, position_in, &w);
    /* Copied through a temporary so that a bad value leaves the weight as it was. */
    const size_t slots = (size_t)w.info.count + 1;
    int32_t *fresh = m_new(int32_t, slots); /* on an error, the GC's */
    copy_weight(self, values, &w, position, fresh); /* checks the lent buffers after any Python
                                                       code it ran */
    const size_t bytes = weight_width(&w) * (size_t)w.info.count, held = held_bytes(&w);
    /* the values the arena holds go there, the others (a frozen weight's, a sparse update's
     * frozen rows) into the image, a copy of it first when it is not writable */
    if (held < bytes && !self->image_writable
        && memcmp((const uint8_t *)fresh + held, (const uint8_t *)w.info.image_data + held,
            bytes - held) != 0) {
        move_to_writable_image(self);
        weight_at(self, position_in, &w);
    }
    if (held > 0) {
        memcpy(w.info.data, fresh, held);
    }
    memcpy((uint8_t *)(uintptr_t)w.info.image_data + held, (const uint8_t *)fresh + held, bytes - held);
    m_del(int32_t, fresh, slots);
    if (w.quantized >= 0 && w.info.trained) {
        mtmod_check(mt_session_qparam_written(self->session, w.quantized),
            "mt_session_qparam_written");
    }
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_3(mtmod_write_param_obj, backend_write_param);

/* weights() -> bytes: every weight in that order, little-endian at its width (the machine's
 * order: the ports microtrain builds for are little-endian) */
static mp_obj_t backend_weights(mp_obj_t self_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "weights");
    weight_walk walk;
    weight w;
    size_t total = 0;
    walk_start(self, &walk);
    while (walk_next(self, &walk, &w)) {
        total += weight_width(&w) * (size_t)w.info.count;
    }
    vstr_t bytes;
    vstr_init_len(&bytes, total);
    size_t offset = 0;
    walk_start(self, &walk);
    while (walk_next(self, &walk, &w)) {
        weight_values(&w, vstr_str(&bytes) + offset);
        offset += weight_width(&w) * (size_t)w.info.count;
    }
    return mp_obj_new_bytes_from_vstr(&bytes);
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_weights_obj, backend_weights);

/* weights_crc32() -> int: the core's mt_session_weights_crc32, the figure a firmware prints:
 * zlib.crc32 of weights(), without building it */
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
