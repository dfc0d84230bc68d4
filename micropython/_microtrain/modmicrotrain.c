/*
 * _microtrain: microtrain's backend interface (py_facade/microtrain/backend/__init__.py) as a
 * MicroPython user C module, over the core linked into the firmware.
 *
 *   import _microtrain
 *   b = _microtrain.Backend()                 # microtrain.backend.load() does this
 *   b.open(image, config, arena=bytearray(plan["total_bytes"] + 15))
 *   b.write_rows(0, 0, 0, x)                  # array('f'), list, memoryview
 *   loss = b.train_step(n)                    # a float (boxed on ports with double floats)
 *   b.train_step(n, out)                      # or into out[0], an array('f'): allocates nothing
 *
 * One Backend object holds one session:
 *
 *   image  read in place when its buffer is 4-byte aligned (a frozen bytes object in flash, a
 *          ROMFS file's memoryview), else copied once to a 16-aligned heap block;
 *   arena  the caller's writable buffer (aligned inside: pass plan["total_bytes"] + 15 bytes),
 *          or, with arena=None, one heap block allocated per open();
 *   both   referenced from this object, so the garbage collector keeps them while the session
 *          lives; close() lets them go. The caller must not resize (extend) a bytearray it
 *          gave as image or arena while the session is open: the core holds their addresses.
 *
 * write_param() of a frozen weight (it stays in the image) on an image read in place from a
 * read-only buffer copies the image to the heap first and moves the session onto the copy:
 * state saved as a checkpoint, mt_session_init on the copy in the same arena, checkpoint
 * loaded back. Weights, optimizer state, counters and learning rate carry over; gradients
 * accumulated since the last optimizer step do not.
 *
 * Failures raise microtrain.errors.MicrotrainError(status, message, function, op_index,
 * op_type), imported from the frozen package when raised (RuntimeError with the same text if
 * the package is not there). The message is mt_status_str() with the enum name, as the ctypes
 * backend words it, plus what this module knows about the cause ("row 3 has label 12; ...").
 *
 * Steps allocate nothing on MicroPython's heap, except the float object a returned loss
 * needs on ports whose floats are boxed (MICROPY_OBJ_REPR_A/B: every port with double
 * floats); the optional `out` argument of train_step / accumulate / eval_step avoids that.
 * Python callables given to checkpoint_save / checkpoint_load / export_image run inside a core
 * call: an exception they raise is caught there, the core sees MT_ERR_IO, and the exception
 * is raised again once the core has returned, so no non-local jump crosses the core.
 */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "py/binary.h"
#include "py/objarray.h"
#include "py/runtime.h"

#include "microtrain.h"

#if !MICROPY_PY_BUILTINS_FLOAT
#error "_microtrain needs float support (MICROPY_FLOAT_IMPL float or double)"
#endif

#define IMAGE_ALIGN 16u /* the core needs 4; 16 keeps the weight data 16-aligned as well */

typedef struct _backend_obj_t {
    mp_obj_base_t base;
    mt_session *session;     /* inside the arena; NULL when closed */
    const uint8_t *image;    /* 4-aligned image bytes, in place or in image_block */
    size_t image_bytes;
    mp_obj_t image_obj;      /* the caller's object read in place (keeps it alive), or NULL */
    uint8_t *image_block;    /* our aligned copy's heap block, or NULL */
    size_t image_block_bytes;
    bool image_writable;     /* write_param may change frozen weights in the image */
    uint8_t *arena;          /* MT_ARENA_ALIGN-aligned */
    size_t arena_bytes;
    mp_obj_t arena_obj;      /* the caller's arena buffer, or NULL */
    uint8_t *arena_block;    /* our arena's heap block, or NULL */
    size_t arena_block_bytes;
    int32_t batch_size;      /* B */
    int32_t sparse;          /* targets are int32 labels */
    int64_t numeric_errors_before; /* counted by a session this one replaced (see below) */
    mt_train_config cfg;     /* as opened; trainable_op_mask points at mask */
    uint8_t mask[MT_MAX_OPS];
} backend_obj_t;

/* ------------------------------------------------------------------ errors */

static const char *status_name(int status) {
    switch (status) {
        case MT_ERR_BAD_ARGUMENT: return "MT_ERR_BAD_ARGUMENT";
        case MT_ERR_BAD_MODEL: return "MT_ERR_BAD_MODEL";
        case MT_ERR_SHAPE: return "MT_ERR_SHAPE";
        case MT_ERR_STATE: return "MT_ERR_STATE";
        case MT_ERR_UNSUPPORTED: return "MT_ERR_UNSUPPORTED";
        case MT_ERR_ARENA_TOO_SMALL: return "MT_ERR_ARENA_TOO_SMALL";
        case MT_ERR_NUMERIC: return "MT_ERR_NUMERIC";
        case MT_ERR_BAD_CHECKPOINT: return "MT_ERR_BAD_CHECKPOINT";
        case MT_ERR_CHECKPOINT_MISMATCH: return "MT_ERR_CHECKPOINT_MISMATCH";
        case MT_ERR_IO: return "MT_ERR_IO";
        default: return NULL;
    }
}

/* microtrain.errors.MicrotrainError, or RuntimeError when the package cannot be imported. */
static mp_obj_t error_class(bool *found) {
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_obj_t name = MP_OBJ_NEW_QSTR(MP_QSTR_errors);
        mp_obj_t package = mp_import_name(MP_QSTR_microtrain, mp_obj_new_tuple(1, &name),
            MP_OBJ_NEW_SMALL_INT(0));
        mp_obj_t errors = mp_import_from(package, MP_QSTR_errors);
        mp_obj_t cls = mp_load_attr(errors, MP_QSTR_MicrotrainError);
        nlr_pop();
        *found = true;
        return cls;
    }
    *found = false;
    return MP_OBJ_FROM_PTR(&mp_type_RuntimeError);
}

/* What an error concerns beyond its status: the op (mt_model_diagnose() /
 * mt_session_last_error() name it) and, for a refused step, the loss it reported. */
typedef struct {
    int32_t op_index; /* -1: no op */
    int32_t op_type;
    const float *loss;
} error_extra;

/* A MicrotrainError for `status` from C function `function`: the core's status text, then
 * `detail` (may be empty). */
static mp_obj_t make_error(int status, const char *function, const error_extra *extra,
    vstr_t *detail) {
    vstr_t text;
    vstr_init(&text, 64);
    vstr_add_str(&text, mt_status_str(status));
    const char *name = status_name(status);
    if (name != NULL) {
        vstr_printf(&text, " [%s]", name);
    }
    if (vstr_len(detail) > 0) {
        vstr_add_str(&text, ": ");
        vstr_add_strn(&text, vstr_str(detail), vstr_len(detail));
    }
    bool found;
    mp_obj_t cls = error_class(&found);
    if (!found) { /* RuntimeError with the text MicrotrainError would show */
        vstr_t full;
        vstr_init(&full, vstr_len(&text) + 48);
        if (function != NULL) {
            vstr_printf(&full, "%s: ", function);
        }
        vstr_add_strn(&full, vstr_str(&text), vstr_len(&text));
        vstr_printf(&full, " (status %d)", status);
        vstr_clear(&text);
        return mp_call_function_1(cls, mp_obj_new_str_from_vstr(&full));
    }
    mp_obj_t args[5] = {
        MP_OBJ_NEW_SMALL_INT(status), mp_obj_new_str_from_vstr(&text),
        function != NULL ? mp_obj_new_str(function, strlen(function)) : mp_const_none,
        MP_OBJ_NEW_SMALL_INT(extra->op_index), MP_OBJ_NEW_SMALL_INT(extra->op_type),
    };
    mp_obj_t error = mp_call_function_n_kw(cls, 5, 0, args);
    if (extra->loss != NULL) {
        mp_store_attr(error, MP_QSTR_loss, mp_obj_new_float_from_f(*extra->loss));
    }
    return error;
}

