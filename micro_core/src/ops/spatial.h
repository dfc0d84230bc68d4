/*
 * Geometry shared by the NHWC spatial ops (convolutions and pools): sizes,
 * strides and TFLite padding, decoded once from the image at plan time and
 * again (cheaply) from the runtime tensors in forward/backward.
 */
#ifndef MT_OPS_SPATIAL_H
#define MT_OPS_SPATIAL_H

#include "ops/kernel.h"

typedef struct mt_spatial {
    uint32_t H, W, C;    /* input sample [H, W, C] */
    uint32_t OH, OW, OC; /* output sample [OH, OW, OC] */
    uint32_t KH, KW;     /* window */
    uint32_t SH, SW;     /* strides */
    uint32_t PT, PL;     /* padding before the first row / column */
    uint32_t activation; /* MT_FUSED_* (convolutions) */
} mt_spatial;

/* A pointwise layer (1 x 1, stride 1, no padding): each input pixel is its output pixel's only
 * tap, so the layer is a Dense (a FullyConnected) over its pixels */
static inline int mt_spatial_pointwise(const mt_spatial *g)
{
    return g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PT == 0 && g->PL == 0;
}

/* Input row/column under output position o and window tap k, or -1 in the padding. */
static inline int32_t mt_spatial_tap(uint32_t o, uint32_t k, uint32_t stride, uint32_t pad, uint32_t size)
{
    int64_t i = (int64_t)o * stride + k - pad;
    return (i < 0 || i >= (int64_t)size) ? -1 : (int32_t)i;
}

/* The loops every window op writes, as one statement: the statement after the macro runs once
 * for each in-bounds tap (kh, kw) of output (oh, ow), kh then kw ascending (the reference's
 * order), with ih, iw its input row and column (>= 0). The macro declares kh and kw; ih and iw
 * are the caller's int32_t (`int32_t ih, iw;` before it); `continue` goes on to the next tap.
 * The loops and tests as they were written out, `continue` on a tap in the padding (the
 * Cortex-M3, which runs the reference kernels, runs the same instructions). */
#define MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw)                                          \
    for (uint32_t kh = 0; kh < (g)->KH; ++kh)                                                   \
        if (((ih) = mt_spatial_tap((oh), kh, (g)->SH, (g)->PT, (g)->H)) < 0) continue; else     \
            for (uint32_t kw = 0; kw < (g)->KW; ++kw)                                           \
                if (((iw) = mt_spatial_tap((ow), kw, (g)->SW, (g)->PL, (g)->W)) < 0) continue; else

/* Every output pixel (oh, ow) of every sample b < B, in the order the references' sums run:
 * b, then oh, then ow ascending (a weight gradient summed over the pixels gets its bits from
 * this order); the macro declares b, oh and ow. */
#define MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow)                                                  \
    for (uint32_t b = 0; b < (B); ++b)                                                          \
        for (uint32_t oh = 0; oh < (g)->OH; ++oh)                                               \
            for (uint32_t ow = 0; ow < (g)->OW; ++ow)

/* The same the other way round (the weight gradients): each output (oh, ow) whose tap (kh, kw)
 * is in bounds, oh then ow ascending; the macro declares oh and ow. */
#define MT_SPATIAL_FOR_OUTPUTS(g, kh, kw, oh, ow, ih, iw)                                       \
    for (uint32_t oh = 0; oh < (g)->OH; ++oh)                                                   \
        if (((ih) = mt_spatial_tap(oh, (kh), (g)->SH, (g)->PT, (g)->H)) < 0) continue; else     \
            for (uint32_t ow = 0; ow < (g)->OW; ++ow)                                           \
                if (((iw) = mt_spatial_tap(ow, (kw), (g)->SW, (g)->PL, (g)->W)) < 0) continue; else

/* A pool of 2 x 2 windows at stride 2 that all lie inside the input (VALID, or SAME on even
 * sizes): the taps of output (oh, ow) are input pixels (2·oh, 2·ow) and their right, lower and
 * lower-right neighbours, with no geometry to find per window (pooling_portable.c, pooling_mve.c). */
static inline int mt_spatial_windows_2x2(const mt_spatial *g)
{
    return g->KH == 2 && g->KW == 2 && g->SH == 2 && g->SW == 2 && g->PT == 0 && g->PL == 0 &&
           2 * g->OH <= g->H && 2 * g->OW <= g->W;
}

