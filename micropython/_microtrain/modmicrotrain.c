/*
 * _microtrain: microtrain's backend interface (py_facade/microtrain/backend/__init__.py) as a
 * MicroPython user C module, over the core linked into the firmware.
 *
 *   import _microtrain
 *   b = _microtrain.Backend()                 # microtrain.backend.loader.load() does this
 *   plan = b.plan(image, config)              # the one validation and plan of the image
 *   b.open(plan, arena=bytearray(plan["total_bytes"] + 15))
 *   b.write_rows(0, 0, 0, x)                  # array('f'), list, memoryview
 *   loss = b.train_step(n)                    # a float (boxed on ports with double floats)
 *   b.train_step(n, out)                      # or into out[0], an array('f'): allocates nothing
 *
 * One Backend object holds one session:
 *
 *   image  read in place when its buffer is read-only and 4-byte aligned (a frozen bytes
 *          object in flash, a ROMFS file's memoryview), else copied once by plan() into a
 *          bytearray the plan holds, at a 16-aligned address inside it: a writable buffer
 *          (bytearray) is copied, so the script may change or grow it;
 *   arena  the caller's writable buffer (aligned inside: pass plan["total_bytes"] + 15 bytes),
 *          or, with arena=None, one heap block allocated per open();
 *   both   referenced from this object, so the garbage collector keeps them while the session
 *          lives; close() lets them go. A bytearray that grows moves: every call checks that
 *          the image read in place and the caller's arena are where and as long as open()
 *          found them, else the session is closed with MT_ERR_STATE; an arena over the image
 *          is refused by open() before it writes anything (backend_buffers.c).
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
 *
 * The files (backend.h declares what they share):
 *   modmicrotrain.c        the Backend type, its method table and the module
 *   backend_open.c         describe, plan, open, close: images, config dicts, arenas
 *   backend_buffers.c      the image and arena a caller lends: copied, checked every call
 *   backend_steps.c        write_rows, read_rows and the steps
 *   backend_weights.c      weights (with the image's copy-on-write), rates and counters
 *   backend_checkpoints.c  state snapshots, checkpoints and export through Python callables
 *   backend_values.c       numbers (range-checked as Python ints) and sequences in,
 *                          array('f') out
 *   backend_errors.c       MicrotrainError from a status, naming the op
 */
#include "backend.h"

/* ------------------------------------------------------------------ the type */

static mp_obj_t backend_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw,
    const mp_obj_t *args) {
    (void)args;
    mp_arg_check_num(n_args, n_kw, 0, 0, false);
    backend_obj_t *self = mp_obj_malloc(backend_obj_t, type);
    mtmod_set_closed(self);
    self->batch_size = 1;
    self->sparse = 0;
    self->numeric_errors_before = 0;
    return MP_OBJ_FROM_PTR(self);
}

/* ------------------------------------------------------------------ tables */

static const mp_rom_map_elem_t backend_locals_table[] = {
    {MP_ROM_QSTR(MP_QSTR_describe), MP_ROM_PTR(&mtmod_describe_obj)},
    {MP_ROM_QSTR(MP_QSTR_plan), MP_ROM_PTR(&mtmod_plan_obj)},
    {MP_ROM_QSTR(MP_QSTR_open), MP_ROM_PTR(&mtmod_open_obj)},
    {MP_ROM_QSTR(MP_QSTR_close), MP_ROM_PTR(&mtmod_close_obj)},
    {MP_ROM_QSTR(MP_QSTR_write_rows), MP_ROM_PTR(&mtmod_write_rows_obj)},
    {MP_ROM_QSTR(MP_QSTR_read_rows), MP_ROM_PTR(&mtmod_read_rows_obj)},
    {MP_ROM_QSTR(MP_QSTR_train_step), MP_ROM_PTR(&mtmod_train_step_obj)},
    {MP_ROM_QSTR(MP_QSTR_accumulate), MP_ROM_PTR(&mtmod_accumulate_obj)},
    {MP_ROM_QSTR(MP_QSTR_zero_grad), MP_ROM_PTR(&mtmod_zero_grad_obj)},
    {MP_ROM_QSTR(MP_QSTR_optimizer_step), MP_ROM_PTR(&mtmod_optimizer_step_obj)},
    {MP_ROM_QSTR(MP_QSTR_eval_step), MP_ROM_PTR(&mtmod_eval_step_obj)},
    {MP_ROM_QSTR(MP_QSTR_infer), MP_ROM_PTR(&mtmod_infer_obj)},
    {MP_ROM_QSTR(MP_QSTR_trained), MP_ROM_PTR(&mtmod_trained_obj)},
    {MP_ROM_QSTR(MP_QSTR_read_param), MP_ROM_PTR(&mtmod_read_param_obj)},
    {MP_ROM_QSTR(MP_QSTR_write_param), MP_ROM_PTR(&mtmod_write_param_obj)},
    {MP_ROM_QSTR(MP_QSTR_weights), MP_ROM_PTR(&mtmod_weights_obj)},
    {MP_ROM_QSTR(MP_QSTR_weights_crc32), MP_ROM_PTR(&mtmod_weights_crc32_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_learning_rate), MP_ROM_PTR(&mtmod_set_learning_rate_obj)},
    {MP_ROM_QSTR(MP_QSTR_get_learning_rate), MP_ROM_PTR(&mtmod_get_learning_rate_obj)},
    {MP_ROM_QSTR(MP_QSTR_base_learning_rate), MP_ROM_PTR(&mtmod_base_learning_rate_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_reference), MP_ROM_PTR(&mtmod_set_reference_obj)},
    {MP_ROM_QSTR(MP_QSTR_counters), MP_ROM_PTR(&mtmod_counters_obj)},
    {MP_ROM_QSTR(MP_QSTR_set_epoch), MP_ROM_PTR(&mtmod_set_epoch_obj)},
    {MP_ROM_QSTR(MP_QSTR_numeric_errors), MP_ROM_PTR(&mtmod_numeric_errors_obj)},
    {MP_ROM_QSTR(MP_QSTR_checkpoint_bytes), MP_ROM_PTR(&mtmod_checkpoint_bytes_obj)},
    {MP_ROM_QSTR(MP_QSTR_checkpoint_save), MP_ROM_PTR(&mtmod_checkpoint_save_obj)},
    {MP_ROM_QSTR(MP_QSTR_checkpoint_load), MP_ROM_PTR(&mtmod_checkpoint_load_obj)},
    {MP_ROM_QSTR(MP_QSTR_export_image), MP_ROM_PTR(&mtmod_export_image_obj)},
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
