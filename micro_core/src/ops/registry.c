/* Op type -> kernel. Adding an op: one file in ops/, one line here. */
#include "ops/kernel.h"

extern const mt_op_kernel mt_kernel_dense;
extern const mt_op_kernel mt_kernel_relu;
extern const mt_op_kernel mt_kernel_sigmoid;
extern const mt_op_kernel mt_kernel_tanh;
extern const mt_op_kernel mt_kernel_softmax;

const mt_op_kernel *mt_op_kernel_for(uint32_t type)
{
    switch (type) {
    case MT_OP_DENSE: return &mt_kernel_dense;
    case MT_OP_RELU: return &mt_kernel_relu;
    case MT_OP_SIGMOID: return &mt_kernel_sigmoid;
    case MT_OP_TANH: return &mt_kernel_tanh;
    case MT_OP_SOFTMAX: return &mt_kernel_softmax;
    default: return NULL;
    }
}

mt_status mt_check_unary_f32(const mt_image *img, const mt_op_desc *op, int same_shape)
{
    if (op->num_inputs != 1 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.dtype != MT_DTYPE_F32 || y.dtype != MT_DTYPE_F32) return MT_ERR_SHAPE;
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED; /* constant folding is the converter's job */
    if (x.count != y.count) return MT_ERR_SHAPE;
    if (same_shape) {
        if (x.ndim != y.ndim) return MT_ERR_SHAPE;
        for (int d = 0; d < x.ndim; ++d)
            if (x.dims[d] != y.dims[d]) return MT_ERR_SHAPE;
    }
    return MT_OK;
}
