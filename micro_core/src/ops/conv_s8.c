/*
 * int8 Conv2D and DepthwiseConv2D (TFLite's reference ConvPerChannel and
 * DepthwiseConvPerChannel, depth multiplier 1), NHWC activations:
 *   x [B, H, W, C] int8 (scale sx, zero point zx), y [B, OH, OW, OC] int8 (sy, zy)
 *   Conv2D     W [OC, KH, KW, C] int8, per output channel scale sw[oc], zero point 0
 *   Depthwise  W [1, KH, KW, C]  int8, per channel
 *   b [OC] int32 (scale sx·sw[oc]), optional;  rq [OC, 2] int32 (multiplier, shift) of
 *   sx·sw[oc]/sy, computed by the converter as TFLite's Prepare does.
 *
 *   acc[oc] = Σ_{kh,kw,c : tap in bounds} W[oc,kh,kw,c] · (x[tap, c] - zx) + b[oc]
 *   y = clamp(MultiplyByQuantizedMultiplier(acc, rq[oc]) + zy, act_min, act_max)
 * Out-of-bounds taps are skipped (the padding's real value is 0, which is zx).
 * params[0] = zx | zy << 8 | act_min << 16 | act_max << 24 (signed bytes), params[1] strides,
 * params[2] padding (spatial.h), params[3] = 0: the fused activation is the clamp range.
 *
 * Backward (ops/quant_grad.h: the straight-through estimator of fake quantization), with
 * w = sw[oc]·W[oc,kh,kw,c] dequantized per use:
 *   dv[oc] = dy[oc] · [act_min <= requant(acc[oc]) + zy <= act_max]    (acc recomputed from x)
 *   dx[tap, c] += Σ_oc dv[oc] · w    (Conv2D: each sum from +0 by ascending oc, then added, as
 *                                     the float Conv2D's reference: its bits on w)
 *   dx[tap, c] += dv[c] · w          (Depthwise: a fused multiply-add into dx, as the float one)
 * for every in-bounds tap of every output, outputs in order. Trained in place (the gradients
 * of the real weight w and bias sx·sw[oc]·b), with x = sx·(x_q - zx) dequantized per use:
 *   dW[oc,kh,kw,c] += Σ_{b, outputs (oh,ow) whose tap (kh,kw) is in bounds} dv[oc] · x[tap, c]
 *                     (Depthwise: dW[0,kh,kw,c] with dv[c])
 *   db[oc]         += Σ_{b,oh,ow} dv[oc]
 * each sum from +0 over b, then the outputs in order, then added: the float ops' reference
 * backward, whose bits on the dequantized input these are.
 */
#include <string.h>

#include "ops/ops.h"
#include "ops/quant_grad.h"
#include "ops/spatial.h"

/* The sum of output channel oc at (b, oh, ow) before the bias and the rescaling: Σ W·(x - zx)
 * over the in-bounds taps (Conv2D: every input channel; depthwise: channel oc alone). The
 * reference Conv2D's forward, and what the backward recomputes for its mask (inlined into
 * both: the mask's loop stays as it was, the int8 backward's counts are benchmark figures). */
static inline __attribute__((always_inline)) int32_t conv_s8_sum(const int8_t *x, const int8_t *w, uint32_t b,
                                                                  uint32_t oh, uint32_t ow, uint32_t oc,
                                                                  const mt_spatial *g, int32_t x_zp, int depthwise)
{
    int32_t acc = 0, ih, iw;
    MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
        const int8_t *xp = x + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
        if (depthwise) {
            acc += (int32_t)w[((size_t)kh * g->KW + kw) * g->C + oc] * ((int32_t)xp[oc] - x_zp);
        } else {
            const int8_t *wp = w + (((size_t)oc * g->KH + kh) * g->KW + kw) * g->C;
            for (uint32_t c = 0; c < g->C; ++c) acc += (int32_t)wp[c] * ((int32_t)xp[c] - x_zp);
        }
    }
    return acc;
}

