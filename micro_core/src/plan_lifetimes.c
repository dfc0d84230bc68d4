/*
 * Lifetimes of the buffers that do not live across steps (activations, their gradients,
 * fused weight gradients), and how they share bytes: the planner's second half
 * (planner.c lays the arena out from what this computes). Frozen int8 layers that no gradient
 * passes through keep nothing for a backward: their outputs live until their last reader's
 * forward, and a pointwise int8 expansion read only by the depthwise after it is streamed into
 * it (a ring of KH rows). One a gradient passes through keeps what its backward_reads names.
 */
#include "ops/kernel.h"
#include "ops/quant_grad.h"
#include "ops/spatial.h"
#include "plan_graph.h"

/* Lifetimes and sharing of every buffer that is not needed across steps. */

uint16_t mt_plan_forward_time(uint32_t o)
{
    return (uint16_t)(1u + o);
}

uint16_t mt_plan_loss_time(uint32_t O)
{
    return (uint16_t)(O + 1u);
}

uint16_t mt_plan_backward_time(uint32_t O, uint32_t o)
{
    return (uint16_t)(2u * O + 1u - o);
}

/* Inputs, outputs and the loss's targets live across steps: the caller writes and reads them.
 * An int8 input (a quantized camera frame) is the exception: it is consumed by the step, its
 * bytes free for later activations once its last reader has run, so the caller writes it
 * before every step (docs/model_format.md); it is born at time 0, before the step. */
int mt_plan_persistent_activation(const mt_tensor_desc *t)
{
    if ((t->flags & MT_TENSOR_INPUT) && !(t->flags & MT_TENSOR_OUTPUT) && t->dtype == MT_DTYPE_I8) return 0;
    return (t->flags & (MT_TENSOR_INPUT | MT_TENSOR_OUTPUT)) != 0;
}

int mt_plan_backward_runs(const graph_facts *f, const mt_op_desc *op, uint32_t o)
{
    return bit_get(&f->needs_grad, op->outputs[0]) && (int32_t)o != f->fused_op;
}

uint32_t mt_plan_grad_inputs_of(const graph_facts *f, const mt_op_desc *op)
{
    uint32_t mask = 0;
    for (int k = 0; k < op->num_inputs; ++k)
        if (op->inputs[k] != MT_NO_TENSOR && bit_get(&f->needs_grad, op->inputs[k])) mask |= 1u << k;
    return mask;
}

uint32_t mt_plan_round_up(uint64_t bytes)
{
    return (uint32_t)((bytes + (MT_ARENA_ALIGN - 1u)) & ~(uint64_t)(MT_ARENA_ALIGN - 1u));
}

/*
 * Updates in tiles. A trained weight's gradient, with fused updates, is otherwise a buffer as
 * large as the weight, alive during its op's backward; where the op computes each output row
 * of dW as a sum of its own (Dense: dW[u,:] = Σ_b dy[b,u]·x[b,:]; Conv2D: dW[oc,...] over the
 * batch and the output pixels; not DepthwiseConv2D, whose [1, KH, KW, C] weights have one
 * row, and whose gradients are small), the session computes and
 * applies it a block of rows at a time (session.c, update_in_tiles), so the layer costs its
 * weights and optimizer state plus one tile. A tile is the most whole rows whose floats (their
 * dW and what computing it reads besides) fit MT_WEIGHT_TILE_BYTES, and at least one row:
 * 4 KiB, 1.6 % of a 256 KB part, yet tiles of many rows for most layers (each tile costs a
 * call of the backward kernel, of the guard and of the update: a few hundred instructions
 * against the rows' thousands of elements).
 * Tiles cost time: the guard keeps its whole-tensor meaning, so each tile's dW is computed
 * twice (checked, then applied), B multiply-adds per element more. Tiling the digits
 * example's 4 KiB W1 (batch 16, Adam) would save 256 bytes for +28 % instructions per step on
 * the Cortex-M7 and +25 % on the M55 (benchmarks/arm_cost.py), so only a gradient of at least
 * MT_TILED_MIN_BYTES is tiled: it saves three quarters of its bytes or more. Fixed numbers,
 * so that a plan made on the host holds on every target.
 */
#define MT_WEIGHT_TILE_BYTES 4096u
#define MT_TILED_MIN_BYTES (4u * MT_WEIGHT_TILE_BYTES)

