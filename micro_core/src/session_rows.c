/*
 * Steps on rows the caller holds: mt_session_train_step_rows(), mt_session_eval_step_rows(),
 * mt_session_infer_rows().
 *
 * A float input tensor's `data` is what ops read and `mutable_data` the arena buffer the
 * session owns (ops/kernel.h). For the call, `data` points at the caller's rows and is set back
 * before returning. Ops read an input through `data` and never write it, and no output is
 * planned over a float input (inputs live across steps: plan_lifetimes.c), so the rows are
 * read where they are and left as they were. What the arena copy protected against is copied
 * instead, with the same result:
 *   - rows overlapping the arena (a view of the session's own buffers, which the step may
 *     write while it still reads the input);
 *   - rows not aligned like an arena buffer (MT_ARENA_ALIGN), which kernels may assume;
 *   - an input the model also returns as an output (mt_session_output() reads the arena);
 *   - an int8 input: its kernels read the arena buffer, which later activations reuse.
 * On the host this saves the copy and the cache lines it takes: MLP 784-128-10 at batch 32
 * copies 100 KB a step (benchmarks/peers.py).
 */
#include <string.h>

#include "microtrain.h"
#include "session.h"

typedef mt_status (*row_step)(mt_session *s, int32_t n, float *loss);

static int is_output(const mt_session *s, uint32_t tensor)
{
    for (uint32_t j = 0; j < s->img.num_outputs; ++j)
        if (mt_image_io(&s->img, 1, j) == tensor) return 1;
    return 0;
}

static mt_status on_rows(mt_session *s, int32_t n, const float *const *inputs, float *loss, row_step step)
{
    if (!mt_session_valid(s)) return MT_ERR_BAD_ARGUMENT;
    if (inputs == NULL) {
        mt_session_note_error(s, MT_ERR_BAD_ARGUMENT, -1, -1);
        return MT_ERR_BAD_ARGUMENT;
    }
    if (n < 1 || n > s->cfg.batch_size) return step(s, n, loss); /* refuses n; reads no row */
    for (uint32_t k = 0; k < s->img.num_inputs; ++k) {
        if (inputs[k] == NULL) continue; /* the session's own buffer */
        const uint32_t id = mt_image_io(&s->img, 0, k);
        mt_tensor_rt *t = &s->tensors[id];
        const size_t bytes = (size_t)n * t->count * (t->dtype == MT_DTYPE_I8 ? 1u : 4u);
        if (t->dtype != MT_DTYPE_F32 || (uintptr_t)inputs[k] % MT_ARENA_ALIGN != 0 ||
            mt_in_arena(s, inputs[k], bytes) || is_output(s, id))
            memmove(t->mutable_data, inputs[k], bytes);
        else
            t->data = inputs[k];
    }
    const mt_status st = step(s, n, loss);
    for (uint32_t k = 0; k < s->img.num_inputs; ++k) {
        mt_tensor_rt *t = &s->tensors[mt_image_io(&s->img, 0, k)];
        t->data = t->mutable_data;
    }
    return st;
}

mt_status mt_session_train_step_rows(mt_session *s, int32_t n, const float *const *inputs, float *loss)
{
    return on_rows(s, n, inputs, loss, mt_session_train_step);
}

mt_status mt_session_eval_step_rows(mt_session *s, int32_t n, const float *const *inputs, float *loss)
{
    return on_rows(s, n, inputs, loss, mt_session_eval_step);
}

static mt_status infer_step(mt_session *s, int32_t n, float *loss)
{
    (void)loss;
    return mt_session_infer(s, n);
}

mt_status mt_session_infer_rows(mt_session *s, int32_t n, const float *const *inputs)
{
    return on_rows(s, n, inputs, NULL, infer_step);
}
