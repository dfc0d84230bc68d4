/*
 * Session: its buffers and the steps (plan and init: session_init.c).
 * A train step reads like the algorithm:
 *     zero_grad → forward → loss (+ its gradient) → backward → optimizer update
 * Every check on caller data happens before anything is written, so a failed
 * call leaves the session as it was, but for the record of what failed that
 * mt_session_last_error() reads (step_failed()).
 */
#include <string.h>

#include "losses.h"
#include "microtrain.h"
#include "mt_math.h"
#include "ops/ops.h"
#include "ops/quant_grad.h"
#include "optimizers.h"
#include "plan_graph.h"
#include "session.h"

void mt_train_config_init(mt_train_config *cfg)
{
    if (cfg == NULL) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->optimizer = MT_OPTIMIZER_SGD;
    cfg->loss = MT_LOSS_MSE;
    cfg->reduction = MT_REDUCTION_MEAN;
    cfg->batch_size = 1;
    cfg->num_trainable_ops = -1;
    cfg->learning_rate = 0.01f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->epsilon = 1e-8f;
    cfg->momentum = 0.0f;
    cfg->weight_decay = 0.0f;
}

void mt_session_note_error(mt_session *s, mt_status st, int32_t op, int32_t tensor)
{
    if (!mt_session_valid(s)) return;
    const int32_t type = (op >= 0 && (uint32_t)op < s->img.num_ops) ? s->ops[op].type : 0;
    mt_fail_at(&s->last_error, st, op, type, tensor);
}

/* A step call's failure: noted for mt_session_last_error(), then returned. */
static mt_status step_failed(mt_session *s, mt_status st, int32_t op, int32_t tensor)
{
    mt_session_note_error(s, st, op, tensor);
    return st;
}

/* The body of a getter that copies one value out of the session: MT_ERR_BAD_ARGUMENT for an
 * invalid session or a NULL out, else *out = value and MT_OK. */
#define MT_SESSION_GETTER(s, out, value)                                                      \
    do {                                                                                       \
        if (!mt_session_valid(s) || (out) == NULL) return MT_ERR_BAD_ARGUMENT;                 \
        *(out) = (value);                                                                      \
        return MT_OK;                                                                          \
    } while (0)

mt_status mt_session_last_error(const mt_session *s, mt_error_detail *detail)
{
    MT_SESSION_GETTER(s, detail, s->last_error);
}

mt_status mt_session_plan(const mt_session *s, mt_memory_plan *plan)
{
    MT_SESSION_GETTER(s, plan, s->plan);
}

mt_status mt_session_input(mt_session *s, int32_t position, float **data, int32_t *count)
{
    if (!mt_session_valid(s) || data == NULL || count == NULL) return MT_ERR_BAD_ARGUMENT;
    if (position < 0 || (uint32_t)position >= s->img.num_inputs) return MT_ERR_BAD_ARGUMENT;
    mt_tensor_rt *t = &s->tensors[mt_image_io(&s->img, 0, (uint32_t)position)];
    *data = t->mutable_data;
    *count = (int32_t)(t->count * (uint32_t)s->cfg.batch_size);
    return MT_OK;
}

mt_status mt_session_output(const mt_session *s, int32_t position, const float **data,
                            int32_t *count)
{
    if (!mt_session_valid(s) || data == NULL || count == NULL) return MT_ERR_BAD_ARGUMENT;
    if (position < 0 || (uint32_t)position >= s->img.num_outputs) return MT_ERR_BAD_ARGUMENT;
    const mt_tensor_rt *t = &s->tensors[mt_image_io(&s->img, 1, (uint32_t)position)];
    *data = t->data;
    *count = (int32_t)(t->count * (uint32_t)s->cfg.batch_size);
    return MT_OK;
}

mt_status mt_session_io(const mt_session *s, int32_t is_output, int32_t position, mt_tensor_info *info)
{
    if (!mt_session_valid(s) || info == NULL || (is_output != 0 && is_output != 1) || position < 0)
        return MT_ERR_BAD_ARGUMENT;
    if ((uint32_t)position >= (is_output ? s->img.num_outputs : s->img.num_inputs)) return MT_ERR_BAD_ARGUMENT;
    return mt_image_tensor_info(&s->img, mt_image_io(&s->img, is_output, (uint32_t)position), info);
}

