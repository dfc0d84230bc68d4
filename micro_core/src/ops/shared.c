/*
 * What more than one op uses: reference kernels (the bias gradient of Dense and the
 * convolutions; the dx += dy of Add, Reshape and Concatenation; Concatenation's row join,
 * float and int8), a gradient's clear and the graph adapters' shared checks. Always built,
 * whichever ops MT_OPS selects, so that leaving an op's source file out never takes a kernel
 * another op needs.
 */
#include <string.h>

#include "mt_fma.h"
#include "ops/kernel.h"
#include "ops/ops.h"

/* dbias[c] += Σ_p dy[p, c] over P positions (rows, or rows × pixels), summed in ascending p
 * into a register before the += (the order every target repeats). Shared by Dense and the
 * convolutions. */
void mt_op_bias_f32_backward_ref(const float *dy, float *dbias, size_t P, uint32_t C)
{
    uint32_t c = 0;
    for (; c + 4 <= C; c += 4) { /* four channels side by side: each its own sum, in ascending p */
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        const float *row = dy + c;
        for (size_t p = 0; p < P; ++p, row += C) a0 += row[0], a1 += row[1], a2 += row[2], a3 += row[3];
        dbias[c] += a0, dbias[c + 1] += a1, dbias[c + 2] += a2, dbias[c + 3] += a3;
    }
    for (; c < C; ++c) {
        float acc = 0.0f;
        for (size_t p = 0; p < P; ++p) acc += dy[p * C + c];
        dbias[c] += acc;
    }
}

/* dx[i] += dy[i] (Add's backward for each operand; Reshape's, Concatenation's and Pad's too).
 * The FPU cores' and Helium's kernels: ops/dsp/gradient_dsp.c, ops/mve/gradient_mve.c. */
void mt_op_add_f32_accumulate_ref(const float *dy, float *dx, size_t N)
{
    for (size_t i = 0; i < N; ++i) dx[i] += dy[i];
}

/* p[0..n) = +0.0f (a step clears every activation gradient it writes: 167 KB a step for the
 * 8 x 8 CNN of benchmarks/arm_ops.py; ops/dsp/ and ops/mve/ store many floats at a time) */
void mt_grad_clear_f32_ref(float *p, size_t n)
{
    memset(p, 0, n * sizeof(float));
}

/* ---- shared pieces of the graph adapters ---- */

size_t mt_no_scratch(const mt_image *img, const mt_op_desc *op, uint32_t batch)
{
    (void)img, (void)op, (void)batch;
    return 0; /* the reference kernels accumulate in registers */
}

mt_status mt_check_bias_of(const mt_image *img, const mt_op_desc *op, uint32_t units, uint8_t dtype)
{
    if (op->num_inputs < 3 || op->inputs[2] == MT_NO_TENSOR) return MT_OK;
    mt_tensor_desc b;
    mt_image_tensor(img, op->inputs[2], &b);
    if (b.dtype != dtype || !(b.flags & MT_TENSOR_CONST)) return MT_ERR_SHAPE;
    if (b.ndim != 1 || b.dims[0] != units) return MT_ERR_SHAPE;
    return MT_OK;
}

mt_status mt_check_bias(const mt_image *img, const mt_op_desc *op, uint32_t units)
{
    return mt_check_bias_of(img, op, units, MT_DTYPE_F32);
}

const mt_tensor_rt *mt_bias_of(const mt_op_desc *op, const mt_tensor_rt *t)
{
    return (op->num_inputs == 3 && op->inputs[2] != MT_NO_TENSOR) ? &t[op->inputs[2]] : NULL;
}

uint32_t mt_reads_nothing(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op, (void)grad_inputs;
    return 0;
}

uint32_t mt_reads_output(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op, (void)grad_inputs;
    return MT_READS_OUTPUT;
}

void mt_concat_last_dim(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, size_t value_bytes)
{
    mt_tensor_rt *y = &t[op->outputs[0]];
    const uint32_t C = mt_last_dim(y);
    const size_t rows = (size_t)n * (y->count / C);
    unsigned char *out = (unsigned char *)(void *)y->mutable_data;
    size_t offset = 0;
    for (int k = 0; k < op->num_inputs; ++k) {
        const mt_tensor_rt *x = &t[op->inputs[k]];
        const unsigned char *in = (const unsigned char *)(const void *)x->data;
        const size_t width = mt_last_dim(x) * value_bytes;
        for (size_t r = 0; r < rows; ++r) memcpy(out + (r * C) * value_bytes + offset, in + r * width, width);
        offset += width;
    }
}