/* trained_rows: the rows whose gradient is needed, dims[0] for a whole weight. The first k
 * rows of a sparse update (plan_sparse.c) are tiled whatever the weight's size, in tiles of
 * at most k rows, so that only their gradient is computed and held, where that tile is
 * smaller than the whole gradient: a tile also holds its rows' dy columns (B·OH·OW floats a
 * row of a Conv2D), more than a small layer's whole dW, which the op's backward then
 * computes whole (its other rows unused: the update reads the first k). */
uint32_t mt_weight_tile_rows(const mt_image *img, const mt_op_desc *op, uint32_t B, uint32_t trained_rows)
{
    const mt_weight_tiling *tiling = mt_weight_tiling_for(op->type);
    if (tiling == NULL || op->num_inputs < 2 || op->inputs[1] == MT_NO_TENSOR) return 0;
    mt_tensor_desc w;
    mt_image_tensor(img, op->inputs[1], &w);
    const uint32_t U = w.dims[0];
    const int part = trained_rows < U;
    if (!part && (uint64_t)w.count * 4u < MT_TILED_MIN_BYTES) return 0;
    const uint64_t per_row = tiling->tile_floats(img, op, B, 1u);
    uint32_t rows = (uint32_t)(MT_WEIGHT_TILE_BYTES / 4u / per_row);
    if (rows == 0) rows = 1;
    while (rows > 1 && (uint64_t)tiling->tile_floats(img, op, B, rows) * 4u > MT_WEIGHT_TILE_BYTES) --rows;
    if (part) {
        if (rows > trained_rows) rows = trained_rows;
        return (uint64_t)tiling->tile_floats(img, op, B, rows) < w.count ? rows : 0u;
    }
    /* a tile as large as the weight saves nothing: the whole gradient, as without tiles */
    if (rows >= U || (uint64_t)tiling->tile_floats(img, op, B, rows) >= w.count) return 0;
    return rows;
}

int32_t mt_plan_only_reader(const mt_image *img, uint32_t index, int *input)
{
    int32_t reader = -1;
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        for (int k = 0; k < op.num_inputs; ++k) {
            if (op.inputs[k] != index) continue;
            if (reader >= 0) return -1;
            reader = (int32_t)o, *input = k;
        }
    }
    return reader;
}

/* Bytes of the one tile trained weight `index` is updated in, or 0 when its gradient is whole:
 * tiles on (the planner keeps them where they make the arena smaller), fused updates only
 * (accumulation keeps every gradient; the guard checks them all at once), a weight of at least
 * MT_TILED_MIN_BYTES read by one op alone, as its input 1 alone, an op with a tiling whose
 * tile is smaller than the weight. */
uint32_t mt_plan_weight_tile_bytes(const mt_image *img, const graph_facts *f, uint32_t index, uint32_t B)
{
    if (!f->fused_update || !bit_get(&f->trained, index)) return 0;
    mt_tensor_desc w;
    mt_image_tensor(img, index, &w);
    const uint32_t trained_rows = mt_plan_trained_rows(img, f, index); /* the first k: tiled where smaller */
    if (trained_rows == w.dims[0] && (!f->tiles || (uint64_t)w.count * 4u < MT_TILED_MIN_BYTES))
        return 0; /* before the walk over the ops */
    int input = 0;
    const int32_t reader = mt_plan_only_reader(img, index, &input);
    if (reader < 0 || input != 1) return 0;
    mt_op_desc op;
    mt_image_op(img, (uint32_t)reader, &op);
    if (!mt_plan_backward_runs(f, &op, (uint32_t)reader)) return 0;
    const uint32_t rows = mt_weight_tile_rows(img, &op, B, trained_rows);
    return rows ? mt_plan_round_up((uint64_t)mt_weight_tiling_for(op.type)->tile_floats(img, &op, B, rows) * 4u) : 0u;
}

/* Does any op but `except` read tensor index? */
static int read_by_other(const mt_image *img, uint32_t index, uint32_t except)
{
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        if (o == except) continue;
        mt_op_desc op;
        mt_image_op(img, o, &op);
        for (int i = 0; i < op.num_inputs; ++i)
            if (op.inputs[i] == index) return 1;
    }
    return 0;
}

