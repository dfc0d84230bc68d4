/*
 * The planner: one pass over the model that both sizes and (given an arena)
 * builds a session, so the size mt_plan() reports is by construction the
 * size mt_session_init() uses. Here the analysis and the shared region's layout; the
 * persistent region (the records, trained weights and their state) is plan_persistent.h's.
 *
 * What needs memory:
 *   - an op trains when trainable_op_mask selects it, or else when it is one of
 *     the last num_trainable_ops ops. A weight is *trained* when it is TRAINABLE,
 *     read by a training op and, with biases_only or a channel count of 0
 *     (trainable_op_channels), 1-D; it gets an arena copy, a gradient and optimizer
 *     state. Every other weight is read in place from the image. With a channel count
 *     k, the weight's first k output channels train (plan_sparse.c): optimizer state
 *     for them only, a gradient of their rows only where a tile of them is smaller.
 *   - an activation needs a gradient when it depends on a trained weight
 *     (computed forward over the op list); backward stops at the first
 *     trained op because nothing before it has such a gradient.
 *   - when the loss is fused with the final Softmax/Sigmoid, the model output
 *     needs no gradient: the loss writes the logits' gradient directly.
 *   - frozen int8 layers that no gradient passes through keep nothing for a backward: their
 *     outputs live until their last reader's forward; an int8 model input is consumed by the
 *     step; a pointwise int8 expansion read only by the depthwise after it is streamed into it
 *     (stream_of: a ring of KH rows instead of the whole tensor). Where a gradient passes
 *     through an int8 op (a float layer trained inside an int8 model, ops/quant_grad.h), the
 *     op keeps its int8 input until its backward (backward_reads: the STE mask is recomputed
 *     from it), its output's gradient is f32, and its int8 weight gets its scales decoded (one
 *     f32 a channel, counted as metadata). A gradient that would have to pass through an op
 *     without a backward (CONCATENATION_S8, PAD_S8) is refused (MT_ERR_UNSUPPORTED naming it).
 */
#include <math.h>
#include <string.h>

#include "microtrain.h"
#include "mt_math.h"
#include "optimizers.h"
#include "session.h"
#include "sharing.h"
#include "plan_graph.h"
#include "plan_persistent.h"

static int finite_in(float x, float lo, float hi)
{
    return mt_isfinitef(x) && x >= lo && x < hi;
}

static mt_status check_config(const mt_train_config *cfg)
{
    if (cfg->optimizer < MT_OPTIMIZER_SGD || cfg->optimizer > MT_OPTIMIZER_ADAMW)
        return MT_ERR_BAD_ARGUMENT;
    if (cfg->loss < MT_LOSS_MSE || cfg->loss > MT_LOSS_BINARY_CROSSENTROPY) return MT_ERR_BAD_ARGUMENT;
    if (cfg->reduction != MT_REDUCTION_MEAN && cfg->reduction != MT_REDUCTION_SUM)
        return MT_ERR_BAD_ARGUMENT;
    if (cfg->batch_size < 1 || cfg->batch_size > MT_MAX_BATCH_SIZE) return MT_ERR_BAD_ARGUMENT;
    if (cfg->num_trainable_ops < -1) return MT_ERR_BAD_ARGUMENT;
    if (cfg->biases_only != 0 && cfg->biases_only != 1) return MT_ERR_BAD_ARGUMENT;
    if (cfg->accumulate_gradients != 0 && cfg->accumulate_gradients != 1) return MT_ERR_BAD_ARGUMENT;
    if (cfg->guard_gradients != 0 && cfg->guard_gradients != 1) return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->learning_rate) || cfg->learning_rate <= 0.0f) return MT_ERR_BAD_ARGUMENT;
    if (!finite_in(cfg->beta1, 0.0f, 1.0f) || !finite_in(cfg->beta2, 0.0f, 1.0f))
        return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->epsilon) || cfg->epsilon <= 0.0f) return MT_ERR_BAD_ARGUMENT;
    if (!finite_in(cfg->momentum, 0.0f, 1.0f)) return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->weight_decay) || cfg->weight_decay < 0.0f) return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->proximal_mu) || cfg->proximal_mu < 0.0f) return MT_ERR_BAD_ARGUMENT;
    return MT_OK;
}

