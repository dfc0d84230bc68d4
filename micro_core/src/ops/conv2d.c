/*
 * Conv2D, NHWC activations and OHWI weights (TFLite's layouts):
 *   x [B, H, W, C], W [OC, KH, KW, C], b [OC], y [B, OH, OW, OC]
 *   y[b,oh,ow,oc] = act( Σ_{kh,kw,c} x[b, oh·SH + kh - PT, ow·SW + kw - PL, c] · W[oc,kh,kw,c] + b[oc] )
 * Out-of-bounds input positions are the zero padding and are skipped.
 */
#include <string.h>

#include "mt_fma.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_REFERENCE_KERNELS
void mt_op_conv2d_f32_forward_ref(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                  const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
        for (uint32_t oc = 0; oc < g->OC; ++oc) {
            float acc = 0.0f;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
                const float *wp = w + (((size_t)oc * g->KH + kh) * g->KW + kw) * g->C;
                for (uint32_t c = 0; c < g->C; ++c) acc = mt_fmaf(xp[c], wp[c], acc);
            }
            yp[oc] = bias ? acc + bias[oc] : acc;
        }
    }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * g->OC);
}

/*
 * With dz = dy masked by the fused activation's derivative (in place):
 *   dx[b,ih,iw,c]   += Σ_{oh,ow,oc,kh,kw : tap} dz[b,oh,ow,oc] · W[oc,kh,kw,c]
 *   dW[oc,kh,kw,c]  += Σ_{b,oh,ow} dz[b,oh,ow,oc] · x[b, tap, tap, c]
 *   db[oc]          += Σ_{b,oh,ow} dz[b,oh,ow,oc]
 * dW and db are summed into a register in a fixed order (b, oh, ow) before the +=.
 */
void mt_op_conv2d_f32_backward_ref(const float *x, const float *w, const float *y, float *dy, float *dx,
                                   float *dw, float *dbias, uint32_t B, const mt_spatial *g)
{
    mt_fused_activation_backward(g->activation, y, dy, (size_t)B * g->OH * g->OW * g->OC);
    if (dx) {
        MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
            const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
                for (uint32_t c = 0; c < g->C; ++c) {
                    float acc = 0.0f;
                    for (uint32_t oc = 0; oc < g->OC; ++oc)
                        acc = mt_fmaf(dyp[oc], w[(((size_t)oc * g->KH + kh) * g->KW + kw) * g->C + c], acc);
                    dxp[c] += acc;
                }
            }
        }
    }
    if (dw) {
        for (uint32_t oc = 0; oc < g->OC; ++oc)
            for (uint32_t kh = 0; kh < g->KH; ++kh)
                for (uint32_t kw = 0; kw < g->KW; ++kw)
                    for (uint32_t c = 0; c < g->C; ++c) {
                        float acc = 0.0f;
                        int32_t ih, iw;
                        for (uint32_t b = 0; b < B; ++b)
                            MT_SPATIAL_FOR_OUTPUTS(g, kh, kw, oh, ow, ih, iw) {
                                acc = mt_fmaf(dy[(((size_t)b * g->OH + oh) * g->OW + ow) * g->OC + oc],
                                             x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c], acc);
                            }
                        dw[(((size_t)oc * g->KH + kh) * g->KW + kw) * g->C + c] += acc;
                    }
    }
    if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, (size_t)B * g->OH * g->OW, g->OC);
}
#endif /* MT_REFERENCE_KERNELS */

/* ---- a weight whose first rows alone the arena holds (kernel.h, mt_weight_row) ----
 * Output channel oc's row W[oc] [KH, KW, C] is where mt_weight_row says; the sums are the
 * reference's above, term for term and in order, so the bits are the whole weight's. Not the
 * build's kernels: each reads its weight as one array. */

