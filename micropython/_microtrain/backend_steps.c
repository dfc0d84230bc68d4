/*
 * _microtrain's rows and steps (modmicrotrain.c describes the module): write_rows /
 * read_rows between Python sequences and the session's input, target and output buffers;
 * train_step, accumulate, eval_step, infer, zero_grad, optimizer_step. Steps allocate
 * nothing but the boxed float a returned loss needs; `out` avoids that.
 */
#include "backend.h"

/* ------------------------------------------------------------------ rows */

/* write_rows(kind, position, first_row, values) */
static mp_obj_t backend_write_rows(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    backend_obj_t *self = mtmod_session_of(args[0], "write_rows");
    long long kind;
    if (!mtmod_int_in(args[1], 0, 1, &kind, "kind", "write_rows")) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "write_rows", "kind %s is neither KIND_INPUT (0) "
            "nor KIND_TARGET (1)", mtmod_repr(args[1]));
    }
    int32_t position = mtmod_get_i32(args[2], "position", "write_rows");
    long long first_row;
    if (!mtmod_int_in(args[3], 0, self->batch_size - 1, &first_row, "first_row", "write_rows")) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "write_rows", "first_row %s is outside 0..%d",
            mtmod_repr(args[3]), (int)self->batch_size - 1);
    }
    void *data;
    int32_t count;
    const mtmod_integers *integers = NULL; /* float32 rows */
    if (kind == 0) {
        float *x;
        int status = mt_session_input(self->session, position, &x, &count);
        if (status < 0) {
            mtmod_raise_error(status, "mt_session_input", "the model has no input %d",
                (int)position);
        }
        data = x;
    } else {
        if (position != 0) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "write_rows", "targets are position 0, not %d",
                (int)position);
        }
        int32_t bytes;
        mtmod_check(mt_session_target(self->session, &data, &bytes), "mt_session_target");
        count = bytes / 4;
        integers = self->sparse != 0 ? &mtmod_labels : NULL;
    }
    const size_t width = (size_t)count / (size_t)self->batch_size;
    const size_t start = (size_t)first_row * width;
    /* Copy into the buffer from `start`; count what came, and refuse partial rows. */
    size_t written = mtmod_copy_values(self, args[4], (uint8_t *)data + 4 * start,
        (size_t)count - start, integers, "write_rows");
    if (written % width != 0) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "write_rows",
            "%lu values are not whole rows of %lu", (unsigned long)written,
            (unsigned long)width);
    }
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_write_rows_obj, 5, 5, backend_write_rows);

/* read_rows(output, n) -> array('f') of n rows */
static mp_obj_t backend_read_rows(mp_obj_t self_in, mp_obj_t output_in, mp_obj_t n_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "read_rows");
    int32_t output = mtmod_get_i32(output_in, "output", "read_rows");
    const float *data;
    int32_t count;
    int status = mt_session_output(self->session, output, &data, &count);
    if (status < 0) {
        mtmod_raise_error(status, "mt_session_output", "the model has no output %d", (int)output);
    }
    long long n;
    if (!mtmod_int_in(n_in, 0, self->batch_size, &n, "n", "read_rows")) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "read_rows", "n = %s rows, the batch size is %d",
            mtmod_repr(n_in), (int)self->batch_size);
    }
    size_t values = (size_t)n * ((size_t)count / (size_t)self->batch_size);
    mp_obj_array_t *rows = mtmod_new_array('f', values);
    memcpy(rows->items, data, 4 * values);
    return MP_OBJ_FROM_PTR(rows);
}
MP_DEFINE_CONST_FUN_OBJ_3(mtmod_read_rows_obj, backend_read_rows);

/* ------------------------------------------------------------------ steps */

