/* The AVX2 build of conv2d_backward_avx512.c: the same kernels over avx2_shim.h (ops/x86/x86.h) */
#define MT_X86_SHIM_AVX2 1
#include "conv2d_backward_avx512.c"
