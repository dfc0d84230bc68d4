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
