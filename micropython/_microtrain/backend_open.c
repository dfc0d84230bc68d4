/*
 * _microtrain's Backend.describe / plan / open / close (modmicrotrain.c describes the
 * module): images read in place or aligned into a copy, config dicts read into an
 * mt_train_config, the model's description and the memory plan as dicts, and a session
 * opened on the caller's arena or on one heap block.
 */
#include "abi_fields.h"
#include "backend.h"

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

enum { FIELD_I32, FIELD_F32, FIELD_MASK, FIELD_CHANNELS, FIELD_SIZE };

/* A field of a struct the bindings mirror (mt_train_config, mt_memory_plan): its Python name,
 * its kind (FIELD_*) and where it is in the struct. */
typedef struct {
    uint16_t name; /* qstr */
    uint8_t kind;
    uint8_t offset;
} abi_field;

#define ABI_FIELD(type, name, kind) {MP_QSTR_##name, FIELD_##kind, offsetof(type, name)},

/* microtrain.backend.CONFIG_FIELDS, field for field (abi_fields.h, generated from
 * micro_core/abi/microtrain_abi.json). */
static const abi_field CONFIG_FIELDS[] = {
#define CONFIG_FIELD(name, kind) ABI_FIELD(mt_train_config, name, kind)
    MT_ABI_CONFIG_FIELDS(CONFIG_FIELD)
#undef CONFIG_FIELD
};

/* An mt_train_config from a config dict: core defaults, then every field the dict has (None
 * keeps the default). The trainable op mask goes to `mask` (MT_MAX_OPS bytes, the caller's)
 * and the per-op channel counts to `channels` (MT_MAX_OPS int32, the caller's), which the
 * config borrows. Unknown fields raise. */
