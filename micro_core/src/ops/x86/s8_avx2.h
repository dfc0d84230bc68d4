/*
 * The AVX2 forms of the int8 siblings' products (s8_avx2.c), for ops/portable/s8_dot.h. Only
 * where MT_X86_KERNELS (ops/x86/x86.h) is 1; called when mt_x86_vector() says the CPU has
 * AVX2.
 */
#ifndef MT_OPS_X86_S8_X86_H
#define MT_OPS_X86_S8_X86_H

#include <stddef.h>
#include <stdint.h>

#include "ops/quant.h"

/* s8_dot.h's mt_s8_dot4_pixels: acc[4·j + r] = start[r] + Σ_{i<D} W[r, i]·x[j·D + i] for n
 * pixels j and four weight rows D bytes apart, wrapping int32 sums */
void mt_s8_dot4_pixels_avx2(const int8_t *x, const int8_t *w, size_t D, uint32_t n, const int32_t start[4],
                            int32_t *acc);

/* s8_dot.h's mt_s8_requant_block: y[j·ys + r] = the requantization of acc[4·j + r] (its bias
 * included) for n pixels and R <= 4 channels */
void mt_s8_requant_block_avx2(const int32_t *acc, uint32_t n, uint32_t R, const mt_q_requant q[4], mt_q_params p,
                              int8_t *y, size_t ys);

/* conv_s8_portable.c's dw_interior_pixels (its portable form's weights: a tap's four at w + 4·tap) */
void mt_s8_dw_pixels_avx2(const int8_t *const row[3], uint32_t rows, uint32_t KW, size_t C, size_t step,
                          const int8_t *w, const int32_t start[4], size_t x0, uint32_t n, int32_t *acc);

#endif
