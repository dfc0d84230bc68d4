/*
 * backend.h: what the files of _microtrain share; modmicrotrain.c says what the module does
 * and which file holds what. Functions and objects used across files are named mtmod_...
 * (everything else is static), so that they cannot meet another user module's names in a
 * firmware's one namespace. Each is described where it is defined.
 */
#ifndef MICROTRAIN_BACKEND_H
#define MICROTRAIN_BACKEND_H

#include <stdint.h>
#include <string.h>

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
    const uint8_t *image;    /* 4-aligned image bytes: in image_obj, or in image_block */
    size_t image_bytes;
    mp_obj_t image_obj;      /* the plan's image (the caller's object read in place, or the
                                plan's aligned bytearray copy), kept alive; or NULL */
    size_t image_offset;     /* where image starts in image_obj's buffer */
    uint8_t *image_block;    /* the copy write_param moved the session onto, or NULL */
    size_t image_block_bytes;
    bool image_writable;     /* write_param may change frozen weights in the image */
    uint8_t *arena;          /* MT_ARENA_ALIGN-aligned */
    size_t arena_bytes;
    mp_obj_t arena_obj;      /* the caller's arena buffer, or NULL */
    uint8_t *arena_block;    /* our arena's heap block, or NULL */
    size_t arena_block_bytes;
    int32_t batch_size;      /* B */
    int32_t sparse;          /* targets are int32 labels */
    int64_t numeric_errors_before; /* a replaced session's count (backend_weights.c) */
    mt_train_config cfg;     /* as opened; trainable_op_mask points at mask, */
    uint8_t mask[MT_MAX_OPS];
    int32_t channels[MT_MAX_OPS]; /* ... trainable_op_channels at channels */
} backend_obj_t;

/* ---- errors (backend_errors.c): MicrotrainError from a failing status */

/* What an error concerns beyond its status: the op (mt_model_diagnose() /
 * mt_session_last_error() name it) and, for a refused step, the loss it reported. */
typedef struct {
    int32_t op_index; /* -1: no op */
    int32_t op_type;
    const float *loss;
} error_extra;

mp_obj_t mtmod_make_error(int status, const char *function, const error_extra *extra,
    vstr_t *detail);
MP_NORETURN void mtmod_raise_error(int status, const char *function, const char *detail, ...);
MP_NORETURN void mtmod_raise_session(mt_session *session, int status, const char *function,
    const float *loss, const char *detail, ...);
void mtmod_check(int status, const char *function);
void mtmod_check_model(int status, const char *function, const void *image, size_t bytes,
    const mt_train_config *cfg);
void mtmod_check_session(mt_session *session, int status, const char *function);
backend_obj_t *mtmod_session_of(mp_obj_t self_in, const char *method);

/* ---- numbers in and out (backend_values.c) */

int32_t mtmod_get_i32(mp_obj_t value, const char *what, const char *function);
bool mtmod_int_in(mp_obj_t value, long long low, long long high, long long *out,
    const char *what, const char *function);
const char *mtmod_repr(mp_obj_t value);
mp_obj_array_t *mtmod_new_array(char typecode, size_t n);
/* The integers a copy takes: int32 values in low..high, and its messages' words: `values`
 * ("labels": "value 3 is a float; labels are integers") and `one` ("an int32 label": "value 3
 * (2**40) does not fit in an int32 label"). */
typedef struct {
    long long low, high;
    const char *values;
    const char *one;
} mtmod_integers;
extern const mtmod_integers mtmod_labels;
size_t mtmod_copy_values(backend_obj_t *self, mp_obj_t values, void *dst, size_t capacity,
    const mtmod_integers *integers, const char *function);

/* ---- open and close (backend_open.c) */

/* The fields of a backend with no session, image or arena (a new one's, a closed one's);
 * frees nothing. */
void mtmod_set_closed(backend_obj_t *self);
/* Frees the heap blocks the backend owns, then mtmod_set_closed(). */
void mtmod_forget(backend_obj_t *self);

/* ---- buffers the caller lends: image and arena (backend_buffers.c) */

void mtmod_refuse_overlap(mp_obj_t image, const mp_buffer_info_t *arena);
void mtmod_check_lent(backend_obj_t *self, const char *method);
bool mtmod_lent_moved(backend_obj_t *self);

/* ---- state snapshots (backend_checkpoints.c) */

/* An in-memory checkpoint of the session's state (weights, optimizer state, counters, rate). */
typedef struct {
    uint8_t *data;
    size_t bytes, used;
} snapshot;

void mtmod_take_snapshot(backend_obj_t *self, snapshot *saved, const char *why);
mt_status mtmod_read_snapshot(void *user, size_t offset, void *data, size_t bytes);

/* ---- the methods of Backend, for the table in modmicrotrain.c */

MP_DECLARE_CONST_FUN_OBJ_2(mtmod_describe_obj);
MP_DECLARE_CONST_FUN_OBJ_3(mtmod_plan_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_close_obj);
MP_DECLARE_CONST_FUN_OBJ_KW(mtmod_open_obj);
MP_DECLARE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_write_rows_obj);
MP_DECLARE_CONST_FUN_OBJ_3(mtmod_read_rows_obj);
MP_DECLARE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_train_step_obj);
MP_DECLARE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_accumulate_obj);
MP_DECLARE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_eval_step_obj);
MP_DECLARE_CONST_FUN_OBJ_2(mtmod_infer_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_zero_grad_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_optimizer_step_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_trained_obj);
MP_DECLARE_CONST_FUN_OBJ_2(mtmod_read_param_obj);
MP_DECLARE_CONST_FUN_OBJ_3(mtmod_write_param_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_weights_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_weights_crc32_obj);
MP_DECLARE_CONST_FUN_OBJ_2(mtmod_set_learning_rate_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_get_learning_rate_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_base_learning_rate_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_set_reference_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_counters_obj);
MP_DECLARE_CONST_FUN_OBJ_2(mtmod_set_epoch_obj);
MP_DECLARE_CONST_FUN_OBJ_1(mtmod_numeric_errors_obj);
MP_DECLARE_CONST_FUN_OBJ_3(mtmod_checkpoint_bytes_obj);
MP_DECLARE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_checkpoint_save_obj);
MP_DECLARE_CONST_FUN_OBJ_3(mtmod_checkpoint_load_obj);
MP_DECLARE_CONST_FUN_OBJ_2(mtmod_export_image_obj);

#endif /* MICROTRAIN_BACKEND_H */
