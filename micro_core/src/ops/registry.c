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
