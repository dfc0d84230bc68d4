/*
 * int8 ops that move values without arithmetic; input and output share one scale and
 * zero point (TFLite requires it of RESHAPE, and the converter gives it to CONCATENATION
 * and PAD of int8 tensors; anything else is refused by check):
 *   RESHAPE_S8        y = x under another shape (runs in place when the planner allows)
 *   CONCATENATION_S8  2..4 inputs joined along the last dimension
 *   PAD_S8            x [H, W, C] -> y [H + t + b, W + l + r, C + f + k], the border filled
 *                     with the zero point (the quantized 0.0, TFLite's default pad value);
 *                     params[0] = t | b << 16, params[1] = l | r << 16, params[2] = f | k << 16,
 *                     params[3] = the zero point (its byte)
 * RESHAPE_S8 has a backward: dx += dy (f32 gradients, ops/quant_grad.h); CONCATENATION_S8
 * and PAD_S8 are inference only.
 */
#include <string.h>

#include "ops/quant.h"

/* ---- RESHAPE_S8 ---- */

static mt_status reshape_s8_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 1 || op->num_outputs != 1 || !mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    if (x.count != y.count) return MT_ERR_SHAPE;
    return mt_q_same_quant(img, &x, &y);
}

static void reshape_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    int8_t *y = mt_q_s8_out(&t[op->outputs[0]]);
    if (y != mt_q_s8(x)) memcpy(y, mt_q_s8(x), (size_t)n * x->count); /* else planned in place */
}

static void reshape_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    /* No gradient wanted where the input comes from no trained op (as the float RESHAPE). */
    if (x->grad) mt_kernel_add_f32_accumulate(t[op->outputs[0]].grad, x->grad, (size_t)n * x->count);
}

/* ---- CONCATENATION_S8 ---- */

static int same_quant(const mt_image *img, const mt_tensor_desc *x, const mt_tensor_desc *y)
{
    return mt_q_same_quant(img, x, y) == MT_OK;
}

static mt_status concatenation_s8_check(const mt_image *img, const mt_op_desc *op)
{
    return mt_check_concat_last_dim(img, op, same_quant);
}

static void concatenation_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_concat_last_dim(op, t, n, sizeof(int8_t));
}

/* ---- PAD_S8 ---- */

static mt_status pad_s8_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 1 || op->num_outputs != 1 || (op->params[3] >> 8) != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    if (x.ndim != 3 || y.ndim != 3) return MT_ERR_SHAPE;
    for (int d = 0; d < 3; ++d) {
        const uint64_t grown = (uint64_t)x.dims[d] + (op->params[d] & 0xFFFFu) + (op->params[d] >> 16);
        if (grown != y.dims[d]) return MT_ERR_SHAPE;
    }
    if (mt_q_same_quant(img, &x, &y) != MT_OK) return MT_ERR_SHAPE;
    float s;
    int32_t zy;
    mt_q_per_tensor(img, &y, &s, &zy);
    return mt_q_param_byte(op->params[3], 0) == zy ? MT_OK : MT_ERR_BAD_MODEL;
}

void mt_op_pad_s8_forward(const int8_t *x, int8_t *y, uint32_t B, const uint32_t in[3], const uint32_t out[3],
                          const uint32_t before[3], int8_t value)
{
    const size_t out_count = (size_t)out[0] * out[1] * out[2];
    for (uint32_t b = 0; b < B; ++b) {
        int8_t *yb = y + (size_t)b * out_count;
        memset(yb, (uint8_t)value, out_count);
        for (uint32_t h = 0; h < in[0]; ++h)
            for (uint32_t w = 0; w < in[1]; ++w)
                memcpy(yb + (((size_t)(h + before[0]) * out[1] + (w + before[1])) * out[2] + before[2]),
                       x + (((size_t)b * in[0] + h) * in[1] + w) * in[2], in[2]);
    }
}

static void pad_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_tensor_rt *y = &t[op->outputs[0]];
    const uint32_t before[3] = {op->params[0] & 0xFFFFu, op->params[1] & 0xFFFFu, op->params[2] & 0xFFFFu};
    mt_op_pad_s8_forward(mt_q_s8(x), mt_q_s8_out(y), n, x->dims, y->dims, before,
                         (int8_t)mt_q_param_byte(op->params[3], 0));
}

const mt_op_kernel mt_kernel_reshape_s8 = {reshape_s8_check, mt_no_scratch, reshape_s8_forward, reshape_s8_backward,
                                           mt_reads_nothing, MT_KERNEL_IN_PLACE};
const mt_op_kernel mt_kernel_concatenation_s8 = {concatenation_s8_check, mt_no_scratch, concatenation_s8_forward,
                                                 NULL, NULL, 0};
const mt_op_kernel mt_kernel_pad_s8 = {pad_s8_check, mt_no_scratch, pad_s8_forward, NULL, NULL, 0};
