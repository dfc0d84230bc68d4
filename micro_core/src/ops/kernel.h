/*
 * How the session drives an op: each op file defines one mt_op_kernel next to
 * its reference kernels, so an op's checks, forward and backward live together.
 *
 *   check     at plan time, against the image: operand count, dtypes, shapes.
 *   scratch_bytes  what the op's backward needs of the session's scratch (forward kernels
 *             take none: the planner sizes scratch for the ops whose backward runs).
 *             After it passes, forward/backward run "blindly and safely".
 *   forward   rows 0..n-1 of every activation.
 *   backward  accumulates into the gradients that exist (grad != NULL).
 */
#ifndef MT_OPS_KERNEL_H
#define MT_OPS_KERNEL_H

#include "model_image.h"

/* Runtime view of one tensor inside a session. */
typedef struct mt_tensor_rt {
    const float *data; /* what ops read: arena activations or weights, or the image in place */
    float *mutable_data; /* same as data when the arena owns it, else NULL */
    float *grad;       /* NULL when no gradient is needed */
    float *opt_state;  /* optimizer arrays of a trained weight, back to back, else NULL */
    uint32_t count;    /* elements of one sample (activations) or of the tensor (constants) */
    uint32_t rows_held; /* a float Dense's or Conv2D's weight, or an int8 FullyConnected's or
                           pointwise Conv2D's trained in place, a sparse update trains the first k
                           rows (output channels) of: k, the rows mutable_data holds in the arena,
                           while data is the image's whole weight, whose rows k.. are read in
                           place (mt_weight_row, mt_weight_row_s8); else 0 */
    uint32_t dims[MT_MAX_DIMS]; /* one sample's shape (activations) or the tensor's, then zeros */
    uint16_t grad_zero_at; /* the op whose backward writes grad first (it is zeroed just before),
                              MT_AT_LOSS for the loss, MT_NEVER when there is no grad */
    uint16_t update_after; /* fused update: the op after whose backward the weight's gradient is
                              complete and the optimizer applies it, else MT_NEVER */
    uint16_t flags;    /* MT_TENSOR_* */
    uint8_t dtype;
    uint8_t trained : 1;    /* a weight the optimizer updates */
    uint8_t grad_fresh : 1; /* grad is due to be zeroed and its first writer (a kernel with
                               MT_KERNEL_ZEROES_WEIGHT_GRAD) does it: 0 + Σ, not grad + Σ */
    uint8_t tiled : 1;      /* a trained weight updated in tiles (mt_weight_tile_rows): grad is
                               one tile, the backward of its op leaves it alone and the session
                               computes and applies it a block of output rows at a time */
    uint8_t grad_broadcast : 1; /* grad is a global mean's input gradient as a broadcast: one
                                   float per sample and channel (mt_last_dim), the same for every
                                   pixel (mt_plan_grad_broadcast, plan_lifetimes.c) */
} mt_tensor_rt;

/* The size of t's last dimension (its dims end in zeros). */
static inline uint32_t mt_last_dim(const mt_tensor_rt *t)
{
    uint32_t d = MT_MAX_DIMS;
    while (d > 1 && t->dims[d - 1] == 0) --d;
    return t->dims[d - 1];
}

/* Row r (an output row of `row_bytes` bytes) of weight w, the one place that says where it lies:
 * a weight whose first rows_held rows the arena holds has them at mutable_data and the others in
 * the image (data), in place; any other weight is data. */
static inline const void *mt_weight_row_at(const mt_tensor_rt *w, uint32_t r, size_t row_bytes)
{
    const float *base = r < w->rows_held ? w->mutable_data : w->data;
    return (const unsigned char *)(const void *)base + (size_t)r * row_bytes;
}

/* ... of a float weight, rows of `row` elements */
static inline const float *mt_weight_row(const mt_tensor_rt *w, uint32_t r, size_t row)
{
    return (const float *)mt_weight_row_at(w, r, row * sizeof(float));
}

/* ... of an int8 weight (an int8 layer trained in place), rows of `row` bytes */
static inline const int8_t *mt_weight_row_s8(const mt_tensor_rt *w, uint32_t r, size_t row)
{
    return (const int8_t *)mt_weight_row_at(w, r, row);
}

#define MT_AT_LOSS 0xFFFEu
#define MT_NEVER 0xFFFFu

/* backward_reads() bits: input k is bit k; the output's data is MT_READS_OUTPUT. */
#define MT_READS_OUTPUT (1u << 4)

/* An op's kernel; its name and code come from microtrain_ops.def (registry.c). */
typedef struct mt_op_kernel {
    mt_status (*check)(const mt_image *img, const mt_op_desc *op);
    size_t (*scratch_bytes)(const mt_image *img, const mt_op_desc *op, uint32_t batch);
    void (*forward)(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch);
    void (*backward)(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch);
    /* Which data the backward reads, given which inputs need a gradient (bit k = input k):
     * the planner keeps exactly those activations alive until the backward. */
    uint32_t (*backward_reads)(const mt_op_desc *op, uint32_t grad_inputs);
    /* MT_KERNEL_* bits */
    uint8_t traits;
} mt_op_kernel;

/* forward may write the output over input 0 (same element count) */
#define MT_KERNEL_IN_PLACE 1u
/* backward zeroes the gradient of its weight (input 1) itself where that tensor's grad_fresh
 * is set, and clears the mark; the session then skips the memset (a kernel that writes
 * 0 + Σ in the pass that computes Σ saves a pass over the gradient) */