static MP_NORETURN void raise_extra(int status, const char *function, const error_extra *extra,
    const char *detail, va_list args) {
    vstr_t text;
    vstr_init(&text, 32);
    if (detail != NULL) {
        mp_print_t print = {&text, (mp_print_strn_t)vstr_add_strn};
        mp_vprintf(&print, detail, args);
    }
    nlr_raise(make_error(status, function, extra, &text));
}

static const error_extra NO_EXTRA = {-1, 0, NULL};

/* MicrotrainError(status, ..., op_index -1): `detail` printf-style, or NULL. */
static MP_NORETURN void raise_error(int status, const char *function, const char *detail, ...) {
    va_list args;
    va_start(args, detail);
    raise_extra(status, function, &NO_EXTRA, detail, args);
}

/* The same, naming the op mt_model_diagnose() finds for `status`, if it finds one. */
static MP_NORETURN void raise_model(int status, const char *function, const void *image,
    size_t bytes, const mt_train_config *cfg, const char *detail, ...) {
    error_extra extra = NO_EXTRA;
    mt_error_detail found;
    if (mt_model_diagnose(image, bytes, cfg, &found) == status && found.status == status) {
        extra.op_index = found.op_index;
        extra.op_type = found.op_index >= 0 ? found.op_type : 0;
    }
    va_list args;
    va_start(args, detail);
    raise_extra(status, function, &extra, detail, args);
}

static void check(int status, const char *function) {
    if (status < 0) {
        raise_error(status, function, NULL);
    }
}

static void check_model(int status, const char *function, const void *image, size_t bytes,
    const mt_train_config *cfg) {
    if (status < 0) {
        raise_model(status, function, image, bytes, cfg, NULL);
    }
}

static backend_obj_t *session_of(mp_obj_t self_in, const char *method) {
    backend_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (self->session == NULL) {
        raise_error(MT_ERR_STATE, method, "no session: call open() first");
    }
    return self;
}

/* A failed session call: names the op mt_session_last_error() recorded for `status`, and
 * carries `loss` when not NULL. */
static MP_NORETURN void raise_session(mt_session *session, int status, const char *function,
    const float *loss, const char *detail, ...) {
    error_extra extra = NO_EXTRA;
    extra.loss = loss;
    mt_error_detail found;
    if (mt_session_last_error(session, &found) == MT_OK && found.status == status
        && found.op_index >= 0) {
        extra.op_index = found.op_index;
        extra.op_type = found.op_type;
    }
    va_list args;
    va_start(args, detail);
    raise_extra(status, function, &extra, detail, args);
}

static void check_session(mt_session *session, int status, const char *function) {
    if (status < 0) {
        raise_session(session, status, function, NULL, NULL);
    }
}

/* ------------------------------------------------------------------ numbers in and out */

static int32_t get_i32(mp_obj_t value, const char *what, const char *function) {
    long long v = mp_obj_get_ll(value);
    if (v < INT32_MIN || v > INT32_MAX) {
        raise_error(MT_ERR_BAD_ARGUMENT, function, "%s does not fit in 32 bits", what);
    }
    return (int32_t)v;
}

/* A new array('f') of n zeros (the interface's "flat float sequence"). */
static mp_obj_array_t *new_float_array(size_t n) {
    mp_obj_array_t *array = mp_obj_malloc(mp_obj_array_t, &mp_type_array);
    array->typecode = 'f';
    array->free = 0;
    array->len = n;
    array->items = m_new0(float, n == 0 ? 1 : n);
    return array;
}

/* Element `i` of a buffer of typecode `code`, as an integer or a double (*is_float). */
static void buffer_item(char code, size_t size, const uint8_t *p, long long *integer,
    double *real, bool *is_float) {
    *is_float = false;
    switch (code) {
        case 'f': {
            float f;
            memcpy(&f, p, 4);
            *real = (double)f;
            *is_float = true;
            return;
        }
        case 'd': {
            double d;
            memcpy(&d, p, 8);
            *real = d;
            *is_float = true;
            return;
        }
        case 'b': case 'h': case 'i': case 'l': case 'q': {
            int64_t v = 0;
            if (size == 1) { int8_t x; memcpy(&x, p, 1); v = x; }
            else if (size == 2) { int16_t x; memcpy(&x, p, 2); v = x; }
            else if (size == 4) { int32_t x; memcpy(&x, p, 4); v = x; }
            else { memcpy(&v, p, 8); }
            *integer = v;
            return;
        }
        default: { /* B H I L Q, bytearray */
            uint64_t v = 0;
            if (size == 1) { v = *p; }
            else if (size == 2) { uint16_t x; memcpy(&x, p, 2); v = x; }
            else if (size == 4) { uint32_t x; memcpy(&x, p, 4); v = x; }
            else { memcpy(&v, p, 8); }
            *integer = v > (uint64_t)INT64_MAX ? INT64_MAX : (long long)v;
            return;
        }
    }
}

/* Store value number i of a flat sequence into dst: float32, or int32 (labels) when as_int. */
static void store_item(void *dst, size_t i, bool as_int, long long integer, double real,
    bool is_float, const char *function) {
    if (as_int) {
        if (is_float) {
            raise_error(MT_ERR_BAD_ARGUMENT, function,
                "value %u is a float; labels are integers", (unsigned)i);
        }
        if (integer < INT32_MIN || integer > INT32_MAX) {
            raise_error(MT_ERR_BAD_ARGUMENT, function,
                "value %u does not fit in an int32 label", (unsigned)i);
        }
        ((int32_t *)dst)[i] = (int32_t)integer;
    } else {
        ((float *)dst)[i] = is_float ? (float)real : (float)integer;
    }
}

/* The number of values in `values` (a buffer or an iterable of numbers), copied into dst as
 * float32 or int32; more than `capacity` raises before anything is written past it. */
static size_t copy_values(mp_obj_t values, void *dst, size_t capacity, bool as_int,
    const char *function) {
    mp_buffer_info_t buffer;
    if (mp_get_buffer(values, &buffer, MP_BUFFER_READ)) {
        char code = (char)buffer.typecode;
        if (code == BYTEARRAY_TYPECODE) {
            code = 'B';
        }
        size_t size = mp_binary_get_size('@', code, NULL);
        size_t count = buffer.len / size;
        if (count > capacity) {
            raise_error(MT_ERR_BAD_ARGUMENT, function,
                "%u values do not fit in %u", (unsigned)count, (unsigned)capacity);
        }
        if (code == (as_int ? 'i' : 'f') && size == 4) {
            memcpy(dst, buffer.buf, 4 * count); /* the common case: array('f'), array('i') */
            return count;
        }
        for (size_t i = 0; i < count; ++i) {
            long long integer = 0;
            double real = 0.0;
            bool is_float;
            buffer_item(code, size, (const uint8_t *)buffer.buf + i * size, &integer, &real,
                &is_float);
            store_item(dst, i, as_int, integer, real, is_float, function);
        }
        return count;
    }
    mp_obj_iter_buf_t iter_buf;
    mp_obj_t iterator = mp_getiter(values, &iter_buf);
    size_t count = 0;
    for (mp_obj_t item; (item = mp_iternext(iterator)) != MP_OBJ_STOP_ITERATION; ++count) {
        if (count == capacity) {
            raise_error(MT_ERR_BAD_ARGUMENT, function,
                "more than %u values", (unsigned)capacity);
        }
        bool is_float = mp_obj_is_float(item);
        store_item(dst, count, as_int, is_float ? 0 : mp_obj_get_ll(item),
            is_float ? (double)mp_obj_get_float(item) : 0.0, is_float, function);
    }
    return count;
}

/* ------------------------------------------------------------------ image and config */

/* The bytes of `image` at a 4-aligned address: in place, or in a 16-aligned copy whose heap
 * block is returned in *block (*block_bytes long; NULL when read in place). */
