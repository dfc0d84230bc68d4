/*
 * The planner's persistent region (session.h draws it): what lives across steps, bump-allocated
 * from the arena's start: the session's records (the session, the tensor and op tables, the
 * parameter and trained lists, the sparse update's parts), the target, the backward scratch,
 * the trained weights with their master copies, references, gradients (without fused updates)
 * and optimizer state, and the activations that persist. persistent_region runs twice, once
 * to size (no arena: only the sizes add up) and once to write, so the bytes init lays out are
 * the bytes the plan counted; tell reports each piece to mt_plan_buffers().
 *
 * Static functions in a header that planner.c alone includes: they stay in its translation
 * unit, so the compiler inlines and specializes them (persistent_region's two calls, tell's
 * calls from layout) exactly as it did when they were written there.
 */
#ifndef MT_PLAN_PERSISTENT_H
#define MT_PLAN_PERSISTENT_H

#include <stdint.h>
#include <string.h>

#include "microtrain.h"
#include "optimizers.h"
#include "session.h"
#include "plan_graph.h"

/* C99 compile-time check: a negative array size fails the build. */
typedef char session_record_fits[sizeof(mt_session) <= MT_SESSION_RECORD_BYTES ? 1 : -1];
typedef char tensor_record_fits[sizeof(mt_tensor_rt) <= MT_TENSOR_RECORD_BYTES ? 1 : -1];
typedef char op_record_fits[sizeof(mt_op_desc) == MT_OP_RECORD_BYTES ? 1 : -1];

/* Bump allocation of the persistent region; with base == NULL only the sizes add up. */
typedef struct bump {
    uint8_t *base;
    uint64_t used;
    mt_buffer_fn report; /* mt_plan_buffers(): told of every piece */
    void *user;
    mt_status status;    /* the first error report returned */
    uint16_t end;        /* last time of the schedule: persistent pieces span [0, end] */
} bump;

static void tell(bump *b, int32_t kind, int32_t tensor, uint64_t offset, uint64_t bytes, uint16_t start,
                 uint16_t end, int32_t in_place_of)
{
    if (!b->report || b->status != MT_OK || bytes == 0) return;
    mt_buffer_info info;
    memset(&info, 0, sizeof info);
    info.kind = kind;
    info.tensor_index = tensor;
    info.start = start;
    info.end = end;
    info.in_place_of = in_place_of;
    info.offset = (size_t)offset;
    info.bytes = (size_t)bytes;
    b->status = b->report(b->user, &info);
}

/* A persistent piece of `kind` for `tensor` (-1: none), counted in `role`. */
static void *take_as(bump *b, uint64_t bytes, size_t *role, int32_t kind, int32_t tensor)
{
    uint64_t rounded = (bytes + (MT_ARENA_ALIGN - 1u)) & ~(uint64_t)(MT_ARENA_ALIGN - 1u);
    void *p = b->base ? b->base + b->used : NULL;
    tell(b, kind, tensor, b->used, rounded, 0, b->end, -1);
    b->used += rounded;
    *role += (size_t)rounded;
    return p;
}

static void *take(bump *b, uint64_t bytes, size_t *role)
{
    return take_as(b, bytes, role, MT_BUFFER_METADATA, -1);
}

/* When each gradient is zeroed (just before its first writer) and, with fused updates,
 * after which op's backward a trained weight is updated (its first consumer's, the
 * last to add to its gradient). With accumulation, weight gradients are zeroed only
 * by mt_session_zero_grad(). */
static void grad_schedule(const mt_image *img, const graph_facts *f, uint32_t index, mt_tensor_rt *r)
{
    r->grad_zero_at = MT_NEVER;
    r->update_after = MT_NEVER;
    if (!bit_get(&f->needs_grad, index)) return;
    const int weight = (r->flags & MT_TENSOR_CONST) != 0;
    if (weight && !f->fused_update) return;
    if (!weight) {
        uint32_t loss_reads = f->output;
        if (f->fused_op >= 0) {
            mt_op_desc fused;
            mt_image_op(img, (uint32_t)f->fused_op, &fused);
            loss_reads = fused.inputs[0];
        }
        if (loss_reads == index) r->grad_zero_at = MT_AT_LOSS;
    }
    for (uint32_t o = img->num_ops; o-- > 0;) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (!mt_plan_backward_runs(f, &op, o)) continue;
        for (int k = 0; k < op.num_inputs; ++k) {
            if (op.inputs[k] != index) continue;
            if (r->grad_zero_at == MT_NEVER) r->grad_zero_at = (uint16_t)o;
            if (weight) r->update_after = (uint16_t)o;
        }
    }
    /* an activation nobody reads: its producer's backward reads a zero gradient */
    if (r->grad_zero_at == MT_NEVER) r->grad_zero_at = (uint16_t)mt_image_producer(img, index);
}