/* [o0, o1): the outputs along one axis whose tap k is in bounds (a contiguous range). */
void mt_spatial_in_bounds(uint32_t O, uint32_t k, uint32_t stride, uint32_t pad, uint32_t size, uint32_t *o0,
                          uint32_t *o1);

/* [o0, o1): the outputs along one axis all of whose K taps are in bounds. */
void mt_spatial_window_inside(uint32_t O, uint32_t stride, uint32_t pad, uint32_t K, uint32_t size, uint32_t *o0,
                              uint32_t *o1);

/* [k0, k1): the taps of output o along one axis that fall inside [0, size), i = o·stride + k - pad
 * (k < K); k0 == k1 when none does. */
void mt_spatial_tap_range(uint32_t o, uint32_t stride, uint32_t pad, uint32_t K, uint32_t size, uint32_t *k0,
                          uint32_t *k1);

/* Output size along one axis, and the padding before it (TFLite VALID/SAME). */
mt_status mt_spatial_axis(uint32_t in, uint32_t k, uint32_t stride, uint32_t padding, uint32_t *out,
                          uint32_t *pad_before);

/* Output size along one axis with explicit pads: O = (before + in + after - k) / stride + 1.
 * MT_ERR_SHAPE unless every window holds an input element (before < k, and the last window
 * starts before the input ends): a window of padding alone has no maximum and no average. */
mt_status mt_spatial_explicit_axis(uint32_t in, uint32_t k, uint32_t stride, uint32_t before, uint32_t after,
                                   uint32_t *out);

/* Explicit pads of a pool (MT_PADDING_EXPLICIT) in params[3]: one byte each, rows before and
 * after, columns before and after. */
#define MT_POOL_PAD_TOP(p3) ((p3) & 0xFFu)
#define MT_POOL_PAD_BOTTOM(p3) (((p3) >> 8) & 0xFFu)
#define MT_POOL_PAD_LEFT(p3) (((p3) >> 16) & 0xFFu)
#define MT_POOL_PAD_RIGHT(p3) ((p3) >> 24)

/* Decode g from an op whose window is (KH, KW) and whose input is x; checks the
 * params and that y has shape [OH, OW, OC]. */
mt_status mt_spatial_check(const mt_op_desc *op, const mt_tensor_desc *x, const mt_tensor_desc *y,
                           uint32_t KH, uint32_t KW, uint32_t OC, mt_spatial *g);

/* The same for x and y of `dtype` (the int8 ops: MT_DTYPE_I8). */
mt_status mt_spatial_check_dtype(const mt_op_desc *op, const mt_tensor_desc *x, const mt_tensor_desc *y,
                                 uint32_t KH, uint32_t KW, uint32_t OC, uint32_t dtype, mt_spatial *g);

/* Same decoding from runtime tensors (already checked). */
void mt_spatial_runtime(const mt_op_desc *op, const mt_tensor_rt *x, const mt_tensor_rt *y,
                        uint32_t KH, uint32_t KW, mt_spatial *g);

/* Operands common to Conv2D and DepthwiseConv2D, checked: 2 or 3 inputs, one output, no
 * kernel param, W CONST f32 4-D, x 3-D. */
mt_status mt_conv_operands(const mt_image *img, const mt_op_desc *op, mt_tensor_desc *x, mt_tensor_desc *w,
                           mt_tensor_desc *y);

/* The runtime operands of a convolution and its geometry. */
typedef struct mt_conv_view {
    const mt_tensor_rt *x, *w, *b; /* b NULL without bias */
    mt_tensor_rt *y;
    mt_spatial g;
} mt_conv_view;
void mt_conv_runtime(const mt_op_desc *op, mt_tensor_rt *t, mt_conv_view *v);

/* Fused activation on y in place, and its derivative applied to dy in place (dy is the
 * output's own gradient, dead after this op's backward): the references (the x86 kernels have
 * their own, ops/x86/x86.h; a layer's dz and bias gradient together is a slot of the kernel
 * table, mt_kernel_activation_bias_f32_backward). */
void mt_fused_activation_forward(uint32_t activation, float *y, size_t N);
void mt_fused_activation_backward(uint32_t activation, const float *y, float *dy, size_t N);

#endif /* MT_OPS_SPATIAL_H */
