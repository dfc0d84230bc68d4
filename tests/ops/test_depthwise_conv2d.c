/*
 * DepthwiseConv2D (ops/depthwise_conv2d.c, depth multiplier 1) against a double reference and
 * central finite differences (conv_gradcheck_util.h's cases). Its siblings: the kernel table's
 * cases (boards/app/siblings_spatial.c, run by tests/core/test_kernel_siblings.c).
 */
#include "conv_gradcheck_util.h"

int main(void)
{
    /* where the generator stood after the Conv2D cases when one program ran both: each case
     * draws the numbers it always did */
    mt_test_seed(761792533u);
    check_convolutions(1);
    return MT_TEST_END();
}