#if MT_REFERENCE_KERNELS
void mt_op_conv2d_s8_forward_ref(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                 int8_t *y, uint32_t B, const mt_spatial *g, uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        int8_t *yp = y + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
        for (uint32_t oc = 0; oc < g->OC; ++oc)
            yp[oc] = mt_q_output(conv_s8_sum(x, w, b, oh, ow, oc, g, p.x_zp, 0), bias, rq, oc, p.y_zp, p.act_min,
                                 p.act_max);
    }
}

void mt_op_depthwise_conv2d_s8_row_ref(const int8_t *x, uint32_t ring, const int8_t *w, const int32_t *bias,
                                       const int32_t *rq, int8_t *y, uint32_t oh, const mt_spatial *g, uint32_t packed,
                                       void *consts)
{
    (void)consts; /* the siblings' */
    const mt_q_params p = mt_q_unpack(packed);
    for (uint32_t ow = 0; ow < g->OW; ++ow)
        for (uint32_t c = 0; c < g->C; ++c) {
            int32_t acc = 0;
            for (uint32_t kh = 0; kh < g->KH; ++kh) {
                const int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                if (ih < 0) continue;
                const int8_t *row = x + (size_t)(ring ? (uint32_t)ih % ring : (uint32_t)ih) * g->W * g->C;
                for (uint32_t kw = 0; kw < g->KW; ++kw) {
                    const int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                    if (iw < 0) continue;
                    acc += (int32_t)w[((size_t)kh * g->KW + kw) * g->C + c] *
                           ((int32_t)row[(size_t)iw * g->C + c] - p.x_zp);
                }
            }
            y[(size_t)ow * g->C + c] = mt_q_output(acc, bias, rq, c, p.y_zp, p.act_min, p.act_max);
        }
}

/* the pointwise Conv2D's reference: P pixels as one row of a 1 x 1 Conv2D at stride 1 */
void mt_op_conv2d_s8_pointwise_ref(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq, int8_t *y,
                                   uint32_t P, uint32_t C, uint32_t OC, uint32_t packed, void *consts)
{
    (void)consts; /* the siblings' */
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = g.OH = 1, g.W = g.OW = P, g.C = C, g.OC = OC, g.KH = g.KW = g.SH = g.SW = 1;
    mt_op_conv2d_s8_forward_ref(x, w, bias, rq, y, 1, &g, packed);
}

void mt_op_depthwise_conv2d_s8_forward_ref(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                           int8_t *y, uint32_t B, const mt_spatial *g, uint32_t packed)
{
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            mt_op_depthwise_conv2d_s8_row_ref(x + (size_t)b * g->H * g->W * g->C, 0, w, bias, rq,
                                              y + ((size_t)b * g->OH + oh) * g->OW * g->C, oh, g, packed, NULL);
}
#endif

/*
 * The planner's operator fusion: `expand`, a pointwise CONV2D_S8 (W [CE, 1, 1, C], stride 1)
 * read by the depthwise `dw` alone, is computed row by row as the depthwise needs its rows:
 * expanded row r lives in slot r mod KH of a ring of KH rows [W, CE] (the expansion's own
 * buffer, planned that small), and each is computed once per sample. The output rows of the
 * depthwise need expanded rows oh·SH - PT .. oh·SH - PT + KH - 1: KH consecutive rows, all in
 * the ring when it is filled in order. A pointwise row is a Dense over its W pixels, a
 * depthwise row reads the ring's slots: every value is the unfused kernels' (integer sums),
 * computed by the same siblings the unfused ops call. After the ring (rounded to the arena's
 * alignment), where the arena is no larger so (MT_OPF_ROW_CONSTANTS), the planner gives the two
 * row kernels' constants (MT_S8_CONSTS_BYTES of CE each:
 * requantizations, sums' starts, the depthwise's weights in its family's form), made at the
 * layer's first row and read by every other, where each row made them again.
 */