/* Why a step with n rows failed, when this module can tell more than the status. */
static MP_NORETURN void raise_step(backend_obj_t *self, int status, const char *function,
    long long n, float loss) {
    if (status == MT_ERR_NUMERIC) {
        mtmod_raise_session(self->session, status, function, &loss, NULL);
    }
    if (status == MT_ERR_BAD_ARGUMENT && self->sparse) {
        const float *out;
        int32_t count;
        void *target;
        int32_t bytes;
        if (mt_session_output(self->session, 0, &out, &count) == MT_OK
            && mt_session_target(self->session, &target, &bytes) == MT_OK) {
            const int32_t classes = count / self->batch_size;
            for (long long row = 0; row < n; ++row) {
                int32_t label = ((const int32_t *)target)[row];
                if (label < 0 || label >= classes) {
                    mtmod_raise_session(self->session, status, function, NULL,
                        "row %d has label %d; labels are 0..%d", (int)row, (int)label,
                        (int)classes - 1);
                }
            }
        }
    }
    mtmod_raise_session(self->session, status, function, NULL, NULL);
}

/* Where the loss goes: out[0] of an array('f') given as the step's last argument (checked
 * before the step runs, so a bad one changes nothing), or NULL for a returned float. */
static float *loss_slot(size_t n_args, const mp_obj_t *args, const char *function) {
    if (n_args < 3 || args[2] == mp_const_none) {
        return NULL;
    }
    mp_buffer_info_t out;
    if (!mp_get_buffer(args[2], &out, MP_BUFFER_WRITE) || out.typecode != 'f' || out.len < 4) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function, "out must be an array('f') of at least "
            "one element");
    }
    return (float *)out.buf;
}

/* The rows n of a step, 1 to the batch size (a refusal prints the value the script gave). */
static int32_t step_rows(backend_obj_t *self, mp_obj_t n_in, const char *function) {
    long long n;
    if (!mtmod_int_in(n_in, 1, self->batch_size, &n, "n", function)) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function,
            "n = %s rows, a step takes 1 to %d (the batch size)", mtmod_repr(n_in),
            (int)self->batch_size);
    }
    return (int32_t)n;
}

typedef int (*step_fn)(mt_session *s, int32_t n, float *loss);

static mp_obj_t run_step(size_t n_args, const mp_obj_t *args, step_fn step,
    const char *function) {
    backend_obj_t *self = mtmod_session_of(args[0], function);
    int32_t n = step_rows(self, args[1], function);
    float *slot = loss_slot(n_args, args, function);
    float loss = 0.0f;
    int status = step(self->session, n, &loss);
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
MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_train_step_obj, 2, 3, backend_train_step);

static mp_obj_t backend_accumulate(size_t n_args, const mp_obj_t *args) {
    return run_step(n_args, args, accumulate, "mt_session_accumulate");
}
MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_accumulate_obj, 2, 3, backend_accumulate);

static mp_obj_t backend_eval_step(size_t n_args, const mp_obj_t *args) {
    return run_step(n_args, args, eval_step, "mt_session_eval_step");
}
MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(mtmod_eval_step_obj, 2, 3, backend_eval_step);

static mp_obj_t backend_infer(mp_obj_t self_in, mp_obj_t n_in) {
    backend_obj_t *self = mtmod_session_of(self_in, "mt_session_infer");
    int32_t n = step_rows(self, n_in, "mt_session_infer");
    int status = mt_session_infer(self->session, n);
    if (status < 0) {
        raise_step(self, status, "mt_session_infer", n, 0.0f);
    }
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_2(mtmod_infer_obj, backend_infer);

static mp_obj_t backend_zero_grad(mp_obj_t self_in) {
    mt_session *session = mtmod_session_of(self_in, "mt_session_zero_grad")->session;
    mtmod_check_session(session, mt_session_zero_grad(session), "mt_session_zero_grad");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_zero_grad_obj, backend_zero_grad);

static mp_obj_t backend_optimizer_step(mp_obj_t self_in) {
    mt_session *session = mtmod_session_of(self_in, "mt_session_optimizer_step")->session;
    mtmod_check_session(session, mt_session_optimizer_step(session), "mt_session_optimizer_step");
    return mp_const_none;
}
MP_DEFINE_CONST_FUN_OBJ_1(mtmod_optimizer_step_obj, backend_optimizer_step);
