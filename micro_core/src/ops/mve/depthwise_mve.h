/*
 * What the Helium DepthwiseConv2D kernels share (ops/mve/depthwise_conv2d_mve.c, the forward;
 * depthwise_conv2d_backward_mve.c, the gradients): the loop of VFMA terms (fused, mt_fma.h)
 * over runs of taps.
 */
#ifndef MT_OPS_ARM_DEPTHWISE_MVE_H
#define MT_OPS_ARM_DEPTHWISE_MVE_H

#include "ops/mve/mve.h"
#include "ops/mve/mve_flags.h"
#include "ops/dsp/depthwise_conv2d_dsp.h"
#include "ops/ops.h"
#include "ops/spatial.h"

/* one term: s = fma(a, b, s) (a from [pa], b from [pb], both then 16 bytes on) */
#define DW_TERM1(s) \
    "vldrw.u32 q5, [%[pb]], #16\n\tvldrw.u32 q6, [%[pa]], #16\n\tvfma.f32 %q[" s "], q6, q5\n\t"
/* the same term for two pixels that share b: the second's a from [pa2], its sum t */
#define DW_TERM2(s, t)                                                                                              \
    "vldrw.u32 q5, [%[pb]], #16\n\tvldrw.u32 q6, [%[pa]], #16\n\tvldrw.u32 q7, [%[pa2]], #16\n\t"                 \
    "vfma.f32 %q[" s "], q6, q5\n\tvfma.f32 %q[" t "], q7, q5\n\t"

/*
 * n taps, each G vectors of a (x) and b (W) at pa, pb (and a at pa2 for a second pixel, P = 2),
 * the next tap `extra` bytes past the G vectors (strided: C > 4G): s0..s3 hold the G sums of
 * the pixel (P = 1), or s0, s1 the first pixel's and s1 / s2, s3 the second's (P = 2, G <= 2).
 * Per tap and vector two or three VLDRW (post-increment) and a VFMA per pixel: 11 instructions
 * for 16 MACs with G = 2, P = 2.
 */
static inline __attribute__((always_inline)) void dw_taps(const float *pa, const float *pa2, const float *pb,
                                                          uint32_t n, uint32_t extra, const uint32_t G,
                                                          const uint32_t P, const int strided, float32x4_t *s)
{
    float32x4_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    __asm volatile("wls lr, %[n], 2f\n"
                   "1:\n\t"
                   ".if %c[P] == 1\n\t"
                   DW_TERM1("s0")
                   ".if %c[G] >= 2\n\t" DW_TERM1("s1") ".endif\n\t"
                   ".if %c[G] >= 3\n\t" DW_TERM1("s2") ".endif\n\t"
                   ".if %c[G] >= 4\n\t" DW_TERM1("s3") ".endif\n\t"
                   ".elseif %c[G] == 1\n\t"
                   DW_TERM2("s0", "s1")
                   ".else\n\t"
                   DW_TERM2("s0", "s2")
                   DW_TERM2("s1", "s3")
                   ".endif\n\t"
                   ".if %c[strided]\n\t"
                   "add %[pa], %[extra]\n\t"
                   "add %[pb], %[extra]\n\t"
                   ".if %c[P] == 2\n\t"
                   "add %[pa2], %[extra]\n\t"
                   ".endif\n\t"
                   ".endif\n\t"
                   "le lr, 1b\n"
                   "2:\n"
                   : [s0] "+w"(s0), [s1] "+w"(s1), [s2] "+w"(s2), [s3] "+w"(s3), [pa] "+r"(pa), [pa2] "+r"(pa2),
                     [pb] "+r"(pb)
                   : [n] "r"(n), [extra] "r"(extra), [G] "n"(G), [P] "n"(P), [strided] "n"(strided)
                   : "q5", "q6", "q7", "lr", "memory");
    s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

#endif /* MT_OPS_ARM_DEPTHWISE_MVE_H */
