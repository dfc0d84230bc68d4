/*
 * The planner: one pass over the model that both sizes and (given an arena)
 * builds a session, so the size mt_plan() reports is by construction the
 * size mt_session_init() uses.
 *
 * What needs memory:
 *   - an op trains when trainable_op_mask selects it, or else when it is one of
 *     the last num_trainable_ops ops. A weight is *trained* when it is TRAINABLE,
 *     read by a training op and, with biases_only, 1-D; it gets an arena copy, a
 *     gradient and optimizer state. Every other weight is read in place from the image.
 *   - an activation needs a gradient when it depends on a trained weight
 *     (computed forward over the op list); backward stops at the first
 *     trained op because nothing before it has such a gradient.
 *   - when the loss is fused with the final Softmax/Sigmoid, the model output
 *     needs no gradient: the loss writes the logits' gradient directly.
 */
#include <math.h>
#include <string.h>

#include "microtrain.h"
#include "mt_math.h"
#include "optimizers.h"
#include "session.h"

/* C99 compile-time check: a negative array size fails the build. */
typedef char session_record_fits[sizeof(mt_session) <= MT_SESSION_RECORD_BYTES ? 1 : -1];
typedef char tensor_record_fits[sizeof(mt_tensor_rt) <= MT_TENSOR_RECORD_BYTES ? 1 : -1];
typedef char op_record_fits[sizeof(mt_op_desc) == MT_OP_RECORD_BYTES ? 1 : -1];

typedef struct bitset {
    uint32_t words[(MT_MAX_TENSORS + 31) / 32];
} bitset;

static int bit_get(const bitset *b, uint32_t i)
{
    return (int)((b->words[i / 32] >> (i % 32)) & 1u);
}

static void bit_set(bitset *b, uint32_t i)
{
    b->words[i / 32] |= 1u << (i % 32);
}

static void bit_clear(bitset *b, uint32_t i)
{
    b->words[i / 32] &= ~(1u << (i % 32));
}

/* Bump allocation over the arena; with base == NULL only the sizes add up. */
typedef struct bump {
    uint8_t *base;
    uint64_t used;
} bump;

static void *take(bump *b, uint64_t bytes, size_t *role)
{
    uint64_t rounded = (bytes + (MT_ARENA_ALIGN - 1u)) & ~(uint64_t)(MT_ARENA_ALIGN - 1u);
    void *p = b->base ? b->base + b->used : NULL;
    b->used += rounded;
    *role += (size_t)rounded;
    return p;
}

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
    if (cfg->batch_size < 1 || cfg->batch_size > 65535) return MT_ERR_BAD_ARGUMENT;
    if (cfg->num_trainable_ops < -1) return MT_ERR_BAD_ARGUMENT;
    if (cfg->biases_only != 0 && cfg->biases_only != 1) return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->learning_rate) || cfg->learning_rate <= 0.0f) return MT_ERR_BAD_ARGUMENT;
    if (!finite_in(cfg->beta1, 0.0f, 1.0f) || !finite_in(cfg->beta2, 0.0f, 1.0f))
        return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->epsilon) || cfg->epsilon <= 0.0f) return MT_ERR_BAD_ARGUMENT;
    if (!finite_in(cfg->momentum, 0.0f, 1.0f)) return MT_ERR_BAD_ARGUMENT;
    if (!mt_isfinitef(cfg->weight_decay) || cfg->weight_decay < 0.0f) return MT_ERR_BAD_ARGUMENT;
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

