/*
 * Mul and Sub of two operands over R rows of C columns (C = the last dimension, R = every
 * other dimension with the batch):
 *   Mul: y = a · b        da += dy · b,   db += dy · a
 *   Sub: y = a − b        da += dy,       db −= dy
 * Operands: two activations of one shape, or an activation and a frozen constant (CONST
 * without TRAINABLE: a normalisation's mean or scale, a converter's Mul/Sub/Add/Div by a
 * constant) of shape [C] (one value per channel, broadcast over the rows) or [1] (a scalar),
 * on either side. A constant gets no gradient: the kernels read it as it is.
 */
#include "ops/kernel.h"
#include "ops/ops.h"

void mt_op_mul_f32_forward(const float *a, uint32_t a_row, uint32_t a_col, const float *b, uint32_t b_row,
                           uint32_t b_col, float *y, size_t R, uint32_t C)
{
    for (size_t r = 0; r < R; ++r)
        for (uint32_t j = 0; j < C; ++j)
            y[r * C + j] = a[r * a_row + (size_t)j * a_col] * b[r * b_row + (size_t)j * b_col];
}

/* dx[r, j] += dy[r, j] · other[r, j] (other read at [r·o_row + j·o_col]) */
void mt_op_mul_f32_backward(const float *other, uint32_t o_row, uint32_t o_col, const float *dy, float *dx,
                            size_t R, uint32_t C)
{
    for (size_t r = 0; r < R; ++r)
        for (uint32_t j = 0; j < C; ++j)
            dx[r * C + j] += dy[r * C + j] * other[r * o_row + (size_t)j * o_col];
}

void mt_op_sub_f32_forward(const float *a, uint32_t a_row, uint32_t a_col, const float *b, uint32_t b_row,
                           uint32_t b_col, float *y, size_t R, uint32_t C)
{
    for (size_t r = 0; r < R; ++r)
        for (uint32_t j = 0; j < C; ++j)
            y[r * C + j] = a[r * a_row + (size_t)j * a_col] - b[r * b_row + (size_t)j * b_col];
}

void mt_op_sub_f32_backward(const float *dy, float *dx, size_t N)
{
    for (size_t i = 0; i < N; ++i) dx[i] -= dy[i];
}

/* ---- graph adapters ---- */

static int same_shape(const mt_tensor_desc *a, const mt_tensor_desc *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; ++d)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

static mt_status binary_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 2 || op->num_outputs != 1 || !mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    if (op->inputs[0] == MT_NO_TENSOR || op->inputs[1] == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    mt_tensor_desc in[2], y;
    mt_image_tensor(img, op->inputs[0], &in[0]);
    mt_image_tensor(img, op->inputs[1], &in[1]);
    mt_image_tensor(img, op->outputs[0], &y);
    if (in[0].dtype != MT_DTYPE_F32 || in[1].dtype != MT_DTYPE_F32 || y.dtype != MT_DTYPE_F32) return MT_ERR_SHAPE;
    const int const0 = (in[0].flags & MT_TENSOR_CONST) != 0, const1 = (in[1].flags & MT_TENSOR_CONST) != 0;
    if (const0 && const1) return MT_ERR_UNSUPPORTED; /* constant folding is the converter's job */
    const uint32_t C = y.dims[y.ndim - 1];
    for (int k = 0; k < 2; ++k) {
        const mt_tensor_desc *x = &in[k];
        if (!(x->flags & MT_TENSOR_CONST)) {
            if (!same_shape(x, &y)) return MT_ERR_SHAPE;
            continue;
        }
        if (x->flags & MT_TENSOR_TRAINABLE) return MT_ERR_UNSUPPORTED; /* constants are not trained here */
        if (x->ndim != 1 || (x->dims[0] != 1 && x->dims[0] != C)) return MT_ERR_SHAPE;
    }
    return MT_OK;
}

/* How an operand is read: an activation row by row, a constant of C values per column, of
 * one value everywhere. */
static void steps_of(const mt_tensor_rt *x, uint32_t C, uint32_t *row, uint32_t *col)
{
    if (!(x->flags & MT_TENSOR_CONST)) *row = C, *col = 1;
    else *row = 0, *col = x->count == 1 ? 0u : 1u;
}

typedef struct binary_view {
    const mt_tensor_rt *a, *b;
    mt_tensor_rt *y;
    uint32_t a_row, a_col, b_row, b_col, C;
    size_t R;
} binary_view;

static void view_of(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, binary_view *v)
{
    v->a = &t[op->inputs[0]], v->b = &t[op->inputs[1]], v->y = &t[op->outputs[0]];
    v->C = mt_last_dim(v->y);
    v->R = (size_t)n * (v->y->count / v->C);
    steps_of(v->a, v->C, &v->a_row, &v->a_col);
    steps_of(v->b, v->C, &v->b_row, &v->b_col);
}

/* Mul and Sub read their operands alike; the op's type picks the elementwise kernel */
static void binary_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    binary_view v;
    view_of(op, t, n, &v);
    if (op->type == MT_OP_MUL)
        mt_op_mul_f32_forward(v.a->data, v.a_row, v.a_col, v.b->data, v.b_row, v.b_col, v.y->mutable_data, v.R, v.C);
    else
        mt_op_sub_f32_forward(v.a->data, v.a_row, v.a_col, v.b->data, v.b_row, v.b_col, v.y->mutable_data, v.R, v.C);
}

/* Only an activation has a gradient, so dx is always of y's shape. a and b may be the same
 * tensor (x · x): each term adds its part. */
static void mul_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    binary_view v;
    view_of(op, t, n, &v);
    if (v.a->grad) mt_op_mul_f32_backward(v.b->data, v.b_row, v.b_col, v.y->grad, v.a->grad, v.R, v.C);
    if (v.b->grad) mt_op_mul_f32_backward(v.a->data, v.a_row, v.a_col, v.y->grad, v.b->grad, v.R, v.C);
}

static void sub_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    binary_view v;
    view_of(op, t, n, &v);
    if (v.a->grad) mt_kernel_add_f32_accumulate(v.y->grad, v.a->grad, v.R * v.C);
    if (v.b->grad) mt_op_sub_f32_backward(v.y->grad, v.b->grad, v.R * v.C);
}

/* da needs b and db needs a (a constant operand has no buffer to keep) */
static uint32_t mul_reads(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op;
    return ((grad_inputs & 1u) ? 2u : 0u) | ((grad_inputs & 2u) ? 1u : 0u);
}

const mt_op_kernel mt_kernel_mul = {binary_check, mt_no_scratch, binary_forward, mul_backward,
                                    mul_reads, MT_KERNEL_IN_PLACE};
const mt_op_kernel mt_kernel_sub = {binary_check, mt_no_scratch, binary_forward, sub_backward,
                                    mt_reads_nothing, MT_KERNEL_IN_PLACE};