mt_status mt_session_target(mt_session *s, void **data, int32_t *bytes)
{
    if (!mt_session_valid(s) || data == NULL || bytes == NULL) return MT_ERR_BAD_ARGUMENT;
    *data = s->target;
    *bytes = (int32_t)s->target_bytes;
    return MT_OK;
}

/* ---- the step, in pieces ---- */

#ifdef MT_OP_PROFILE
/* Cost benchmarks only (boards/app's microtrain_bench_profile, benchmarks/arm_ops.py): the
 * firmware defines this, and an instruction counter attributes what runs between two calls
 * to the region named. Region 0 is the rest of the step; op o's forward is 1 + 3·o, its
 * backward 2 + 3·o, the optimizer updates after it 3 + 3·o. Other builds compile nothing. */
void mt_op_profile_mark(uint32_t region);
#define PROFILE(region) mt_op_profile_mark(region)
#else
#define PROFILE(region) ((void)0)
#endif

/* with_loss: the loss follows, and where it is softmax + cross-entropy it computes the
 * softmax's output itself (mt_loss_softmax_cce_f32, the same bits), so that op is skipped */
static void forward(mt_session *s, uint32_t n, int with_loss)
{
    const int32_t skipped = with_loss && s->fusion == MT_FUSION_SOFTMAX_CCE ? s->fused_op : -1;
    for (uint32_t o = 0; o < s->img.num_ops; ++o) {
        const mt_op_desc *op = &s->ops[o];
        /* fused into the next op, which computes its output as it reads it (planner.c); that
         * op's forward finds it at op - 1 in this table */
        if ((op->flags & MT_OPF_FUSED_INTO_NEXT) || (int32_t)o == skipped) continue;
        PROFILE(1u + 3u * o);
        mt_op_kernel_for(op->type)->forward(op, s->tensors, n, s->scratch);
        PROFILE(0u);
    }
}

/* Loss of rows 0..n-1, reduced as configured; with with_grad, also the gradient of
 * the *summed* loss into the output's (or, when fused, the logits') gradient buffer,
 * which the caller has zeroed. The MEAN's 1/rows is applied at the optimizer step,
 * over every row accumulated, so k accumulated batches equal one batch of k·n. */
static mt_status loss(mt_session *s, uint32_t n, int with_grad, float *value)
{
    const mt_tensor_rt *out = &s->tensors[s->output_tensor];
    const int sparse = s->cfg.loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    mt_status st;
    if (s->fusion != MT_FUSION_NONE) {
        const mt_tensor_rt *z = &s->tensors[s->ops[s->fused_op].inputs[0]];
        float *dz = with_grad ? z->grad : NULL;
        if (s->fusion == MT_FUSION_SOFTMAX_CCE)
            st = mt_loss_softmax_cce_f32(sparse, MT_REDUCTION_SUM, z->data, out->mutable_data, s->target, dz,
                                         n, out->count, value);
        else
            st = mt_loss_sigmoid_bce_f32(MT_REDUCTION_SUM, z->data, out->data,
                                         (const float *)s->target, dz, n, out->count, value);
    } else {
        st = mt_loss_f32(s->cfg.loss, MT_REDUCTION_SUM, out->data, s->target,
                         with_grad ? out->grad : NULL, n, out->count, value);
    }
    /* the same division losses.c does for MEAN, so the reported value is unchanged */
    if (st == MT_OK && s->cfg.reduction == MT_REDUCTION_MEAN) *value = *value / (float)n;
    return st;
}

/* Zero the gradient rows whose first writer is `at` (an op index, or MT_AT_LOSS). Weight
 * gradients (fused updates) are zeroed whole; activation gradients for the n valid rows.
 * A weight (input 1) of a writer whose kernel zeroes it itself is only marked grad_fresh. */
static void zero_grads_written_first_by(mt_session *s, const uint16_t *tensors, int count, uint16_t at,
                                        uint32_t n, int writer_zeroes_weight)
{
    for (int k = 0; k < count; ++k) {
        if (tensors[k] == MT_NO_TENSOR) continue;
        mt_tensor_rt *t = &s->tensors[tensors[k]];
        if (t->grad == NULL || t->grad_zero_at != at || t->tiled) continue; /* a tile: written whole */
        if (writer_zeroes_weight && k == 1 && (t->flags & MT_TENSOR_CONST)) {
            t->grad_fresh = 1;
            continue;
        }
        const size_t elements = (t->flags & MT_TENSOR_CONST) ? t->count
                                : (size_t)n * (t->grad_broadcast ? mt_last_dim(t) : t->count);
        mt_kernel_grad_clear_f32(t->grad, elements); /* many floats a store on the FPU cores */
    }
}