/* Does any op read tensor index? */
static int has_consumer(const mt_image *img, uint32_t index)
{
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        for (int i = 0; i < op.num_inputs; ++i)
            if (op.inputs[i] == index) return 1;
    }
    return 0;
}

/* Which final activation, if any, the loss can absorb (softmax+CE → p - y, sigmoid+BCE → p - y). */
static int32_t detect_fusion(const mt_image *img, const mt_train_config *cfg, uint32_t output,
                             int32_t *fused_op)
{
    *fused_op = -1;
    int32_t producer = mt_image_producer(img, output);
    if (producer < 0 || has_consumer(img, output)) return MT_FUSION_NONE;
    mt_op_desc op;
    mt_tensor_desc y;
    mt_image_op(img, (uint32_t)producer, &op);
    mt_image_tensor(img, output, &y);
    if (y.dims[y.ndim - 1] != y.count) return MT_FUSION_NONE; /* one softmax per sample only */
    int32_t fusion = MT_FUSION_NONE;
    if (op.type == MT_OP_SOFTMAX && (cfg->loss == MT_LOSS_CATEGORICAL_CROSSENTROPY ||
                                     cfg->loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY))
        fusion = MT_FUSION_SOFTMAX_CCE;
    if (op.type == MT_OP_SIGMOID && cfg->loss == MT_LOSS_BINARY_CROSSENTROPY)
        fusion = MT_FUSION_SIGMOID_BCE;
    if (fusion != MT_FUSION_NONE) *fused_op = producer;
    return fusion;
}

/* The loss must fit output 0: cross-entropy needs at least two classes, and the
 * sparse form one class vector per sample (its labels are [B]). */
static mt_status check_loss_fits(const mt_train_config *cfg, const mt_tensor_desc *out)
{
    const uint32_t classes = out->dims[out->ndim - 1];
    if (cfg->loss == MT_LOSS_CATEGORICAL_CROSSENTROPY && classes < 2) return MT_ERR_SHAPE;
    if (cfg->loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY && (classes < 2 || out->count != classes))
        return MT_ERR_SHAPE;
    return MT_OK;
}

/* Trained weights, gradient-carrying tensors and the first trained op, forward over the ops. */
static void mark_training(const mt_image *img, const mt_train_config *cfg, graph_facts *f, size_t *max_scratch,
                          int32_t *no_backward)
{
    *no_backward = -1;
    const uint32_t O = img->num_ops;
    uint32_t tail_start = 0; /* the last num_trainable_ops ops, unless a mask chooses */
    if (cfg->num_trainable_ops >= 0)
        tail_start = (uint32_t)cfg->num_trainable_ops >= O ? 0u : O - (uint32_t)cfg->num_trainable_ops;
    memset(&f->trained, 0, sizeof f->trained);
    memset(&f->needs_grad, 0, sizeof f->needs_grad);
    f->first_trained = O;
    *max_scratch = 0;
    for (uint32_t o = 0; o < O; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        const int op_trains = cfg->trainable_op_mask ? cfg->trainable_op_mask[o] != 0 : o >= tail_start;
        int any = 0;
        for (int i = 0; i < op.num_inputs; ++i) {
            if (op.inputs[i] == MT_NO_TENSOR) continue;
            mt_tensor_desc t;
            mt_image_tensor(img, op.inputs[i], &t);
            if (op_trains && (t.flags & MT_TENSOR_TRAINABLE) && mt_plan_op_trains_weight(cfg, o, &t)) {
                bit_set(&f->trained, op.inputs[i]);
                bit_set(&f->needs_grad, op.inputs[i]);
                if (o < f->first_trained) f->first_trained = o;
            }
            any |= bit_get(&f->needs_grad, op.inputs[i]);
        }
        for (int k = 0; k < op.num_outputs; ++k)
            if (any) bit_set(&f->needs_grad, op.outputs[k]);
    }
    f->fusion = detect_fusion(img, cfg, f->output, &f->fused_op);
    if (f->fusion != MT_FUSION_NONE) bit_clear(&f->needs_grad, f->output);
    /* scratch serves backward kernels only (no forward kernel takes any): size it for the
     * ops whose backward runs, so a frozen backbone costs none */
    for (uint32_t o = 0; o < O; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (!mt_plan_backward_runs(f, &op, o)) continue;
        if (mt_op_kernel_for(op.type)->backward == NULL) { /* the last such op: nearest the loss */
            *no_backward = (int32_t)o;
            continue;
        }
        const size_t s = mt_op_kernel_for(op.type)->scratch_bytes(img, &op, (uint32_t)cfg->batch_size);
        if (s > *max_scratch) *max_scratch = s;
    }
}

