/* Add: y = a + b (same shapes; residual branches);  da += dy, db += dy (mt_kernel_add_f32_accumulate) */
#include "ops/kernel.h"
#include "ops/ops.h"

void mt_op_add_f32_forward(const float *a, const float *b, float *y, size_t N)
{
    for (size_t i = 0; i < N; ++i) y[i] = a[i] + b[i];
}

static mt_status add_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 2 || op->num_outputs != 1 || !mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    if (op->inputs[1] == MT_NO_TENSOR) return MT_ERR_BAD_MODEL;
    mt_tensor_desc a, b, y;
    mt_image_tensor(img, op->inputs[0], &a);
    mt_image_tensor(img, op->inputs[1], &b);
    mt_image_tensor(img, op->outputs[0], &y);
    if (a.dtype != MT_DTYPE_F32 || b.dtype != MT_DTYPE_F32 || y.dtype != MT_DTYPE_F32) return MT_ERR_SHAPE;
    if ((a.flags | b.flags) & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED; /* no broadcasting of constants */
    if (a.ndim != b.ndim || a.ndim != y.ndim) return MT_ERR_SHAPE;
    for (int d = 0; d < a.ndim; ++d)
        if (a.dims[d] != b.dims[d] || a.dims[d] != y.dims[d]) return MT_ERR_SHAPE;
    return MT_OK;
}

static void add_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *a = &t[op->inputs[0]], *b = &t[op->inputs[1]];
    mt_op_add_f32_forward(a->data, b->data, t[op->outputs[0]].mutable_data, (size_t)n * a->count);
}

static void add_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const float *dy = t[op->outputs[0]].grad;
    const size_t N = (size_t)n * t[op->inputs[0]].count;
    /* a and b may be the same tensor (x + x): each term still adds its dy */
    for (int k = 0; k < 2; ++k) {
        mt_tensor_rt *x = &t[op->inputs[k]];
        if (x->grad) mt_kernel_add_f32_accumulate(dy, x->grad, N);
    }
}

const mt_op_kernel mt_kernel_add = {add_check, mt_no_scratch, add_forward, add_backward,
                                    mt_reads_nothing, MT_KERNEL_IN_PLACE};