/* The β powers of the next optimizer step: β^(t+1) = β^t · β, in double. begin_update()
 * stores exactly these, so a check made with them sees the bits the update will use. */
static void next_powers(const mt_session *s, double *beta1_power, double *beta2_power)
{
    *beta1_power = s->beta1_power * (double)s->cfg.beta1;
    *beta2_power = s->beta2_power * (double)s->cfg.beta2;
}

/* Advance the step counter and Adam's bias-correction powers; called once per step, just
 * before its first update is applied. The counter saturates: no run takes 2^63 steps, but a
 * checkpoint may claim INT64_MAX, and its increment must not overflow (undefined in C). */
static void begin_update(mt_session *s)
{
    double beta1_power, beta2_power;
    next_powers(s, &beta1_power, &beta2_power);
    if (s->step < INT64_MAX) s->step += 1;
    s->beta1_power = beta1_power;
    s->beta2_power = beta2_power;
}

/* A block of a trained weight to update, its pointers resolved once: elements [first,
 * first + count) of the weight, of its optimizer state and reference, and their gradient. */
typedef struct update_block {
    float *w;         /* the arena's copy of the weights */
    const float *g;   /* their gradient (t->grad, or a tile's) */
    float *m, *v;     /* optimizer state: SGD's momentum in m, Adam's m and v; NULL when none */
    const float *ref; /* the proximal term's reference, NULL when the term is off */
    size_t count;
} update_block;

/* Elements [first, first + count) of the weight (and reference), whose optimizer state is at
 * [state_first, ...) of each array: the same place for a whole weight, the runs of a sparse
 * update's part back to back (session.h, mt_weight_part). */
static void block_of(const mt_session *s, mt_tensor_rt *t, size_t first, size_t state_first, size_t count,
                     const float *grad, update_block *b)
{
    const float *ref = mt_reference_of(s, t);
    const int adam = s->cfg.optimizer != MT_OPTIMIZER_SGD;
    b->w = t->mutable_data + first;
    b->g = grad;
    b->m = t->opt_state ? t->opt_state + state_first : NULL;
    b->v = t->opt_state && adam ? t->opt_state + mt_part_elements(mt_weight_part_of(s, t)) + state_first : NULL;
    b->ref = ref ? ref + first : NULL;
    b->count = count;
}

/* The numeric guard: 1 when the block's gradient is finite and its update at the given β
 * powers would leave every weight and optimizer state element finite. Writes nothing. The
 * guard and the update are the build's column's (select/kernels.h): vectors on x86-64 and
 * Helium. Each element's update depends on that element alone (and on per-step constants),
 * so a block's answer is the AND of its elements' and a tensor's the AND of its blocks'. */
static int update_is_finite(const mt_session *s, const update_block *b, float grad_scale, double beta1_power,
                            double beta2_power)
{
    const mt_train_config *c = &s->cfg;
    const mt_proximal prox = {b->ref, c->proximal_mu};
    if (c->optimizer == MT_OPTIMIZER_SGD)
        return mt_kernel_sgd_update_is_finite_f32(b->w, b->g, b->m, b->count, s->learning_rate, c->momentum,
                                                  c->weight_decay, grad_scale, prox);
    return mt_kernel_adam_update_is_finite_f32(b->w, b->g, b->m, b->v, b->count, s->learning_rate, c->beta1,
                                               c->beta2, c->epsilon, c->weight_decay,
                                               c->optimizer == MT_OPTIMIZER_ADAMW, beta1_power, beta2_power,
                                               grad_scale, prox);
}