static void conv2d_forward_rows(const float *x, const mt_tensor_rt *w, const float *bias, float *y, uint32_t B,
                                const mt_spatial *g)
{
    const size_t K = (size_t)g->KH * g->KW * g->C;
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        float *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
        for (uint32_t oc = 0; oc < g->OC; ++oc) {
            const float *row = mt_weight_row(w, oc, K);
            float acc = 0.0f;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                const float *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
                const float *wp = row + ((size_t)kh * g->KW + kw) * g->C;
                for (uint32_t c = 0; c < g->C; ++c) acc = mt_fmaf(xp[c], wp[c], acc);
            }
            yp[oc] = bias ? acc + bias[oc] : acc;
        }
    }
    mt_fused_activation_forward(g->activation, y, (size_t)B * g->OH * g->OW * g->OC);
}

/* dx[b,ih,iw,c] += Σ_oc dz[b,oh,ow,oc]·W[oc,kh,kw,c] per tap, from +0 in ascending oc, dz the
 * dy the kernel has masked by the activation's derivative already */
static void conv2d_dx_rows(const mt_tensor_rt *w, const float *dz, float *dx, uint32_t B, const mt_spatial *g)
{
    const size_t K = (size_t)g->KH * g->KW * g->C;
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        const float *dzp = dz + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
        int32_t ih, iw;
        MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
            float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
            mt_weight_rows_dx(w, dzp, g->OC, K, ((size_t)kh * g->KW + kw) * g->C, g->C, dxp);
        }
    }
}

/* ---- graph adapter ---- */

static mt_status conv2d_check(const mt_image *img, const mt_op_desc *op)
{
    mt_tensor_desc x, w, y;
    mt_status st = mt_conv_operands(img, op, &x, &w, &y);
    if (st != MT_OK) return st;
    if (w.dims[3] != x.dims[2]) return MT_ERR_SHAPE;
    mt_spatial g;
    if ((st = mt_spatial_check(op, &x, &y, w.dims[1], w.dims[2], w.dims[0], &g)) != MT_OK) return st;
    return mt_check_bias(img, op, w.dims[0]);
}

/*
 * A 1 x 1 convolution with stride 1 and no padding is Dense over the pixels: rows B·H·W,
 * in_features C, units OC, W [OC, 1, 1, C] = [OC, C]; every sum (over c forward, over oc for
 * dx, over the pixels in order for dW and the bias) is the same sum in the same order, so
 * the Dense kernels compute the reference's bits (test_kernel_siblings checks it), and they
 * are the faster ones on every target. Only where this build has Dense (MT_OPS).
 */
#ifdef MT_OPS_CONFIG
#include "mt_ops_config.h"
#define CONV_AS_DENSE MT_OP_BUILT_DENSE
#else
#define CONV_AS_DENSE 1
#endif

#if CONV_AS_DENSE
static int pointwise(const mt_spatial *g)
{
    return mt_spatial_pointwise(g);
}
#endif

static void conv2d_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_conv_view v;
    mt_conv_runtime(op, t, &v);
    const float *bias = v.b ? v.b->data : NULL;
#if CONV_AS_DENSE
    if (pointwise(&v.g)) { /* Dense over the pixels, the activation applied as it stores */
        const uint32_t pixels = n * v.g.H * v.g.W;
        mt_dense_f32_forward_rows(v.x->data, v.w, bias, v.y->mutable_data, pixels, v.g.C, v.g.OC, v.g.activation);
        return;
    }
#endif
    if (v.w->rows_held) conv2d_forward_rows(v.x->data, v.w, bias, v.y->mutable_data, n, &v.g);
    else mt_kernel_conv2d_f32_forward(v.x->data, v.w->data, bias, v.y->mutable_data, n, &v.g);
}

static void conv2d_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_conv_view v;
    mt_conv_runtime(op, t, &v);
    float *dbias = v.b ? v.b->grad : NULL;
    float *dw = v.w->tiled ? NULL : v.w->grad; /* tiled: conv2d_grad_rows, after this dx and dz */
    /* a weight whose first rows alone the arena holds: the kernel computes dz, dW and the bias
     * gradient (reading no W without dx: v.w->data, the image's whole weight, is a valid array),
     * then dx from dz through mt_weight_row */
    float *dx = v.w->rows_held ? NULL : v.x->grad;