static const uint8_t *aligned_image(mp_obj_t image, size_t *bytes, uint8_t **block,
    size_t *block_bytes, bool *writable) {
    mp_buffer_info_t buffer;
    mp_get_buffer_raise(image, &buffer, MP_BUFFER_READ);
    *bytes = buffer.len;
    *block = NULL;
    *block_bytes = 0;
    if (((uintptr_t)buffer.buf & 3u) == 0) {
        mp_buffer_info_t rw;
        *writable = mp_get_buffer(image, &rw, MP_BUFFER_WRITE);
        return buffer.buf;
    }
    *block_bytes = buffer.len + IMAGE_ALIGN - 1;
    *block = m_new(uint8_t, *block_bytes);
    uint8_t *copy = (uint8_t *)(((uintptr_t)*block + IMAGE_ALIGN - 1) & ~(uintptr_t)(IMAGE_ALIGN - 1));
    memcpy(copy, buffer.buf, buffer.len);
    *writable = true;
    return copy;
}

enum { FIELD_I32, FIELD_F32, FIELD_MASK };

typedef struct {
    uint16_t name; /* qstr */
    uint8_t kind;
    uint8_t offset;
} config_field;

/* microtrain.backend.CONFIG_FIELDS, field for field. */
static const config_field CONFIG_FIELDS[] = {
    {MP_QSTR_optimizer, FIELD_I32, offsetof(mt_train_config, optimizer)},
    {MP_QSTR_loss, FIELD_I32, offsetof(mt_train_config, loss)},
    {MP_QSTR_reduction, FIELD_I32, offsetof(mt_train_config, reduction)},
    {MP_QSTR_batch_size, FIELD_I32, offsetof(mt_train_config, batch_size)},
    {MP_QSTR_num_trainable_ops, FIELD_I32, offsetof(mt_train_config, num_trainable_ops)},
    {MP_QSTR_biases_only, FIELD_I32, offsetof(mt_train_config, biases_only)},
    {MP_QSTR_learning_rate, FIELD_F32, offsetof(mt_train_config, learning_rate)},
    {MP_QSTR_beta1, FIELD_F32, offsetof(mt_train_config, beta1)},
    {MP_QSTR_beta2, FIELD_F32, offsetof(mt_train_config, beta2)},
    {MP_QSTR_epsilon, FIELD_F32, offsetof(mt_train_config, epsilon)},
    {MP_QSTR_momentum, FIELD_F32, offsetof(mt_train_config, momentum)},
    {MP_QSTR_weight_decay, FIELD_F32, offsetof(mt_train_config, weight_decay)},
    {MP_QSTR_trainable_op_mask, FIELD_MASK, offsetof(mt_train_config, trainable_op_mask)},
    {MP_QSTR_accumulate_gradients, FIELD_I32, offsetof(mt_train_config, accumulate_gradients)},
    {MP_QSTR_guard_gradients, FIELD_I32, offsetof(mt_train_config, guard_gradients)},
    {MP_QSTR_proximal_mu, FIELD_F32, offsetof(mt_train_config, proximal_mu)},
};

/* An mt_train_config from a config dict: core defaults, then every field the dict has (None
 * keeps the default). The trainable op mask goes to `mask` (MT_MAX_OPS bytes, the caller's),
 * which the config borrows. Unknown fields raise. */
static void read_config(mp_obj_t config, mt_train_config *cfg, uint8_t *mask,
    const char *function) {
    if (!mp_obj_is_type(config, &mp_type_dict)) {
        mp_raise_TypeError(MP_ERROR_TEXT("config must be a dict (microtrain.config.make_config)"));
    }
    mt_train_config_init(cfg);
    mp_map_t *map = mp_obj_dict_get_map(config);
    for (size_t slot = 0; slot < map->alloc; ++slot) {
        if (!mp_map_slot_is_filled(map, slot)) {
            continue;
        }
        qstr name = mp_obj_str_get_qstr(map->table[slot].key);
        mp_obj_t value = map->table[slot].value;
        const config_field *field = NULL;
        for (size_t i = 0; i < MP_ARRAY_SIZE(CONFIG_FIELDS); ++i) {
            if (CONFIG_FIELDS[i].name == name) {
                field = &CONFIG_FIELDS[i];
            }
        }
        if (field == NULL) {
            raise_error(MT_ERR_BAD_ARGUMENT, function, "config has no field '%q'", name);
        }
        if (value == mp_const_none) {
            continue;
        }
        uint8_t *slot_ptr = (uint8_t *)cfg + field->offset;
        if (field->kind == FIELD_I32) {
            int32_t v = get_i32(value, qstr_str(name), function);
            memcpy(slot_ptr, &v, sizeof v);
        } else if (field->kind == FIELD_F32) {
            float v = mp_obj_get_float_to_f(value);
            memcpy(slot_ptr, &v, sizeof v);
        } else {
            size_t count;
            mp_obj_t *bits;
            mp_obj_get_array(value, &count, &bits);
            if (count > MT_MAX_OPS) {
                raise_error(MT_ERR_BAD_ARGUMENT, function,
                    "trainable_op_mask has %u entries; a model has at most %d ops",
                    (unsigned)count, MT_MAX_OPS);
            }
            memset(mask, 0, MT_MAX_OPS);
            for (size_t op = 0; op < count; ++op) {
                mask[op] = mp_obj_is_true(bits[op]) ? 1 : 0;
            }
            cfg->trainable_op_mask = mask;
        }
    }
}

static mp_obj_t dims_tuple(const mt_tensor_info *t) {
    mp_obj_t dims[MT_MAX_DIMS];
    for (int32_t d = 0; d < t->ndim; ++d) {
        dims[d] = MP_OBJ_NEW_SMALL_INT(t->dims[d]);
    }
    return mp_obj_new_tuple(t->ndim, dims);
}

static void store(mp_obj_t dict, qstr key, mp_obj_t value) {
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(key), value);
}

