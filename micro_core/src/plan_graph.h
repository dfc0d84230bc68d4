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
} lifetimes;

typedef struct graph_facts {
    bitset trained, needs_grad;
    uint32_t first_trained;
    int32_t fused_op, fusion;
    uint32_t output;
    int fused_update;
    int tiles; /* 1: weights the rule allows are updated in tiles (mt_plan_weight_tile_bytes) */
} graph_facts;

uint16_t mt_plan_forward_time(uint32_t o);
uint16_t mt_plan_loss_time(uint32_t O);
uint16_t mt_plan_backward_time(uint32_t O, uint32_t o);
int mt_plan_persistent_activation(const mt_tensor_desc *t);
int mt_plan_backward_runs(const graph_facts *f, const mt_op_desc *op, uint32_t o);
uint32_t mt_plan_grad_inputs_of(const graph_facts *f, const mt_op_desc *op);
uint32_t mt_plan_round_up(uint64_t bytes);
uint32_t mt_plan_stream_of(const mt_image *img, const graph_facts *f, uint32_t o);
uint32_t mt_plan_int8_weight_channels(const mt_image *img, const graph_facts *f, uint32_t index);
uint32_t mt_weight_tile_rows(const mt_image *img, const mt_op_desc *op, uint32_t B);
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

#endif /* MT_PLAN_GRAPH_H */