/*
 * Operator fusion (MCUNetV2's and TinyEngine's answer to an inverted residual's expanded
 * tensor, the largest activation of a MobileNet): op o, a pointwise CONV2D_S8 (1x1, stride 1)
 * whose output is read by the DEPTHWISE_CONV2D_S8 at o + 1 alone, runs inside that depthwise
 * row by row (mt_op_expand_depthwise_s8_forward), so its output needs a ring of KH rows of one
 * sample instead of B whole tensors. Integer sums are exact in any order: the bits are the
 * unfused ops'. Returns the ring's bytes (and after them, with f->consts, the constants its
 * row kernels keep across the rows: mt_op_expand_depthwise_s8_scratch_bytes, a scratch alive
 * with the ring alone), or 0 when op o is no such expansion. Not where a
 * gradient passes through the depthwise: its backward reads the whole expansion (its mask).
 */
uint32_t mt_plan_stream_of(const mt_image *img, const graph_facts *f, uint32_t o)
{
    if (o + 1u >= img->num_ops) return 0;
    mt_op_desc a, b;
    mt_image_op(img, o, &a);
    mt_image_op(img, o + 1u, &b);
    if (a.type != MT_OP_CONV2D_S8 || b.type != MT_OP_DEPTHWISE_CONV2D_S8 || b.inputs[0] != a.outputs[0])
        return 0;
    if (mt_plan_backward_runs(f, &b, o + 1u)) return 0; /* its backward reads the whole expansion */
    mt_tensor_desc w, t, dw;
    mt_image_tensor(img, a.inputs[1], &w);
    mt_image_tensor(img, a.outputs[0], &t);
    mt_image_tensor(img, b.inputs[1], &dw);
    if (w.dims[1] != 1 || w.dims[2] != 1 || a.params[1] != (1u | 1u << 16)) return 0;
    if ((t.flags & MT_TENSOR_OUTPUT) || read_by_other(img, a.outputs[0], o + 1u)) return 0;
    /* KH rows of [W, C], then (f->consts) the two row kernels' constants (ops/conv_s8.c) */
    return mt_plan_round_up((uint64_t)dw.dims[1] * t.dims[1] * t.dims[2]) +
           (f->consts ? mt_op_expand_depthwise_s8_scratch_bytes(t.dims[2]) : 0u);
}

/*
 * The gradient of a global mean's input as a broadcast. A Mean over P = H·W pixels has
 *   dX[b,p,c] = 0 + dv[b,c] / P    for every pixel p (dv its masked dy; the buffer is zeroed
 *                                   just before the Mean, its first and only writer),
 * one float per sample and channel repeated P times. Where its input x is read by that Mean
 * alone and produced by an op whose backward can read such a gradient, expanding it on the
 * fly, x's gradient is planned as B·C floats and the reader's work area of 5 rows of C instead
 * of B·P·C (MobileNetV2's Conv_1, 4x4x1280: 30,720 bytes instead of 81,920, alive from the Mean's
 * backward to the reader's only). The reader: a pointwise CONV2D_S8 (1x1, stride 1, no padding,
 * ops/conv_s8.c) whose weight does not train (its mask, its bias's gradient and its input's
 * expand the broadcast; a weight gradient would need each pixel's masked dy at once). Every
 * other case keeps the whole buffer. The one place that decides it: the lifetimes and the
 * plan's activation_grad_bytes size the gradient by mt_plan_grad_floats, and the tensor
 * record's grad_broadcast (which the Mean and the reader test) comes from here.
 */
int mt_plan_grad_broadcast(const mt_image *img, const graph_facts *f, uint32_t index)
{
    if (!bit_get(&f->needs_grad, index)) return 0;
    mt_tensor_desc x;
    mt_image_tensor(img, index, &x);
    if ((x.flags & (MT_TENSOR_CONST | MT_TENSOR_INPUT | MT_TENSOR_OUTPUT)) || x.ndim != 3) return 0;
    int input = -1;
    const int32_t mean = mt_plan_only_reader(img, index, &input);
    const int32_t producer = mt_image_producer(img, index);
    if (mean < 0 || producer < 0 || input != 0) return 0;
    mt_op_desc m, a;
    mt_image_op(img, (uint32_t)mean, &m);
    mt_image_op(img, (uint32_t)producer, &a);
    if (m.type != MT_OP_MEAN_S8 || !mt_plan_backward_runs(f, &m, (uint32_t)mean)) return 0;
    if (a.type != MT_OP_CONV2D_S8 || bit_get(&f->trained, a.inputs[1])) return 0;
    mt_tensor_desc w;
    mt_image_tensor(img, a.inputs[1], &w);
    return w.dims[1] == 1 && w.dims[2] == 1 && a.params[1] == (1u | 1u << 16); /* 1x1 at stride 1: no padding */
}