void mt_op_expand_depthwise_s8_forward(const mt_op_desc *expand, const mt_op_desc *dw, mt_tensor_rt *t, uint32_t n)
{
    const mt_tensor_rt *x = &t[expand->inputs[0]], *we = &t[expand->inputs[1]], *wd = &t[dw->inputs[1]];
    mt_tensor_rt *e = &t[expand->outputs[0]], *y = &t[dw->outputs[0]];
    const int32_t *be = expand->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[expand->inputs[2]]);
    const int32_t *bd = dw->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[dw->inputs[2]]);
    const int32_t *rqe = mt_q_s32(&t[expand->inputs[3]]), *rqd = mt_q_s32(&t[dw->inputs[3]]);
    mt_spatial g;
    mt_spatial_runtime(dw, e, y, wd->dims[1], wd->dims[2], &g);
    const uint32_t C = x->dims[2], CE = e->dims[2];
    int8_t *ring = mt_q_s8_out(e);
    /* the row kernels' constants after the ring where the planner put them, made at the first
     * row for every sample (their header 0), else NULL: made at every row */
    const size_t ring_bytes = ((size_t)g.KH * g.W * CE + (MT_ARENA_ALIGN - 1u)) & ~(size_t)(MT_ARENA_ALIGN - 1u);
    uint32_t *consts_e = NULL, *consts_d = NULL;
    if (dw->flags & MT_OPF_ROW_CONSTANTS) {
        consts_e = (uint32_t *)(void *)(ring + ring_bytes);
        consts_d = consts_e + MT_S8_CONSTS_BYTES(CE, MT_S8_POINTWISE_GROUP) / 4u;
        consts_e[0] = consts_d[0] = 0;
    }
    for (uint32_t b = 0; b < n; ++b) {
        const int8_t *xb = mt_q_s8(x) + (size_t)b * g.H * g.W * C;
        int8_t *yb = mt_q_s8_out(y) + (size_t)b * g.OH * g.OW * CE;
        uint32_t next = 0; /* the next expanded row to compute */
        for (uint32_t oh = 0; oh < g.OH; ++oh) {
            const int64_t last = (int64_t)oh * g.SH - g.PT + g.KH - 1;
            for (; (int64_t)next <= last && next < g.H; ++next)
                mt_kernel_conv2d_s8_pointwise(xb + (size_t)next * g.W * C, mt_q_s8(we), be, rqe,
                                              ring + (size_t)(next % g.KH) * g.W * CE, g.W, C, CE,
                                              expand->params[0], consts_e);
            mt_kernel_depthwise_conv2d_s8_row(ring, g.KH, mt_q_s8(wd), bd, rqd, yb + (size_t)oh * g.OW * CE, oh,
                                              &g, dw->params[0], consts_d);
        }
    }
}

/*
 * The planner's in-place depthwise (plan_lifetimes.c, mt_plan_band_ring): y [n, H, W, C] over
 * x [n, H, W, C] in the same bytes (stride 1, SAME: OH = H, OW = W), plus a band of KH rows
 * [W, C] after the n samples. Output row oh reads input rows oh - PT .. oh - PT + KH - 1, so
 * before it is computed every input row up to oh - PT + KH - 1 is copied into the band (row r
 * in slot r mod KH, as the fused expansion's ring), and the row kernel reads the band alone.
 * Writing output row oh then overwrites input row oh, already in the band (oh <= oh - PT +
 * KH - 1 as PT < KH), while the rows not yet copied (> oh - PT + KH - 1 >= oh) are untouched.
 * The row kernel computes the same sums from the same values: the bits of the whole-tensor
 * forward (tests/ops/test_conv_s8.c checks them, and that the kernel over x with no band
 * does not give them).
 */
