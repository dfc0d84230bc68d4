/* Softmax over the last dimension: R = rows · (D / C) independent rows of C. */
#include "mt_math.h"
#include "ops/kernel.h"
#include "ops/ops.h"

/* y_j = e^(x_j - m) / Σ_k e^(x_k - m), m = max_k x_k (keeps every exponent <= 0) */
void mt_op_softmax_f32_forward(const float *x, float *y, uint32_t R, uint32_t C)
{
    float m;
    for (uint32_t r = 0; r < R; ++r) (void)mt_softmax_row(x + (size_t)r * C, y + (size_t)r * C, C, &m);
}

/* ∂y_j/∂x_k = y_j(δ_jk - y_k)  ⇒  dx_j += y_j · (dy_j - Σ_k dy_k y_k) */
void mt_op_softmax_f32_backward(const float *y, const float *dy, float *dx, uint32_t R, uint32_t C)
{
    for (uint32_t r = 0; r < R; ++r) {
        const float *yr = y + (size_t)r * C, *dyr = dy + (size_t)r * C;
        float *dxr = dx + (size_t)r * C;
        float dot = 0.0f;
        for (uint32_t j = 0; j < C; ++j) dot += dyr[j] * yr[j];
        for (uint32_t j = 0; j < C; ++j) dxr[j] += yr[j] * (dyr[j] - dot);
    }
}

static void softmax_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_tensor_rt *y = &t[op->outputs[0]];
    uint32_t rows = n * (x->count / mt_last_dim(x));
    mt_op_softmax_f32_forward(x->data, y->mutable_data, rows, mt_last_dim(x));
}

static void softmax_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *y = &t[op->outputs[0]];
    if (!x->grad) return;
    uint32_t rows = n * (x->count / mt_last_dim(x));
    mt_op_softmax_f32_backward(y->data, y->grad, x->grad, rows, mt_last_dim(x));
}

const mt_op_kernel mt_kernel_softmax = {mt_check_plain_unary_f32_shaped, mt_no_scratch, softmax_forward,
                                        softmax_backward, mt_reads_output, 1};