/* Floats before activation `index`'s gradient in its buffer: for a broadcast (above), its
 * reader's work area (its expanded and masked rows, its bias's sums; ops/quant_grad.h), which
 * the reader finds just before the gradient; else 0 */
uint32_t mt_plan_grad_work_floats(const mt_image *img, const graph_facts *f, uint32_t index)
{
    mt_tensor_desc t;
    mt_image_tensor(img, index, &t);
    return mt_plan_grad_broadcast(img, f, index) ? mt_q_broadcast_work_floats(t.dims[t.ndim - 1]) : 0u;
}

/* Floats of activation `index`'s gradient buffer at batch B: B·count, or for a broadcast the
 * work area and B·C */
uint64_t mt_plan_grad_floats(const mt_image *img, const graph_facts *f, uint32_t index, uint32_t B)
{
    mt_tensor_desc t;
    mt_image_tensor(img, index, &t);
    const uint32_t work = mt_plan_grad_work_floats(img, f, index); /* > 0 for a broadcast alone */
    return work ? work + (uint64_t)B * t.dims[t.ndim - 1] : (uint64_t)B * t.count;
}

/* The tensor op o reads in order, row by row: its input, or, for a depthwise that streams its
 * expansion (op o - 1, mt_plan_stream_of), the expansion's input. */
static uint32_t ordered_input(const mt_image *img, const graph_facts *f, uint32_t o, const mt_op_desc *op)
{
    if (o == 0 || !mt_plan_stream_of(img, f, o - 1u)) return op->inputs[0];
    mt_op_desc expand;
    mt_image_op(img, o - 1u, &expand);
    return expand.inputs[0];
}

/*
 * How op o's output may be laid over its input x, the one place that decides it (the
 * lifetimes apply it where x dies at op o; a frozen int8 op: none where a gradient passes
 * through it, whose backward reads x, nor without f->over, which the planner clears where
 * the region is smaller without: mt_memory_plan.over_inputs):
 *
 * MT_OVER_IN_PLACE  an element-wise op (MT_KERNEL_IN_PLACE): y over x, byte for byte.
 * MT_OVER_BAND      the in-place depthwise (MCUNet's and tiny-training's answer to the
 *   largest activations of a MobileNet's first blocks, whose depthwise reads a tensor no
 *   expansion streams): a DEPTHWISE_CONV2D_S8 at stride 1 whose output has its input's shape
 *   (SAME: OH = H, OW = W) writes each output row over the input row of the same index after
 *   copying the input rows it still needs into a band of KH rows after the samples
 *   (mt_op_depthwise_s8_in_place_forward: row oh reads rows oh - PT .. oh - PT + KH - 1, and
 *   PT < KH). *amount: the band's bytes, KH·W·C. Not one whose input streams from an
 *   expansion (a ring already).
 * MT_OVER_SHIFTED   a CONV2D_S8 computed one output row at a time
 *   (mt_op_conv2d_s8_rows_forward): output row oh of sample b, [OW, OC] at
 *   b·OH·OW·OC + oh·OW·OC of y, reads input rows r0 = max(oh·SH - PT, 0) .. of sample b and
 *   those after; placed `d` bytes before x, it writes bytes up to
 *   b·OH·OW·OC + (oh + 1)·OW·OC while x's rows from r0 on start at d + b·H·W·C + r0·W·C, so
 *       d = max over b < B, oh < OH of  b·(OH·OW·OC - H·W·C) + (oh + 1)·OW·OC - r0·W·C,
 *   (linear in b: b = 0 or B - 1), at least 0, in *amount: y and x in max(B·OH·OW·OC,
 *   d + B·H·W·C) bytes. MobileNetV2-w0.35's first convolution (128x128x3 to 64x64x16, stride
 *   2) takes 66,304 bytes instead of 114,688; its first projection (64x64x16 to 64x64x8)
 *   65,536 + 512 instead of 98,304. Only where that is smaller than the two apart.
 *   A depthwise that streams its expansion (mt_plan_stream_of) reads the expansion's input
 *   x [H, W, C] in the same order, a row at a time before the row kernel writes: the same d
 *   with x's C, and its forward unchanged (block 1's: 64x64x8 in, 32x32x48 out, 50,176
 *   bytes instead of 81,920).
 */
