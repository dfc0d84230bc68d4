/*
 * CONV2D_S8 and DEPTHWISE_CONV2D_S8's backward (ops/conv_s8.c, the straight-through estimator of
 * ops/quant_grad.h): the mask against the forward run with a widened clamp, dx bit for bit
 * against the float Conv2D's and DepthwiseConv2D's reference backward on the dequantized
 * weights, and central finite differences of the fake-quantized layer's surrogate
 * (int8_gradcheck_util.h's check_layer), VALID and SAME, strides 1 and 2. Their forward:
 * LiteRT's kernels (tests/ops/test_conv_s8.py) and the kernel table's int8 cases
 * (boards/app/siblings_s8.c, run by tests/core/test_int8_siblings.c).
 */
#include "int8_gradcheck_util.h"

int main(void)
{
    mt_test_seed(40);
    check_layer("conv2d_s8 3x3 SAME stride 2", LAYER_CONV2D, 6, 5, 3, 4, 3, 2, 1);
    check_layer("conv2d_s8 2x2 VALID stride 1", LAYER_CONV2D, 4, 4, 2, 3, 2, 1, 0);
    check_layer("depthwise_conv2d_s8 3x3 SAME", LAYER_DEPTHWISE, 5, 6, 4, 4, 3, 1, 1);
    check_layer("depthwise_conv2d_s8 3x3 VALID stride 2", LAYER_DEPTHWISE, 7, 5, 3, 3, 3, 2, 0);
    return MT_TEST_END();
}
