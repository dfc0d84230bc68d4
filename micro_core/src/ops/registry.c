/* Op type -> kernel. Adding an op: one file in ops/, one line here. */
#include "ops/kernel.h"

extern const mt_op_kernel mt_kernel_dense;
extern const mt_op_kernel mt_kernel_relu;
extern const mt_op_kernel mt_kernel_sigmoid;
extern const mt_op_kernel mt_kernel_tanh;
extern const mt_op_kernel mt_kernel_softmax;
extern const mt_op_kernel mt_kernel_conv2d;
extern const mt_op_kernel mt_kernel_depthwise_conv2d;
extern const mt_op_kernel mt_kernel_max_pool2d;
extern const mt_op_kernel mt_kernel_average_pool2d;
extern const mt_op_kernel mt_kernel_global_average_pool;
extern const mt_op_kernel mt_kernel_reshape;
extern const mt_op_kernel mt_kernel_add;
extern const mt_op_kernel mt_kernel_concatenation;
extern const mt_op_kernel mt_kernel_relu6;
extern const mt_op_kernel mt_kernel_leaky_relu;

const mt_op_kernel *mt_op_kernel_for(uint32_t type)
{
    switch (type) {
    case MT_OP_DENSE: return &mt_kernel_dense;
    case MT_OP_RELU: return &mt_kernel_relu;
    case MT_OP_SIGMOID: return &mt_kernel_sigmoid;
    case MT_OP_TANH: return &mt_kernel_tanh;
    case MT_OP_SOFTMAX: return &mt_kernel_softmax;
    case MT_OP_CONV2D: return &mt_kernel_conv2d;
    case MT_OP_DEPTHWISE_CONV2D: return &mt_kernel_depthwise_conv2d;
    case MT_OP_MAX_POOL2D: return &mt_kernel_max_pool2d;
    case MT_OP_AVERAGE_POOL2D: return &mt_kernel_average_pool2d;
    case MT_OP_GLOBAL_AVERAGE_POOL: return &mt_kernel_global_average_pool;
    case MT_OP_RESHAPE: return &mt_kernel_reshape;
    case MT_OP_ADD: return &mt_kernel_add;
    case MT_OP_CONCATENATION: return &mt_kernel_concatenation;
    case MT_OP_RELU6: return &mt_kernel_relu6;
    case MT_OP_LEAKY_RELU: return &mt_kernel_leaky_relu;
    default: return NULL;
    }
}

size_t mt_no_scratch(const mt_image *img, const mt_op_desc *op, uint32_t batch)
{
    (void)img, (void)op, (void)batch;
    return 0; /* the reference kernels accumulate in registers */
}

mt_status mt_check_bias(const mt_image *img, const mt_op_desc *op, uint32_t units)
{
    if (op->num_inputs < 3 || op->inputs[2] == MT_NO_TENSOR) return MT_OK;
    mt_tensor_desc b;
    mt_image_tensor(img, op->inputs[2], &b);
    if (b.dtype != MT_DTYPE_F32 || !(b.flags & MT_TENSOR_CONST)) return MT_ERR_SHAPE;
    if (b.ndim != 1 || b.dims[0] != units) return MT_ERR_SHAPE;
    return MT_OK;
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

int mt_params_zero(const mt_op_desc *op)
{
    return (op->params[0] | op->params[1] | op->params[2] | op->params[3]) == 0;
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
