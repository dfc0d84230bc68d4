/*
 * Plan-time checks shared by the int8 inference ops (ops/quant.h): the operands' dtypes,
 * quantization records and requantization tables. Always built, like shared.c, so that any
 * selection of int8 ops (CMake's MT_OPS) links.
 */
#include "ops/quant_grad.h"

mt_status mt_q_per_tensor(const mt_image *img, const mt_tensor_desc *t, float *scale, int32_t *zero_point)
{
    mt_quant q;
    if (t->dtype != MT_DTYPE_I8 || !mt_image_quant(img, t, &q) || q.channels != 1) return MT_ERR_SHAPE;
    *scale = mt_quant_scale(&q, 0);
    *zero_point = mt_quant_zero_point(&q, 0);
    return MT_OK;
}

mt_status mt_q_same_quant(const mt_image *img, const mt_tensor_desc *a, const mt_tensor_desc *b)
{
    float sa, sb;
    int32_t za, zb;
    if (mt_q_per_tensor(img, a, &sa, &za) != MT_OK || mt_q_per_tensor(img, b, &sb, &zb) != MT_OK)
        return MT_ERR_SHAPE;
    return (sa == sb && za == zb) ? MT_OK : MT_ERR_SHAPE;
}

/* The rows of a CONST I32 [rows, 2] table (NULL if it is not one). */
static const uint8_t *pair_table(const mt_image *img, uint32_t index, uint32_t rows)
{
    mt_tensor_desc r;
    mt_image_tensor(img, index, &r);
    if (r.dtype != MT_DTYPE_I32 || !(r.flags & MT_TENSOR_CONST)) return NULL;
    if (r.ndim != 2 || r.dims[0] != rows || r.dims[1] != 2) return NULL;
    return (const uint8_t *)(const void *)mt_image_const_f32(img, &r);
}

/* word k of row i, read byte-wise: the check runs on any host, whatever its byte order */
static uint32_t pair_word(const uint8_t *table, uint32_t i, uint32_t k)
{
    const uint8_t *p = table + 8 * (size_t)i + 4 * k;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

mt_status mt_q_check_requant(const mt_image *img, uint32_t index, uint32_t rows)
{
    if (index == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    const uint8_t *table = pair_table(img, index, rows);
    if (!table) return MT_ERR_SHAPE;
    for (uint32_t i = 0; i < rows; ++i) {
        const int32_t multiplier = (int32_t)pair_word(table, i, 0), shift = (int32_t)pair_word(table, i, 1);
        if (multiplier < 0 || shift < MT_QUANT_MIN_SHIFT || shift > MT_QUANT_MAX_SHIFT) return MT_ERR_BAD_MODEL;
    }
    return MT_OK;
}

mt_status mt_q_check_fc_requant(const mt_image *img, uint32_t index, uint32_t rows)
{
    if (index == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    const uint8_t *table = pair_table(img, index, rows);
    if (!table) return MT_ERR_SHAPE;
    for (uint32_t i = 0; i < rows; ++i) {
        /* the high word: sign 0 and an exponent field in [1, MT_Q_FC_MAX_EXPONENT] (no zero,
         * subnormal, infinity or NaN). A table of (multiplier, shift) pairs, as DENSE_S8 held
         * before it scaled in double, fails here: a shift of 0..30 is an exponent field of 0,
         * a negative one a sign bit. */
        const uint32_t exponent = pair_word(table, i, 1) >> 20;
        if (exponent == 0u || exponent > MT_Q_FC_MAX_EXPONENT) return MT_ERR_BAD_MODEL;
    }
    return MT_OK;
}

mt_status mt_q_check_weight(const mt_image *img, uint32_t index, uint32_t ndim, uint32_t axis,
                            uint32_t channels)
{
    if (index == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    mt_tensor_desc w;
    mt_image_tensor(img, index, &w);
    if (w.dtype != MT_DTYPE_I8 || !(w.flags & MT_TENSOR_CONST) || w.ndim != ndim) return MT_ERR_SHAPE;
    mt_quant q;
    mt_image_quant(img, &w, &q); /* an I8 tensor has one (checked with the tensor table) */
    if (q.channels != 1 && (q.axis != axis || q.channels != channels)) return MT_ERR_SHAPE;
    if (mt_quant_zero_point(&q, 0) != 0) return MT_ERR_SHAPE; /* symmetric weights */
    return MT_OK;
}

mt_status mt_q_check_bias(const mt_image *img, const mt_op_desc *op, uint32_t units)
{
    return mt_check_bias_of(img, op, units, MT_DTYPE_I32);
}

mt_status mt_q_weighted_operands(const mt_image *img, const mt_op_desc *op, mt_tensor_desc *x, mt_tensor_desc *w,
                                 mt_tensor_desc *y)
{
    if (op->num_inputs != 4 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    if (op->inputs[1] == MT_NO_TENSOR || op->inputs[3] == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    mt_image_tensor(img, op->inputs[0], x);
    mt_image_tensor(img, op->inputs[1], w);
    mt_image_tensor(img, op->outputs[0], y);
    return (x->flags & MT_TENSOR_CONST) ? MT_ERR_UNSUPPORTED : MT_OK;
}

mt_status mt_q_check_packed(const mt_image *img, const mt_tensor_desc *x, const mt_tensor_desc *y, uint32_t packed)
{
    float sx, sy;
    int32_t x_zp, y_zp;
    if (mt_q_per_tensor(img, x, &sx, &x_zp) != MT_OK || mt_q_per_tensor(img, y, &sy, &y_zp) != MT_OK)
        return MT_ERR_SHAPE;
    if (mt_q_param_byte(packed, 0) != x_zp || mt_q_param_byte(packed, 1) != y_zp) return MT_ERR_BAD_MODEL;
    if (mt_q_param_byte(packed, 2) > mt_q_param_byte(packed, 3)) return MT_ERR_BAD_MODEL;
    return MT_OK;
}

uint32_t mt_q_reads_input(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op, (void)grad_inputs;
    return 1u; /* input 0: the int8 values its mask is recomputed from */
}

uint32_t mt_q_reads_inputs_0_1(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op, (void)grad_inputs;
    return 3u; /* Add's two operands, whichever needs the gradient */
}

/* A weighted int8 op's gradients: its input's, and its weight's and bias's where they train
 * (grad set by the planner; a weight updated in tiles gets none here); the input's scale sx
 * after a trained weight's channel scales */
mt_q_grads mt_q_grads_of(const mt_op_desc *op, const mt_tensor_rt *t)
{
    const mt_tensor_rt *w = &t[op->inputs[1]];
    mt_q_grads g;
    g.dx = t[op->inputs[0]].grad;
    g.dw = w->tiled ? NULL : w->grad; /* a tiled one: its tiles (mt_weight_tiling), after */
    g.db = op->inputs[2] == MT_NO_TENSOR ? NULL : t[op->inputs[2]].grad;
    const uint32_t channels = op->type == MT_OP_DEPTHWISE_CONV2D_S8 ? w->dims[3] : w->dims[0];
    g.x_scale = w->trained ? mt_q_weight_scales(w)[channels] : 0.0f;
    return g;
}
