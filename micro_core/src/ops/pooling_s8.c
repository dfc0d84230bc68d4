/*
 * int8 pooling (TFLite's reference integer kernels); input and output share one scale and
 * zero point, so pools work on the stored values directly:
 *   MAX_POOL2D_S8      y = max of the window's in-bounds elements
 *   AVERAGE_POOL2D_S8  y = round(Σ / count) over the in-bounds elements, ties away from zero
 *                      (TFLite: (acc ± count/2) / count)
 * params as the float pools (spatial.h), params[3] = 0 (no fused activation).
 *   MEAN_S8  x [H, W, C] -> y [C] (TFLite's MEAN over axes 1 and 2, QuantizedMeanOrSum):
 *            y[c] = clamp(MultiplyByQuantizedMultiplier(Σ_p x[p,c] - zx·P, M', s') + zy)
 *            with P = H·W and (M', s') = (multiplier, shift) of sx/sy with 1/P folded in
 *            as TFLite folds it: k = min(floor(log2 P), 32, 31 + shift),
 *            M' = (multiplier · 2^k) / P (integer division), s' = shift - k.
 *            params[0] = zx | zy << 8, params[1] = multiplier, params[2] = shift (i32).
 *
 * Backward (ops/quant_grad.h: the straight-through estimator; gradients are f32, with respect
 * to the dequantized values), as the float pools':
 *   MAX_POOL2D_S8      dx at the window's first maximum (in scan order) += dy
 *   AVERAGE_POOL2D_S8  dx[tap] += dy / count for every in-bounds tap (an average of int8
 *                      values never leaves [-128, 127]: nothing is cut)
 *   MEAN_S8            dx[b,p,c] += dv[b,c] / P, dv = dy · [-128 <= requant(Σ - zx·P) + zy <= 127]
 *                      (broadcast: dx [B, C], dx[b,c] += dv[b,c] / P once for all the P pixels,
 *                      where the planner lets x's one reader expand it: plan_lifetimes.c,
 *                      mt_plan_grad_broadcast)
 */
#include "ops/quant_grad.h"
#include "ops/spatial.h"

void mt_op_max_pool2d_s8_forward(const int8_t *x, int8_t *y, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow)
        for (uint32_t c = 0; c < g->C; ++c) {
            int32_t best = -128, ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                const int32_t v = x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c];
                if (v > best) best = v;
            }
            y[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c] = (int8_t)best;
        }
}

void mt_op_average_pool2d_s8_forward(const int8_t *x, int8_t *y, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow)
        for (uint32_t c = 0; c < g->C; ++c) {
            int32_t acc = 0, count = 0, ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                acc += x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c];
                ++count;
            }
            /* count >= 1: SAME padding never puts a window wholly outside (spatial.c) */
            acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
            y[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c] = mt_q_clamp(acc, -128, 127);
        }
}

/* One channel's mean from the sum of its inputs: TFLite's (sum - zx·P)·M·2^s + zy, clamped */
static inline int8_t mean_output(int32_t sum, uint32_t zx_sum, int32_t m, int32_t s, int32_t zy)
{
    return mt_q_clamp(mt_q_multiply((int32_t)((uint32_t)sum - zx_sum), m, s) + zy, -128, 127);
}

void mt_op_mean_s8_forward_ref(const int8_t *x, int8_t *y, uint32_t B, uint32_t P, uint32_t C, uint32_t zero_points,
                               int32_t multiplier, int32_t shift)
{
    const int32_t zx = mt_q_param_byte(zero_points, 0), zy = mt_q_param_byte(zero_points, 1);
    int32_t m, s;
    mt_q_mean_scale(P, multiplier, shift, &m, &s);
    /* Each channel's sum over the P pixels, four channels at a time (a pixel's four bytes
     * side by side, the pointer stepping C bytes a pixel: integer sums are exact in any order,
     * so the bytes are those of one channel at a time with an index computed per term, which
     * took 7.5 instructions an element on the Cortex-M55) */
    const uint32_t zx_sum = (uint32_t)zx * P; /* zx's share of a sum, wrapping in int32 as TFLite's */
    for (uint32_t b = 0; b < B; ++b, x += (size_t)P * C, y += C) {
        uint32_t c = 0;
        for (; c + 4 <= C; c += 4) {
            int32_t sum[4] = {0, 0, 0, 0};
            const int8_t *xp = x + c;
            for (uint32_t p = 0; p < P; ++p, xp += C) sum[0] += xp[0], sum[1] += xp[1], sum[2] += xp[2], sum[3] += xp[3];
            for (uint32_t j = 0; j < 4; ++j) y[c + j] = mean_output(sum[j], zx_sum, m, s, zy);
        }
        for (; c < C; ++c) {
            int32_t sum = 0;
            const int8_t *xp = x + c;
            for (uint32_t p = 0; p < P; ++p, xp += C) sum += *xp;
            y[c] = mean_output(sum, zx_sum, m, s, zy);
        }
    }
}

/* ---- backward ---- */

void mt_op_max_pool2d_s8_backward(const int8_t *x, const float *dy, float *dx, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow)
        for (uint32_t c = 0; c < g->C; ++c) {
            int32_t best = -129, ih, iw;
            size_t first = 0;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                const size_t i = (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c;
                if (x[i] > best) best = x[i], first = i;
            }
            /* best > -129: SAME padding never puts a window wholly outside (spatial.c) */
            dx[first] += dy[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c];
        }
}