int mt_plan_over_input(const mt_image *img, const graph_facts *f, uint32_t o, uint32_t B, uint32_t *amount)
{
    mt_op_desc op;
    mt_image_op(img, o, &op);
    *amount = 0;
    if (mt_op_kernel_for(op.type)->traits & MT_KERNEL_IN_PLACE) return MT_OVER_IN_PLACE;
    if (!f->over) return MT_OVER_NONE; /* the planner's other try (planner.c) */
    const int dw = op.type == MT_OP_DEPTHWISE_CONV2D_S8;
    if ((!dw && op.type != MT_OP_CONV2D_S8) || mt_plan_backward_runs(f, &op, o)) return MT_OVER_NONE;
    if (mt_plan_stream_of(img, f, o)) return MT_OVER_NONE; /* its output is a ring */
    const uint32_t ordered = ordered_input(img, f, o, &op);
    const int streamed = ordered != op.inputs[0];
    mt_tensor_desc x, y, w;
    mt_image_tensor(img, op.inputs[0], &x);
    mt_image_tensor(img, op.outputs[0], &y);
    mt_image_tensor(img, op.inputs[1], &w);
    mt_spatial g;
    const uint32_t OC = dw ? w.dims[3] : w.dims[0];
    if (mt_spatial_check_dtype(&op, &x, &y, w.dims[1], w.dims[2], OC, MT_DTYPE_I8, &g) != MT_OK) return MT_OVER_NONE;
    uint32_t C = g.C; /* the channels of what the op reads in order */
    if (streamed) {   /* the expansion's input, read a row at a time as the depthwise needs them */
        mt_tensor_desc e;
        mt_image_tensor(img, ordered, &e);
        C = e.dims[2];
    } else if (dw) {
        if (g.SH != 1 || g.OH != g.H || g.OW != g.W || g.OC != g.C || g.PT >= g.KH) return MT_OVER_NONE;
        *amount = (uint32_t)((uint64_t)g.KH * g.W * g.C);
        return MT_OVER_BAND;
    }
    const int64_t out_sample = (int64_t)g.OH * g.OW * g.OC, in_sample = (int64_t)g.H * g.W * C;
    const int64_t last_b = (int64_t)(B - 1u) * (out_sample - in_sample);
    int64_t d = 0;
    for (uint32_t oh = 0; oh < g.OH; ++oh) {
        const int64_t r0 = (int64_t)oh * g.SH - g.PT;
        const int64_t need = (int64_t)(oh + 1u) * g.OW * g.OC - (r0 > 0 ? r0 : 0) * (int64_t)g.W * C;
        if (need > d) d = need;
        if (need + last_b > d) d = need + last_b;
    }
    if (d >= (int64_t)B * out_sample) return MT_OVER_NONE; /* no smaller than y beside x */
    *amount = (uint32_t)d;
    return MT_OVER_SHIFTED;
}

/*
 * Buffers of the shared region and their lifetimes:
 *   data of an activation: from its producer's forward to its last reader, forward
 *     or backward (kernel->backward_reads says which backward reads what);
 *   gradient of an activation: from its first writer (the loss, or the backward of
 *     its last consumer) to its producer's backward, which reads it;
 *   gradient of a trained weight (fused update only): from the backward of its last
 *     consumer to that of its first, after which the update applies it; one tile of it
 *     for a weight updated in tiles (mt_plan_weight_tile_bytes), over its op's backward.
 * Then element-wise ops whose input dies at that op run in place.
 */
