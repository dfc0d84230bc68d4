/*
 * DepthwiseConv2D, depth multiplier 1, NHWC (TFLite's layouts):
 *   x [B, H, W, C], W [1, KH, KW, C], b [C], y [B, OH, OW, C]
 *   y[b,oh,ow,c] = act( Σ_{kh,kw} x[b, oh·SH + kh - PT, ow·SW + kw - PL, c] · W[0,kh,kw,c] + b[c] )
 */
#include "mt_fma.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_REFERENCE_KERNELS
void mt_op_depthwise_conv2d_f32_forward_ref(const float *x, const float *w, const float *bias, float *y,
                                            uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * g->C;
        for (uint32_t c = 0; c < g->C; ++c) {
            float acc = 0.0f;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                acc = mt_fmaf(x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c],
                             w[((size_t)kh * g->KW + kw) * g->C + c], acc);
            }
            yp[c] = bias ? acc + bias[c] : acc;
        }
    }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * g->C);
}

/*
 * With dz = dy masked by the fused activation's derivative (in place):
 *   dx[b,ih,iw,c] += Σ_{oh,ow,kh,kw : tap} dz[b,oh,ow,c] · W[0,kh,kw,c]
 *   dW[0,kh,kw,c] += Σ_{b,oh,ow} dz[b,oh,ow,c] · x[b, tap, tap, c]
 *   db[c]         += Σ_{b,oh,ow} dz[b,oh,ow,c]
 */
void mt_op_depthwise_conv2d_f32_backward_ref(const float *x, const float *w, const float *y, float *dy,
                                             float *dx, float *dw, float *dbias, uint32_t B,
                                             const mt_spatial *g)
{
    mt_fused_activation_backward(g->activation, y, dy, (size_t)B * g->OH * g->OW * g->C);
    if (dx) {
        MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
            const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * g->C;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
                const float *wp = w + ((size_t)kh * g->KW + kw) * g->C;
                for (uint32_t c = 0; c < g->C; ++c) dxp[c] = mt_fmaf(dyp[c], wp[c], dxp[c]);
            }
        }
    }
    if (dw) {
        for (uint32_t kh = 0; kh < g->KH; ++kh)
            for (uint32_t kw = 0; kw < g->KW; ++kw)
                for (uint32_t c = 0; c < g->C; ++c) {
                    float acc = 0.0f;
                    int32_t ih, iw;
                    for (uint32_t b = 0; b < B; ++b)
                        MT_SPATIAL_FOR_OUTPUTS(g, kh, kw, oh, ow, ih, iw) {
                            acc = mt_fmaf(dy[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c],
                                         x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c], acc);
                        }
                    dw[((size_t)kh * g->KW + kw) * g->C + c] += acc;
                }
    }
    if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, (size_t)B * g->OH * g->OW, g->C);
}
#endif /* MT_REFERENCE_KERNELS */

/* ---- graph adapter ---- */

static mt_status depthwise_check(const mt_image *img, const mt_op_desc *op)
{
    mt_tensor_desc x, w, y;
    mt_status st = mt_conv_operands(img, op, &x, &w, &y);
    if (st != MT_OK) return st;
    if (w.dims[0] != 1) return MT_ERR_SHAPE;
    if (w.dims[3] != x.dims[2]) return MT_ERR_UNSUPPORTED; /* depth multiplier other than 1 */
    mt_spatial g;
    if ((st = mt_spatial_check(op, &x, &y, w.dims[1], w.dims[2], x.dims[2], &g)) != MT_OK) return st;
    return mt_check_bias(img, op, x.dims[2]);
}

static void depthwise_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_conv_view v;
    mt_conv_runtime(op, t, &v);
    mt_kernel_depthwise_conv2d_f32_forward(v.x->data, v.w->data, v.b ? v.b->data : NULL, v.y->mutable_data, n,
                                           &v.g);
}

static void depthwise_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_conv_view v;
    mt_conv_runtime(op, t, &v);
    mt_kernel_depthwise_conv2d_f32_backward(v.x->data, v.w->data, v.y->data, v.y->grad, v.x->grad, v.w->grad,
                                            v.b ? v.b->grad : NULL, n, &v.g);
}

/* dW needs x; a fused activation's derivative needs y */
static uint32_t depthwise_reads(const mt_op_desc *op, uint32_t grad_inputs)
{
    return ((grad_inputs & 2u) ? 1u : 0u) | (op->params[3] != MT_FUSED_NONE ? MT_READS_OUTPUT : 0u);
}

const mt_op_kernel mt_kernel_depthwise_conv2d = {depthwise_check, mt_no_scratch,
                                                 depthwise_forward, depthwise_backward, depthwise_reads, 0};