void mt_op_depthwise_s8_in_place_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n)
{
    const mt_tensor_rt *w = &t[op->inputs[1]];
    mt_tensor_rt *y = &t[op->outputs[0]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    const int32_t *rq = mt_q_s32(&t[op->inputs[3]]);
    mt_spatial g;
    mt_spatial_runtime(op, &t[op->inputs[0]], y, w->dims[1], w->dims[2], &g);
    g.activation = MT_FUSED_NONE;
    const size_t row = (size_t)g.W * g.C, sample = (size_t)g.H * row;
    int8_t *data = mt_q_s8_out(y);
    int8_t *band = data + (size_t)n * sample;
    for (uint32_t b = 0; b < n; ++b) {
        int8_t *s = data + (size_t)b * sample;
        uint32_t next = 0; /* the next input row to copy into the band */
        for (uint32_t oh = 0; oh < g.OH; ++oh) {
            const int64_t last = (int64_t)oh * g.SH - g.PT + g.KH - 1;
            for (; (int64_t)next <= last && next < g.H; ++next)
                memcpy(band + (size_t)(next % g.KH) * row, s + (size_t)next * row, row);
            mt_kernel_depthwise_conv2d_s8_row(band, g.KH, mt_q_s8(w), bias, rq, s + (size_t)oh * g.OW * g.C, oh, &g,
                                              op->params[0], NULL);
        }
    }
}

/*
 * The planner's overlapped Conv2D (plan_lifetimes.c, MT_OVER_SHIFTED): y starts some bytes
 * before x in the same buffer, so the output is computed one row at a time, each row by the
 * whole-tensor kernel over the input rows its windows read: output row oh of a sample reads
 * rows oh·SH - PT .. oh·SH - PT + KH - 1, clipped to [0, H); as a one-row convolution that
 * is OH' = 1 over H' = the rows from r0 = max(oh·SH - PT, 0), PT' = r0 - (oh·SH - PT) (the
 * padding above row 0), and the rows past H' are the bottom padding, skipped as before. The
 * taps and their sums are the whole call's: the same bits, whatever the kernel (integer
 * sums). The planner placed y so that row oh's bytes end before input row r0 starts, and the
 * kernel writes a row after it has read it or reads no more of what it overwrites.
 */
void mt_op_conv2d_s8_rows_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n)
{
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    mt_tensor_rt *y = &t[op->outputs[0]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    const int32_t *rq = mt_q_s32(&t[op->inputs[3]]);
    mt_spatial g;
    mt_spatial_runtime(op, x, y, w->dims[1], w->dims[2], &g);
    g.activation = MT_FUSED_NONE;
    for (uint32_t b = 0; b < n; ++b)
        for (uint32_t oh = 0; oh < g.OH; ++oh) {
            const int64_t first = (int64_t)oh * g.SH - g.PT;
            const uint32_t r0 = first > 0 ? (uint32_t)first : 0u;
            mt_spatial one = g;
            one.OH = 1;
            one.PT = (uint32_t)((int64_t)r0 - first);
            one.H = g.H - r0 < g.KH - one.PT ? g.H - r0 : g.KH - one.PT;
            mt_kernel_conv2d_s8_forward(mt_q_s8(x) + ((size_t)b * g.H + r0) * g.W * g.C, mt_q_s8(w), bias, rq,
                                        mt_q_s8_out(y) + ((size_t)b * g.OH + oh) * g.OW * g.OC, 1, &one,
                                        op->params[0]);
        }
}

/* ---- backward (the straight-through estimator, ops/quant_grad.h) ---- */

/* dy = 0 where the forward's clamp cut the output (dv = dy · mask, in place). Out of line:
 * where the DSP/Helium siblings leave the backward its only caller, GCC inlined it there and
 * the register pressure of both loops cost ResNet-8's sparse step 9M instructions on the M7. */
static __attribute__((noinline)) void conv_s8_mask(const int8_t *x, const int8_t *w, const int32_t *bias,
                                                   const int32_t *rq, float *dy, uint32_t B, const mt_spatial *g,
                                                   uint32_t packed, int depthwise)
{
    const mt_q_params p = mt_q_unpack(packed);
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
        for (uint32_t oc = 0; oc < g->OC; ++oc) {
            const int32_t acc = conv_s8_sum(x, w, b, oh, ow, oc, g, p.x_zp, depthwise);
            if (!mt_q_unsaturated(acc, mt_q_requant_of(bias, rq, oc), p.y_zp, p.act_min, p.act_max))
                dyp[oc] = 0.0f;
        }
    }
}

#if MT_REFERENCE_KERNELS
/* The DepthwiseConv2D's mask (kernels.def's row) */
void mt_op_depthwise_conv2d_s8_mask_ref(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                        float *dy, uint32_t B, const mt_spatial *g, uint32_t packed)
{
    conv_s8_mask(x, w, bias, rq, dy, B, g, packed, 1);
}
#endif

#if MT_REFERENCE_KERNELS
/* The pointwise Conv2D's mask (kernels.def's row): conv_s8_mask over P pixels as one row of a
 * 1 x 1 Conv2D at stride 1 */