static void read_config(mp_obj_t config, mt_train_config *cfg, uint8_t *mask, int32_t *channels,
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
        const abi_field *field = NULL;
        for (size_t i = 0; i < MP_ARRAY_SIZE(CONFIG_FIELDS); ++i) {
            if (CONFIG_FIELDS[i].name == name) {
                field = &CONFIG_FIELDS[i];
            }
        }
        if (field == NULL) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function, "config has no field '%q'", name);
        }
        if (value == mp_const_none) {
            continue;
        }
        uint8_t *slot_ptr = (uint8_t *)cfg + field->offset;
        if (field->kind == FIELD_I32) {
            int32_t v = mtmod_get_i32(value, qstr_str(name), function);
            memcpy(slot_ptr, &v, sizeof v);
        } else if (field->kind == FIELD_F32) {
            float v = mp_obj_get_float_to_f(value);
            memcpy(slot_ptr, &v, sizeof v);
        } else {
            size_t count;
            mp_obj_t *bits;
            mp_obj_get_array(value, &count, &bits);
            if (count > MT_MAX_OPS) {
                mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function,
                    "%q has %lu entries; a model has at most %d ops",
                    name, (unsigned long)count, MT_MAX_OPS);
            }
            if (field->kind == FIELD_CHANNELS) { /* -1 all, 0 bias only, k channels */
                for (size_t op = 0; op < MT_MAX_OPS; ++op) {
                    channels[op] = op < count ? mtmod_get_i32(bits[op], qstr_str(name), function) : -1;
                }
                cfg->trainable_op_channels = channels;
                continue;
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

/* Entries a range query (mt_model_tensors, mt_model_ops) fills at a time: one validation of
 * the image per chunk, where a query per entry validated the whole image per entry (quadratic
 * in the model's size), on 16 entries of stack */
#define DESCRIBE_CHUNK 16

static mp_obj_t describe_aligned(const uint8_t *image, size_t bytes) {
    mt_model_info info;
    mtmod_check_model(mt_model_check(image, bytes, &info), "mt_model_check", image, bytes, NULL);
    mp_obj_t result = mp_obj_new_dict(6);
    store(result, MP_QSTR_num_ops, MP_OBJ_NEW_SMALL_INT(info.num_ops));
    store(result, MP_QSTR_num_tensors, MP_OBJ_NEW_SMALL_INT(info.num_tensors));
    mt_tensor_info tensor;
    for (int32_t is_output = 0; is_output <= 1; ++is_output) {
        int32_t count = is_output ? info.num_outputs : info.num_inputs;
        mp_obj_t list = mp_obj_new_list(0, NULL);
        for (int32_t position = 0; position < count; ++position) {
            int32_t index;
            mtmod_check_model(mt_model_io(image, bytes, is_output, position, &index),
                "mt_model_io", image, bytes, NULL);
            mtmod_check_model(mt_model_tensor(image, bytes, index, &tensor), "mt_model_tensor",
                image, bytes, NULL);
            mp_obj_t entry = mp_obj_new_dict(2);
            store(entry, MP_QSTR_tensor, MP_OBJ_NEW_SMALL_INT(index));
            store(entry, MP_QSTR_dims, dims_tuple(&tensor));
            mp_obj_list_append(list, entry);
        }
        store(result, is_output ? MP_QSTR_outputs : MP_QSTR_inputs, list);
    }
    /* the TRAINABLE tensors, one bit each, for the ops' "weights" below */
    const size_t flag_bytes = (size_t)info.num_tensors / 8 + 1;
    uint8_t *trainable = m_new0(uint8_t, flag_bytes);
    mt_tensor_info tensors[DESCRIBE_CHUNK];
    mp_obj_t params = mp_obj_new_list(0, NULL);
    /* TRAINABLE tensors that are not f32 (an int8 layer's weights and biases trained in place):
     * what a sparse scheme's channels read. */
    mp_obj_t quantized = mp_obj_new_list(0, NULL);
    for (int32_t first = 0; first < info.num_tensors; first += DESCRIBE_CHUNK) {
        const int32_t n = info.num_tensors - first < DESCRIBE_CHUNK ? info.num_tensors - first : DESCRIBE_CHUNK;
        mtmod_check_model(mt_model_tensors(image, bytes, first, n, tensors), "mt_model_tensors", image,
            bytes, NULL);
        for (int32_t k = 0; k < n; ++k) {
            const mt_tensor_info *t = &tensors[k];
            const int32_t index = first + k;
            if (t->flags & MT_TENSOR_TRAINABLE) {
                trainable[index >> 3] |= (uint8_t)(1u << (index & 7));
                if (t->dtype != MT_DTYPE_F32) {
                    mp_obj_t entry = mp_obj_new_dict(2);
                    store(entry, MP_QSTR_tensor, MP_OBJ_NEW_SMALL_INT(index));
                    store(entry, MP_QSTR_dims, dims_tuple(t));
                    mp_obj_list_append(quantized, entry);
                }
            }
            /* the weights (backend_weights.c's walk): CONST f32 tensors (mt_session_param) and
             * the TRAINABLE int8 weights and int32 biases of int8 layers trained in place
             * (mt_session_qparam), in table order */
            if (!(t->flags & MT_TENSOR_CONST)
                || (t->dtype != MT_DTYPE_F32 && !(t->flags & MT_TENSOR_TRAINABLE))) {
                continue;
            }
            mp_obj_t entry = mp_obj_new_dict(5);
            store(entry, MP_QSTR_tensor, MP_OBJ_NEW_SMALL_INT(index));
            store(entry, MP_QSTR_dims, dims_tuple(t));
            store(entry, MP_QSTR_offset, mp_obj_new_int(t->data_offset));
            store(entry, MP_QSTR_trainable, mp_obj_new_bool(t->flags & MT_TENSOR_TRAINABLE));
            store(entry, MP_QSTR_dtype, MP_OBJ_NEW_QSTR(t->dtype == MT_DTYPE_I8 ? MP_QSTR_int8
                : t->dtype == MT_DTYPE_I32 ? MP_QSTR_int32 : MP_QSTR_float32));
            mp_obj_list_append(params, entry);
        }
    }
    store(result, MP_QSTR_params, params);
    store(result, MP_QSTR_quantized, quantized);
    mp_obj_t ops = mp_obj_new_list(0, NULL);
    mt_op_info chunk[DESCRIBE_CHUNK];
    for (int32_t first = 0; first < info.num_ops; first += DESCRIBE_CHUNK) {
        const int32_t n = info.num_ops - first < DESCRIBE_CHUNK ? info.num_ops - first : DESCRIBE_CHUNK;
        mtmod_check_model(mt_model_ops(image, bytes, first, n, chunk), "mt_model_ops", image, bytes, NULL);
        for (int32_t k = 0; k < n; ++k) {
            const mt_op_info *op = &chunk[k];
            mp_obj_t inputs = mp_obj_new_list(0, NULL);
            mp_obj_t outputs = mp_obj_new_list(0, NULL);
            bool weights = false;
            for (int32_t i = 0; i < op->num_inputs; ++i) {
                const int32_t in = op->inputs[i];
                if (in >= 0 && in < info.num_tensors) {
                    weights = weights || (trainable[in >> 3] >> (in & 7) & 1u);
                }
                mp_obj_list_append(inputs, MP_OBJ_NEW_SMALL_INT(in));
            }
            for (int32_t i = 0; i < op->num_outputs; ++i) {
                mp_obj_list_append(outputs, MP_OBJ_NEW_SMALL_INT(op->outputs[i]));
            }
            mp_obj_t entry = mp_obj_new_dict(5);
            store(entry, MP_QSTR_type, MP_OBJ_NEW_SMALL_INT(op->type));
            store(entry, MP_QSTR_layer, MP_OBJ_NEW_SMALL_INT(op->layer));
            store(entry, MP_QSTR_inputs, inputs);
            store(entry, MP_QSTR_outputs, outputs);
            store(entry, MP_QSTR_weights, mp_obj_new_bool(weights));
            mp_obj_list_append(ops, entry);
        }
    }
    m_del(uint8_t, trainable, flag_bytes);
    store(result, MP_QSTR_ops, ops);
    return result;
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
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_describe_obj, backend_describe);

/* microtrain.backend.PLAN_FIELDS, field for field (abi_fields.h): SIZE (size_t) or I32. */
static const abi_field PLAN_FIELDS[] = {
#define PLAN_FIGURE(name, kind) ABI_FIELD(mt_memory_plan, name, kind)
    MT_ABI_PLAN_FIGURES(PLAN_FIGURE)
#undef PLAN_FIGURE
};

/* A plan's image: the caller's object when its bytes are 4-aligned (read in place), else an
 * aligned copy in a bytearray of 15 bytes more over a heap block (the collector frees it with
 * the plan); its aligned bytes in *image, their offset in the object's buffer in *offset. */
static mp_obj_t planned_image(mp_obj_t image_in, const uint8_t **image, size_t *bytes, size_t *offset) {
    mp_buffer_info_t buffer, writable;
    mp_get_buffer_raise(image_in, &buffer, MP_BUFFER_READ);
    *bytes = buffer.len;
    *offset = 0;
    /* read in place only what the script cannot change behind the session's back: a
     * read-only buffer (a frozen bytes object, a ROMFS file's memoryview); a writable one
     * (a bytearray) is copied like an unaligned one, so growing or editing it later never
     * reaches the plan or the session */
    if (((uintptr_t)buffer.buf & 3u) == 0 && !mp_get_buffer(image_in, &writable, MP_BUFFER_WRITE)) {
        *image = buffer.buf;
        return image_in;
    }
    uint8_t *block = m_new(uint8_t, buffer.len + IMAGE_ALIGN - 1);
    uint8_t *at = (uint8_t *)(((uintptr_t)block + IMAGE_ALIGN - 1) & ~(uintptr_t)(IMAGE_ALIGN - 1));
    memcpy(at, buffer.buf, buffer.len);
    *image = at;
    *offset = (size_t)(at - block);
    return mp_obj_new_bytearray_by_ref(buffer.len + IMAGE_ALIGN - 1, block);
}

/* plan(image, config) -> dict: the figures, and under "binding" (image object, the image's
 * offset in it, config dict, the C plan's bytes, the caller's image object) what open()
 * needs. A read-only 4-aligned image is read in place from here on; any other is copied. */
static mp_obj_t backend_plan(mp_obj_t self_in, mp_obj_t image_in, mp_obj_t config) {
    (void)self_in;
    mt_train_config cfg;
    uint8_t mask[MT_MAX_OPS];
    int32_t channels[MT_MAX_OPS];
    read_config(config, &cfg, mask, channels, "mt_plan");
    size_t bytes, offset;
    const uint8_t *image;
    mp_obj_t image_obj = planned_image(image_in, &image, &bytes, &offset);
    mt_memory_plan plan;
    int status = mt_plan(image, bytes, &cfg, &plan);
    if (status < 0) {
        mt_error_detail found;
        if (mt_model_diagnose(image, bytes, &cfg, &found) != status) {
            found.op_index = -1;
        }
        error_extra extra = {found.op_index, found.op_index >= 0 ? found.op_type : 0, NULL};
        vstr_t none;
        vstr_init(&none, 1);
        nlr_raise(mtmod_make_error(status, "mt_plan", &extra, &none));
    }
    mp_obj_t result = mp_obj_new_dict(MP_ARRAY_SIZE(PLAN_FIELDS) + 1);
    for (size_t i = 0; i < MP_ARRAY_SIZE(PLAN_FIELDS); ++i) {
        const uint8_t *p = (const uint8_t *)&plan + PLAN_FIELDS[i].offset;
        mp_obj_t value;
        if (PLAN_FIELDS[i].kind == FIELD_SIZE) {
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
    /* the caller's buffer rides along too: open() refuses an arena over it as over the
     * image it reads, so a session never writes the image a script gave (copied or not) */
    mp_obj_t binding[5] = {image_obj, MP_OBJ_NEW_SMALL_INT(offset), config,
                           mp_obj_new_bytes((const byte *)&plan, sizeof plan), image_in};
    store(result, MP_QSTR_binding, mp_obj_new_tuple(5, binding));
    return result;
}
MP_DEFINE_CONST_FUN_OBJ_3(mtmod_plan_obj, backend_plan);

void mtmod_set_closed(backend_obj_t *self) {
    self->session = NULL;
    self->arena_block = NULL;
    self->arena_block_bytes = 0;
    self->arena_obj = MP_OBJ_NULL;
    self->arena = NULL;
    self->arena_bytes = 0;
    self->image_block = NULL;
    self->image_block_bytes = 0;
    self->image_obj = MP_OBJ_NULL;
    self->image_offset = 0;
    self->image = NULL;
    self->image_bytes = 0;
    self->image_writable = false;
}

void mtmod_forget(backend_obj_t *self) {
    self->session = NULL;
    if (self->arena_block != NULL) {
        m_del(uint8_t, self->arena_block, self->arena_block_bytes);
    }
    if (self->image_block != NULL) {
        m_del(uint8_t, self->image_block, self->image_block_bytes);
    }
    mtmod_set_closed(self);
}

/* close(): forget the session; drop image and arena (idempotent) */
static mp_obj_t backend_close(mp_obj_t self_in) {
    mtmod_forget(MP_OBJ_TO_PTR(self_in));
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_close_obj, backend_close);

/* open() refused by the core: the error names the op, then the backend lets go of all. */
static MP_NORETURN void fail_open(backend_obj_t *self, int status, const char *function) {
    mt_error_detail found;
    if (mt_model_diagnose(self->image, self->image_bytes, &self->cfg, &found) != status) {
        found.op_index = -1;
    }
    mtmod_forget(self);
    error_extra extra = {found.op_index, found.op_index >= 0 ? found.op_type : 0, NULL};
    vstr_t none;
    vstr_init(&none, 1);
    nlr_raise(mtmod_make_error(status, function, &extra, &none));
}

/* open(plan, arena=None): the session laid out from what plan() returned, the image neither
 * validated nor planned again (mt_session_init_from_plan checks the plan is still its own). */
static mp_obj_t backend_open(size_t n_args, const mp_obj_t *pos_args, mp_map_t *kw_args) {
    enum { ARG_plan, ARG_arena };
    static const mp_arg_t allowed[] = {
        {MP_QSTR_plan, MP_ARG_REQUIRED | MP_ARG_OBJ, {.u_obj = MP_OBJ_NULL}},
        {MP_QSTR_arena, MP_ARG_OBJ, {.u_rom_obj = MP_ROM_NONE}},
    };
    mp_arg_val_t args[MP_ARRAY_SIZE(allowed)];
    mp_arg_parse_all(n_args - 1, pos_args + 1, kw_args, MP_ARRAY_SIZE(allowed), allowed, args);
    backend_obj_t *self = MP_OBJ_TO_PTR(pos_args[0]);
    mp_obj_t plan_in = args[ARG_plan].u_obj;
    mp_obj_t binding = MP_OBJ_NULL;
    if (mp_obj_is_type(plan_in, &mp_type_dict)) {
        mp_map_elem_t *found = mp_map_lookup(mp_obj_dict_get_map(plan_in), MP_OBJ_NEW_QSTR(MP_QSTR_binding),
            MP_MAP_LOOKUP);
        if (found != NULL) {
            binding = found->value;
        }
    }
    size_t parts = 0;
    mp_obj_t *part = NULL;
    if (binding != MP_OBJ_NULL && mp_obj_is_type(binding, &mp_type_tuple)) {
        mp_obj_tuple_get(binding, &parts, &part);
    }
    mp_buffer_info_t planned;
    if (parts != 5 || !mp_get_buffer(part[3], &planned, MP_BUFFER_READ) || planned.len != sizeof(mt_memory_plan)) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "open", "open() takes the plan this backend's plan() returned");
    }
    mt_memory_plan plan;
    memcpy(&plan, planned.buf, sizeof plan);
    mp_obj_t arena_in = args[ARG_arena].u_obj;
    mp_buffer_info_t arena_buffer = {0};
    if (arena_in != mp_const_none && !mp_get_buffer(arena_in, &arena_buffer, MP_BUFFER_WRITE)) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "open",
            "the arena must be a writable buffer such as a bytearray");
    }
    mtmod_refuse_overlap(part[0], &arena_buffer); /* before anything is written: the image */
    mtmod_refuse_overlap(part[4], &arena_buffer); /* and the caller's buffer it came from */
    mtmod_forget(self);

    mt_train_config *cfg = &self->cfg;
    read_config(part[2], cfg, self->mask, self->channels, "mt_session_init_from_plan");
    mp_buffer_info_t image_buffer, writable;
    mp_get_buffer_raise(part[0], &image_buffer, MP_BUFFER_READ);
    const mp_int_t offset = mp_obj_get_int(part[1]);
    self->image_obj = part[0];
    self->image_offset = offset >= 0 ? (size_t)offset : 0;
    self->image = (const uint8_t *)image_buffer.buf + self->image_offset;
    self->image_bytes = plan.image_bytes;
    self->image_writable = mp_get_buffer(part[0], &writable, MP_BUFFER_WRITE);
    if (offset < 0 || (size_t)offset > image_buffer.len || plan.image_bytes > image_buffer.len - (size_t)offset ||
        self->image != plan.image) {
        /* the core reads the image the plan names: it must be the one this object keeps alive */
        mtmod_forget(self);
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "open", "the plan names an image other than its own");
    }
    if (arena_in == mp_const_none) {
        self->arena_block_bytes = plan.total_bytes + MT_ARENA_ALIGN - 1;
        self->arena_block = m_new(uint8_t, self->arena_block_bytes);
        self->arena = (uint8_t *)(((uintptr_t)self->arena_block + MT_ARENA_ALIGN - 1)
            & ~(uintptr_t)(MT_ARENA_ALIGN - 1));
        self->arena_bytes = plan.total_bytes;
    } else {
        uintptr_t start = (uintptr_t)arena_buffer.buf;
        uintptr_t aligned = (start + MT_ARENA_ALIGN - 1) & ~(uintptr_t)(MT_ARENA_ALIGN - 1);
        size_t skipped = (size_t)(aligned - start);
        size_t usable = arena_buffer.len > skipped ? arena_buffer.len - skipped : 0;
        if (usable < plan.total_bytes) {
            mtmod_forget(self);
            mtmod_raise_error(MT_ERR_ARENA_TOO_SMALL, "mt_session_init_from_plan",
                "the arena buffer of %lu bytes holds %lu at %d-byte alignment, the plan needs "
                "%lu (pass bytearray(%lu))", (unsigned long)arena_buffer.len,
                (unsigned long)usable, MT_ARENA_ALIGN, (unsigned long)plan.total_bytes,
                (unsigned long)(plan.total_bytes + MT_ARENA_ALIGN - 1));
        }
        self->arena_obj = arena_in;
        self->arena = (uint8_t *)aligned;
        self->arena_bytes = usable;
    }
    mt_session *session;
    /* zeroes the plan's bytes of the arena itself */
    int status = mt_session_init_from_plan(&session, &plan, cfg, self->arena, self->arena_bytes);
    if (status < 0) {
        fail_open(self, status, "mt_session_init_from_plan");
    }
    self->session = session;
    self->batch_size = cfg->batch_size;
    self->sparse = cfg->loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    self->numeric_errors_before = 0;
    /* rows are written as floats: an int8 input (image version 3) takes the C API or the
     * ctypes backend, never a float row into its bytes */
    mt_tensor_info info;
    for (int32_t position = 0; mt_session_io(session, 0, position, &info) == MT_OK; ++position) {
        if (info.dtype == MT_DTYPE_I8) {
            fail_open(self, MT_ERR_UNSUPPORTED, "mt_session_input");
        }
    }
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_KW(mtmod_open_obj, 2, backend_open);