mt_status mt_plan_lifetimes(const mt_image *img, const graph_facts *f, uint32_t B, lifetimes *lt)
{
    const uint32_t T = img->num_tensors, O = img->num_ops;
    lt->sh.count = 0;
    for (uint32_t i = 0; i < T; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        lt->data[i] = lt->grad[i] = MT_NO_BUFFER;
        const uint32_t activation_bytes = mt_plan_round_up((uint64_t)B * t.count * mt_dtype_bytes(t.dtype));
        if (t.flags & MT_TENSOR_CONST) {
            if (f->fused_update && bit_get(&f->trained, i)) {
                const uint32_t tile = mt_plan_weight_tile_bytes(img, f, i, B);
                lt->grad[i] = mt_share_add(&lt->sh, tile ? tile : mt_plan_round_up((uint64_t)t.count * 4u), 0xFFFFu, 0);
                if (lt->grad[i] == MT_NO_BUFFER) return MT_ERR_UNSUPPORTED;
            }
            continue;
        }
        if (!mt_plan_persistent_activation(&t)) {
            const int32_t producer = mt_image_producer(img, i);
            const uint16_t born = producer < 0 ? 0u : mt_plan_forward_time((uint32_t)producer); /* < 0: input */
            const uint32_t ring = producer < 0 ? 0u : mt_plan_stream_of(img, f, (uint32_t)producer); /* streamed */
            lt->data[i] = mt_share_add(&lt->sh, ring ? ring : activation_bytes, born, born);
            if (lt->data[i] == MT_NO_BUFFER) return MT_ERR_UNSUPPORTED;
        }
        if (bit_get(&f->needs_grad, i)) { /* gradients are f32 */
            lt->grad[i] = mt_share_add(&lt->sh, mt_plan_round_up(mt_plan_grad_floats(img, f, i, B) * 4u), 0xFFFFu, 0);
            if (lt->grad[i] == MT_NO_BUFFER) return MT_ERR_UNSUPPORTED;
        }
    }
    /* the loss reads the logits of a fused final activation and writes the first gradient */
    const uint16_t L = mt_plan_loss_time(O);
    if (f->fused_op >= 0) {
        mt_op_desc op;
        mt_image_op(img, (uint32_t)f->fused_op, &op);
        const uint32_t z = op.inputs[0];
        if (lt->data[z] != MT_NO_BUFFER) mt_share_touch(&lt->sh, lt->data[z], L);
        if (lt->grad[z] != MT_NO_BUFFER) mt_share_touch(&lt->sh, lt->grad[z], L);
    } else if (lt->grad[f->output] != MT_NO_BUFFER) {
        mt_share_touch(&lt->sh, lt->grad[f->output], L);
    }
    for (uint32_t o = 0; o < O; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        const int runs = mt_plan_backward_runs(f, &op, o);
        const uint32_t grads = mt_plan_grad_inputs_of(f, &op);
        const uint32_t reads = runs ? mt_op_kernel_for(op.type)->backward_reads(&op, grads) : 0u;
        const uint16_t bt = mt_plan_backward_time(O, o);
        const int streamed = mt_plan_stream_of(img, f, o) != 0; /* its inputs are read in o + 1's forward */
        for (int k = 0; k < op.num_inputs; ++k) {
            const uint32_t x = op.inputs[k];
            if (x == MT_NO_TENSOR) continue;
            if (lt->data[x] != MT_NO_BUFFER) {
                mt_share_touch(&lt->sh, lt->data[x], mt_plan_forward_time(streamed ? o + 1u : o));
                if (reads & (1u << k)) mt_share_touch(&lt->sh, lt->data[x], bt);
            }
            if (runs && lt->grad[x] != MT_NO_BUFFER) mt_share_touch(&lt->sh, lt->grad[x], bt);
        }
        const uint32_t y = op.outputs[0];
        if (runs) {
            if ((reads & MT_READS_OUTPUT) && lt->data[y] != MT_NO_BUFFER) mt_share_touch(&lt->sh, lt->data[y], bt);
            if (lt->grad[y] != MT_NO_BUFFER) mt_share_touch(&lt->sh, lt->grad[y], bt);
        }
    }
    /* Outputs over inputs, in op order (an op's input has its final layout when the op is
     * reached): where x's bytes (their whole root) are read by nothing after this op's
     * forward, y takes them as the op's kernel allows (mt_plan_over_input) */
    for (uint32_t o = 0; o < O; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        const uint32_t y = op.outputs[0];
        lt->over[o] = MT_OVER_NONE;
        const uint32_t x = ordered_input(img, f, o, &op);
        if (x == MT_NO_TENSOR || lt->data[x] == MT_NO_BUFFER || lt->data[y] == MT_NO_BUFFER) continue;
        const uint16_t root = mt_share_root(&lt->sh, lt->data[x]);
        if (lt->sh.buf[root].end != mt_plan_forward_time(o)) continue;
        mt_tensor_desc tx, ty;
        mt_image_tensor(img, x, &tx);
        mt_image_tensor(img, y, &ty);
        const uint64_t own_x = (uint64_t)B * tx.count * mt_dtype_bytes(tx.dtype);
        const uint64_t own_y = (uint64_t)B * ty.count * mt_dtype_bytes(ty.dtype);
        const uint32_t sx = mt_share_shift(&lt->sh, lt->data[x]); /* x's place in its root */
        uint32_t amount = 0;
        const int over = mt_plan_over_input(img, f, o, B, &amount);
        if (over == MT_OVER_IN_PLACE && mt_plan_round_up(own_x) == lt->sh.buf[lt->data[y]].bytes) {
            mt_share_alias_at(&lt->sh, lt->data[y], root, sx);
        } else if (over == MT_OVER_BAND && own_x == own_y) {
            mt_share_grow(&lt->sh, lt->data[y], mt_plan_round_up(own_y + amount)); /* y, then the band */
            mt_share_alias_at(&lt->sh, lt->data[y], root, sx);
        } else if (over == MT_OVER_SHIFTED) {
            mt_share_alias_at(&lt->sh, root, lt->data[y], amount > sx ? amount - sx : 0u); /* x >= amount in */
        } else {
            continue;
        }
        lt->over[o] = (uint8_t)over;
    }
    return MT_OK;
}