/* Apply the block's update at the session's β powers (begin_update() has run for this step). */
static void apply_update(mt_session *s, const update_block *b, float grad_scale)
{
    const mt_train_config *c = &s->cfg;
    const mt_proximal prox = {b->ref, c->proximal_mu};
    if (c->optimizer == MT_OPTIMIZER_SGD)
        mt_kernel_sgd_update_f32(b->w, b->g, b->m, b->count, s->learning_rate, c->momentum, c->weight_decay,
                                 grad_scale, prox);
    else
        mt_kernel_adam_update_f32(b->w, b->g, b->m, b->v, b->count, s->learning_rate, c->beta1, c->beta2,
                                  c->epsilon, c->weight_decay, c->optimizer == MT_OPTIMIZER_ADAMW,
                                  s->beta1_power, s->beta2_power, grad_scale, prox);
}

/* A trained int8 weight or int32 bias (an int8 layer trained in place) takes the QAS update
 * (ops/qas.c; the planner allowed SGD alone): input k of op o. */
static void qas_view(const mt_session *s, uint32_t o, int k, mt_tensor_rt *t, mt_qas_tensor *v)
{
    mt_qas_tensor_of(&s->img, &s->ops[o], k, t, t->grad, s->cfg.momentum, v);
}

/* ... rows first .. first + rows of its weight (input 1 of a Conv2D or FullyConnected, whose
 * rows are its output channels), the gradient the tile t->grad holds */
static void qas_rows(const mt_session *s, uint32_t o, mt_tensor_rt *t, uint32_t first, uint32_t rows,
                     mt_qas_tensor *v)
{
    qas_view(s, o, 1, t, v);
    const size_t start = (size_t)first * v->inner;
    v->q = (int8_t *)v->q + start;
    v->buf = v->buf ? v->buf + start : NULL;
    v->master = v->master ? v->master + start : NULL;
    v->scale += first;
    v->N = (size_t)rows * v->inner;
    v->channels = rows;
}

/* The update of trained tensor t, input k of op o, from its whole-layout gradient t->grad:
 * check_only 1 answers whether the update is finite (update_is_finite, at the given β powers),
 * writing nothing; 0 applies it and answers 1. A float weight is updated over the runs of its
 * trained part (all of it for a whole weight); each element's update depends on that element
 * alone, so run by run is element by element the whole tensor's update. An int8 weight or int32
 * bias (an int8 layer trained in place) takes the QAS update over the runs of its part
 * (ops/qas.c, mt_qas_sgd_update_runs). */
static int update_part(mt_session *s, uint32_t o, int k, mt_tensor_rt *t, float grad_scale, double beta1_power,
                       double beta2_power, int check_only)
{
    const mt_weight_part p = mt_weight_part_of(s, t);
    if (t->dtype != MT_DTYPE_F32) {
        mt_qas_tensor v;
        qas_view(s, o, k, t, &v);
        return mt_qas_sgd_update_runs(&v, p.blocks, p.len, p.stride, s->learning_rate, s->cfg.momentum, grad_scale,
                                      check_only);
    }
    for (uint32_t j = 0; j < p.blocks; ++j) {
        update_block b;
        const size_t first = (size_t)j * p.stride;
        block_of(s, t, first, (size_t)j * p.len, p.len, t->grad + first, &b);
        if (!check_only) apply_update(s, &b, grad_scale);
        else if (!update_is_finite(s, &b, grad_scale, beta1_power, beta2_power)) return 0;
    }
    return 1;
}

/* The scale that turns summed gradients into the configured reduction. */
static float grad_scale_for(const mt_session *s, int64_t rows)
{
    return s->cfg.reduction == MT_REDUCTION_MEAN ? 1.0f / (float)rows : 1.0f;
}

/* An op reading one tensor through two inputs (x + x) updates it once. */
static int repeats_earlier_input(const mt_op_desc *op, int k)
{
    for (int j = 0; j < k; ++j)
        if (op->inputs[j] == op->inputs[k]) return 1;
    return 0;
}

/*
 * The update of trained weight t, input 1 of op o, in tiles (t->tiled; plan_lifetimes.c):
 * t->grad holds one tile of R output rows, and the op's backward has computed everything but
 * t's gradient (dx from the old weights, the bias's gradient). Each tile's gradient is the
 * elements' sums of the whole gradient, in their order, so each block's guard answer and
 * update are the whole tensor's, block by block. The guard keeps its whole-tensor meaning:
 * every tile is computed and checked first, then (all finite) computed again and applied,
 * so a refused update changes none of t's elements, as without tiles. A tensor of one tile
 * is never tiled: the planner keeps its gradient whole.
 */
