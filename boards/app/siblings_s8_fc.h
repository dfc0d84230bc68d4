/* FullyConnected's requantization (ops/quant.h's mt_q_fc_scale) against C's double arithmetic:
 * shared by the sibling cases (siblings_s8.c's FullyConnected row, on the host and every board) and the host's
 * exhaustive test (tests/core/test_int8_quant.c). */
#ifndef MT_BOARD_SIBLINGS_S8_FC_H
#define MT_BOARD_SIBLINGS_S8_FC_H

#include <stdint.h>

/* counts a pass, or reports the failure (the sibling walk's mt_sib_check, a test's own) */
typedef void (*s8_check_fn)(int ok, const char *what);

/* LiteRT's reference FullyConnected written out in double: int32(round(double(acc) · e)),
 * round half away from zero, INT32_MIN where the value does not fit (x86-64's conversion) */
int32_t s8_fc_by_double(int32_t acc, double e);

/* DENSE_S8's rq row of e: its binary64 bits, low word first */
void s8_fc_words(double e, int32_t rq[2]);

/* A scale e = m·2^-k and a sum acc whose exact product lies less than half a double's ulp below
 * a rounding tie (x.5), so that the double product is the tie and rounds away from zero where
 * the exact one rounds toward it; from two random words, k in [33, 81]. 0 when the words give
 * no significand in [2^52, 2^53) (try others). */
int s8_fc_window(uint32_t k, uint32_t r1, uint32_t r2, double *e, int32_t *acc);

/* mt_q_fc_scale and the sibling's run requantization (s8_dot.h's mt_s8_fc_requant_block)
 * against s8_fc_by_double at ties, in the windows above and on random scales and sums; one
 * check() each, their number returned */
unsigned s8_fc_rounding_cases(s8_check_fn check);

#endif /* MT_BOARD_SIBLINGS_S8_FC_H */
