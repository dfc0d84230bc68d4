/*
 * _microtrain's errors (modmicrotrain.c describes the module): a failing core status becomes
 * microtrain.errors.MicrotrainError(status, message, function, op_index, op_type), imported
 * from the frozen package when raised (RuntimeError with the same text if the package is not
 * there). The message is mt_status_str() with the enum name, as the ctypes backend words it,
 * plus what the module knows about the cause.
 */
#include <stdarg.h>

#include "backend.h"

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

/* A MicrotrainError for `status` from C function `function`: the core's status text, then
 * `detail` (may be empty). */
mp_obj_t mtmod_make_error(int status, const char *function, const error_extra *extra,
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
    nlr_raise(mtmod_make_error(status, function, extra, &text));
}

static const error_extra NO_EXTRA = {-1, 0, NULL};

/* MicrotrainError(status, ..., op_index -1): `detail` printf-style, or NULL. */
MP_NORETURN void mtmod_raise_error(int status, const char *function, const char *detail, ...) {
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

void mtmod_check(int status, const char *function) {
    if (status < 0) {
        mtmod_raise_error(status, function, NULL);
    }
}

void mtmod_check_model(int status, const char *function, const void *image, size_t bytes,
    const mt_train_config *cfg) {
    if (status < 0) {
        raise_model(status, function, image, bytes, cfg, NULL);
    }
}

backend_obj_t *mtmod_session_of(mp_obj_t self_in, const char *method) {
    backend_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (self->session == NULL) {
        mtmod_raise_error(MT_ERR_STATE, method, "no session: call open() first");
    }
    mtmod_check_lent(self, method); /* the image and arena still where open() found them */
    return self;
}

/* A failed session call: names the op mt_session_last_error() recorded for `status`, and
 * carries `loss` when not NULL. */
MP_NORETURN void mtmod_raise_session(mt_session *session, int status, const char *function,
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

void mtmod_check_session(mt_session *session, int status, const char *function) {
    if (status < 0) {
        mtmod_raise_session(session, status, function, NULL, NULL);
    }
}
