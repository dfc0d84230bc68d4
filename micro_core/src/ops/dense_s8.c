/*
 * int8 FullyConnected (LiteRT's reference integer FullyConnected / FullyConnectedPerChannel,
 * which scale in double):
 *   x [B, D] int8 (one sample flattened; sx, zx), W [U, D] int8 (per tensor or per unit,
 *   zero point 0), b [U] int32 optional, rq [U, 2] the binary64 bits (low word, high word) of
 *   E[u] = double(sx)·double(sw[u])/double(sy) (the same row U times for a per-tensor
 *   weight), y [B, U] int8 (sy, zy):
 *   y[b,u] = clamp(int32(round(double(Σ_d W[u,d]·(x[b,d] - zx) + b[u]) · E[u])) + zy)
 *   (ops/quant.h's mt_q_fc_scale: the product rounded to double, round() half away from zero)
 * params[0] = zx | zy << 8 | act_min << 16 | act_max << 24.
 *
 * Backward (ops/quant_grad.h: the straight-through estimator of fake quantization):
 *   dv[b,u] = dy[b,u] · [act_min <= requant(acc[b,u]) + zy <= act_max]   (acc recomputed from x)
 *   dx[b,d] += Σ_u dv[b,u] · w[u,d],  w[u,d] = sw[u]·W[u,d] dequantized per use, each sum from
 *   +0 by ascending u, then added (the float Dense's reference order: its bits on w)
 */
#include "ops/ops.h"
#include "ops/quant_grad.h"

#if MT_REFERENCE_KERNELS
void mt_op_dense_s8_forward_ref(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq, int8_t *y,
                                uint32_t B, uint32_t D, uint32_t U, uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    for (uint32_t b = 0; b < B; ++b) {
        const int8_t *xb = x + (size_t)b * D;
        for (uint32_t u = 0; u < U; ++u) {
            const int8_t *wu = w + (size_t)u * D;
            int32_t acc = 0;
            for (uint32_t d = 0; d < D; ++d) acc += (int32_t)wu[d] * ((int32_t)xb[d] - p.x_zp);
            y[(size_t)b * U + u] = mt_q_fc_requantize(acc, mt_q_fc_of(bias, rq, u), p.y_zp, p.act_min, p.act_max);
        }
    }
}
#endif

void mt_op_dense_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                             const int32_t *rq, float *dy, float *dx, uint32_t B, uint32_t D, uint32_t U,
                             uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    for (uint32_t b = 0; b < B; ++b) {
        const int8_t *xb = x + (size_t)b * D;
        float *dyb = dy + (size_t)b * U;
        for (uint32_t u = 0; u < U; ++u) {
            const int8_t *wu = w + (size_t)u * D;
            int32_t acc = 0;
            for (uint32_t d = 0; d < D; ++d) acc += (int32_t)wu[d] * ((int32_t)xb[d] - p.x_zp);
            if (!mt_q_fc_unsaturated(acc, mt_q_fc_of(bias, rq, u), p.y_zp, p.act_min, p.act_max)) dyb[u] = 0.0f;
        }
    }
    if (!dx) return;
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t d = 0; d < D; ++d) {
            float acc = 0.0f;
            for (uint32_t u = 0; u < U; ++u)
                acc = mt_fmaf(dy[(size_t)b * U + u], w_scale[u] * (float)w[(size_t)u * D + d], acc);
            dx[(size_t)b * D + d] += acc;
        }
}

static mt_status dense_s8_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->params[1] != 0 || op->params[2] != 0 || op->params[3] != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, w, y;
    mt_status st = mt_q_weighted_operands(img, op, &x, &w, &y);
    if (st != MT_OK) return st;
    if (w.ndim != 2 || w.dims[1] != x.count || y.count != w.dims[0]) return MT_ERR_SHAPE;
    if ((st = mt_q_check_weight(img, op->inputs[1], 2, 0, w.dims[0])) != MT_OK) return st;
    if ((st = mt_q_check_packed(img, &x, &y, op->params[0])) != MT_OK) return st;
    if ((st = mt_q_check_bias(img, op, w.dims[0])) != MT_OK) return st;
    return mt_q_check_fc_requant(img, op->inputs[3], w.dims[0]);
}

static void dense_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    mt_kernel_dense_s8_forward(mt_q_s8(x), mt_q_s8(w), bias, mt_q_s32(&t[op->inputs[3]]),
                               mt_q_s8_out(&t[op->outputs[0]]), n, x->count, w->dims[0], op->params[0]);
}

static void dense_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    mt_op_dense_s8_backward(mt_q_s8(x), mt_q_s8(w), mt_q_weight_scales(w), bias, mt_q_s32(&t[op->inputs[3]]),
                            t[op->outputs[0]].grad, x->grad, n, x->count, w->dims[0], op->params[0]);
}

const mt_op_kernel mt_kernel_dense_s8 = {dense_s8_check, mt_no_scratch, dense_s8_forward, dense_s8_backward,
                                         mt_q_reads_input, 0};