/* The output channels of an int8 weight that an int8 op's backward reads dequantized (Conv2D,
 * DepthwiseConv2D, FullyConnected whose backward runs and computes its input's gradient;
 * ops/quant_grad.h), else 0: the planner
 * decodes its scales for that backward, one f32 a channel (mt_q_weight_scales). A weight two
 * such ops share (a per-tensor one may be read as [1, KH, KW, C] by both a Conv2D and a
 * depthwise) gets the most channels either reads. */
uint32_t mt_plan_int8_weight_channels(const mt_image *img, const graph_facts *f, uint32_t index)
{
    uint32_t channels = 0;
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (op.type != MT_OP_CONV2D_S8 && op.type != MT_OP_DEPTHWISE_CONV2D_S8 && op.type != MT_OP_DENSE_S8) continue;
        if (op.inputs[1] != index || !mt_plan_backward_runs(f, &op, o)) continue;
        /* a frozen weight's scales serve its input's gradient alone (the mask reads the
         * requantization, a trained weight keeps its own record: plan_qas.c): none where the
         * input needs none (a layer whose bias alone trains, MobileNetV2's Conv_1: 5,120 bytes) */
        if (!bit_get(&f->needs_grad, op.inputs[0])) continue;
        mt_tensor_desc w;
        mt_image_tensor(img, index, &w);
        const uint32_t read = op.type == MT_OP_DEPTHWISE_CONV2D_S8 ? w.dims[3] : w.dims[0];
        if (read > channels) channels = read;
    }
    return channels;
}

/* How many ops lay their output over their input with a band or a shift
 * (mt_memory_plan.over_inputs; in place element-wise ops not counted). */
uint32_t mt_plan_over_inputs(const mt_image *img, const lifetimes *lt)
{
    uint32_t n = 0;
    for (uint32_t o = 0; o < img->num_ops; ++o) n += lt->over[o] == MT_OVER_BAND || lt->over[o] == MT_OVER_SHIFTED;
    return n;
}

/* The int8 part's share of the activations: the most bytes of int8 activations live at once
 * over the step (persistent int8 inputs always; the others over their lifetimes, which reach
 * the backward of an int8 op a gradient passes through when it reads them). */
uint64_t mt_plan_int8_peak(const mt_image *img, const lifetimes *lt, uint32_t B)
{
    uint64_t persistent = 0;
    uint8_t counted[MT_PLAN_MAX_BUFFERS] = {0}; /* the int8 activations' buffers */
    for (uint32_t i = 0; i < img->num_tensors; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if (t.dtype != MT_DTYPE_I8 || (t.flags & MT_TENSOR_CONST)) continue;
        if (lt->data[i] != MT_NO_BUFFER)
            counted[lt->data[i]] = 1;
        else
            persistent += mt_plan_round_up((uint64_t)B * t.count); /* an int8 model input, written by the caller */
    }
    return persistent + mt_share_peak(&lt->sh, counted);
}
