/*
 * DENSE_S8's backward (ops/dense_s8.c, the straight-through estimator of ops/quant_grad.h):
 * the mask against the forward run with a widened clamp, dx bit for bit against the float
 * Dense's reference backward on the dequantized weights, and central finite differences of the
 * fake-quantized layer's surrogate (int8_gradcheck_util.h's check_layer). Its forward: LiteRT's
 * kernel (tests/ops/test_dense_s8.py), the requantization against double arithmetic
 * (tests/core/test_int8_quant.c) and the kernel table's int8 cases (test_int8_siblings.c).
 */
#include "int8_gradcheck_util.h"

int main(void)
{
    /* where the generator stood after the Conv2D cases when one program ran both: the case
     * draws the numbers it always did */
    mt_test_seed(150167572u);
    check_layer("dense_s8", LAYER_DENSE, 0, 0, 24, 7, 0, 0, 0);
    return MT_TEST_END();
}