/* Trained weights updated in tiles with tiles on or off (the first k rows of a sparse update
 * are tiled either way: plan_sparse.c). */
static int32_t tiled_weights(const mt_image *img, graph_facts *f, uint32_t B, int tiles)
{
    const int was = f->tiles;
    int32_t count = 0;
    f->tiles = tiles;
    for (uint32_t i = 0; i < img->num_tensors; ++i) count += mt_plan_weight_tile_bytes(img, f, i, B) != 0;
    f->tiles = was;
    return count;
}

/* One of the layout's tries: the lifetimes planned and placed again with *choice (a flag of
 * f) flipped, kept where the shared region is smaller so (or as small, with tie), else the
 * choice as it was and its placement again (*shared and *order: the first, then the kept).
 * Inlined: called, its frame stood between layout's 9 KB and mt_plan_lifetimes', the deepest
 * stack of a session's start (72 bytes more measured on the M33) */
static inline __attribute__((always_inline)) mt_status try_other(const mt_image *img, graph_facts *f, uint32_t B,
                                                                lifetimes *lt, int *choice, int tie,
                                                                uint64_t *shared, int32_t *order)
{
    const uint64_t first = *shared;
    const int32_t first_order = *order;
    mt_status st;
    *choice = !*choice;
    if ((st = mt_plan_lifetimes(img, f, B, lt)) != MT_OK) return st;
    *shared = mt_share_place(&lt->sh, order);
    if (*shared < first || (tie && *shared == first)) return MT_OK;
    *choice = !*choice; /* as planned first */
    if ((st = mt_plan_lifetimes(img, f, B, lt)) != MT_OK) return st;
    *order = first_order;
    *shared = mt_share_place_in(&lt->sh, *order);
    return MT_OK;
}

/* The streamed pairs whose row kernels keep their constants after the ring (f->consts), else 0 */
static uint32_t row_constants(const mt_image *img, const graph_facts *f)
{
    uint32_t count = 0;
    for (uint32_t o = 0; f->consts && o < img->num_ops; ++o) count += mt_plan_stream_of(img, f, o) != 0;
    return count;
}

/* 1 when some trained weight would be updated in tiles with tiles on only. */
static int tiles_possible(const mt_image *img, graph_facts *f, uint32_t B)
{
    return tiled_weights(img, f, B, 1) > tiled_weights(img, f, B, 0);
}

/* The analysis (configuration, loss, training marks, lifetimes, placement) runs once; then a
 * sizing pass of the persistent region gives the plan, and, given an arena of at least its
 * total_bytes (else MT_ERR_ARENA_TOO_SMALL with nothing written), a build pass writes the
 * session. With a plan given (made by this function for the same image and configuration),
 * the placement takes the order it kept (one greedy pass instead of five), and its lower bound
 * and int8 share, figures no layout reads, are its own. where (if not NULL) receives what a
 * failure concerns: the configuration (-1), output 0's tensor for a loss that does not fit it,
 * a tensor too large for the batch. */