/* The session's records in the persistent region, where the build pass writes them. */
typedef struct records {
    mt_session *s;
    mt_tensor_rt *rt;
    mt_op_desc *ops;
    uint16_t *params, *trained;
    uint32_t *parts; /* per tensor, mt_plan_part_code; NULL when every trained weight is whole */
    void *target;
    uint64_t target_bytes;
    float *scratch;
} records;

/* The persistent region (what lives across steps; session.h draws it), bump-allocated in b
 * from b->base. With b->base == NULL only the sizes add up, into *p (the plan); with the arena
 * the tensor table, the lists and the trained weights (and references) are written as well.
 * One function for both passes, so the bytes init lays out are the bytes the plan counted. */
static void persistent_region(const mt_image *img, const mt_train_config *cfg, const graph_facts *f,
                              const mt_tensor_desc *out_desc, size_t max_scratch, int32_t num_params,
                              int32_t num_trained, bump *b, mt_memory_plan *p, records *rec)
{
    const uint32_t T = img->num_tensors, O = img->num_ops, B = (uint32_t)cfg->batch_size;
    const int write = b->base != NULL;
    memset(p, 0, sizeof *p);
    rec->s = (mt_session *)take(b, MT_SESSION_RECORD_BYTES, &p->metadata_bytes);
    rec->rt = (mt_tensor_rt *)take(b, (uint64_t)T * MT_TENSOR_RECORD_BYTES, &p->metadata_bytes);
    rec->ops = (mt_op_desc *)take(b, (uint64_t)O * MT_OP_RECORD_BYTES, &p->metadata_bytes);
    rec->params = (uint16_t *)take(b, (uint64_t)num_params * 2u, &p->metadata_bytes);
    rec->trained = (uint16_t *)take(b, (uint64_t)num_trained * 2u, &p->metadata_bytes);
    int any_part = 0;
    for (uint32_t i = 0; i < T && f->channels; ++i)
        any_part |= bit_get(&f->trained, i) && mt_plan_part_code(img, f->channels, i) != 0;
    rec->parts = any_part ? (uint32_t *)take(b, (uint64_t)T * 4u, &p->metadata_bytes) : NULL;
    const uint32_t state_arrays = mt_optimizer_state_arrays(cfg->optimizer, cfg->momentum);
    rec->target_bytes = cfg->loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ? (uint64_t)B * 4u
                                                                             : (uint64_t)B * out_desc->count * 4u;
    rec->target = take_as(b, rec->target_bytes, &p->io_bytes, MT_BUFFER_TARGET, -1);
    rec->scratch = (float *)take_as(b, max_scratch, &p->scratch_bytes, MT_BUFFER_SCRATCH, -1);
    size_t persistent_grad = 0, persistent_activations = 0;

    int32_t np = 0, nt = 0;
    for (uint32_t i = 0; i < T; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        mt_tensor_rt r;
        memset(&r, 0, sizeof r);
        r.count = t.count;
        r.flags = t.flags;
        r.dtype = t.dtype;
        memcpy(r.dims, t.dims, sizeof r.dims);
        const uint64_t bytes = (uint64_t)t.count * mt_dtype_bytes(t.dtype); /* int8 trained in place: 1 */
        const uint64_t grad_bytes = (uint64_t)t.count * 4u;               /* gradients are f32 */
        const uint32_t record = mt_plan_q_record_floats(img, f, i); /* an int8 weight's scales */
        const uint64_t rows_bytes = (uint64_t)B * t.count * mt_dtype_bytes(t.dtype);
        if (t.flags & MT_TENSOR_CONST) {
            if (t.dtype == MT_DTYPE_F32 && write) rec->params[np] = (uint16_t)i;
            if (t.dtype == MT_DTYPE_F32) ++np;
            if (bit_get(&f->trained, i)) {
                r.trained = 1;
                /* a float Dense's or Conv2D's (an int8 FullyConnected's or pointwise Conv2D's)
                 * first k rows alone when it trains those: the arena holds them (and a reference
                 * of them), the image the rest (mt_plan_rows_held) */
                r.rows_held = mt_plan_rows_held(img, f->channels, i);
                const uint64_t held =
                    r.rows_held ? (uint64_t)mt_held_elements(&r) * mt_dtype_bytes(t.dtype) : bytes;
                r.mutable_data = (float *)take_as(b, held, &p->weight_bytes, MT_BUFFER_WEIGHT, (int32_t)i);
                /* an int8 weight's float master copy: the very next piece (mt_q_master_of) */
                float *master = (t.flags & MT_TENSOR_MASTER)
                                    ? (float *)take_as(b, grad_bytes, &p->weight_bytes, MT_BUFFER_WEIGHT, (int32_t)i)
                                    : NULL;
                /* the proximal term's w_ref: the very next piece (mt_reference_of() finds it there) */
                float *reference = cfg->proximal_mu > 0.0f
                                       ? (float *)take_as(b, held, &p->reference_bytes, MT_BUFFER_REFERENCE,
                                                          (int32_t)i)
                                       : NULL;
                const uint32_t tile = mt_plan_weight_tile_bytes(img, f, i, B);
                r.tiled = tile != 0;
                if (!f->fused_update)
                    r.grad = (float *)take_as(b, grad_bytes, &persistent_grad, MT_BUFFER_GRADIENT, (int32_t)i);
                else p->gradient_bytes += tile ? tile : mt_plan_round_up(grad_bytes);
                if (tile) ++p->tiled_updates;
                if ((int32_t)tile > p->weight_tile_bytes) p->weight_tile_bytes = (int32_t)tile;
                /* a sparse update's state: its trained channels only (session.h, mt_weight_part);
                 * a quantized weight (an int8 layer trained in place) takes its record of scales
                 * first, then its momentum, for its trained channels alone as well */
                const uint32_t part = mt_plan_part_code(img, f->channels, i);
                const mt_weight_part wp = mt_weight_part_from(part, t.count, t.dims[0], t.dims[t.ndim - 1]);
                if (write && rec->parts) rec->parts[i] = part;
                if (state_arrays || record)
                    r.opt_state = (float *)take_as(b, record * 4u + (uint64_t)mt_part_elements(wp) * 4u * state_arrays,
                                                   &p->optimizer_bytes, MT_BUFFER_OPTIMIZER, (int32_t)i);
                if (write) {
                    memcpy(r.mutable_data, mt_image_const_f32(img, &t), (size_t)held);
                    if (record) mt_plan_q_record_write(img, i, record, 1, r.opt_state);
                    for (uint32_t e = 0; master && e < t.count; ++e) master[e] = (float)((const int8_t *)r.mutable_data)[e];
                    if (reference) memcpy(reference, r.mutable_data, (size_t)held);
                    rec->trained[nt] = (uint16_t)i;
                }
                ++nt;
                r.data = r.rows_held ? mt_image_const_f32(img, &t) : r.mutable_data; /* what ops read */
            } else if (write) {
                r.data = mt_image_const_f32(img, &t);
            }
            if (record && !r.trained) { /* a frozen int8 backward's weight scales (mt_q_weight_scales) */
                r.opt_state = (float *)take_as(b, (uint64_t)record * 4u, &p->metadata_bytes, MT_BUFFER_METADATA,
                                               (int32_t)i);
                if (write) mt_plan_q_record_write(img, i, record, 0, r.opt_state);
            }
        } else {
            if (mt_plan_persistent_activation(&t))
                r.mutable_data = (float *)take_as(b, rows_bytes, &persistent_activations, MT_BUFFER_ACTIVATION,
                                                  (int32_t)i);
            p->activation_bytes += mt_plan_round_up(rows_bytes);
            if (bit_get(&f->needs_grad, i))
                p->activation_grad_bytes += mt_plan_round_up(mt_plan_grad_floats(img, f, i, B) * 4u);
            r.grad_broadcast = (uint8_t)mt_plan_grad_broadcast(img, f, i);
        }
        if (write) {
            grad_schedule(img, f, i, &r);
            rec->rt[i] = r;
        }
    }
    p->gradient_bytes += persistent_grad;
}

#endif /* MT_PLAN_PERSISTENT_H */