static mp_obj_t describe_aligned(const uint8_t *image, size_t bytes) {
    mt_model_info info;
    check_model(mt_model_check(image, bytes, &info), "mt_model_check", image, bytes, NULL);
    mp_obj_t result = mp_obj_new_dict(6);
    store(result, MP_QSTR_num_ops, MP_OBJ_NEW_SMALL_INT(info.num_ops));
    store(result, MP_QSTR_num_tensors, MP_OBJ_NEW_SMALL_INT(info.num_tensors));
    mt_tensor_info tensor;
    for (int32_t is_output = 0; is_output <= 1; ++is_output) {
        int32_t count = is_output ? info.num_outputs : info.num_inputs;
        mp_obj_t list = mp_obj_new_list(0, NULL);
        for (int32_t position = 0; position < count; ++position) {
            int32_t index;
            check_model(mt_model_io(image, bytes, is_output, position, &index), "mt_model_io", image,
                bytes, NULL);
            check_model(mt_model_tensor(image, bytes, index, &tensor), "mt_model_tensor", image,
                bytes, NULL);
            mp_obj_t entry = mp_obj_new_dict(2);
            store(entry, MP_QSTR_tensor, MP_OBJ_NEW_SMALL_INT(index));
            store(entry, MP_QSTR_dims, dims_tuple(&tensor));
            mp_obj_list_append(list, entry);
        }
        store(result, is_output ? MP_QSTR_outputs : MP_QSTR_inputs, list);
    }
    mp_obj_t params = mp_obj_new_list(0, NULL);
    for (int32_t index = 0; index < info.num_tensors; ++index) {
        check_model(mt_model_tensor(image, bytes, index, &tensor), "mt_model_tensor", image,
            bytes, NULL);
        if (!(tensor.flags & MT_TENSOR_CONST) || tensor.dtype != MT_DTYPE_F32) {
            continue;
        }
        mp_obj_t entry = mp_obj_new_dict(4);
        store(entry, MP_QSTR_tensor, MP_OBJ_NEW_SMALL_INT(index));
        store(entry, MP_QSTR_dims, dims_tuple(&tensor));
        store(entry, MP_QSTR_offset, mp_obj_new_int(tensor.data_offset));
        store(entry, MP_QSTR_trainable, mp_obj_new_bool(tensor.flags & MT_TENSOR_TRAINABLE));
        mp_obj_list_append(params, entry);
    }
    store(result, MP_QSTR_params, params);
    mp_obj_t ops = mp_obj_new_list(0, NULL);
    for (int32_t index = 0; index < info.num_ops; ++index) {
        mt_op_info op;
        check_model(mt_model_op(image, bytes, index, &op), "mt_model_op", image, bytes, NULL);
        mp_obj_t inputs = mp_obj_new_list(0, NULL);
        mp_obj_t outputs = mp_obj_new_list(0, NULL);
        bool weights = false;
        for (int32_t i = 0; i < op.num_inputs; ++i) {
            if (op.inputs[i] >= 0) {
                check_model(mt_model_tensor(image, bytes, op.inputs[i], &tensor),
                    "mt_model_tensor", image, bytes, NULL);
                weights = weights || (tensor.flags & MT_TENSOR_TRAINABLE);
            }
            mp_obj_list_append(inputs, MP_OBJ_NEW_SMALL_INT(op.inputs[i]));
        }
        for (int32_t i = 0; i < op.num_outputs; ++i) {
            mp_obj_list_append(outputs, MP_OBJ_NEW_SMALL_INT(op.outputs[i]));
        }
        mp_obj_t entry = mp_obj_new_dict(5);
        store(entry, MP_QSTR_type, MP_OBJ_NEW_SMALL_INT(op.type));
        store(entry, MP_QSTR_layer, MP_OBJ_NEW_SMALL_INT(op.layer));
        store(entry, MP_QSTR_inputs, inputs);
        store(entry, MP_QSTR_outputs, outputs);
        store(entry, MP_QSTR_weights, mp_obj_new_bool(weights));
        mp_obj_list_append(ops, entry);
    }
    store(result, MP_QSTR_ops, ops);
    return result;
}

/* ------------------------------------------------------------------ the type */

static mp_obj_t backend_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw,
    const mp_obj_t *args) {
    (void)args;
    mp_arg_check_num(n_args, n_kw, 0, 0, false);
    backend_obj_t *self = mp_obj_malloc(backend_obj_t, type);
    self->session = NULL;
    self->image = NULL;
    self->image_bytes = 0;
    self->image_obj = MP_OBJ_NULL;
    self->image_block = NULL;
    self->image_block_bytes = 0;
    self->image_writable = false;
    self->arena = NULL;
    self->arena_bytes = 0;
    self->arena_obj = MP_OBJ_NULL;
    self->arena_block = NULL;
    self->arena_block_bytes = 0;
    self->batch_size = 1;
    self->sparse = 0;
    self->numeric_errors_before = 0;
    return MP_OBJ_FROM_PTR(self);
}

/* describe(image) -> dict */
static mp_obj_t backend_describe(mp_obj_t self_in, mp_obj_t image_in) {
    (void)self_in;
    size_t bytes, block_bytes;
    uint8_t *block;
    bool writable;
    const uint8_t *image = aligned_image(image_in, &bytes, &block, &block_bytes, &writable);
    mp_obj_t result = describe_aligned(image, bytes);
    if (block != NULL) {
        m_del(uint8_t, block, block_bytes);
    }
    return result;
}
static MP_DEFINE_CONST_FUN_OBJ_2(backend_describe_obj, backend_describe);

typedef struct {
    uint16_t name; /* qstr */
    uint8_t offset;
    uint8_t is_size;
} plan_field;

/* microtrain.backend.PLAN_FIELDS, field for field. */
static const plan_field PLAN_FIELDS[] = {
    {MP_QSTR_total_bytes, offsetof(mt_memory_plan, total_bytes), 1},
    {MP_QSTR_metadata_bytes, offsetof(mt_memory_plan, metadata_bytes), 1},
    {MP_QSTR_weight_bytes, offsetof(mt_memory_plan, weight_bytes), 1},
    {MP_QSTR_gradient_bytes, offsetof(mt_memory_plan, gradient_bytes), 1},
    {MP_QSTR_optimizer_bytes, offsetof(mt_memory_plan, optimizer_bytes), 1},
    {MP_QSTR_reference_bytes, offsetof(mt_memory_plan, reference_bytes), 1},
    {MP_QSTR_activation_bytes, offsetof(mt_memory_plan, activation_bytes), 1},
    {MP_QSTR_activation_grad_bytes, offsetof(mt_memory_plan, activation_grad_bytes), 1},
    {MP_QSTR_io_bytes, offsetof(mt_memory_plan, io_bytes), 1},
    {MP_QSTR_scratch_bytes, offsetof(mt_memory_plan, scratch_bytes), 1},
    {MP_QSTR_reuse_bytes, offsetof(mt_memory_plan, reuse_bytes), 1},
    {MP_QSTR_lower_bound_bytes, offsetof(mt_memory_plan, lower_bound_bytes), 1},
    {MP_QSTR_num_trained_params, offsetof(mt_memory_plan, num_trained_params), 0},
    {MP_QSTR_first_trained_op, offsetof(mt_memory_plan, first_trained_op), 0},
    {MP_QSTR_fused_update, offsetof(mt_memory_plan, fused_update), 0},
    {MP_QSTR_reserved, offsetof(mt_memory_plan, reserved), 0},
    {MP_QSTR_int8_activation_bytes, offsetof(mt_memory_plan, int8_activation_bytes), 1},
};

/* plan(image, config) -> dict */
static mp_obj_t backend_plan(mp_obj_t self_in, mp_obj_t image_in, mp_obj_t config) {
    (void)self_in;
    mt_train_config cfg;
    uint8_t mask[MT_MAX_OPS];
    read_config(config, &cfg, mask, "mt_plan");
    size_t bytes, block_bytes;
    uint8_t *block;
    bool writable;
    const uint8_t *image = aligned_image(image_in, &bytes, &block, &block_bytes, &writable);
    mt_memory_plan plan;
    int status = mt_plan(image, bytes, &cfg, &plan);
    if (status < 0) {
        mt_error_detail found;
        if (mt_model_diagnose(image, bytes, &cfg, &found) != status) {
            found.op_index = -1;
        }
        if (block != NULL) {
            m_del(uint8_t, block, block_bytes);
        }
        error_extra extra = {found.op_index, found.op_index >= 0 ? found.op_type : 0, NULL};
        vstr_t none;
        vstr_init(&none, 1);
        nlr_raise(make_error(status, "mt_plan", &extra, &none));
    }
    if (block != NULL) {
        m_del(uint8_t, block, block_bytes);
    }
    mp_obj_t result = mp_obj_new_dict(MP_ARRAY_SIZE(PLAN_FIELDS));
    for (size_t i = 0; i < MP_ARRAY_SIZE(PLAN_FIELDS); ++i) {
        const uint8_t *p = (const uint8_t *)&plan + PLAN_FIELDS[i].offset;
        mp_obj_t value;
        if (PLAN_FIELDS[i].is_size) {
            size_t v;
            memcpy(&v, p, sizeof v);
            value = mp_obj_new_int_from_uint(v);
        } else {
            int32_t v;
            memcpy(&v, p, sizeof v);
            value = MP_OBJ_NEW_SMALL_INT(v);
        }
        store(result, PLAN_FIELDS[i].name, value);
    }
    return result;
}
static MP_DEFINE_CONST_FUN_OBJ_3(backend_plan_obj, backend_plan);