void mt_op_conv2d_s8_pointwise_mask_ref(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                        float *dy, uint32_t P, uint32_t C, uint32_t OC, uint32_t packed)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = g.OH = 1, g.W = g.OW = P, g.C = C, g.OC = OC, g.KH = g.KW = g.SH = g.SW = 1;
    conv_s8_mask(x, w, bias, rq, dy, 1, &g, packed, 0);
}
#endif

/* dW[first .. first + rows) += Σ dv·x (the comment atop), written from dw: Conv2D's weight
 * [OC, KH, KW, C] (rows of output channels), the depthwise one's [1, KH, KW, C] (one row,
 * its channel oc = c) */
static void conv_s8_weight_loops(const int8_t *x, const float *dy, float *dw, float x_scale, uint32_t B,
                                 const mt_spatial *g, uint32_t packed, int depthwise, uint32_t first, uint32_t rows)
{
    const int32_t zx = mt_q_unpack(packed).x_zp;
    const uint32_t YC = depthwise ? g->C : g->OC; /* dy's channels */
    for (uint32_t oc = first; oc < first + rows; ++oc)
            for (uint32_t kh = 0; kh < g->KH; ++kh)
                for (uint32_t kw = 0; kw < g->KW; ++kw)
                    for (uint32_t c = 0; c < g->C; ++c) {
                        const uint32_t channel = depthwise ? c : oc; /* of dy */
                        float acc = 0.0f;
                        int32_t ih, iw;
                        for (uint32_t b = 0; b < B; ++b)
                            MT_SPATIAL_FOR_OUTPUTS(g, kh, kw, oh, ow, ih, iw) {
                                const int32_t xq = x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c];
                                acc = mt_fmaf(dy[(((size_t)b * g->OH + oh) * g->OW + ow) * YC + channel],
                                              x_scale * (float)(xq - zx), acc);
                            }
                        dw[(((size_t)(oc - first) * g->KH + kh) * g->KW + kw) * g->C + c] += acc;
                    }
}

#if MT_REFERENCE_KERNELS
/* The pointwise Conv2D's dW rows (kernels.def's row): the loops above over P pixels as one row of
 * a 1 x 1 Conv2D at stride 1 (for each weight, its sum over the outputs: every pixel, in order) */
void mt_op_conv2d_s8_pointwise_dw_ref(const int8_t *x, const float *dy, float *dw, float x_scale, uint32_t packed,
                                      uint32_t P, uint32_t C, uint32_t OC, uint32_t first, uint32_t rows)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = g.OH = 1, g.W = g.OW = P, g.C = C, g.OC = OC, g.KH = g.KW = g.SH = g.SW = 1;
    conv_s8_weight_loops(x, dy, dw, x_scale, 1, &g, packed, 0, first, rows);
}
#endif

/* a pointwise layer (1 x 1, stride 1, no padding): each input pixel is one output pixel's only
 * tap, so its backward's sums are a Dense's over B·H·W pixels (the pointwise rows of kernels.def) */
static int conv_s8_pointwise(const mt_spatial *g)
{
    return g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PT == 0 && g->PL == 0;
}

/* conv_s8_weight_loops' sums: a pointwise Conv2D's by its row's kernel */
static void conv_s8_weight_rows(const int8_t *x, const float *dy, float *dw, float x_scale, uint32_t B,
                                const mt_spatial *g, uint32_t packed, int depthwise, uint32_t first, uint32_t rows)
{
    if (!depthwise && conv_s8_pointwise(g))
        mt_kernel_conv2d_s8_pointwise_dw(x, dy, dw, x_scale, packed, B * g->H * g->W, g->C, g->OC, first, rows);
    else
        conv_s8_weight_loops(x, dy, dw, x_scale, B, g, packed, depthwise, first, rows);
}

/* dW += Σ dv·x and db += Σ dv (the comment atop) */
static void conv_s8_weight_grads(const int8_t *x, const float *dy, const mt_q_grads *d, uint32_t B, const mt_spatial *g,
                                 uint32_t packed, int depthwise)
{
    if (d->dw) conv_s8_weight_rows(x, dy, d->dw, d->x_scale, B, g, packed, depthwise, 0, depthwise ? 1u : g->OC);
    if (d->db) mt_op_bias_f32_backward_ref(dy, d->db, (size_t)B * g->OH * g->OW, depthwise ? g->C : g->OC);
}