#if CONV_AS_DENSE
    if (pointwise(&v.g)) { /* dz and the bias gradient in one pass, then Dense's dx and dW */
        const uint32_t pixels = n * v.g.H * v.g.W;
        mt_kernel_activation_bias_f32_backward(v.g.activation, v.y->data, v.y->grad, dbias, pixels, v.g.OC);
        mt_kernel_dense_f32_backward(v.x->data, v.w->data, v.y->grad, dx, dw, NULL, pixels, v.g.C, v.g.OC, 0);
        if (v.w->rows_held && v.x->grad) mt_dense_f32_dx_rows(v.w, v.y->grad, v.x->grad, pixels, v.g.C, v.g.OC);
        return;
    }
#endif
    mt_kernel_conv2d_f32_backward(v.x->data, v.w->data, v.y->data, v.y->grad, dx, dw, dbias, n, &v.g);
    if (v.w->rows_held && v.x->grad) conv2d_dx_rows(v.w, v.y->grad, v.x->grad, n, &v.g);
}

/* dW needs x; a fused activation's derivative needs y */
static uint32_t conv2d_reads(const mt_op_desc *op, uint32_t grad_inputs)
{
    return ((grad_inputs & 2u) ? 1u : 0u) | (op->params[3] != MT_FUSED_NONE ? MT_READS_OUTPUT : 0u);
}

const mt_op_kernel mt_kernel_conv2d = {conv2d_check, mt_no_scratch, conv2d_forward,
                                       conv2d_backward, conv2d_reads, 0};

/* ---- dW in tiles (kernel.h, mt_weight_tiling) ----
 * A tile of R output channels: dW[oc0 .. oc0 + R) [R, KH, KW, C], then dz's channels
 * oc0 .. oc0 + R of every output pixel, copied [B·OH·OW, R] (dz: dy masked in place by the
 * fused activation's derivative, which the op's backward has done). The block is then a
 * convolution of R output channels without activation (a 1 x 1 one Dense over the pixels, as
 * conv2d_backward computes it): dW[oc,kh,kw,c] = 0 + Σ_{b,oh,ow} dz·x, the very sum in the
 * very order the whole layer's backward computes (every sibling has the reference's bits at
 * every shape). */
static uint32_t conv2d_tile_floats(const mt_image *img, const mt_op_desc *op, uint32_t batch, uint32_t rows)
{
    mt_tensor_desc w, y;
    mt_image_tensor(img, op->inputs[1], &w);
    mt_image_tensor(img, op->outputs[0], &y);
    return rows * (w.count / w.dims[0] + batch * y.dims[0] * y.dims[1]);
}

static void conv2d_grad_rows(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, uint32_t first, uint32_t rows,
                             float *tile)
{
    mt_conv_view v;
    mt_conv_runtime(op, t, &v);
    const size_t K = (size_t)v.g.KH * v.g.KW * v.g.C, pixels = (size_t)n * v.g.OH * v.g.OW;
    float *dz = tile + rows * K;
    for (size_t p = 0; p < pixels; ++p)
        memcpy(dz + p * rows, v.y->grad + p * v.g.OC + first, rows * sizeof(float));
    const float *w = v.w->data + first * K;
#if CONV_AS_DENSE
    if (pointwise(&v.g)) {
        mt_kernel_dense_f32_backward(v.x->data, w, dz, NULL, tile, NULL, (uint32_t)pixels, v.g.C, rows, 1);
        return;
    }
#endif
    mt_spatial g = v.g;
    g.OC = rows, g.activation = MT_FUSED_NONE; /* dz is masked already */
    memset(tile, 0, rows * K * sizeof(float)); /* the kernel adds: 0 + Σ, as into the zeroed gradient */
    mt_kernel_conv2d_f32_backward(v.x->data, w, v.y->data, dz, NULL, tile, NULL, n, &g);
}

const mt_weight_tiling mt_weight_tiling_conv2d = {conv2d_tile_floats, conv2d_grad_rows};
