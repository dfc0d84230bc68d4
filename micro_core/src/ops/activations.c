/* Elementwise activations: ReLU, ReLU6, LeakyReLU, Sigmoid, Tanh over N = rows · D elements.
 * Backward passes read the saved output y where that suffices, so the input need not be kept. */
#include <string.h>

#include "mt_math.h"
#include "ops/kernel.h"
#include "ops/ops.h"

/* written as x < 0 ? 0 : x so that NaN propagates (as in PyTorch) and the
 * non-finite loss it causes stops the step, instead of silently becoming 0 */
void mt_op_relu_f32_forward_ref(const float *x, float *y, size_t N)
{
    for (size_t i = 0; i < N; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

/* dx += dy · [y > 0]  (y > 0 exactly where x > 0; the subgradient at 0 is 0, as in PyTorch) */
void mt_op_relu_f32_backward_ref(const float *y, const float *dy, float *dx, size_t N)
{
    /* a select, not a branch, so compilers vectorize it; where y <= 0, dx keeps its bits
     * (dx + 0 would turn -0 into +0) */
    for (size_t i = 0; i < N; ++i) dx[i] = y[i] > 0.0f ? dx[i] + dy[i] : dx[i];
}

void mt_op_relu6_f32_forward(const float *x, float *y, size_t N)
{
    for (size_t i = 0; i < N; ++i) {
        float v = x[i] < 0.0f ? 0.0f : x[i];
        y[i] = v > 6.0f ? 6.0f : v;
    }
}

/* dx += dy · [0 < y < 6] */
void mt_op_relu6_f32_backward(const float *y, const float *dy, float *dx, size_t N)
{
    for (size_t i = 0; i < N; ++i) dx[i] = (y[i] > 0.0f && y[i] < 6.0f) ? dx[i] + dy[i] : dx[i];
}

/* y = x > 0 ? x : α·x, α >= 0 */
void mt_op_leaky_relu_f32_forward(const float *x, float *y, size_t N, float alpha)
{
    for (size_t i = 0; i < N; ++i) y[i] = x[i] > 0.0f ? x[i] : alpha * x[i];
}

/* dx += dy · (y > 0 ? 1 : α)  (for α >= 0, y > 0 exactly where x > 0) */
void mt_op_leaky_relu_f32_backward(const float *y, const float *dy, float *dx, size_t N, float alpha)
{
    for (size_t i = 0; i < N; ++i) dx[i] += y[i] > 0.0f ? dy[i] : alpha * dy[i];
}

void mt_op_sigmoid_f32_forward(const float *x, float *y, size_t N)
{
    for (size_t i = 0; i < N; ++i) y[i] = mt_sigmoidf(x[i]);
}

/* dσ/dx = σ·(1 - σ), from the saved output */
void mt_op_sigmoid_f32_backward(const float *y, const float *dy, float *dx, size_t N)
{
    for (size_t i = 0; i < N; ++i) dx[i] += dy[i] * (y[i] * (1.0f - y[i]));
}

void mt_op_tanh_f32_forward(const float *x, float *y, size_t N)
{
    for (size_t i = 0; i < N; ++i) y[i] = mt_tanhf(x[i]);
}

/* d tanh/dx = 1 - tanh², from the saved output */
void mt_op_tanh_f32_backward(const float *y, const float *dy, float *dx, size_t N)
{
    for (size_t i = 0; i < N; ++i) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

/* ---- graph adapters ---- */

static float alpha_of(const mt_op_desc *op)
{
    float alpha;
    memcpy(&alpha, &op->params[0], sizeof alpha);
    return alpha;
}

static mt_status leaky_relu_check(const mt_image *img, const mt_op_desc *op)
{
    const float alpha = alpha_of(op);
    if (op->params[1] | op->params[2] | op->params[3]) return MT_ERR_BAD_MODEL;
    if (!mt_isfinitef(alpha) || alpha < 0.0f) return MT_ERR_UNSUPPORTED;
    return mt_check_unary_f32(img, op, 0);
}

#define X (&t[op->inputs[0]])
#define Y (&t[op->outputs[0]])
#define N_ELEMS ((size_t)n * X->count)

/* An elementwise op's adapters: y = f(x) over the batch's elements, and dx += f'(x)·dy read
 * from y (every op here: its derivative is a function of its output) */
#define ELEMENTWISE_ADAPTERS(name, forward_kernel, backward_kernel)                                \
    static void name##_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)  \
    {                                                                                              \
        (void)scratch;                                                                             \
        forward_kernel(X->data, Y->mutable_data, N_ELEMS);                                         \
    }                                                                                              \
    static void name##_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch) \
    {                                                                                              \
        (void)scratch;                                                                             \
        if (X->grad) backward_kernel(Y->data, Y->grad, X->grad, N_ELEMS);                          \
    }

ELEMENTWISE_ADAPTERS(relu, mt_kernel_relu_f32_forward, mt_kernel_relu_f32_backward)
ELEMENTWISE_ADAPTERS(relu6, mt_op_relu6_f32_forward, mt_op_relu6_f32_backward)
ELEMENTWISE_ADAPTERS(sigmoid, mt_op_sigmoid_f32_forward, mt_op_sigmoid_f32_backward)
ELEMENTWISE_ADAPTERS(tanh, mt_op_tanh_f32_forward, mt_op_tanh_f32_backward)
#undef ELEMENTWISE_ADAPTERS

static void leaky_relu_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_op_leaky_relu_f32_forward(X->data, Y->mutable_data, N_ELEMS, alpha_of(op));
}

static void leaky_relu_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    if (X->grad) mt_op_leaky_relu_f32_backward(Y->data, Y->grad, X->grad, N_ELEMS, alpha_of(op));
}

#undef X
#undef Y
#undef N_ELEMS

const mt_op_kernel mt_kernel_relu = {mt_check_plain_unary_f32, mt_no_scratch, relu_forward, relu_backward,
                                     mt_reads_output, MT_KERNEL_IN_PLACE};
const mt_op_kernel mt_kernel_relu6 = {mt_check_plain_unary_f32, mt_no_scratch, relu6_forward, relu6_backward,
                                      mt_reads_output, MT_KERNEL_IN_PLACE};
const mt_op_kernel mt_kernel_leaky_relu = {leaky_relu_check, mt_no_scratch, leaky_relu_forward,
                                           leaky_relu_backward, mt_reads_output, MT_KERNEL_IN_PLACE};
const mt_op_kernel mt_kernel_sigmoid = {mt_check_plain_unary_f32, mt_no_scratch, sigmoid_forward,
                                        sigmoid_backward, mt_reads_output, MT_KERNEL_IN_PLACE};
const mt_op_kernel mt_kernel_tanh = {mt_check_plain_unary_f32, mt_no_scratch, tanh_forward, tanh_backward,
                                     mt_reads_output, MT_KERNEL_IN_PLACE};