#if MT_REFERENCE_KERNELS
/* The pointwise Conv2D's dX (kernels.def's row): the loop below for a 1 x 1 window at stride 1
 * without padding, where output pixel p's one tap is input pixel p */
void mt_op_conv2d_s8_pointwise_dx_ref(const float *dy, const int8_t *w, const float *w_scale, float *dx, uint32_t P,
                                      uint32_t C, uint32_t OC)
{
    for (uint32_t p = 0; p < P; ++p)
        for (uint32_t c = 0; c < C; ++c)
            dx[(size_t)p * C + c] += mt_q_dx_sum(dy + (size_t)p * OC, w + c, C, w_scale, OC);
}
#endif

void mt_op_conv2d_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                              const int32_t *rq, float *dy, const mt_q_grads *d, uint32_t B, const mt_spatial *g,
                              uint32_t packed)
{
    const int pointwise = conv_s8_pointwise(g);
    if (pointwise)
        mt_kernel_conv2d_s8_pointwise_mask(x, w, bias, rq, dy, B * g->H * g->W, g->C, g->OC, packed);
    else
        conv_s8_mask(x, w, bias, rq, dy, B, g, packed, 0);
    conv_s8_weight_grads(x, dy, d, B, g, packed, 0);
    float *dx = d->dx;
    if (!dx) return;
    if (pointwise) {
        mt_kernel_conv2d_s8_pointwise_dx(dy, w, w_scale, dx, B * g->H * g->W, g->C, g->OC);
        return;
    }
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * g->OC;
        int32_t ih, iw;
        MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
            float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
            const int8_t *wt = w + ((size_t)kh * g->KW + kw) * g->C; /* W[0, kh, kw, 0] */
            for (uint32_t c = 0; c < g->C; ++c)
                dxp[c] += mt_q_dx_sum(dyp, wt + c, (size_t)g->KH * g->KW * g->C, w_scale, g->OC);
        }
    }
}

void mt_op_depthwise_conv2d_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                                        const int32_t *rq, float *dy, const mt_q_grads *d, uint32_t B,
                                        const mt_spatial *g, uint32_t packed)
{
    mt_kernel_depthwise_conv2d_s8_mask(x, w, bias, rq, dy, B, g, packed);
    conv_s8_weight_grads(x, dy, d, B, g, packed, 1);
    float *dx = d->dx;
    if (!dx) return;
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        const float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * g->C;
        int32_t ih, iw;
        MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
            float *dxp = dx + (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
            const int8_t *wp = w + ((size_t)kh * g->KW + kw) * g->C;
            for (uint32_t c = 0; c < g->C; ++c) dxp[c] = mt_fmaf(dyp[c], w_scale[c] * (float)wp[c], dxp[c]);
        }
    }
}

/* ---- backward from a global mean's broadcast gradient (plan_lifetimes.c, mt_plan_grad_broadcast) ----
 * The output's gradient is g [B, OC]: dy[b,p,oc] = g[b,oc] for each of the P pixels (the Mean's
 * 0 + dv/P, the bits its whole buffer held in every pixel). A pointwise layer whose weight does
 * not train expands it where it reads it, MT_BROADCAST_PIXELS pixels at a time: their rows
 * dv [n, OC] = g's rows, masked by the mask kernel over those n pixels, then
 *   db  acc[oc] += dv[p,oc] pixel by pixel (acc from +0, added to db after the last pixel:
 *       the bias's reference sums, each channel in ascending pixel order);
 *   dx  the dx kernel over those n pixels (each (p, c) sum from +0 by ascending oc, then added).
 * The elements, the sums and their order are mt_op_conv2d_s8_backward's over the expanded
 * buffer (the mask's integer sums are exact in any grouping; the dx kernel's blocks of pixels
 * never meet): the same bits, in mt_q_broadcast_work_floats(OC) floats of work area (the rows,
 * then acc) instead of B·P·OC floats of gradient. */