mt_status mt_plan_layout(const mt_image *img, const mt_train_config *cfg, uint8_t *arena,
                         mt_memory_plan *plan, mt_session **session)
{
    mt_status st = check_config(cfg);
    if (st != MT_OK) return st;

    const uint32_t T = img->num_tensors, O = img->num_ops, B = (uint32_t)cfg->batch_size;
    const uint32_t output = mt_image_io(img, 1, 0);
    mt_tensor_desc out_desc;
    mt_image_tensor(img, output, &out_desc);
    if ((st = check_loss_fits(cfg, &out_desc)) != MT_OK) return st;

    /* which ops train: the mask if given, else the last num_trainable_ops */
    uint32_t tail_start = 0;
    if (cfg->num_trainable_ops >= 0)
        tail_start = (uint32_t)cfg->num_trainable_ops >= O ? 0u : O - (uint32_t)cfg->num_trainable_ops;

    /* trained weights and gradient-carrying activations, forward over the ops */
    bitset trained, needs_grad;
    memset(&trained, 0, sizeof trained);
    memset(&needs_grad, 0, sizeof needs_grad);
    size_t max_scratch = 0;
    uint32_t first_trained = O;
    for (uint32_t o = 0; o < O; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        const int op_trains = cfg->trainable_op_mask ? cfg->trainable_op_mask[o] != 0 : o >= tail_start;
        int any = 0;
        for (int i = 0; i < op.num_inputs; ++i) {
            if (op.inputs[i] == MT_NO_TENSOR) continue;
            mt_tensor_desc t;
            mt_image_tensor(img, op.inputs[i], &t);
            if (op_trains && (t.flags & MT_TENSOR_TRAINABLE) && (!cfg->biases_only || t.ndim == 1)) {
                bit_set(&trained, op.inputs[i]);
                bit_set(&needs_grad, op.inputs[i]);
                if (o < first_trained) first_trained = o;
            }
            any |= bit_get(&needs_grad, op.inputs[i]);
        }
        for (int k = 0; k < op.num_outputs; ++k)
            if (any) bit_set(&needs_grad, op.outputs[k]);
        size_t s = mt_op_kernel_for(op.type)->scratch_bytes(img, &op, B);
        if (s > max_scratch) max_scratch = s;
    }
    int32_t fused_op;
    const int32_t fusion = detect_fusion(img, cfg, output, &fused_op);
    if (fusion != MT_FUSION_NONE) bit_clear(&needs_grad, output);

    int32_t num_params = 0, num_trained = 0;
    for (uint32_t i = 0; i < T; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if ((t.flags & MT_TENSOR_CONST) && t.dtype == MT_DTYPE_F32) ++num_params;
        if (bit_get(&trained, i)) ++num_trained;
    }

    mt_memory_plan p;
    memset(&p, 0, sizeof p);
    bump b = {arena, 0};
    mt_session *s = (mt_session *)take(&b, MT_SESSION_RECORD_BYTES, &p.metadata_bytes);
    mt_tensor_rt *rt = (mt_tensor_rt *)take(&b, (uint64_t)T * MT_TENSOR_RECORD_BYTES, &p.metadata_bytes);
    mt_op_desc *ops = (mt_op_desc *)take(&b, (uint64_t)O * MT_OP_RECORD_BYTES, &p.metadata_bytes);
    uint16_t *params = (uint16_t *)take(&b, (uint64_t)num_params * 2u, &p.metadata_bytes);
    uint16_t *trained_list = (uint16_t *)take(&b, (uint64_t)num_trained * 2u, &p.metadata_bytes);
    const uint32_t state_arrays = mt_optimizer_state_arrays(cfg->optimizer, cfg->momentum);

    int32_t np = 0, nt = 0;
    for (uint32_t i = 0; i < T; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        mt_tensor_rt r;
        memset(&r, 0, sizeof r);
        r.count = t.count;
        r.last_dim = t.dims[t.ndim - 1];
        r.ndim = t.ndim;
        memcpy(r.dims, t.dims, sizeof r.dims);
        r.flags = t.flags;
        r.dtype = t.dtype;
        if (t.flags & MT_TENSOR_CONST) {
            const uint64_t bytes = (uint64_t)t.count * 4u;
            if (t.dtype == MT_DTYPE_F32 && arena) params[np] = (uint16_t)i;
            if (t.dtype == MT_DTYPE_F32) ++np;
            if (bit_get(&trained, i)) {
                r.trained = 1;
                r.mutable_data = (float *)take(&b, bytes, &p.weight_bytes);
                r.grad = (float *)take(&b, bytes, &p.gradient_bytes);
                if (state_arrays) r.opt_state = (float *)take(&b, bytes * state_arrays, &p.optimizer_bytes);
                if (arena) {
                    memcpy(r.mutable_data, mt_image_const_f32(img, &t), (size_t)bytes);
                    trained_list[nt] = (uint16_t)i;
                }
                ++nt;
                r.data = r.mutable_data;
            } else if (arena) {
                r.data = mt_image_const_f32(img, &t);
            }
        } else {
            const uint64_t elements = (uint64_t)B * t.count;
            if (elements > MT_MAX_ELEMENTS) return MT_ERR_SHAPE;
            r.mutable_data = (float *)take(&b, elements * 4u, &p.activation_bytes);
            r.data = r.mutable_data;
            if (bit_get(&needs_grad, i)) r.grad = (float *)take(&b, elements * 4u, &p.activation_grad_bytes);
        }
        if (arena) rt[i] = r;
    }
    const uint64_t target_bytes = cfg->loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY
                                      ? (uint64_t)B * 4u
                                      : (uint64_t)B * out_desc.count * 4u;
    void *target = take(&b, target_bytes, &p.io_bytes);
    float *scratch = (float *)take(&b, max_scratch, &p.scratch_bytes);

    if (b.used > (uint64_t)(size_t)-1) return MT_ERR_ARENA_TOO_SMALL; /* cannot exist on this target */
    p.total_bytes = (size_t)b.used;
    p.num_trained_params = num_trained;
    p.first_trained_op = (int32_t)first_trained;
    *plan = p;
    if (!arena) return MT_OK;

    for (uint32_t o = 0; o < O; ++o) {
        mt_image_op(img, o, &ops[o]);
        ops[o].trained = (uint8_t)(cfg->trainable_op_mask ? cfg->trainable_op_mask[o] != 0 : o >= tail_start);
    }
    memset(s, 0, sizeof *s);
    s->img = *img;
    s->cfg = *cfg;
    s->cfg.trainable_op_mask = NULL; /* borrowed for this call only; ops[].trained keeps it */
    s->plan = p;
    s->tensors = rt;
    s->ops = ops;
    s->params = params;
    s->trained = trained_list;
    s->num_params = num_params;
    s->num_trained = num_trained;
    s->target = target;
    s->target_bytes = (uint32_t)target_bytes;
    s->scratch = scratch;
    s->output_tensor = output;
    s->fused_op = fused_op;
    s->fusion = fusion;
    s->learning_rate = cfg->learning_rate;
    s->model_fingerprint = mt_image_fingerprint(img);
    s->beta1_power = 1.0;
    s->beta2_power = 1.0;
    s->magic = MT_SESSION_MAGIC;
    *session = s;
    return MT_OK;
}