void mt_op_average_pool2d_s8_backward(const float *dy, float *dx, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        uint32_t rows = 0, cols = 0;
        for (uint32_t kh = 0; kh < g->KH; ++kh) rows += mt_spatial_tap(oh, kh, g->SH, g->PT, g->H) >= 0;
        for (uint32_t kw = 0; kw < g->KW; ++kw) cols += mt_spatial_tap(ow, kw, g->SW, g->PL, g->W) >= 0;
        const float count = (float)(rows * cols);
        for (uint32_t c = 0; c < g->C; ++c) {
            const float share = dy[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c] / count;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                dx[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c] += share;
            }
        }
    }
}

void mt_op_mean_s8_backward(const int8_t *x, float *dy, float *dx, uint32_t B, uint32_t P, uint32_t C,
                            uint32_t zero_points, int32_t multiplier, int32_t shift, int broadcast)
{
    const int32_t zx = mt_q_param_byte(zero_points, 0), zy = mt_q_param_byte(zero_points, 1);
    int32_t m, s;
    mt_q_mean_scale(P, multiplier, shift, &m, &s);
    const uint32_t zx_sum = (uint32_t)zx * P;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t c = 0; c < C; ++c) {
            int32_t sum = 0;
            for (uint32_t p = 0; p < P; ++p) sum += x[((size_t)b * P + p) * C + c];
            const int32_t v = mt_q_multiply((int32_t)((uint32_t)sum - zx_sum), m, s) + zy; /* mean_output's */
            if (v < -128 || v > 127) dy[(size_t)b * C + c] = 0.0f;
        }
    const uint32_t pixels = broadcast ? 1u : P; /* the same share for each pixel */
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t p = 0; p < pixels; ++p)
            for (uint32_t c = 0; c < C; ++c) dx[((size_t)b * pixels + p) * C + c] += dy[(size_t)b * C + c] / (float)P;
}

/* ---- graph adapters ---- */

static mt_status pool_s8_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 1 || op->num_outputs != 1 || op->params[3] != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    mt_spatial g;
    mt_status st = mt_spatial_check_dtype(op, &x, &y, op->params[0] & 0xFFFFu, op->params[0] >> 16, x.ndim == 3 ? x.dims[2] : 0,
                                          MT_DTYPE_I8, &g);
    if (st != MT_OK) return st;
    return mt_q_same_quant(img, &x, &y);
}

/* MaxPool2D and AveragePool2D (int8) share their check, geometry and operands; the op's type
 * picks the kernel */
static void pool_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_tensor_rt *y = &t[op->outputs[0]];
    mt_spatial g;
    mt_spatial_runtime(op, x, y, op->params[0] & 0xFFFFu, op->params[0] >> 16, &g);
    if (op->type == MT_OP_MAX_POOL2D_S8) mt_op_max_pool2d_s8_forward(mt_q_s8(x), mt_q_s8_out(y), n, &g);
    else mt_op_average_pool2d_s8_forward(mt_q_s8(x), mt_q_s8_out(y), n, &g);
}

static void pool_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    const mt_tensor_rt *y = &t[op->outputs[0]];
    mt_spatial g;
    mt_spatial_runtime(op, x, y, op->params[0] & 0xFFFFu, op->params[0] >> 16, &g);
    if (op->type == MT_OP_MAX_POOL2D_S8) mt_op_max_pool2d_s8_backward(mt_q_s8(x), y->grad, x->grad, n, &g);
    else mt_op_average_pool2d_s8_backward(y->grad, x->grad, n, &g);
}

static mt_status mean_s8_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 1 || op->num_outputs != 1 || op->params[3] != 0) return MT_ERR_BAD_MODEL;
    if ((op->params[0] >> 16) != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    if (x.ndim != 3 || y.count != x.dims[2] || y.dims[y.ndim - 1] != x.dims[2]) return MT_ERR_SHAPE;
    float sx, sy;
    int32_t zx, zy;
    if (mt_q_per_tensor(img, &x, &sx, &zx) != MT_OK || mt_q_per_tensor(img, &y, &sy, &zy) != MT_OK)
        return MT_ERR_SHAPE;
    if (mt_q_param_byte(op->params[0], 0) != zx || mt_q_param_byte(op->params[0], 1) != zy) return MT_ERR_BAD_MODEL;
    const int32_t multiplier = (int32_t)op->params[1], shift = (int32_t)op->params[2];
    if (multiplier < 0 || shift < MT_QUANT_MIN_SHIFT || shift > MT_QUANT_MAX_SHIFT) return MT_ERR_BAD_MODEL;
    return MT_OK;
}

static void mean_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_kernel_mean_s8_forward(mt_q_s8(x), mt_q_s8_out(&t[op->outputs[0]]), n, x->dims[0] * x->dims[1], x->dims[2],
                              op->params[0], (int32_t)op->params[1], (int32_t)op->params[2]);
}

static void mean_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_op_mean_s8_backward(mt_q_s8(x), t[op->outputs[0]].grad, x->grad, n, x->dims[0] * x->dims[1], x->dims[2],
                           op->params[0], (int32_t)op->params[1], (int32_t)op->params[2], x->grad_broadcast);
}

const mt_op_kernel mt_kernel_max_pool2d_s8 = {pool_s8_check, mt_no_scratch, pool_s8_forward, pool_s8_backward,
                                              mt_q_reads_input, 0};
const mt_op_kernel mt_kernel_average_pool2d_s8 = {pool_s8_check, mt_no_scratch, pool_s8_forward, pool_s8_backward,
                                                  mt_reads_nothing, 0};
const mt_op_kernel mt_kernel_mean_s8 = {mean_s8_check, mt_no_scratch, mean_s8_forward, mean_s8_backward,
                                        mt_q_reads_input, 0};