void mt_op_conv2d_s8_broadcast_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                                        const int32_t *rq, const float *g, const mt_q_grads *d, uint32_t B, uint32_t P,
                                        uint32_t C, uint32_t OC, uint32_t packed, float *work)
{
    const size_t rows = (size_t)B * P;
    float *acc = work + (size_t)MT_BROADCAST_PIXELS * OC;
    if (d->db) memset(acc, 0, OC * sizeof(float));
    for (size_t r0 = 0; r0 < rows; r0 += MT_BROADCAST_PIXELS) {
        const uint32_t n = rows - r0 < MT_BROADCAST_PIXELS ? (uint32_t)(rows - r0) : MT_BROADCAST_PIXELS;
        for (uint32_t j = 0; j < n; ++j) memcpy(work + (size_t)j * OC, g + ((r0 + j) / P) * OC, OC * sizeof(float));
        mt_kernel_conv2d_s8_pointwise_mask(x + r0 * C, w, bias, rq, work, n, C, OC, packed);
        for (uint32_t j = 0; d->db && j < n; ++j)
            for (uint32_t oc = 0; oc < OC; ++oc) acc[oc] += work[(size_t)j * OC + oc];
        if (d->dx) mt_kernel_conv2d_s8_pointwise_dx(work, w, w_scale, d->dx + r0 * C, n, C, OC);
    }
    for (uint32_t oc = 0; d->db && oc < OC; ++oc) d->db[oc] += acc[oc];
}

/* ---- graph adapters ---- */

/* x, W, b (optional), rq; y. depthwise: W [1, KH, KW, C] and OC = C. */
static mt_status s8_conv_check(const mt_image *img, const mt_op_desc *op, int depthwise)
{
    if (op->params[3] != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, w, y;
    mt_status st = mt_q_weighted_operands(img, op, &x, &w, &y);
    if (st != MT_OK) return st;
    if (w.ndim != 4 || x.ndim != 3) return MT_ERR_SHAPE;
    const uint32_t OC = depthwise ? w.dims[3] : w.dims[0];
    if (w.dims[3] != x.dims[2] || (depthwise && w.dims[0] != 1)) return MT_ERR_SHAPE;
    if ((st = mt_q_check_weight(img, op->inputs[1], 4, depthwise ? 3u : 0u, OC)) != MT_OK) return st;
    mt_spatial g;
    if ((st = mt_spatial_check_dtype(op, &x, &y, w.dims[1], w.dims[2], OC, MT_DTYPE_I8, &g)) != MT_OK) return st;
    if ((st = mt_q_check_packed(img, &x, &y, op->params[0])) != MT_OK) return st;
    if ((st = mt_q_check_bias(img, op, OC)) != MT_OK) return st;
    return mt_q_check_requant(img, op->inputs[3], OC);
}

static mt_status conv2d_s8_check(const mt_image *img, const mt_op_desc *op)
{
    return s8_conv_check(img, op, 0);
}

static mt_status depthwise_conv2d_s8_check(const mt_image *img, const mt_op_desc *op)
{
    return s8_conv_check(img, op, 1);
}

static void s8_conv_forward(const mt_op_desc *op, mt_tensor_rt *t, int depthwise, uint32_t n)
{
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    mt_tensor_rt *y = &t[op->outputs[0]];
    mt_spatial g;
    mt_spatial_runtime(op, x, y, w->dims[1], w->dims[2], &g);
    g.activation = MT_FUSED_NONE;
    if (depthwise)
        mt_kernel_depthwise_conv2d_s8_forward(mt_q_s8(x), mt_q_s8(w), bias, mt_q_s32(&t[op->inputs[3]]),
                                              mt_q_s8_out(y), n, &g, op->params[0]);
    else
        mt_kernel_conv2d_s8_forward(mt_q_s8(x), mt_q_s8(w), bias, mt_q_s32(&t[op->inputs[3]]), mt_q_s8_out(y),
                                    n, &g, op->params[0]);
}

static void conv2d_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    if (op->flags & MT_OPF_IN_PLACE) /* y laid over x: a row at a time */
        mt_op_conv2d_s8_rows_forward(op, t, n);
    else
        s8_conv_forward(op, t, 0, n);
}