static mt_status update_in_tiles(mt_session *s, uint32_t o, mt_tensor_rt *t, uint32_t n, float grad_scale,
                                 double beta1_power, double beta2_power, int *begun)
{
    const mt_op_desc *op = &s->ops[o];
    const mt_weight_tiling *tiling = mt_weight_tiling_for(op->type);
    const uint32_t row = t->count / t->dims[0];
    const uint32_t rows = mt_part_elements(mt_weight_part_of(s, t)) / row; /* a sparse update: its first k */
    const uint32_t tile_rows = mt_weight_tile_rows(&s->img, op, (uint32_t)s->cfg.batch_size, rows);
    for (int pass = 0; pass < 2; ++pass) { /* 0: guard every tile; 1: apply every tile */
        for (uint32_t first = 0; first < rows; first += tile_rows) {
            const uint32_t r = rows - first < tile_rows ? rows - first : tile_rows;
            update_block b;
            block_of(s, t, (size_t)first * row, (size_t)first * row, (size_t)r * row, t->grad, &b);
            tiling->grad_rows(op, s->tensors, n, first, r, t->grad);
            mt_qas_tensor v; /* an int8 layer trained in place: rows first .. first + r */
            if (t->dtype != MT_DTYPE_F32) qas_rows(s, o, t, first, r, &v);
            const int finite = t->dtype != MT_DTYPE_F32
                                   ? mt_qas_sgd_update_is_finite(&v, s->learning_rate, s->cfg.momentum, grad_scale)
                                   : update_is_finite(s, &b, grad_scale, beta1_power, beta2_power);
            if (pass == 0 && !finite) {
                s->numeric_errors += 1; /* stop before it: none of t's elements changed */
                return step_failed(s, MT_ERR_NUMERIC, (int32_t)o, (int32_t)op->inputs[1]);
            }
            if (pass == 1 && t->dtype != MT_DTYPE_F32) mt_qas_sgd_update(&v, s->learning_rate, s->cfg.momentum, grad_scale);
            else if (pass == 1) apply_update(s, &b, grad_scale);
        }
        if (pass == 0 && !*begun) begin_update(s), *begun = 1;
    }
    return MT_OK;
}

/* Backward from the last op down to the first trained one; ops whose outputs carry
 * no gradient (nothing trained upstream) are skipped, as is the op fused into the loss.
 * With fused updates, a weight is updated as soon as its last gradient term is added:
 * its op's backward has already used the old value for dx. Each update is checked just
 * before it (guard_gradients = 0): a refused one stops the step there; the counters advance
 * with the step's first applied update, so a step refused before any update changes none. */
static mt_status backward(mt_session *s, uint32_t n, float grad_scale)
{
    int begun = 0;
    double beta1_power, beta2_power;
    next_powers(s, &beta1_power, &beta2_power);
    for (uint32_t o = s->img.num_ops; o-- > (uint32_t)s->plan.first_trained_op;) {
        const mt_op_desc *op = &s->ops[o];
        if ((int32_t)o == s->fused_op || s->tensors[op->outputs[0]].grad == NULL) continue;
        zero_grads_written_first_by(s, op->inputs, op->num_inputs, (uint16_t)o, n,
                                    (mt_op_kernel_for(op->type)->traits & MT_KERNEL_ZEROES_WEIGHT_GRAD) != 0);
        zero_grads_written_first_by(s, op->outputs, op->num_outputs, (uint16_t)o, n, 0);
        PROFILE(2u + 3u * o);
        mt_op_kernel_for(op->type)->backward(op, s->tensors, n, s->scratch);
        PROFILE(0u);
        if (!s->plan.fused_update) continue;
        for (int k = 0; k < op->num_inputs; ++k) {
            if (op->inputs[k] == MT_NO_TENSOR || repeats_earlier_input(op, k)) continue;
            mt_tensor_rt *t = &s->tensors[op->inputs[k]];
            if (t->update_after != o) continue;
            if (t->tiled) {
                PROFILE(3u + 3u * o);
                const mt_status st = update_in_tiles(s, o, t, n, grad_scale, beta1_power, beta2_power, &begun);
                PROFILE(0u);
                if (st != MT_OK) return st;
                continue;
            }
            if (!update_part(s, o, k, t, grad_scale, beta1_power, beta2_power, 1)) { /* stop before it */
                s->numeric_errors += 1;
                return step_failed(s, MT_ERR_NUMERIC, (int32_t)o, (int32_t)op->inputs[k]);
            }
            if (!begun) begin_update(s), begun = 1;
            PROFILE(3u + 3u * o);
            update_part(s, o, k, t, grad_scale, beta1_power, beta2_power, 0);
            PROFILE(0u);
        }
    }
    return MT_OK;
}