static mt_status layout(const mt_image *img, const mt_train_config *cfg, const mt_memory_plan *given,
                        uint8_t *arena, size_t arena_bytes, mt_memory_plan *plan, mt_session **session,
                        mt_buffer_fn report, void *user, mt_error_detail *where)
{
    mt_status st = check_config(cfg);
    if (st != MT_OK) return mt_fail_at(where, st, -1, 0, -1);
    if ((st = mt_plan_check_channels(img, cfg, where)) != MT_OK) return st;

    const uint32_t T = img->num_tensors, O = img->num_ops, B = (uint32_t)cfg->batch_size;
    graph_facts f;
    f.output = mt_image_io(img, 1, 0);
    f.fused_update = cfg->accumulate_gradients == 0 && cfg->guard_gradients == 0;
    f.channels = cfg->trainable_op_channels;
    f.tiles = 0;
    f.over = 1;
    f.consts = 1;
    mt_tensor_desc out_desc;
    mt_image_tensor(img, f.output, &out_desc);
    if ((st = check_loss_fits(cfg, &out_desc)) != MT_OK) return mt_fail_at(where, st, -1, 0, (int32_t)f.output);
    for (uint32_t i = 0; i < T; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if (!(t.flags & MT_TENSOR_CONST) && (uint64_t)B * t.count > MT_MAX_ELEMENTS)
            return mt_fail_at(where, MT_ERR_SHAPE, -1, 0, (int32_t)i);
    }
    size_t max_scratch;
    int32_t no_backward;
    mark_training(img, cfg, &f, &max_scratch, &no_backward);
    /* a gradient would have to pass through an op without a backward (CONCATENATION_S8,
     * PAD_S8): train only ops after it, or keep the weights before it frozen. Named by
     * mt_model_diagnose() as that op. */
    if (no_backward >= 0) {
        mt_op_desc op;
        mt_image_op(img, (uint32_t)no_backward, &op);
        return mt_fail_at(where, MT_ERR_UNSUPPORTED, no_backward, op.type, -1);
    }
    int32_t qas_op = -1, qas_tensor = -1; /* an int8 layer trained in place that cannot be */
    if ((st = mt_plan_qas_check(img, cfg, &f, &qas_op, &qas_tensor)) != MT_OK) {
        mt_op_desc op;
        if (qas_op >= 0) mt_image_op(img, (uint32_t)qas_op, &op);
        return mt_fail_at(where, st, qas_op, qas_op >= 0 ? op.type : 0, qas_tensor);
    }

    /* Tiles, where the rule allows them, only when they make the shared region smaller: a
     * weight's gradient often shares its bytes with activations dead by its backward (an int8
     * backbone's), and tiles then cost their second dW for nothing. Planned without tiles
     * first, then with them; kept if smaller, else planned again without. A given plan says
     * which it chose (tiled_updates). */
    lifetimes lt;
    int32_t order = given ? given->placement_order : 0;
    uint64_t shared;
    /* a given plan counts the sparse update's tiles, which come without tiles on, too */
    f.tiles = given ? given->tiled_updates > tiled_weights(img, &f, B, 0) : 0;
    f.over = given ? given->over_inputs > 0 : 1;
    f.consts = given ? given->row_constants > 0 : 1;
    if ((st = mt_plan_lifetimes(img, &f, B, &lt)) != MT_OK) return mt_fail_at(where, st, -1, 0, -1);
    shared = given ? mt_share_place_in(&lt.sh, order) : mt_share_place(&lt.sh, &order);
    if (!given && f.fused_update && tiles_possible(img, &f, B) &&
        (st = try_other(img, &f, B, &lt, &f.tiles, 0, &shared, &order)) != MT_OK) /* no smaller: whole gradients */
        return mt_fail_at(where, st, -1, 0, -1);
    /* int8 convolutions over their inputs (mt_plan_over_input) only where the region is
     * smaller so: such a pair is placed as one block, whose gaps the greedy placement may not
     * fill (MLPerf Tiny's VWW, batch 1: 135,984 bytes with them, 126,384 without), and their
     * kernels run a row at a time, so a tie keeps the plain layout (the int8 digits CNN,
     * 28,096 bytes either way: 2.17M instructions a step on the M7 over its inputs) */
    if (!given && shared != UINT64_MAX && mt_plan_over_inputs(img, &lt) &&
        (st = try_other(img, &f, B, &lt, &f.over, 1, &shared, &order)) != MT_OK) /* a tie: the plain layout */
        return mt_fail_at(where, st, -1, 0, -1);
    /* the streamed pairs' row kernels keep their constants after the ring (ops/conv_s8.c: the
     * MobileNetV2 step's 16 pairs made them at each of 11,000 channel groups' rows, 2.0M
     * instructions on the M7) only where the region is no larger so: in a small model the
     * ring's channels' constants are much of the int8 peak (MLPerf Tiny's keyword spotter,
     * batch 1: 26,640 bytes with them, 17,968 without) */
    if (!given && shared != UINT64_MAX && row_constants(img, &f) &&
        (st = try_other(img, &f, B, &lt, &f.consts, 0, &shared, &order)) != MT_OK) /* a tie: kept */
        return mt_fail_at(where, st, -1, 0, -1);
    /* the buffers that share bytes are placed at 32-bit offsets: a plan beyond 4 GiB is not
     * too small an arena but one this planner cannot lay out */
    if (shared == UINT64_MAX) return mt_fail_at(where, given ? MT_ERR_BAD_ARGUMENT : MT_ERR_UNSUPPORTED, -1, 0, -1);

    int32_t num_params = 0, num_trained = 0;
    for (uint32_t i = 0; i < T; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if ((t.flags & MT_TENSOR_CONST) && t.dtype == MT_DTYPE_F32) ++num_params;
        if (bit_get(&f.trained, i)) ++num_trained;
    }

    /* the sizing pass: the persistent region, then the shared region after it */
    mt_memory_plan p;
    records rec;
    const uint16_t end = mt_plan_backward_time(O, 0);
    bump b = {NULL, 0, report, user, MT_OK, end};
    persistent_region(img, cfg, &f, &out_desc, max_scratch, num_params, num_trained, &b, &p, &rec);
    const uint64_t shared_base = b.used;
    for (uint32_t i = 0; i < T && report; ++i) {
        if (lt.data[i] != MT_NO_BUFFER) {
            const mt_share_buffer *d = &lt.sh.buf[lt.data[i]];
            const uint16_t root = mt_share_root(&lt.sh, lt.data[i]);
            int32_t in_place_of = -1;
            for (uint32_t j = 0; j < T && root != lt.data[i]; ++j)
                if (lt.data[j] == root) in_place_of = (int32_t)j;
            /* its own bytes and lifetime (a root's group may extend past both) */
            tell(&b, MT_BUFFER_ACTIVATION, (int32_t)i, shared_base + d->offset, d->own_bytes, d->own_start,
                 d->own_end, in_place_of);
        }
        if (lt.grad[i] != MT_NO_BUFFER) {
            const mt_share_buffer *g = &lt.sh.buf[lt.grad[i]];
            tell(&b, MT_BUFFER_GRADIENT, (int32_t)i, shared_base + g->offset, g->bytes, g->start, g->end, -1);
        }
    }
    if (b.status != MT_OK) return b.status;
    b.used += shared;
    if (b.used > (uint64_t)(size_t)-1) /* cannot exist on this target */
        return mt_fail_at(where, MT_ERR_UNSUPPORTED, -1, 0, -1);
    uint64_t roles = p.metadata_bytes + p.weight_bytes + p.reference_bytes + p.gradient_bytes + p.optimizer_bytes +
                     p.activation_bytes + p.activation_grad_bytes + p.io_bytes + p.scratch_bytes;
    p.total_bytes = (size_t)b.used;
    p.reuse_bytes = (size_t)(roles - b.used);
    p.lower_bound_bytes = given ? given->lower_bound_bytes : (size_t)(shared_base + mt_share_lower_bound(&lt.sh));
    p.int8_activation_bytes = given ? given->int8_activation_bytes : (size_t)mt_plan_int8_peak(img, &lt, B);
    p.over_inputs = (int32_t)mt_plan_over_inputs(img, &lt);
    p.row_constants = (int32_t)row_constants(img, &f);
    p.num_trained_params = num_trained;
    p.first_trained_op = (int32_t)f.first_trained;
    p.fused_update = f.fused_update;
    p.placement_order = order;
    *plan = p;
    if (!arena) return MT_OK;
    if (arena_bytes < p.total_bytes) return MT_ERR_ARENA_TOO_SMALL;

    /* the build pass: the same persistent region, written; gradients, optimizer state and
     * padding rows start at 0 */
    memset(arena, 0, p.total_bytes);
    mt_memory_plan same;
    bump w = {arena, 0, NULL, NULL, MT_OK, end};
    persistent_region(img, cfg, &f, &out_desc, max_scratch, num_params, num_trained, &w, &same, &rec);
    uint8_t *shared_region = arena + shared_base;
    mt_session *s = rec.s;
    mt_tensor_rt *rt = rec.rt;
    mt_op_desc *ops = rec.ops;
    for (uint32_t i = 0; i < T; ++i) {
        if (lt.data[i] != MT_NO_BUFFER) {
            rt[i].mutable_data = (float *)(void *)(shared_region + lt.sh.buf[lt.data[i]].offset);
            rt[i].data = rt[i].mutable_data;
        } else if (!(rt[i].flags & MT_TENSOR_CONST)) {
            rt[i].data = rt[i].mutable_data;
        }
        if (lt.grad[i] != MT_NO_BUFFER) /* past a broadcast's work area */
            rt[i].grad = (float *)(void *)(shared_region + lt.sh.buf[lt.grad[i]].offset) +
                         mt_plan_grad_work_floats(img, &f, i);
    }
    for (uint32_t o = 0; o < O; ++o) {
        mt_image_op(img, o, &ops[o]);
        /* a convolution laid over its input (the lifetimes' MT_OVER_BAND, MT_OVER_SHIFTED; a
         * depthwise streaming its expansion runs as it does, whatever its layout) */
        const int band = lt.over[o] == MT_OVER_BAND || (lt.over[o] == MT_OVER_SHIFTED && ops[o].type == MT_OP_CONV2D_S8);
        ops[o].flags = (uint8_t)((o >= f.first_trained ? MT_OPF_TRAINED : 0u) |
                                 (mt_plan_stream_of(img, &f, o) ? MT_OPF_FUSED_INTO_NEXT : 0u) |
                                 (o > 0 && mt_plan_stream_of(img, &f, o - 1) ? MT_OPF_STREAMS_PREVIOUS : 0u) |
                                 (o > 0 && f.consts && mt_plan_stream_of(img, &f, o - 1) ? MT_OPF_ROW_CONSTANTS : 0u) |
                                 (band ? MT_OPF_IN_PLACE : 0u));
    }
    memset(s, 0, sizeof *s);
    s->img = *img;
    s->cfg = *cfg;
    s->cfg.trainable_op_mask = NULL; /* borrowed for this call only */
    s->cfg.trainable_op_channels = NULL; /* ... as is this; its parts are in weight_parts */
    s->weight_parts = rec.parts;
    s->plan = p;
    s->tensors = rt;
    s->ops = ops;
    s->params = rec.params;
    s->trained = rec.trained;
    s->num_params = num_params;
    s->num_trained = num_trained;
    s->target = rec.target;
    s->target_bytes = (uint32_t)rec.target_bytes;
    s->scratch = rec.scratch;
    s->output_tensor = f.output;
    s->fused_op = f.fused_op;
    s->fusion = f.fusion;
    s->learning_rate = cfg->learning_rate;
    s->base_learning_rate = cfg->learning_rate;
    s->model_fingerprint = mt_image_fingerprint(img);
    s->beta1_power = 1.0;
    s->beta2_power = 1.0;
    s->last_error.status = MT_OK; /* nothing failed yet */
    s->last_error.op_index = -1;
    s->last_error.tensor_index = -1;
    s->magic = MT_SESSION_MAGIC;
    *session = s;
    return MT_OK;
}

mt_status mt_plan_layout(const mt_image *img, const mt_train_config *cfg, mt_memory_plan *plan)
{
    return layout(img, cfg, NULL, NULL, 0, plan, NULL, NULL, NULL, NULL);
}

mt_status mt_plan_build(const mt_image *img, const mt_train_config *cfg, const mt_memory_plan *given,
                        uint8_t *arena, size_t arena_bytes, mt_memory_plan *plan, mt_session **session)
{
    return layout(img, cfg, given, arena, arena_bytes, plan, session, NULL, NULL, NULL);
}

mt_status mt_plan_report(const mt_image *img, const mt_train_config *cfg, mt_buffer_fn report, void *user)
{
    mt_memory_plan plan;
    return layout(img, cfg, NULL, NULL, 0, &plan, NULL, report, user, NULL);
}

mt_status mt_plan_diagnose(const mt_image *img, const mt_train_config *cfg, mt_error_detail *where)
{
    mt_memory_plan plan;
    return layout(img, cfg, NULL, NULL, 0, &plan, NULL, NULL, NULL, where);
}
