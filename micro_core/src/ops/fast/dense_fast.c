/*
 * Optimized siblings of the Dense reference kernels (ops/dense.c): the same sums in the
 * same order, so the same bits on every target (tests/core/test_kernel_siblings.c holds
 * them to it), arranged for the hardware. Glossary as in ops/ops.h.
 */
#include "ops/fast/fast.h"
#include "ops/ops.h"

/*
 * The same sums as mt_op_dense_f32_forward, bit for bit: each y[b,u] still adds its terms
 * by ascending i from 0 and then the bias. Four outputs are computed side by side, so four
 * independent addition chains keep the FPU busy where one chain waits on each add.
 */
void mt_op_dense_f32_forward_blocked(const float *x, const float *w, const float *bias, float *y,
                                     uint32_t B, uint32_t I, uint32_t U)
{
    for (uint32_t b = 0; b < B; ++b) {
        const float *xb = x + (size_t)b * I;
        float *yb = y + (size_t)b * U;
        uint32_t u = 0;
        for (; u + 4 <= U; u += 4) {
            const float *w0 = w + (size_t)u * I, *w1 = w0 + I, *w2 = w1 + I, *w3 = w2 + I;
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
            for (uint32_t i = 0; i < I; ++i) {
                const float xi = xb[i];
                a0 += xi * w0[i];
                a1 += xi * w1[i];
                a2 += xi * w2[i];
                a3 += xi * w3[i];
            }
            yb[u] = bias ? a0 + bias[u] : a0;
            yb[u + 1] = bias ? a1 + bias[u + 1] : a1;
            yb[u + 2] = bias ? a2 + bias[u + 2] : a2;
            yb[u + 3] = bias ? a3 + bias[u + 3] : a3;
        }
        if (u < U) mt_op_dense_f32_forward(xb, w + (size_t)u * I, bias ? bias + u : NULL, yb + u, 1, I, U - u);
    }
}

/*
 * The same sums as mt_op_dense_f32_backward, element for element and in the same order
 * (each starts at 0 and adds its terms by ascending u or b, then is added to the gradient),
 * so the bits are the same; the loops are turned so the innermost one runs along contiguous
 * rows of x, W and the gradients, which caches well and vectorizes without reassociating.
 * acc: I floats of scratch.
 */
void mt_op_dense_f32_backward_rows(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                   float *dbias, uint32_t B, uint32_t I, uint32_t U, float *acc)
{
    if (dx) {
        for (uint32_t b = 0; b < B; ++b) {
            const float *dyb = dy + (size_t)b * U;
            for (uint32_t i = 0; i < I; ++i) acc[i] = 0.0f;
            for (uint32_t u = 0; u < U; ++u) {
                const float g = dyb[u], *wu = w + (size_t)u * I;
                for (uint32_t i = 0; i < I; ++i) acc[i] += g * wu[i];
            }
            float *dxb = dx + (size_t)b * I;
            for (uint32_t i = 0; i < I; ++i) dxb[i] += acc[i];
        }
    }
    if (dw) {
        for (uint32_t u = 0; u < U; ++u) {
            for (uint32_t i = 0; i < I; ++i) acc[i] = 0.0f;
            for (uint32_t b = 0; b < B; ++b) {
                const float g = dy[(size_t)b * U + u], *xb = x + (size_t)b * I;
                for (uint32_t i = 0; i < I; ++i) acc[i] += g * xb[i];
            }
            float *dwu = dw + (size_t)u * I;
            for (uint32_t i = 0; i < I; ++i) dwu[i] += acc[i];
        }
    }
    if (dbias) mt_op_bias_f32_backward(dy, dbias, B, U);
}

size_t mt_op_dense_f32_scratch_bytes(uint32_t B, uint32_t I, uint32_t U)
{
    (void)B, (void)U;
    return (size_t)I * sizeof(float); /* the row accumulators of the _rows backward */
}