static mt_status check_rows(const mt_session *s, int32_t n)
{
    if (!mt_session_valid(s)) return MT_ERR_BAD_ARGUMENT;
    if (n < 1 || n > s->cfg.batch_size) return MT_ERR_BAD_ARGUMENT;
    return MT_OK;
}

/* Forward, then the loss with its gradient; weight gradients and weights are not touched
 * yet, so a bad label or a non-finite loss leaves them as they were. Both are noted as
 * concerning output 0, the tensor the loss reads. */
static mt_status forward_and_loss(mt_session *s, uint32_t n, float *loss_out)
{
    float value;
    mt_status st;
    const uint16_t at_loss[2] = {(uint16_t)s->output_tensor,
                                 s->fused_op >= 0 ? s->ops[s->fused_op].inputs[0] : MT_NO_TENSOR};
    forward(s, n, 1);
    zero_grads_written_first_by(s, at_loss, 2, MT_AT_LOSS, n, 0);
    if ((st = loss(s, n, 1, &value)) != MT_OK) return step_failed(s, st, -1, (int32_t)s->output_tensor);
    if (loss_out) *loss_out = value;
    if (mt_isfinitef(value)) return MT_OK;
    s->numeric_errors += 1;
    return step_failed(s, MT_ERR_NUMERIC, -1, (int32_t)s->output_tensor);
}

mt_status mt_session_zero_grad(mt_session *s)
{
    if (!mt_session_valid(s)) return MT_ERR_BAD_ARGUMENT;
    if (s->plan.fused_update) return step_failed(s, MT_ERR_STATE, -1, -1);
    for (int32_t k = 0; k < s->num_trained; ++k) {
        mt_tensor_rt *t = &s->tensors[s->trained[k]];
        memset(t->grad, 0, t->count * sizeof(float));
    }
    s->accumulated_rows = 0;
    return MT_OK;
}

mt_status mt_session_accumulate(mt_session *s, int32_t n, float *loss_out)
{
    mt_status st = check_rows(s, n);
    if (st != MT_OK) return step_failed(s, st, -1, -1);
    if (s->num_trained == 0 || s->plan.fused_update) return step_failed(s, MT_ERR_STATE, -1, -1);
    if ((st = forward_and_loss(s, (uint32_t)n, loss_out)) != MT_OK) return st;
    backward(s, (uint32_t)n, 1.0f); /* no updates in this mode: nothing to refuse here */
    s->accumulated_rows += n;
    return MT_OK;
}

mt_status mt_session_optimizer_step(mt_session *s)
{
    if (!mt_session_valid(s)) return MT_ERR_BAD_ARGUMENT;
    if (s->num_trained == 0 || s->accumulated_rows == 0 || s->plan.fused_update) return MT_ERR_STATE;
    const float grad_scale = grad_scale_for(s, s->accumulated_rows);
    double beta1_power, beta2_power;
    next_powers(s, &beta1_power, &beta2_power);
    for (int32_t k = 0; k < s->num_trained; ++k) { /* all or nothing: every update checked first */
        mt_tensor_rt *t = &s->tensors[s->trained[k]];
        int input = 0;
        const int32_t o = mt_reader_of(s, s->trained[k], &input);
        if (!update_part(s, (uint32_t)o, input, t, grad_scale, beta1_power, beta2_power, 1)) {
            s->numeric_errors += 1; /* refused: weights, state and counters as they were */
            return step_failed(s, MT_ERR_NUMERIC, o, (int32_t)s->trained[k]);
        }
    }
    begin_update(s);
    for (int32_t k = 0; k < s->num_trained; ++k) {
        int input = 0;
        const int32_t o = mt_reader_of(s, s->trained[k], &input);
        update_part(s, (uint32_t)o, input, &s->tensors[s->trained[k]], grad_scale, beta1_power, beta2_power, 0);
    }
    return MT_OK;
}

