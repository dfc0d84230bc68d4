/*
 * Conv2D's one-channel 3 x 3 forward in the scalar FPU's assembly (conv2d_dsp.h), out of line
 * for the Cortex-M55, whose Helium forward takes it for the strides its own loops do not
 * (ops/mve/conv2d_mve.c) and whose portable forward calls this copy too; the M4F, M7 and M33
 * inline it into the portable forward. Compiles to nothing elsewhere.
 */
#include "ops/dsp/conv2d_dsp.h"

#if MT_VFP_CONV_C1
int mt_conv2d_c1_forward_dsp(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                             const mt_spatial *g)
{
    return mt_vfp_conv2d_c1_forward(x, w, bias, y, B, g);
}
#else
typedef int mt_conv2d_dsp_unused; /* ISO C: a translation unit is not empty */
#endif
