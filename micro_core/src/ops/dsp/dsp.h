/*
 * Where the scalar assembly loops of conv2d_dsp.h and depthwise_conv2d_dsp.h run: every Cortex-M core
 * with a single-precision FPU (FPv4/FPv5: M4F, M7, M33, and the M55). dot_dsp.h's guard leaves
 * the M55 out (Helium has its own Dense kernels); these loops need only the scalar FPU, which
 * the M55 has beside Helium, and compute what they compute on the M4F: each term a VFMA (a·b
 * + s rounded once, mt_fma.h), subnormals and NaN payloads as the scalar reference has
 * them (FPSCR's FZ and DN govern scalar code alike on every core; only Helium's vector
 * arithmetic always flushes and returns the default NaN). On the M55 the S registers are the
 * Q registers' lanes (s4n..s4n+3 = qn): the loops' clobber lists name every S register they
 * write, which tells the compiler that the Q registers holding them are clobbered too.
 */
#ifndef MT_OPS_FAST_VFP_SCALAR_H
#define MT_OPS_FAST_VFP_SCALAR_H

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4) && \
    defined(__thumb2__) && !defined(MT_NO_VFP_DOT)
#define MT_VFP_SCALAR 1
#else
#define MT_VFP_SCALAR 0
#endif

#endif /* MT_OPS_FAST_VFP_SCALAR_H */
