/*
 * The planner's graph analysis, shared by planner.c (layout) and plan_lifetimes.c
 * (lifetimes): which tensors train, which need a gradient, when each buffer is born and
 * last read over the step's schedule (time 0 before the step, 1 + o the forward of op o,
 * O + 1 the loss, 2·O + 1 - o the backward of op o).
 */
#ifndef MT_PLAN_GRAPH_H
#define MT_PLAN_GRAPH_H

#include "model_image.h"
#include "sharing.h"

typedef struct bitset {
    uint32_t words[(MT_MAX_TENSORS + 31) / 32];
} bitset;

static inline int bit_get(const bitset *b, uint32_t i)
{
    return (int)((b->words[i / 32] >> (i % 32)) & 1u);
}

static inline void bit_set(bitset *b, uint32_t i)
{
    b->words[i / 32] |= 1u << (i % 32);
}

static inline void bit_clear(bitset *b, uint32_t i)
{
    b->words[i / 32] &= ~(1u << (i % 32));
}

typedef struct lifetimes {
    mt_sharing sh;
    uint16_t data[MT_MAX_TENSORS]; /* buffer of an activation's data, or MT_NO_BUFFER */
    uint16_t grad[MT_MAX_TENSORS]; /* buffer of a gradient, or MT_NO_BUFFER */
    uint8_t over[MT_MAX_OPS];      /* MT_OVER_*: how op o's output lies over its input */
} lifetimes;

typedef struct graph_facts {
    bitset trained, needs_grad;
    uint32_t first_trained;
    int32_t fused_op, fusion;
    uint32_t output;
    int fused_update;
    int tiles; /* 1: weights the rule allows are updated in tiles (mt_plan_weight_tile_bytes) */
    int over;  /* 1: int8 convolutions may lie over their inputs (mt_plan_over_input) */
    int consts; /* 1: a streamed expansion's ring is followed by its row kernels' constants */
    const int32_t *channels; /* the configuration's trainable_op_channels (plan_sparse.c) */
} graph_facts;

uint16_t mt_plan_forward_time(uint32_t o);
uint16_t mt_plan_loss_time(uint32_t O);
uint16_t mt_plan_backward_time(uint32_t O, uint32_t o);
int mt_plan_persistent_activation(const mt_tensor_desc *t);
int mt_plan_backward_runs(const graph_facts *f, const mt_op_desc *op, uint32_t o);
uint32_t mt_plan_grad_inputs_of(const graph_facts *f, const mt_op_desc *op);
uint32_t mt_plan_round_up(uint64_t bytes);
uint32_t mt_plan_stream_of(const mt_image *img, const graph_facts *f, uint32_t o);
/* Whether activation index's gradient is a global mean's broadcast (plan_lifetimes.c), the
 * floats its buffer holds before the gradient (the reader's work area) and in all at batch B */
int mt_plan_grad_broadcast(const mt_image *img, const graph_facts *f, uint32_t index);
uint32_t mt_plan_grad_work_floats(const mt_image *img, const graph_facts *f, uint32_t index);
uint64_t mt_plan_grad_floats(const mt_image *img, const graph_facts *f, uint32_t index, uint32_t B);
/* How an op's output may lie over its input (plan_lifetimes.c): lifetimes.over[o] */
enum { MT_OVER_NONE, MT_OVER_IN_PLACE, MT_OVER_BAND, MT_OVER_SHIFTED };
int mt_plan_over_input(const mt_image *img, const graph_facts *f, uint32_t o, uint32_t B, uint32_t *amount);
/* The convolutions laid over their inputs in lt (MT_OVER_BAND, MT_OVER_SHIFTED) */
uint32_t mt_plan_over_inputs(const mt_image *img, const lifetimes *lt);
uint32_t mt_plan_int8_weight_channels(const mt_image *img, const graph_facts *f, uint32_t index);
uint32_t mt_weight_tile_rows(const mt_image *img, const mt_op_desc *op, uint32_t B, uint32_t trained_rows);
/* The one op that reads tensor `index`, through one input (*input), or -1 when none or more
 * than one read it (a weight updated in tiles, an int8 layer trained in place) */
int32_t mt_plan_only_reader(const mt_image *img, uint32_t index, int *input);
uint32_t mt_plan_weight_tile_bytes(const mt_image *img, const graph_facts *f, uint32_t index, uint32_t B);
mt_status mt_plan_lifetimes(const mt_image *img, const graph_facts *f, uint32_t B, lifetimes *lt);
uint64_t mt_plan_int8_peak(const mt_image *img, const lifetimes *lt, uint32_t B);

/* plan_qas.c: int8 layers trained in place. The check refuses (MT_ERR_UNSUPPORTED, *op and
 * *tensor naming it) a trained quantized tensor that is no int8 op's weight or bias alone, or
 * an optimizer other than SGD (without weight decay or proximal term). record_floats: the
 * floats of a quantized tensor's decoded record (0: none), which record_write fills. */
mt_status mt_plan_qas_check(const mt_image *img, const mt_train_config *cfg, const graph_facts *f, int32_t *op,
                            int32_t *tensor);
uint32_t mt_plan_q_record_floats(const mt_image *img, const graph_facts *f, uint32_t index);
void mt_plan_q_record_write(const mt_image *img, uint32_t index, uint32_t floats, int trained, float *record);

/* Sparse update (plan_sparse.c). mt_plan_check_channels: the configuration's channel counts
 * are ones this model can train (a status naming the op through where otherwise).
 * mt_plan_op_trains_weight: whether op o, when it trains, trains its trainable weight t (its
 * bias only with biases_only or a channel count of 0). mt_plan_part_code: what of trained
 * weight index trains (session.h, mt_weight_part_from). mt_plan_trained_rows: the output rows
 * of weight index whose gradient is needed (dims[0] unless its first k rows train). */
mt_status mt_plan_check_channels(const mt_image *img, const mt_train_config *cfg, mt_error_detail *where);
int mt_plan_op_trains_weight(const mt_train_config *cfg, uint32_t o, const mt_tensor_desc *t);
uint32_t mt_plan_part_code(const mt_image *img, const int32_t *channels, uint32_t index);
uint32_t mt_plan_trained_rows(const mt_image *img, const graph_facts *f, uint32_t index);
/* The rows of trained weight index the arena holds when they are not all of them: k, when a
 * float Dense or Conv2D trains its first k output channels (the others read from the image:
 * mt_tensor_rt.rows_held); else 0, the whole weight. */
uint32_t mt_plan_rows_held(const mt_image *img, const int32_t *channels, uint32_t index);

#endif /* MT_PLAN_GRAPH_H */