/* Failures are noted where they happen: forward_and_loss() (a bad label, a non-finite loss:
 * output 0), backward() and mt_session_optimizer_step() (the op and weight whose gradient or
 * update is not finite). */
mt_status mt_session_train_step(mt_session *s, int32_t n, float *loss_out)
{
    mt_status st = check_rows(s, n);
    if (st != MT_OK) return step_failed(s, st, -1, -1);
    if (s->num_trained == 0) return step_failed(s, MT_ERR_STATE, -1, -1);
    if (!s->plan.fused_update) {
        /* accumulate() checks the loss before touching gradients; a failed step leaves
         * zero gradients and unchanged weights */
        mt_session_zero_grad(s);
        if ((st = mt_session_accumulate(s, n, loss_out)) != MT_OK) return st;
        return mt_session_optimizer_step(s);
    }
    if ((st = forward_and_loss(s, (uint32_t)n, loss_out)) != MT_OK) return st;
    return backward(s, (uint32_t)n, grad_scale_for(s, n)); /* begin_update() at the first update */
}

mt_status mt_session_eval_step(mt_session *s, int32_t n, float *loss_out)
{
    mt_status st = check_rows(s, n);
    if (st != MT_OK) return step_failed(s, st, -1, -1);
    float value;
    forward(s, (uint32_t)n, 1);
    if ((st = loss(s, (uint32_t)n, 0, &value)) != MT_OK) return step_failed(s, st, -1, (int32_t)s->output_tensor);
    if (loss_out) *loss_out = value;
    return mt_isfinitef(value) ? MT_OK : step_failed(s, MT_ERR_NUMERIC, -1, (int32_t)s->output_tensor);
}

mt_status mt_session_infer(mt_session *s, int32_t n)
{
    mt_status st = check_rows(s, n);
    if (st != MT_OK) return step_failed(s, st, -1, -1);
    forward(s, (uint32_t)n, 0);
    return MT_OK;
}

/* ---- hyper-parameters, counters, weights ---- */

mt_status mt_session_set_reference(mt_session *s)
{
    if (!mt_session_valid(s)) return MT_ERR_BAD_ARGUMENT;
    if (s->cfg.proximal_mu <= 0.0f) return MT_ERR_STATE;
    for (int32_t k = 0; k < s->num_trained; ++k) {
        const mt_tensor_rt *t = &s->tensors[s->trained[k]];
        memcpy(mt_reference_of(s, t), t->mutable_data, mt_held_elements(t) * sizeof(float));
    }
    return MT_OK;
}

mt_status mt_session_numeric_errors(const mt_session *s, int64_t *count)
{
    MT_SESSION_GETTER(s, count, s->numeric_errors);
}

mt_status mt_session_set_learning_rate(mt_session *s, float learning_rate)
{
    /* 0 is allowed: a linear decay schedule ends there (ONNX Runtime's does) */
    if (!mt_session_valid(s) || !mt_isfinitef(learning_rate) || learning_rate < 0.0f) return MT_ERR_BAD_ARGUMENT;
    s->learning_rate = learning_rate;
    return MT_OK;
}

mt_status mt_session_get_learning_rate(const mt_session *s, float *learning_rate)
{
    MT_SESSION_GETTER(s, learning_rate, s->learning_rate);
}

mt_status mt_session_get_base_learning_rate(const mt_session *s, float *learning_rate)
{
    MT_SESSION_GETTER(s, learning_rate, s->base_learning_rate);
}

mt_status mt_session_counters(const mt_session *s, int64_t *step, int64_t *epoch)
{
    if (!mt_session_valid(s)) return MT_ERR_BAD_ARGUMENT;
    if (step) *step = s->step;
    if (epoch) *epoch = s->epoch;
    return MT_OK;
}

mt_status mt_session_set_epoch(mt_session *s, int64_t epoch)
{
    if (!mt_session_valid(s) || epoch < 0) return MT_ERR_BAD_ARGUMENT;
    s->epoch = epoch;
    return MT_OK;
}

mt_status mt_session_param_count(const mt_session *s, int32_t *count)
{
    MT_SESSION_GETTER(s, count, s->num_params);
}
