/*
 * Sparse update (mt_train_config.trainable_op_channels; tiny-training, Lin et al. 2022): per
 * op, -1 trains all its weights, 0 its bias only, k > 0 its bias and its first k output
 * channels. The planner asks this file whether a configuration's channel counts make sense
 * and what part of each trained weight trains (session.h, mt_weight_part).
 *
 * An int8 layer trained in place (plan_qas.c) takes channel counts as a float one does: its
 * first k channels get a gradient (the tiled path's rows), momentum and the QAS update, its
 * int32 bias all of them. Of a FullyConnected or a pointwise Conv2D (1 x 1, stride 1, no
 * padding: tiny-training's choice, the pointwise layers of the last blocks), the arena holds
 * the k trained rows of int8 weights alone, the others read in place from the image as a float
 * layer's are: their forward and mask run the int8 kernels (and their siblings) over the two
 * row ranges a row (pixel, sample) at a time, each range's outputs at its offset, and their
 * input gradient sums across both ranges by rows (ops/dense_s8.c, ops/conv_s8.c). Another int8
 * Conv2D or a DepthwiseConv2D keeps its whole int8 weight in the arena (1 byte a weight),
 * frozen rows included, as does a weight with a float master copy (MT_TENSOR_MASTER, 4 bytes a
 * weight more, laid after the whole weight).
 *
 * A float Dense or Conv2D that trains its first k output channels holds only those rows, rows
 * 0..k-1 of its [U, I] / [OC, KH, KW, C] weight, in the arena; the others are read in place
 * from the image (mt_plan_rows_held; ops/kernel.h, mt_weight_row). A DepthwiseConv2D's
 * channels are interleaved ([1, KH, KW, C]: channel c of every tap), so no block of rows is
 * its trained part: its whole weight stays in the arena.
 */
#include "ops/spatial.h"
#include "plan_graph.h"
#include "session.h"

/* The output channels of op's weight (input 1) and whether they are its last dimension, or
 * 0 when the op has no trainable weight of channels: Dense and Conv2D (rows: dims[0]) and
 * DepthwiseConv2D (channels last) train a part of their float weight, and their int8 kinds
 * (FULLY_CONNECTED, CONV_2D incl. 1x1, DEPTHWISE_CONV_2D) a part of an int8 weight trained in
 * place (plan_qas.c: its QAS update over the first k channels, session.c update_part). */
static uint32_t weight_channels(const mt_image *img, const mt_op_desc *op, int *last_axis)
{
    *last_axis = op->type == MT_OP_DEPTHWISE_CONV2D || op->type == MT_OP_DEPTHWISE_CONV2D_S8;
    const int float_op = op->type == MT_OP_DENSE || op->type == MT_OP_CONV2D || op->type == MT_OP_DEPTHWISE_CONV2D;
    const int int8_op =
        op->type == MT_OP_DENSE_S8 || op->type == MT_OP_CONV2D_S8 || op->type == MT_OP_DEPTHWISE_CONV2D_S8;
    if (!float_op && !int8_op) return 0;
    if (op->num_inputs < 2 || op->inputs[1] == MT_NO_TENSOR) return 0;
    mt_tensor_desc w;
    mt_image_tensor(img, op->inputs[1], &w);
    if (w.dtype != (float_op ? MT_DTYPE_F32 : MT_DTYPE_I8) || !(w.flags & MT_TENSOR_TRAINABLE) || w.ndim < 2)
        return 0;
    return *last_axis ? w.dims[w.ndim - 1] : w.dims[0];
}

/* Does an op other than `except` read tensor index? */
static int read_elsewhere(const mt_image *img, uint32_t index, uint32_t except)
{
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        for (int i = 0; i < op.num_inputs; ++i)
            if (op.inputs[i] == index && (o != except || i != 1)) return 1;
    }
    return 0;
}

mt_status mt_plan_check_channels(const mt_image *img, const mt_train_config *cfg, mt_error_detail *where)
{
    const int32_t *channels = cfg->trainable_op_channels;
    if (channels == NULL) return MT_OK;
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (channels[o] < -1) return mt_fail_at(where, MT_ERR_BAD_ARGUMENT, (int32_t)o, op.type, -1);
        if (channels[o] <= 0) continue;
        int last_axis;
        const uint32_t C = weight_channels(img, &op, &last_axis);
        /* an op without a trainable weight of channels, or one whose weight another op reads
         * (its gradient would have terms outside this op's rows) */
        if (C == 0 || read_elsewhere(img, op.inputs[1], o))
            return mt_fail_at(where, MT_ERR_UNSUPPORTED, (int32_t)o, op.type, C ? (int32_t)op.inputs[1] : -1);
        if ((uint32_t)channels[o] > C)
            return mt_fail_at(where, MT_ERR_BAD_ARGUMENT, (int32_t)o, op.type, (int32_t)op.inputs[1]);
    }
    return MT_OK;
}

int mt_plan_op_trains_weight(const mt_train_config *cfg, uint32_t o, const mt_tensor_desc *t)
{
    if (cfg->biases_only && t->ndim != 1) return 0;
    return cfg->trainable_op_channels == NULL || cfg->trainable_op_channels[o] != 0 || t->ndim == 1;
}

uint32_t mt_plan_part_code(const mt_image *img, const int32_t *channels, uint32_t index)
{
    if (channels == NULL) return 0;
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (channels[o] <= 0 || op.num_inputs < 2 || op.inputs[1] != index) continue;
        int last_axis;
        const uint32_t C = weight_channels(img, &op, &last_axis);
        if ((uint32_t)channels[o] >= C) return 0; /* all of them: the whole weight */
        return (uint32_t)channels[o] | (last_axis ? MT_PART_LAST_AXIS : 0u);
    }
    return 0;
}

uint32_t mt_plan_trained_rows(const mt_image *img, const graph_facts *f, uint32_t index)
{
    mt_tensor_desc w;
    mt_image_tensor(img, index, &w);
    const uint32_t code = mt_plan_part_code(img, f->channels, index);
    return code == 0 || (code & MT_PART_LAST_AXIS) ? w.dims[0] : code;
}

/* Whether the int8 op reading weight `index` as its input 1 runs its rows apart (the comment
 * atop): a FullyConnected, or a Conv2D whose window is its input pixel alone */
static int int8_rows_apart(const mt_image *img, uint32_t index)
{
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (op.num_inputs < 2 || op.inputs[1] != index) continue;
        if (op.type == MT_OP_DENSE_S8) return 1;
        if (op.type != MT_OP_CONV2D_S8) return 0;
        mt_tensor_desc x, y, w;
        mt_image_tensor(img, op.inputs[0], &x);
        mt_image_tensor(img, op.outputs[0], &y);
        mt_image_tensor(img, index, &w);
        mt_spatial g;
        return mt_spatial_check_dtype(&op, &x, &y, w.dims[1], w.dims[2], w.dims[0], MT_DTYPE_I8, &g) == MT_OK &&
               mt_spatial_pointwise(&g);
    }
    return 0;
}

uint32_t mt_plan_rows_held(const mt_image *img, const int32_t *channels, uint32_t index)
{
    const uint32_t code = mt_plan_part_code(img, channels, index);
    if (code == 0 || (code & MT_PART_LAST_AXIS)) return 0;
    mt_tensor_desc w;
    mt_image_tensor(img, index, &w);
    if (w.dtype == MT_DTYPE_F32) return code;
    /* an int8 weight trained in place: its rows apart where its op runs them so (above) */
    return !(w.flags & MT_TENSOR_MASTER) && int8_rows_apart(img, index) ? code : 0;
}