static void forget(backend_obj_t *self) {
    self->session = NULL;
    if (self->arena_block != NULL) {
        m_del(uint8_t, self->arena_block, self->arena_block_bytes);
    }
    if (self->image_block != NULL) {
        m_del(uint8_t, self->image_block, self->image_block_bytes);
    }
    self->arena_block = NULL;
    self->arena_block_bytes = 0;
    self->arena_obj = MP_OBJ_NULL;
    self->arena = NULL;
    self->arena_bytes = 0;
    self->image_block = NULL;
    self->image_block_bytes = 0;
    self->image_obj = MP_OBJ_NULL;
    self->image = NULL;
    self->image_bytes = 0;
    self->image_writable = false;
}

/* close(): forget the session; drop image and arena (idempotent) */
static mp_obj_t backend_close(mp_obj_t self_in) {
    forget(MP_OBJ_TO_PTR(self_in));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_close_obj, backend_close);

/* open() refused by the core: the error names the op, then the backend lets go of all. */
static MP_NORETURN void fail_open(backend_obj_t *self, int status, const char *function) {
    mt_error_detail found;
    if (mt_model_diagnose(self->image, self->image_bytes, &self->cfg, &found) != status) {
        found.op_index = -1;
    }
    forget(self);
    error_extra extra = {found.op_index, found.op_index >= 0 ? found.op_type : 0, NULL};
    vstr_t none;
    vstr_init(&none, 1);
    nlr_raise(make_error(status, function, &extra, &none));
}

