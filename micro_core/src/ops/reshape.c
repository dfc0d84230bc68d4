/* Reshape / Flatten: the same elements under another shape. y = x;  dx += dy */
#include <string.h>

#include "ops/kernel.h"
#include "ops/ops.h"

static void reshape_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    float *y = t[op->outputs[0]].mutable_data;
    if (y != x->data) /* planned in place: nothing to move */
        memcpy(y, x->data, (size_t)n * x->count * sizeof(float));
}

static void reshape_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_tensor_rt *x = &t[op->inputs[0]];
    if (x->grad) mt_kernel_add_f32_accumulate(t[op->outputs[0]].grad, x->grad, (size_t)n * x->count);
}

const mt_op_kernel mt_kernel_reshape = {mt_check_plain_unary_f32, mt_no_scratch, reshape_forward,
                                        reshape_backward, mt_reads_nothing, MT_KERNEL_IN_PLACE};
