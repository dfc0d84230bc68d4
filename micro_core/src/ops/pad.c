/*
 * Pad: zeros around the H and W of NHWC samples (ONNX Pad / TFLite PAD in constant mode
 * with value 0, and the explicit pads of a convolution that are not TFLite's SAME/VALID).
 *   x [B, H, W, C] -> y [B, OH, OW, C],  OH = T + H + Bo,  OW = L + W + R
 *   y[b, T + h, L + w, c] = x[b, h, w, c], every other element 0
 *   dx[b, h, w, c] += dy[b, T + h, L + w, c]   (the padding's gradient goes nowhere)
 * params[0] = T | Bo << 16 (rows before | after), params[1] = L | R << 16 (columns).
 */
#include <string.h>

#include "ops/kernel.h"
#include "ops/ops.h"

void mt_op_pad_f32_forward(const float *x, float *y, uint32_t B, uint32_t H, uint32_t W, uint32_t C,
                           uint32_t top, uint32_t bottom, uint32_t left, uint32_t right)
{
    const uint32_t OH = top + H + bottom, OW = left + W + right;
    const size_t row = (size_t)W * C, out_row = (size_t)OW * C;
    memset(y, 0, (size_t)B * OH * out_row * sizeof(float));
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t h = 0; h < H; ++h)
            memcpy(y + ((size_t)b * OH + top + h) * out_row + (size_t)left * C, x + ((size_t)b * H + h) * row,
                   row * sizeof(float));
}

void mt_op_pad_f32_backward(const float *dy, float *dx, uint32_t B, uint32_t H, uint32_t W, uint32_t C,
                            uint32_t top, uint32_t bottom, uint32_t left, uint32_t right)
{
    const uint32_t OH = top + H + bottom, OW = left + W + right;
    const size_t row = (size_t)W * C, out_row = (size_t)OW * C;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t h = 0; h < H; ++h)
            mt_kernel_add_f32_accumulate(dy + ((size_t)b * OH + top + h) * out_row + (size_t)left * C,
                                         dx + ((size_t)b * H + h) * row, row);
}

/* ---- graph adapter ---- */

#define LOW(v) ((v) & 0xFFFFu)
#define HIGH(v) ((v) >> 16)

static mt_status pad_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->params[2] != 0 || op->params[3] != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    const mt_status st = mt_unary_f32_operands(img, op, &x, &y);
    if (st != MT_OK) return st;
    if (x.ndim != 3 || y.ndim != 3) return MT_ERR_SHAPE;
    /* 64-bit sums: a corrupt image's pads never wrap around to the right size */
    const uint64_t oh = (uint64_t)LOW(op->params[0]) + x.dims[0] + HIGH(op->params[0]);
    const uint64_t ow = (uint64_t)LOW(op->params[1]) + x.dims[1] + HIGH(op->params[1]);
    if (y.dims[0] != oh || y.dims[1] != ow || y.dims[2] != x.dims[2]) return MT_ERR_SHAPE;
    return MT_OK;
}

static void pad_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_op_pad_f32_forward(x->data, t[op->outputs[0]].mutable_data, n, x->dims[0], x->dims[1], x->dims[2],
                          LOW(op->params[0]), HIGH(op->params[0]), LOW(op->params[1]), HIGH(op->params[1]));
}

static void pad_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_tensor_rt *x = &t[op->inputs[0]];
    if (!x->grad) return;
    mt_op_pad_f32_backward(t[op->outputs[0]].grad, x->grad, n, x->dims[0], x->dims[1], x->dims[2],
                           LOW(op->params[0]), HIGH(op->params[0]), LOW(op->params[1]), HIGH(op->params[1]));
}

const mt_op_kernel mt_kernel_pad = {pad_check, mt_no_scratch, pad_forward, pad_backward, mt_reads_nothing, 0};