/* open(image, config, arena=None) */
static mp_obj_t backend_open(size_t n_args, const mp_obj_t *pos_args, mp_map_t *kw_args) {
    enum { ARG_image, ARG_config, ARG_arena };
    static const mp_arg_t allowed[] = {
        {MP_QSTR_image, MP_ARG_REQUIRED | MP_ARG_OBJ, {.u_obj = MP_OBJ_NULL}},
        {MP_QSTR_config, MP_ARG_REQUIRED | MP_ARG_OBJ, {.u_obj = MP_OBJ_NULL}},
        {MP_QSTR_arena, MP_ARG_OBJ, {.u_rom_obj = MP_ROM_NONE}},
    };
    mp_arg_val_t args[MP_ARRAY_SIZE(allowed)];
    mp_arg_parse_all(n_args - 1, pos_args + 1, kw_args, MP_ARRAY_SIZE(allowed), allowed, args);
    backend_obj_t *self = MP_OBJ_TO_PTR(pos_args[0]);
    forget(self);

    mt_train_config *cfg = &self->cfg;
    read_config(args[ARG_config].u_obj, cfg, self->mask, "mt_plan");
    mp_obj_t arena_in = args[ARG_arena].u_obj;
    mp_buffer_info_t arena_buffer = {0};
    if (arena_in != mp_const_none && !mp_get_buffer(arena_in, &arena_buffer, MP_BUFFER_WRITE)) {
        raise_error(MT_ERR_BAD_ARGUMENT, "open",
            "the arena must be a writable buffer such as a bytearray");
    }

    self->image = aligned_image(args[ARG_image].u_obj, &self->image_bytes, &self->image_block,
        &self->image_block_bytes, &self->image_writable);
    if (self->image_block == NULL) {
        self->image_obj = args[ARG_image].u_obj;
    }
    mt_memory_plan plan;
    int status = mt_plan(self->image, self->image_bytes, cfg, &plan);
    if (status < 0) {
        fail_open(self, status, "mt_plan");
    }
    if (arena_in == mp_const_none) {
        self->arena_block_bytes = plan.total_bytes + MT_ARENA_ALIGN - 1;
        self->arena_block = m_new0(uint8_t, self->arena_block_bytes);
        self->arena = (uint8_t *)(((uintptr_t)self->arena_block + MT_ARENA_ALIGN - 1)
            & ~(uintptr_t)(MT_ARENA_ALIGN - 1));
        self->arena_bytes = plan.total_bytes;
    } else {
        uintptr_t start = (uintptr_t)arena_buffer.buf;
        uintptr_t aligned = (start + MT_ARENA_ALIGN - 1) & ~(uintptr_t)(MT_ARENA_ALIGN - 1);
        size_t skipped = (size_t)(aligned - start);
        size_t usable = arena_buffer.len > skipped ? arena_buffer.len - skipped : 0;
        if (usable < plan.total_bytes) {
            forget(self);
            raise_error(MT_ERR_ARENA_TOO_SMALL, "mt_session_init",
                "the arena buffer of %u bytes holds %u at %d-byte alignment, the plan needs %u "
                "(pass bytearray(%u))", (unsigned)arena_buffer.len, (unsigned)usable,
                MT_ARENA_ALIGN, (unsigned)plan.total_bytes,
                (unsigned)(plan.total_bytes + MT_ARENA_ALIGN - 1));
        }
        self->arena_obj = arena_in;
        self->arena = (uint8_t *)aligned;
        self->arena_bytes = usable;
    }
    mt_session *session;
    status = mt_session_init(&session, self->image, self->image_bytes, cfg, self->arena,
        self->arena_bytes);
    if (status < 0) {
        fail_open(self, status, "mt_session_init");
    }
    self->session = session;
    self->batch_size = cfg->batch_size;
    self->sparse = cfg->loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    self->numeric_errors_before = 0;
    /* rows are written as floats: an int8 input (image version 3) takes the C API or the
     * ctypes backend, never a float row into its bytes */
    for (int32_t position = 0;; ++position) {
        int32_t tensor;
        mt_tensor_info info;
        if (mt_model_io(self->image, self->image_bytes, 0, position, &tensor) != MT_OK) {
            break;
        }
        if (mt_model_tensor(self->image, self->image_bytes, tensor, &info) == MT_OK &&
            info.dtype == MT_DTYPE_I8) {
            fail_open(self, MT_ERR_UNSUPPORTED, "mt_session_input");
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_KW(backend_open_obj, 3, backend_open);

/* ------------------------------------------------------------------ rows */

/* write_rows(kind, position, first_row, values) */
static mp_obj_t backend_write_rows(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    backend_obj_t *self = session_of(args[0], "write_rows");
    mp_int_t kind = mp_obj_get_int(args[1]);
    int32_t position = get_i32(args[2], "position", "write_rows");
    mp_int_t first_row = mp_obj_get_int(args[3]);
    void *data;
    int32_t count;
    bool as_int = false;
    if (kind == 0) {
        float *x;
        int status = mt_session_input(self->session, position, &x, &count);
        if (status < 0) {
            raise_error(status, "mt_session_input", "the model has no input %d", (int)position);
        }
        data = x;
    } else if (kind == 1) {
        if (position != 0) {
            raise_error(MT_ERR_BAD_ARGUMENT, "write_rows", "targets are position 0, not %d",
                (int)position);
        }
        int32_t bytes;
        check(mt_session_target(self->session, &data, &bytes), "mt_session_target");
        count = bytes / 4;
        as_int = self->sparse != 0;
    } else {
        raise_error(MT_ERR_BAD_ARGUMENT, "write_rows", "kind %d is neither KIND_INPUT (0) "
            "nor KIND_TARGET (1)", (int)kind);
    }
    const size_t width = (size_t)count / (size_t)self->batch_size;
    if (first_row < 0 || first_row >= self->batch_size) {
        raise_error(MT_ERR_BAD_ARGUMENT, "write_rows", "first_row %d is outside 0..%d",
            (int)first_row, (int)self->batch_size - 1);
    }
    const size_t start = (size_t)first_row * width;
    /* Copy into the buffer from `start`; count what came, and refuse partial rows. */
    size_t written = copy_values(args[4], (uint8_t *)data + 4 * start, (size_t)count - start,
        as_int, "write_rows");
    if (written % width != 0) {
        raise_error(MT_ERR_BAD_ARGUMENT, "write_rows",
            "%u values are not whole rows of %u", (unsigned)written, (unsigned)width);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(backend_write_rows_obj, 5, 5, backend_write_rows);

/* read_rows(output, n) -> array('f') of n rows */
static mp_obj_t backend_read_rows(mp_obj_t self_in, mp_obj_t output_in, mp_obj_t n_in) {
    backend_obj_t *self = session_of(self_in, "read_rows");
    int32_t output = get_i32(output_in, "output", "read_rows");
    mp_int_t n = mp_obj_get_int(n_in);
    const float *data;
    int32_t count;
    int status = mt_session_output(self->session, output, &data, &count);
    if (status < 0) {
        raise_error(status, "mt_session_output", "the model has no output %d", (int)output);
    }
    if (n < 0 || n > self->batch_size) {
        raise_error(MT_ERR_BAD_ARGUMENT, "read_rows", "n = %d rows, the batch size is %d",
            (int)n, (int)self->batch_size);
    }
    size_t values = (size_t)n * ((size_t)count / (size_t)self->batch_size);
    mp_obj_array_t *rows = new_float_array(values);
    memcpy(rows->items, data, 4 * values);
    return MP_OBJ_FROM_PTR(rows);
}
static MP_DEFINE_CONST_FUN_OBJ_3(backend_read_rows_obj, backend_read_rows);

/* ------------------------------------------------------------------ steps */

/* Why a step with n rows failed, when this module can tell more than the status. */
static MP_NORETURN void raise_step(backend_obj_t *self, int status, const char *function,
    mp_int_t n, float loss) {
    if (status == MT_ERR_NUMERIC) {
        raise_session(self->session, status, function, &loss, NULL);
    }
    if (status == MT_ERR_BAD_ARGUMENT && (n < 1 || n > self->batch_size)) {
        raise_error(status, function, "n = %d rows, a step takes 1 to %d (the batch size)",
            (int)n, (int)self->batch_size);
    }
    if (status == MT_ERR_BAD_ARGUMENT && self->sparse) {
        const float *out;
        int32_t count;
        void *target;
        int32_t bytes;
        if (mt_session_output(self->session, 0, &out, &count) == MT_OK
            && mt_session_target(self->session, &target, &bytes) == MT_OK) {
            const int32_t classes = count / self->batch_size;
            for (mp_int_t row = 0; row < n; ++row) {
                int32_t label = ((const int32_t *)target)[row];
                if (label < 0 || label >= classes) {
                    raise_session(self->session, status, function, NULL,
                        "row %d has label %d; labels are 0..%d", (int)row, (int)label,
                        (int)classes - 1);
                }
            }
        }
    }
    raise_session(self->session, status, function, NULL, NULL);
}

/* Where the loss goes: out[0] of an array('f') given as the step's last argument (checked
 * before the step runs, so a bad one changes nothing), or NULL for a returned float. */
static float *loss_slot(size_t n_args, const mp_obj_t *args, const char *function) {
    if (n_args < 3 || args[2] == mp_const_none) {
        return NULL;
    }
    mp_buffer_info_t out;
    if (!mp_get_buffer(args[2], &out, MP_BUFFER_WRITE) || out.typecode != 'f' || out.len < 4) {
        raise_error(MT_ERR_BAD_ARGUMENT, function, "out must be an array('f') of at least "
            "one element");
    }
    return (float *)out.buf;
}

typedef int (*step_fn)(mt_session *s, int32_t n, float *loss);

static mp_obj_t run_step(size_t n_args, const mp_obj_t *args, step_fn step,
    const char *function) {
    backend_obj_t *self = session_of(args[0], function);
    mp_int_t n = mp_obj_get_int(args[1]);
    float *slot = loss_slot(n_args, args, function);
    float loss = 0.0f;
    int status = step(self->session, n < INT32_MIN || n > INT32_MAX ? -1 : (int32_t)n, &loss);
    if (status < 0) {
        raise_step(self, status, function, n, loss);
    }
    if (slot == NULL) {
        return mp_obj_new_float_from_f(loss);
    }
    *slot = loss;
    return mp_const_none;
}

static int train_step(mt_session *s, int32_t n, float *loss) {
    return mt_session_train_step(s, n, loss);
}
static int accumulate(mt_session *s, int32_t n, float *loss) {
    return mt_session_accumulate(s, n, loss);
}
static int eval_step(mt_session *s, int32_t n, float *loss) {
    return mt_session_eval_step(s, n, loss);
}

/* train_step(n, out=None) -> loss, or None after storing it in out[0] */
static mp_obj_t backend_train_step(size_t n_args, const mp_obj_t *args) {
    return run_step(n_args, args, train_step, "mt_session_train_step");
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(backend_train_step_obj, 2, 3, backend_train_step);

static mp_obj_t backend_accumulate(size_t n_args, const mp_obj_t *args) {
    return run_step(n_args, args, accumulate, "mt_session_accumulate");
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(backend_accumulate_obj, 2, 3, backend_accumulate);

static mp_obj_t backend_eval_step(size_t n_args, const mp_obj_t *args) {
    return run_step(n_args, args, eval_step, "mt_session_eval_step");
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(backend_eval_step_obj, 2, 3, backend_eval_step);

static mp_obj_t backend_infer(mp_obj_t self_in, mp_obj_t n_in) {
    backend_obj_t *self = session_of(self_in, "mt_session_infer");
    mp_int_t n = mp_obj_get_int(n_in);
    int status = mt_session_infer(self->session, n < 0 || n > INT32_MAX ? -1 : (int32_t)n);
    if (status < 0) {
        raise_step(self, status, "mt_session_infer", n, 0.0f);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(backend_infer_obj, backend_infer);

static mp_obj_t backend_zero_grad(mp_obj_t self_in) {
    mt_session *session = session_of(self_in, "mt_session_zero_grad")->session;
    check_session(session, mt_session_zero_grad(session), "mt_session_zero_grad");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_zero_grad_obj, backend_zero_grad);

static mp_obj_t backend_optimizer_step(mp_obj_t self_in) {
    mt_session *session = session_of(self_in, "mt_session_optimizer_step")->session;
    check_session(session, mt_session_optimizer_step(session), "mt_session_optimizer_step");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_optimizer_step_obj, backend_optimizer_step);

/* An in-memory checkpoint of the session's state (weights, optimizer state, counters, rate). */
typedef struct {
    uint8_t *data;
    size_t bytes, used;
} snapshot;

static mt_status write_snapshot(void *user, const void *data, size_t bytes) {
    snapshot *s = user;
    if (s->used + bytes > s->bytes) {
        return MT_ERR_IO;
    }
    memcpy(s->data + s->used, data, bytes);
    s->used += bytes;
    return MT_OK;
}

static mt_status read_snapshot(void *user, size_t offset, void *data, size_t bytes) {
    snapshot *s = user;
    if (offset + bytes > s->used) {
        return MT_ERR_IO;
    }
    memcpy(data, s->data + offset, bytes);
    return MT_OK;
}

/* Save the session's whole state into a heap snapshot (the caller m_del's it). */
static void take_snapshot(backend_obj_t *self, snapshot *saved, const char *why) {
    saved->used = 0;
    check(mt_checkpoint_bytes(self->session, 1, NULL, 0, &saved->bytes), "mt_checkpoint_bytes");
    saved->data = m_new(uint8_t, saved->bytes);
    int status = mt_checkpoint_save(self->session, 1, NULL, 0, write_snapshot, saved);
    if (status < 0) {
        m_del(uint8_t, saved->data, saved->bytes);
        raise_error(status, "mt_checkpoint_save", "%s", why);
    }
}

/* The copy-on-write of the module comment: the image to a heap copy, the session onto it. */
static void move_to_writable_image(backend_obj_t *self) {
    snapshot saved;
    take_snapshot(self, &saved, "keeping the state while the image is copied");
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
        status = mt_checkpoint_load(session, saved.used, read_snapshot, &saved, NULL, NULL);
    }
    m_del(uint8_t, saved.data, saved.bytes);
    if (status < 0) {
        m_del(uint8_t, block, block_bytes);
        forget(self);
        raise_error(status, "mt_session_init", "moving the session onto a copy of its image");
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
    check(mt_session_param_count(self->session, &count), "mt_session_param_count");
    return count;
}

static void param_info(backend_obj_t *self, mp_obj_t position_in, mt_param_info *info) {
    int32_t position = get_i32(position_in, "position", "mt_session_param");
    int status = mt_session_param(self->session, position, info);
    if (status < 0) {
        raise_error(status, "mt_session_param", "the model has %d weights, not %d",
            (int)param_count(self), (int)position + 1);
    }
}

static const float *param_data(const mt_param_info *info) {
    return info->trained ? info->data : info->image_data;
}

/* trained() -> [bool, ...] per weight */
static mp_obj_t backend_trained(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "trained");
    int32_t count = param_count(self);
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int32_t position = 0; position < count; ++position) {
        mt_param_info info;
        check(mt_session_param(self->session, position, &info), "mt_session_param");
        mp_obj_list_append(list, mp_obj_new_bool(info.trained));
    }
    return list;
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_trained_obj, backend_trained);

/* read_param(position) -> array('f') */
static mp_obj_t backend_read_param(mp_obj_t self_in, mp_obj_t position_in) {
    backend_obj_t *self = session_of(self_in, "read_param");
    mt_param_info info;
    param_info(self, position_in, &info);
    mp_obj_array_t *values = new_float_array((size_t)info.count);
    memcpy(values->items, param_data(&info), 4 * (size_t)info.count);
    return MP_OBJ_FROM_PTR(values);
}
static MP_DEFINE_CONST_FUN_OBJ_2(backend_read_param_obj, backend_read_param);

/* write_param(position, values): every element, in the arena or (frozen) in the image */
static mp_obj_t backend_write_param(mp_obj_t self_in, mp_obj_t position_in, mp_obj_t values) {
    backend_obj_t *self = session_of(self_in, "write_param");
    mt_param_info info;
    param_info(self, position_in, &info);
    /* Copied through a temporary so that a bad value leaves the weight as it was. */
    float *fresh = m_new(float, (size_t)info.count + 1);
    size_t count = copy_values(values, fresh, (size_t)info.count + 1, false, "write_param");
    if (count != (size_t)info.count) {
        m_del(float, fresh, (size_t)info.count + 1);
        raise_error(MT_ERR_BAD_ARGUMENT, "write_param", "%u values for a weight of %u",
            (unsigned)count, (unsigned)info.count);
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
static MP_DEFINE_CONST_FUN_OBJ_3(backend_write_param_obj, backend_write_param);

/* weights() -> bytes: every weight, float32 little-endian, mt_session_param order */
static mp_obj_t backend_weights(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "weights");
    int32_t count = param_count(self);
    size_t total = 0;
    mt_param_info info;
    for (int32_t position = 0; position < count; ++position) {
        check(mt_session_param(self->session, position, &info), "mt_session_param");
        total += 4 * (size_t)info.count;
    }
    vstr_t bytes;
    vstr_init_len(&bytes, total);
    size_t offset = 0;
    for (int32_t position = 0; position < count; ++position) {
        check(mt_session_param(self->session, position, &info), "mt_session_param");
        memcpy(vstr_str(&bytes) + offset, param_data(&info), 4 * (size_t)info.count);
        offset += 4 * (size_t)info.count;
    }
    return mp_obj_new_bytes_from_vstr(&bytes);
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_weights_obj, backend_weights);

/* weights_crc32() -> int: zlib.crc32 of weights(), without building it */
static mp_obj_t backend_weights_crc32(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "weights_crc32");
    int32_t count = param_count(self);
    uint32_t crc = 0;
    for (int32_t position = 0; position < count; ++position) {
        mt_param_info info;
        check(mt_session_param(self->session, position, &info), "mt_session_param");
        crc = mt_crc32_update(crc, param_data(&info), 4 * (size_t)info.count);
    }
    return mp_obj_new_int_from_uint(crc);
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_weights_crc32_obj, backend_weights_crc32);

/* ------------------------------------------------------------------ rates and counters */

static mp_obj_t backend_set_learning_rate(mp_obj_t self_in, mp_obj_t rate) {
    backend_obj_t *self = session_of(self_in, "mt_session_set_learning_rate");
    check(mt_session_set_learning_rate(self->session, mp_obj_get_float_to_f(rate)),
        "mt_session_set_learning_rate");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(backend_set_learning_rate_obj, backend_set_learning_rate);

static mp_obj_t backend_get_learning_rate(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "mt_session_get_learning_rate");
    float rate;
    check(mt_session_get_learning_rate(self->session, &rate), "mt_session_get_learning_rate");
    return mp_obj_new_float_from_f(rate);
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_get_learning_rate_obj, backend_get_learning_rate);

static mp_obj_t backend_base_learning_rate(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "mt_session_get_base_learning_rate");
    float rate;
    check(mt_session_get_base_learning_rate(self->session, &rate),
        "mt_session_get_base_learning_rate");
    return mp_obj_new_float_from_f(rate);
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_base_learning_rate_obj, backend_base_learning_rate);

static mp_obj_t backend_set_reference(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "mt_session_set_reference");
    check(mt_session_set_reference(self->session), "mt_session_set_reference");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_set_reference_obj, backend_set_reference);

static mp_obj_t backend_counters(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "mt_session_counters");
    int64_t step, epoch;
    check(mt_session_counters(self->session, &step, &epoch), "mt_session_counters");
    mp_obj_t both[2] = {mp_obj_new_int_from_ll(step), mp_obj_new_int_from_ll(epoch)};
    return mp_obj_new_tuple(2, both);
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_counters_obj, backend_counters);

static mp_obj_t backend_set_epoch(mp_obj_t self_in, mp_obj_t epoch) {
    backend_obj_t *self = session_of(self_in, "mt_session_set_epoch");
    check(mt_session_set_epoch(self->session, mp_obj_get_ll(epoch)), "mt_session_set_epoch");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(backend_set_epoch_obj, backend_set_epoch);

static mp_obj_t backend_numeric_errors(mp_obj_t self_in) {
    backend_obj_t *self = session_of(self_in, "mt_session_numeric_errors");
    int64_t count;
    check(mt_session_numeric_errors(self->session, &count), "mt_session_numeric_errors");
    return mp_obj_new_int_from_ll(count + self->numeric_errors_before);
}
static MP_DEFINE_CONST_FUN_OBJ_1(backend_numeric_errors_obj, backend_numeric_errors);

/* ------------------------------------------------------------------ checkpoints, export */

/* What a core callback into Python needs, and what it left behind. */
typedef struct {
    mp_obj_t callable;   /* write(chunk) or read(offset, count) */
    mp_obj_t error;      /* the exception the callable raised, or MP_OBJ_NULL */
    size_t short_offset; /* a read that returned the wrong length: where, and how much */
    size_t short_wanted, short_got;
    bool short_read;
    mp_obj_t properties; /* checkpoint_load: the list of (name, value) */
} callback_ctx;

static mt_status write_to_python(void *user, const void *data, size_t bytes) {
    callback_ctx *ctx = user;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_call_function_1(ctx->callable, mp_obj_new_bytes(data, bytes));
        nlr_pop();
        return MT_OK;
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
    if (ctx->error != MP_OBJ_NULL) {
        nlr_raise(ctx->error);
    }
    if (ctx->short_read) {
        raise_error(MT_ERR_IO, function, "read(%u, %u) returned %u bytes",
            (unsigned)ctx->short_offset, (unsigned)ctx->short_wanted,
            (unsigned)ctx->short_got);
    }
    check(status, function);
}

static void init_ctx(callback_ctx *ctx, mp_obj_t callable) {
    ctx->callable = callable;
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
        p->type = get_i32(triple[1], "property kind", "mt_checkpoint_save");
        if (p->type == MT_PROPERTY_INT) {
            p->int_value = mp_obj_get_ll(triple[2]);
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
    backend_obj_t *self = session_of(self_in, "mt_checkpoint_bytes");
    int32_t count;
    mt_property *properties = read_properties(properties_in, &count);
    size_t bytes;
    int status = mt_checkpoint_bytes(self->session, mp_obj_is_true(include_optimizer),
        properties, count, &bytes);
    m_del(mt_property, properties, count == 0 ? 1 : count);
    check(status, "mt_checkpoint_bytes");
    return mp_obj_new_int_from_uint(bytes);
}
static MP_DEFINE_CONST_FUN_OBJ_3(backend_checkpoint_bytes_obj, backend_checkpoint_bytes);

/* checkpoint_save(include_optimizer, properties, write) */
static mp_obj_t backend_checkpoint_save(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    backend_obj_t *self = session_of(args[0], "mt_checkpoint_save");
    int32_t count;
    mt_property *properties = read_properties(args[2], &count);
    callback_ctx ctx;
    init_ctx(&ctx, args[3]);
    int status = mt_checkpoint_save(self->session, mp_obj_is_true(args[1]), properties, count,
        write_to_python, &ctx);
    m_del(mt_property, properties, count == 0 ? 1 : count);
    finish_callbacks(&ctx, status, "mt_checkpoint_save");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(backend_checkpoint_save_obj, 4, 4,
    backend_checkpoint_save);

/* checkpoint_load(size, read) -> [(name, value), ...] */
static mp_obj_t backend_checkpoint_load(mp_obj_t self_in, mp_obj_t size_in, mp_obj_t read) {
    backend_obj_t *self = session_of(self_in, "mt_checkpoint_load");
    size_t size = (size_t)mp_obj_get_int(size_in);
    /* The core validates the whole checkpoint before it changes anything, but its second
     * pass reads in place: keep the state to put back if that pass fails. */
    snapshot saved;
    take_snapshot(self, &saved, "keeping the state to restore");
    callback_ctx ctx;
    init_ctx(&ctx, read);
    ctx.properties = mp_obj_new_list(0, NULL);
    int status = mt_checkpoint_load(self->session, size, read_from_python, &ctx, property_to_python,
        &ctx);
    if (status < 0 || ctx.error != MP_OBJ_NULL) {
        int restored = mt_checkpoint_load(self->session, saved.used, read_snapshot, &saved,
            NULL, NULL);
        m_del(uint8_t, saved.data, saved.bytes);
        if (restored < 0) {
            raise_error(restored, "mt_checkpoint_load", "restoring the state after a failed "
                "load (status %d)", status);
        }
        finish_callbacks(&ctx, status < 0 ? status : MT_ERR_IO, "mt_checkpoint_load");
    }
    m_del(uint8_t, saved.data, saved.bytes);
    return ctx.properties;
}
static MP_DEFINE_CONST_FUN_OBJ_3(backend_checkpoint_load_obj, backend_checkpoint_load);

/* export_image(write) */
static mp_obj_t backend_export_image(mp_obj_t self_in, mp_obj_t write) {
    backend_obj_t *self = session_of(self_in, "mt_session_export_image");
    callback_ctx ctx;
    init_ctx(&ctx, write);
    int status = mt_session_export_image(self->session, write_to_python, &ctx);
    finish_callbacks(&ctx, status, "mt_session_export_image");
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(backend_export_image_obj, backend_export_image);

/* ------------------------------------------------------------------ tables */

static const mp_rom_map_elem_t backend_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_describe), MP_ROM_PTR(&backend_describe_obj)},
    {MP_ROM_QSTR(MP_QSTR_plan), MP_ROM_PTR(&backend_plan_obj)},
    {MP_ROM_QSTR(MP_QSTR_open), MP_ROM_PTR(&backend_open_obj)},
    {MP_ROM_QSTR(MP_QSTR_close), MP_ROM_PTR(&backend_close_obj)},
    {MP_ROM_QSTR(MP_QSTR_write_rows), MP_ROM_PTR(&backend_write_rows_obj)},
    {MP_ROM_QSTR(MP_QSTR_read_rows), MP_ROM_PTR(&backend_read_rows_obj)},
    {MP_ROM_QSTR(MP_QSTR_train_step), MP_ROM_PTR(&backend_train_step_obj)},
    {MP_ROM_QSTR(MP_QSTR_accumulate), MP_ROM_PTR(&backend_accumulate_obj)},
    {MP_ROM_QSTR(MP_QSTR_zero_grad), MP_ROM_PTR(&backend_zero_grad_obj)},
    {MP_ROM_QSTR(MP_QSTR_optimizer_step), MP_ROM_PTR(&backend_optimizer_step_obj)},
    {MP_ROM_QSTR(MP_QSTR_eval_step), MP_ROM_PTR(&backend_eval_step_obj)},
    {MP_ROM_QSTR(MP_QSTR_infer), MP_ROM_PTR(&backend_infer_obj)},
    {MP_ROM_QSTR(MP_QSTR_trained), MP_ROM_PTR(&backend_trained_obj)},
    {MP_ROM_QSTR(MP_QSTR_read_param), MP_ROM_PTR(&backend_read_param_obj)},
    {MP_ROM_QSTR(MP_QSTR_write_param), MP_ROM_PTR(&backend_write_param_obj)},
    {MP_ROM_QSTR(MP_QSTR_weights), MP_ROM_PTR(&backend_weights_obj)},
    {MP_ROM_QSTR(MP_QSTR_weights_crc32), MP_ROM_PTR(&backend_weights_crc32_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_learning_rate), MP_ROM_PTR(&backend_set_learning_rate_obj)},
    {MP_ROM_QSTR(MP_QSTR_get_learning_rate), MP_ROM_PTR(&backend_get_learning_rate_obj)},
    {MP_ROM_QSTR(MP_QSTR_base_learning_rate), MP_ROM_PTR(&backend_base_learning_rate_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_reference), MP_ROM_PTR(&backend_set_reference_obj)},
    {MP_ROM_QSTR(MP_QSTR_counters), MP_ROM_PTR(&backend_counters_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_epoch), MP_ROM_PTR(&backend_set_epoch_obj)},
    {MP_ROM_QSTR(MP_QSTR_numeric_errors), MP_ROM_PTR(&backend_numeric_errors_obj)},
    {MP_ROM_QSTR(MP_QSTR_checkpoint_bytes), MP_ROM_PTR(&backend_checkpoint_bytes_obj)},
    {MP_ROM_QSTR(MP_QSTR_checkpoint_save), MP_ROM_PTR(&backend_checkpoint_save_obj)},
    {MP_ROM_QSTR(MP_QSTR_checkpoint_load), MP_ROM_PTR(&backend_checkpoint_load_obj)},
    {MP_ROM_QSTR(MP_QSTR_export_image), MP_ROM_PTR(&backend_export_image_obj)},
};
static MP_DEFINE_CONST_DICT(backend_locals, backend_locals_table);

MP_DEFINE_CONST_OBJ_TYPE(
    backend_type,
    MP_QSTR_Backend,
    MP_TYPE_FLAG_NONE,
    make_new, backend_make_new,
    locals_dict, &backend_locals
    );

static const mp_rom_map_elem_t module_globals_table[] = {
    {MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__microtrain)},
    {MP_ROM_QSTR(MP_QSTR_Backend), MP_ROM_PTR(&backend_type)},
    {MP_ROM_QSTR(MP_QSTR_ABI_VERSION), MP_ROM_INT(MT_ABI_VERSION)},
    {MP_ROM_QSTR(MP_QSTR_ARENA_ALIGN), MP_ROM_INT(MT_ARENA_ALIGN)},
};
static MP_DEFINE_CONST_DICT(module_globals, module_globals_table);

const mp_obj_module_t microtrain_user_cmodule = {
    .base = {&mp_type_module},
    .globals = (mp_obj_dict_t *)&module_globals,
};

MP_REGISTER_MODULE(MP_QSTR__microtrain, microtrain_user_cmodule);