#define MT_KERNEL_ZEROES_WEIGHT_GRAD 2u

/* The scratch Dense's backward is planned with: I floats (ops/dense.c) */
size_t mt_op_dense_f32_scratch_bytes(uint32_t B, uint32_t I, uint32_t U);

/* Dense's forward and dx over a weight read through mt_weight_row (ops/dense.c): the bits of the
 * whole weight in one array; Conv2D's 1 x 1 layers run them over their pixels. Their input
 * gradients (and a Conv2D tap's, ops/conv2d.c) come from mt_weight_rows_dx: dx[j] +=
 * Σ_r dz[r]·W[r][offset + j] for j < n, each sum from +0 in ascending r over R rows. */
void mt_dense_f32_forward_rows(const float *x, const mt_tensor_rt *w, const float *bias, float *y, uint32_t B,
                               uint32_t I, uint32_t U, uint32_t act);
void mt_dense_f32_dx_rows(const mt_tensor_rt *w, const float *dy, float *dx, uint32_t B, uint32_t I, uint32_t U);
void mt_weight_rows_dx(const mt_tensor_rt *w, const float *dz, uint32_t R, size_t row, size_t offset,
                       uint32_t n, float *dx);

/* The kernel of an op type, or NULL if this build does not know it. */
const mt_op_kernel *mt_op_kernel_for(uint32_t type);

/* backward_reads() of ops whose backward reads nothing but dy (pools, Add, Reshape, ...) */
uint32_t mt_reads_nothing(const mt_op_desc *op, uint32_t grad_inputs);
/* ... that read only their saved output (activations, softmax) */
uint32_t mt_reads_output(const mt_op_desc *op, uint32_t grad_inputs);

/* An op whose trained weight (input 1) can be updated in tiles: blocks of its output rows
 * (dims[0]: Dense's units, Conv2D's output channels), each row's gradient a sum of its own
 * (ops/dense.c, ops/conv2d.c). */
typedef struct mt_weight_tiling {
    /* floats a tile of `rows` output rows takes at batch size `batch`: the rows of dW and
     * whatever else computing them needs (the rows' dy columns: B·rows floats for Dense,
     * B·OH·OW·rows for Conv2D) */
    uint32_t (*tile_floats)(const mt_image *img, const mt_op_desc *op, uint32_t batch, uint32_t rows);
    /* dW[first .. first + rows) over rows 0..n-1 of the batch, written (0 + Σ, the sums and
     * order of the op's backward) to tile[0 .. rows · row elements), after the op's backward
     * (which leaves a tiled weight's gradient alone and has masked dy by its activation) */
    void (*grad_rows)(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, uint32_t first, uint32_t rows,
                      float *tile);
} mt_weight_tiling;

/* The tiling of an op type, or NULL: its weight gradient is computed whole (registry.c). */
const mt_weight_tiling *mt_weight_tiling_for(uint32_t type);

/* scratch_bytes() of ops that need none */
size_t mt_no_scratch(const mt_image *img, const mt_op_desc *op, uint32_t batch);

/* Dense and convolutions: the optional bias (input 2) is absent, or CONST f32 [units]. */
mt_status mt_check_bias(const mt_image *img, const mt_op_desc *op, uint32_t units);
/* The same for a bias of `dtype` (mt_dtype): the int8 ops' int32 biases (mt_q_check_bias). */
mt_status mt_check_bias_of(const mt_image *img, const mt_op_desc *op, uint32_t units, uint8_t dtype);
/* ... and its runtime tensor, or NULL when absent */
const mt_tensor_rt *mt_bias_of(const mt_op_desc *op, const mt_tensor_rt *t);

/* 1 when every op parameter is zero (ops that take none). */
int mt_params_zero(const mt_op_desc *op);

/* Concatenation's forward, float and int8 alike: y[r, off_k + j] = x_k[r, j], the inputs'
 * rows side by side along the last dimension, value_bytes bytes per value. */
void mt_concat_last_dim(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, size_t value_bytes);

/* Concatenation's check, float and int8 alike: 2..4 inputs and no params, each input of y's
 * rank and leading dimensions and no constant, the last dimensions summing to y's; `input_ok`
 * says whether an input may join y (its dtype, its quantization), MT_ERR_SHAPE if not. */
typedef int (*mt_concat_input_ok)(const mt_image *img, const mt_tensor_desc *x, const mt_tensor_desc *y);
mt_status mt_check_concat_last_dim(const mt_image *img, const mt_op_desc *op, mt_concat_input_ok input_ok);

/* One f32 input that is no constant and one f32 output, read into x and y. */
mt_status mt_unary_f32_operands(const mt_image *img, const mt_op_desc *op, mt_tensor_desc *x, mt_tensor_desc *y);

/* Shared check for one-input one-output elementwise ops (same element count, f32). */
mt_status mt_check_unary_f32(const mt_image *img, const mt_op_desc *op, int same_shape);

/* The whole check of such an op without params (every params word zero): ReLU, ReLU6,
 * Sigmoid, Tanh, Reshape (same element count); Softmax (_shaped: the same shape too). */
mt_status mt_check_plain_unary_f32(const mt_image *img, const mt_op_desc *op);
mt_status mt_check_plain_unary_f32_shaped(const mt_image *img, const mt_op_desc *op);

#endif /* MT_OPS_KERNEL_H */
