/*
 * Transpose: a pure layout change of each sample (the batch stays first), e.g. an ONNX
 * model's NCHW input [C, H, W] to the core's NHWC [H, W, C] (perm 1, 2, 0) and back (2, 0, 1).
 *   y[i_0, .., i_{n-1}] = x[j] with j_{perm[k]} = i_k      (axis k of y is axis perm[k] of x)
 *   dx[j] += dy[i]                                          (the same pairs of elements)
 * params[0]: perm[k] in bits 4k..4k+3 for k < ndim (1..4), higher bits 0.
 * The kernels see every sample as 4-D: a sample of fewer dimensions gets leading axes of
 * size 1 that stay where they are.
 */
#include "ops/kernel.h"
#include "ops/ops.h"

/* Element strides of x for each axis of y, and y's dims. */
static void strides_for(const uint32_t X[4], const uint32_t perm[4], size_t stride[4], uint32_t Y[4])
{
    size_t xs[4];
    xs[3] = 1;
    for (int d = 2; d >= 0; --d) xs[d] = xs[d + 1] * X[d + 1];
    for (int k = 0; k < 4; ++k) stride[k] = xs[perm[k]], Y[k] = X[perm[k]];
}

/* Walks y in order, each sample at a time, with the offset of the same element in x: the
 * forward copies it (y[o] = x[j]), the backward adds the gradient back (dx[j] += dy[o]); the
 * pairs (o, j) are the same both ways. from/to: x/y forward, dy/dx backward. Inlined into
 * both, so each has its own loop without the test of the direction. */
static inline __attribute__((always_inline)) void transpose_pairs(const float *from, float *to, uint32_t B,
                                                                  const uint32_t X[4], const uint32_t perm[4],
                                                                  int backward)
{
    size_t s[4];
    uint32_t Y[4];
    strides_for(X, perm, s, Y);
    const size_t count = (size_t)X[0] * X[1] * X[2] * X[3];
    for (uint32_t b = 0; b < B; ++b) {
        const size_t at = (size_t)b * count;
        size_t o = 0;
        for (uint32_t i0 = 0; i0 < Y[0]; ++i0)
            for (uint32_t i1 = 0; i1 < Y[1]; ++i1)
                for (uint32_t i2 = 0; i2 < Y[2]; ++i2)
                    for (uint32_t i3 = 0; i3 < Y[3]; ++i3, ++o) {
                        const size_t j = at + i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
                        if (backward) to[j] += from[at + o];
                        else to[at + o] = from[j];
                    }
    }
}

void mt_op_transpose_f32_forward(const float *x, float *y, uint32_t B, const uint32_t X[4],
                                 const uint32_t perm[4])
{
    transpose_pairs(x, y, B, X, perm, 0);
}

void mt_op_transpose_f32_backward(const float *dy, float *dx, uint32_t B, const uint32_t X[4],
                                  const uint32_t perm[4])
{
    transpose_pairs(dy, dx, B, X, perm, 1);
}

/* ---- graph adapter ---- */

static uint32_t axis_of(const mt_op_desc *op, int k)
{
    return (op->params[0] >> (4 * k)) & 0xFu;
}

static mt_status transpose_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->params[1] || op->params[2] || op->params[3]) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    const mt_status st = mt_unary_f32_operands(img, op, &x, &y);
    if (st != MT_OK) return st;
    if (x.ndim != y.ndim) return MT_ERR_SHAPE;
    const int n = x.ndim;
    if ((op->params[0] >> (4 * n)) != 0) return MT_ERR_BAD_MODEL; /* n <= 4: a shift of at most 16 */
    uint32_t seen = 0;
    for (int k = 0; k < n; ++k) {
        const uint32_t p = axis_of(op, k);
        if (p >= (uint32_t)n || (seen & (1u << p))) return MT_ERR_BAD_MODEL; /* not a permutation */
        seen |= 1u << p;
        if (y.dims[k] != x.dims[p]) return MT_ERR_SHAPE;
    }
    return MT_OK;
}

/* x's dims and the permutation as 4-D (leading axes of size 1 that stay) */
static void geometry(const mt_op_desc *op, const mt_tensor_rt *x, uint32_t X[4], uint32_t perm[4])
{
    uint32_t n = 0;
    while (n < MT_MAX_DIMS && x->dims[n] != 0) ++n; /* the runtime dims end in zeros */
    const uint32_t lead = 4u - n;
    for (uint32_t k = 0; k < 4; ++k) {
        X[k] = k < lead ? 1u : x->dims[k - lead];
        perm[k] = k < lead ? k : lead + axis_of(op, (int)(k - lead));
    }
}

static void transpose_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    uint32_t X[4], perm[4];
    const mt_tensor_rt *x = &t[op->inputs[0]];
    geometry(op, x, X, perm);
    mt_op_transpose_f32_forward(x->data, t[op->outputs[0]].mutable_data, n, X, perm);
}

static void transpose_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    uint32_t X[4], perm[4];
    mt_tensor_rt *x = &t[op->inputs[0]];
    if (!x->grad) return;
    geometry(op, x, X, perm);
    mt_op_transpose_f32_backward(t[op->outputs[0]].grad, x->grad, n, X, perm);
}

const mt_op_kernel mt_kernel_transpose = {transpose_check, mt_no_scratch, transpose_forward,
                                          transpose_backward, mt_reads_nothing, 0};
