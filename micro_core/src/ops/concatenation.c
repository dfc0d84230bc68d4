/*
 * Concatenation along the last dimension of K = 2..4 inputs:
 *   x_k [R, C_k] -> y [R, Σ C_k]  (R = every leading dimension, batch included)
 *   y[r, off_k + j] = x_k[r, j];   dx_k[r, j] += dy[r, off_k + j]
 */
#include "ops/kernel.h"
#include "ops/ops.h"

static int both_f32(const mt_image *img, const mt_tensor_desc *x, const mt_tensor_desc *y)
{
    (void)img;
    return x->dtype == MT_DTYPE_F32 && y->dtype == MT_DTYPE_F32;
}

static mt_status concat_check(const mt_image *img, const mt_op_desc *op)
{
    return mt_check_concat_last_dim(img, op, both_f32);
}

static void concat_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_concat_last_dim(op, t, n, sizeof(float));
}

static void concat_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *y = &t[op->outputs[0]];
    const uint32_t C = mt_last_dim(y), rows = n * (y->count / C);
    uint32_t offset = 0;
    for (int k = 0; k < op->num_inputs; ++k) {
        mt_tensor_rt *x = &t[op->inputs[k]];
        if (x->grad)
            for (uint32_t r = 0; r < rows; ++r)
                mt_kernel_add_f32_accumulate(y->grad + (size_t)r * C + offset, x->grad + (size_t)r * mt_last_dim(x),
                                             mt_last_dim(x));
        offset += mt_last_dim(x);
    }
}

const mt_op_kernel mt_kernel_concatenation = {concat_check, mt_no_scratch, concat_forward,
                                              concat_backward, mt_reads_nothing, 0};