static void depthwise_conv2d_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    if (op->flags & MT_OPF_STREAMS_PREVIOUS) /* the session's op table: op - 1 is the expansion */
        mt_op_expand_depthwise_s8_forward(op - 1, op, t, n);
    else if (op->flags & MT_OPF_IN_PLACE)
        mt_op_depthwise_s8_in_place_forward(op, t, n);
    else
        s8_conv_forward(op, t, 1, n);
}

static void s8_conv_backward(const mt_op_desc *op, mt_tensor_rt *t, int depthwise, uint32_t n)
{
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    mt_tensor_rt *y = &t[op->outputs[0]];
    mt_spatial g;
    mt_spatial_runtime(op, x, y, w->dims[1], w->dims[2], &g);
    g.activation = MT_FUSED_NONE;
    const mt_q_grads d = mt_q_grads_of(op, t);
    if (depthwise)
        mt_op_depthwise_conv2d_s8_backward(mt_q_s8(x), mt_q_s8(w), mt_q_weight_scales(w), bias,
                                           mt_q_s32(&t[op->inputs[3]]), y->grad, &d, n, &g, op->params[0]);
    else
        mt_op_conv2d_s8_backward(mt_q_s8(x), mt_q_s8(w), mt_q_weight_scales(w), bias, mt_q_s32(&t[op->inputs[3]]),
                                 y->grad, &d, n, &g, op->params[0]);
}

static void conv2d_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *y = &t[op->outputs[0]];
    if (!y->grad_broadcast) {
        s8_conv_backward(op, t, 0, n);
        return;
    }
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const mt_q_grads d = mt_q_grads_of(op, t); /* no dw: the planner broadcasts to no trained weight */
    const uint32_t OC = y->dims[2]; /* the work area: the planned bytes before g (mt_plan_grad_floats) */
    mt_op_conv2d_s8_broadcast_backward(mt_q_s8(x), mt_q_s8(w), mt_q_weight_scales(w),
                                       op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]),
                                       mt_q_s32(&t[op->inputs[3]]), y->grad, &d, n, y->dims[0] * y->dims[1], x->dims[2],
                                       OC, op->params[0], y->grad - mt_q_broadcast_work_floats(OC));
}

static void depthwise_conv2d_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    s8_conv_backward(op, t, 1, n);
}

const mt_op_kernel mt_kernel_conv2d_s8 = {conv2d_s8_check, mt_no_scratch, conv2d_s8_forward, conv2d_s8_backward,
                                          mt_q_reads_input, 0};
const mt_op_kernel mt_kernel_depthwise_conv2d_s8 = {depthwise_conv2d_s8_check, mt_no_scratch,
                                                    depthwise_conv2d_s8_forward, depthwise_conv2d_s8_backward,
                                                    mt_q_reads_input, 0};

/* ---- dW in tiles (kernel.h, mt_weight_tiling): a Conv2D trained in place ----
 * A tile of R output channels: dW[oc0 .. oc0 + R) [R, KH, KW, C] = 0 + Σ, the sums of the
 * whole gradient (conv_s8_weight_rows on a cleared tile), from the dy the op's backward has
 * just masked (its buffer lives until then). */
static uint32_t conv2d_s8_tile_floats(const mt_image *img, const mt_op_desc *op, uint32_t batch, uint32_t rows)
{
    (void)batch;
    mt_tensor_desc w;
    mt_image_tensor(img, op->inputs[1], &w);
    return rows * (w.count / w.dims[0]);
}

static void conv2d_s8_grad_rows(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, uint32_t first, uint32_t rows,
                                float *tile)
{
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    mt_tensor_rt *y = &t[op->outputs[0]];
    mt_spatial g;
    mt_spatial_runtime(op, x, y, w->dims[1], w->dims[2], &g);
    memset(tile, 0, (size_t)rows * (w->count / w->dims[0]) * sizeof(float));
    conv_s8_weight_rows(mt_q_s8(x), y->grad, tile, mt_q_grads_of(op, t).x_scale, n, &g, op->params[0], 0, first,
                        rows);
}

const mt_weight_tiling mt_weight_tiling_conv2d_s8 = {conv2d_s8_tile_floats, conv2d_s8_grad_rows};