int mt_params_zero(const mt_op_desc *op)
{
    return (op->params[0] | op->params[1] | op->params[2] | op->params[3]) == 0;
}

mt_status mt_unary_f32_operands(const mt_image *img, const mt_op_desc *op, mt_tensor_desc *x, mt_tensor_desc *y)
{
    if (op->num_inputs != 1 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    mt_image_tensor(img, op->inputs[0], x);
    mt_image_tensor(img, op->outputs[0], y);
    if (x->dtype != MT_DTYPE_F32 || y->dtype != MT_DTYPE_F32) return MT_ERR_SHAPE;
    if (x->flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED; /* constant folding is the converter's job */
    return MT_OK;
}

mt_status mt_check_unary_f32(const mt_image *img, const mt_op_desc *op, int same_shape)
{
    mt_tensor_desc x, y;
    const mt_status st = mt_unary_f32_operands(img, op, &x, &y);
    if (st != MT_OK) return st;
    if (x.count != y.count) return MT_ERR_SHAPE;
    if (same_shape) {
        if (x.ndim != y.ndim) return MT_ERR_SHAPE;
        for (int d = 0; d < x.ndim; ++d)
            if (x.dims[d] != y.dims[d]) return MT_ERR_SHAPE;
    }
    return MT_OK;
}

mt_status mt_check_concat_last_dim(const mt_image *img, const mt_op_desc *op, mt_concat_input_ok input_ok)
{
    if (op->num_inputs < 2 || op->num_outputs != 1 || !mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    mt_tensor_desc y;
    mt_image_tensor(img, op->outputs[0], &y);
    uint32_t channels = 0;
    for (int k = 0; k < op->num_inputs; ++k) {
        if (op->inputs[k] == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
        mt_tensor_desc x;
        mt_image_tensor(img, op->inputs[k], &x);
        if (!input_ok(img, &x, &y) || x.ndim != y.ndim) return MT_ERR_SHAPE;
        if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
        for (int d = 0; d + 1 < y.ndim; ++d)
            if (x.dims[d] != y.dims[d]) return MT_ERR_SHAPE;
        channels += x.dims[x.ndim - 1];
    }
    return channels == y.dims[y.ndim - 1] ? MT_OK : MT_ERR_SHAPE;
}

mt_status mt_check_plain_unary_f32(const mt_image *img, const mt_op_desc *op)
{
    if (!mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    return mt_check_unary_f32(img, op, 0);
}

mt_status mt_check_plain_unary_f32_shaped(const mt_image *img, const mt_op_desc *op)
{
    if (!mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    return mt_check_unary_f32(img, op, 1);
}

/* dx[j] += Σ_r dz[r]·W[r][offset + j] for j < n, each from +0 in ascending r over the R
 * rows of `row` elements of w (mt_weight_row): Dense's input gradient (offset 0, n = I, ops/dense.c)
 * and a Conv2D tap's (ops/conv2d.c, built without Dense too). Four sums at a time, each its own
 * register, so that the rows are read along their length and each dz value loads once for four
 * multiply-adds (the order of each sum is the same). */
void mt_weight_rows_dx(const mt_tensor_rt *w, const float *dz, uint32_t R, size_t row, size_t offset,
                       uint32_t n, float *dx)
{
    uint32_t j = 0;
    for (; j + 4u <= n; j += 4u) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        for (uint32_t r = 0; r < R; ++r) {
            const float *v = mt_weight_row(w, r, row) + offset + j, d = dz[r];
            a0 = mt_fmaf(d, v[0], a0), a1 = mt_fmaf(d, v[1], a1);
            a2 = mt_fmaf(d, v[2], a2), a3 = mt_fmaf(d, v[3], a3);
        }
        dx[j] += a0, dx[j + 1] += a1, dx[j + 2] += a2, dx[j + 3] += a3;
    }
    for (; j < n; ++j) {
        float a = 0.0f;
        for (uint32_t r = 0; r < R; ++r) a = mt_fmaf(dz[r], mt_weight_row(w, r, row)[offset + j], a);
        dx[j] += a;
    }
}
