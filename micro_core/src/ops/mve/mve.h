/*
 * Helium (MVE) kernels for Armv8.1-M cores with the floating-point extension (Cortex-M55): the
 * mve column of the kernel table (select/kernels.def), which select/target.h picks when the compiler
 * targets MVE with float (__ARM_FEATURE_MVE & 2; MT_MVE_KERNELS then, and the files of ops/mve/
 * and optimizers/optimizers_mve.c compile to nothing elsewhere). Their prototypes are the
 * rows' (select/kernels.h); the family's own helpers are in mve_flags.h and depthwise_mve.h.
 *
 * Exact bits: every sum keeps the reference's order (vector lanes run across independent
 * outputs), each term of a layer sum one VFMA, the fused multiply-add the reference's mt_fmaf
 * computes (mt_fma.h: a·b + acc rounded once). Two differences remain: MVE floating point
 * flushes subnormal inputs and results to zero, and makes every NaN result the default NaN,
 * where the scalar FPU and every other target keep subnormals and carry an input NaN's sign
 * and payload through. So each kernel clears FPSCR's cumulative flags (sticky: a loop may
 * clear them once, and again only after a block that set them), computes a block of sums in
 * registers, and reads FPSCR before storing: IDC (a subnormal input was flushed) or UFC (a
 * subnormal result was flushed) sends that block, or the whole op for kernels that overwrite
 * their output, to the portable scalar code (its multiply-adds fused too: mt_fmaf, the scalar
 * FPU's VFMA), which computes the reference's bits. A VFMA rounds once, so its exact product
 * is never flushed: only an input (IDC) or the rounded sum (UFC) can be, and a sum that could
 * have been a subnormal input of the next term was flushed, and flagged, as a result first.
 * NaN rule: a block whose results hold a NaN (each result vector compared with itself,
 * mve_flags.h's mt_mve_nan) is recomputed the same way, so a NaN output has the reference's
 * bits (where two NaNs meet in one sum, which one wins is the compiled operand order's, on any
 * target). Without subnormals and NaNs the vector arithmetic (VFMA included) is IEEE
 * round-to-nearest, the same as the scalar FPU's. (Comparisons: VCMP's LT and LE conditions
 * hold for a NaN, unlike C's < and <=; test with GT or GE and swapped operands.)
 *
 * No float code here is vectorized by the compiler: GCC treats MVE as IEEE arithmetic and,
 * from -O2 on, turns straight-line lanes (four scalar square roots and divisions, say) and
 * loops into VMUL/VSUB that flush where no flag is read. The core compiles with
 * -fno-tree-vectorize on 32-bit ARM (micro_core/CMakeLists.txt, micropython.mk), and these
 * files, which raise themselves to -O2, say `#pragma GCC optimize("O2", "no-tree-vectorize")`.
 */
#ifndef MT_OPS_MVE_MVE_H
#define MT_OPS_MVE_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "select/kernels.h" /* MT_MVE_KERNELS; the kernels' prototypes (base_mve) */

#endif /* MT_OPS_MVE_MVE_H */
