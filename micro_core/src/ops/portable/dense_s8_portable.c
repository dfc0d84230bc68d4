/*
 * The sibling of the int8 FullyConnected (ops/dense_s8.c): the same integer sums
 * (ops/portable/s8_dot.h) and the same requantization (ops/quant.h's mt_q_fc_scale, LiteRT's
 * double scaling), so the same bytes, on every target.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__arm__)
#pragma GCC optimize("O2") /* the step's cost in an int8 backbone: speed even in -Os firmware */
#endif
#include "select/kernels.h"
#include "ops/portable/s8_dense_rows.h"

void mt_op_dense_s8_forward_portable(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                     int8_t *y, uint32_t B, uint32_t D, uint32_t U, uint32_t packed)
{
    MT_S8_SPREAD_SCRATCH(spread); /* x's halves below MT_S8_SUM_ROWS rows (s8_dense_rows.h) */
    mt_s8_dense_rows(x, w, bias, rq, y, B, D, U, packed, 1, spread, NULL); /* LiteRT's FullyConnected's double scaling */
}
