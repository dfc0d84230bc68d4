/*
 * The core's own transcendental functions. glibc and newlib differ in the last
 * bits of expf/logf/tanhf; these are plain float arithmetic (no FMA contraction,
 * fixed evaluation order), so every target computes the same bits.
 * Accuracy: within 2 ulp of the correctly rounded result over the float range.
 */
#ifndef MT_MATH_H
#define MT_MATH_H

#include <stddef.h>
#include <stdint.h>

float mt_expf(float x);
/*
 * p = e^r for mt_expf's reduced argument r (|r| <= ln2/2): its Taylor series to r^7 in Horner's
 * form, the part after the 1 (r + r²·(1/2 + r·(1/6 + ...))) kept apart for accuracy. The
 * operations and their order decide the bits (and the statements' order the code GCC makes),
 * so they are written once for every lane width: mt_expf with float operations and its
 * siblings (ops/mve/exp_mve.c, ops/x86/exp_avx512.c) with their vector ones, ADD(a, b) = a + b,
 * MUL(a, b) = a·b and K(c) the constant c in every lane; p is the caller's variable.
 */
#define MT_EXPF_SERIES(p, r, ADD, MUL, K)                                                        \
    do {                                                                                         \
        (p) = K(1.0f / 5040.0f);                                                                 \
        (p) = ADD(K(1.0f / 720.0f), MUL((r), (p)));                                              \
        (p) = ADD(K(1.0f / 120.0f), MUL((r), (p)));                                              \
        (p) = ADD(K(1.0f / 24.0f), MUL((r), (p)));                                               \
        (p) = ADD(K(1.0f / 6.0f), MUL((r), (p)));                                                \
        (p) = ADD(K(0.5f), MUL((r), (p)));                                                       \
        (p) = ADD((r), MUL(MUL((r), (r)), (p))); /* e^r - 1 */                                   \
        (p) = ADD(K(1.0f), (p));                                                                 \
    } while (0)
/* One row of a softmax, y = e^(x - m) / Σ e^(x - m) with m the largest x (the first of
 * equals), the sum from 0 in ascending order; returns the sum and sets *max to m. The Softmax
 * op and the softmax + cross-entropy loss (which also needs log Σ) both call it, so the loss
 * writes the op's bits and a train step computes the softmax once. */
float mt_softmax_row(const float *x, float *y, uint32_t n, float *max);
float mt_logf(float x);   /* x <= 0 gives -inf (x == 0) or NaN */
float mt_tanhf(float x);
float mt_sigmoidf(float x);
int mt_isfinitef(float x);
/* 1 when all n values are finite: one pass that ORs the exponent test of every element, so a
 * compiler vectorizes it (the step checks every gradient with it before an update) */
int mt_all_finitef(const float *x, size_t n);

#endif /* MT_MATH_H */
