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
 * Trained in place (the weight's and bias's gradients, of the real w and sx·sw[u]·b):
 *   dW[u,d] += Σ_b dv[b,u] · x[b,d],  x[b,d] = sx·(x_q[b,d] - zx) dequantized per use
 *   db[u]   += Σ_b dv[b,u]
 *   each sum from +0 by ascending b, then added (the float Dense's reference: its bits on x)
 * A sparse update training the first k units holds W's rows 0..k-1 alone in the arena
 * (mt_weight_row_s8; plan_sparse.c): the forward runs its kernel over both row ranges a sample
 * at a time (mt_s8_held_rows), the same bytes.
 */
#include <string.h>

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

/* dW[first .. first + rows) += Σ_b dv[b,u]·x[b,d] (the comment atop), written from dw */
static void dense_s8_weight_rows(const int8_t *x, const float *dy, float *dw, float x_scale, uint32_t B, uint32_t D,
                                 uint32_t U, int32_t x_zp, uint32_t first, uint32_t rows)
{
    for (uint32_t u = first; u < first + rows; ++u)
        for (uint32_t d = 0; d < D; ++d) {
            float acc = 0.0f;
            for (uint32_t b = 0; b < B; ++b)
                acc = mt_fmaf(dy[(size_t)b * U + u], x_scale * (float)((int32_t)x[(size_t)b * D + d] - x_zp), acc);
            dw[(size_t)(u - first) * D + d] += acc;
        }
}

/* The backward (the comment atop) over weight w's rows where mt_weight_row_s8 says: one array,
 * or the arena's first rows and the image's others (plan_sparse.c), whose input gradient then
 * sums across both by rows (mt_q_weight_rows_dx: the same sums) */
static void dense_s8_backward_rows(const int8_t *x, const mt_tensor_rt *w, const float *w_scale, const int32_t *bias,
                                   const int32_t *rq, float *dy, const mt_q_grads *g, uint32_t B, uint32_t D,
                                   uint32_t U, uint32_t packed)
{
    float *dx = g->dx;
    const mt_q_params p = mt_q_unpack(packed);
    for (uint32_t b = 0; b < B; ++b) {
        const int8_t *xb = x + (size_t)b * D;
        float *dyb = dy + (size_t)b * U;
        for (uint32_t u = 0; u < U; ++u) {
            const int8_t *wu = mt_weight_row_s8(w, u, D);
            int32_t acc = 0;
            for (uint32_t d = 0; d < D; ++d) acc += (int32_t)wu[d] * ((int32_t)xb[d] - p.x_zp);
            if (!mt_q_fc_unsaturated(acc, mt_q_fc_of(bias, rq, u), p.y_zp, p.act_min, p.act_max)) dyb[u] = 0.0f;
        }
    }
    if (dx && w->rows_held)
        for (uint32_t b = 0; b < B; ++b) mt_q_weight_rows_dx(w, w_scale, dy + (size_t)b * U, U, D, dx + (size_t)b * D);
    else if (dx)
        for (uint32_t b = 0; b < B; ++b)
            for (uint32_t d = 0; d < D; ++d)
                dx[(size_t)b * D + d] += mt_q_dx_sum(dy + (size_t)b * U, mt_q_s8(w) + d, D, w_scale, U);
    if (g->dw) dense_s8_weight_rows(x, dy, g->dw, g->x_scale, B, D, U, p.x_zp, 0, U);
    if (g->db) mt_op_bias_f32_backward_ref(dy, g->db, B, U);
}

void mt_op_dense_s8_backward(const int8_t *x, const int8_t *w, const float *w_scale, const int32_t *bias,
                             const int32_t *rq, float *dy, const mt_q_grads *g, uint32_t B, uint32_t D, uint32_t U,
                             uint32_t packed)
{
    mt_tensor_rt one; /* w in one array */
    memset(&one, 0, sizeof one);
    one.data = (const float *)(const void *)w;
    dense_s8_backward_rows(x, &one, w_scale, bias, rq, dy, g, B, D, U, packed);
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
    if (w->rows_held) /* its first rows in the arena, the others in the image (quant_grad.h) */
        mt_s8_held_rows(mt_kernel_dense_s8_forward, NULL, mt_q_s8(x), w, bias, mt_q_s32(&t[op->inputs[3]]),
                        mt_q_s8_out(&t[op->outputs[0]]), n, x->count, w->dims[0], op->params[0]);
    else
        mt_kernel_dense_s8_forward(mt_q_s8(x), mt_q_s8(w), bias, mt_q_s32(&t[op->inputs[3]]),
                                   mt_q_s8_out(&t[op->outputs[0]]), n, x->count, w->dims[0], op->params[0]);
}

static void dense_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const int32_t *bias = op->inputs[2] == MT_NO_TENSOR ? NULL : mt_q_s32(&t[op->inputs[2]]);
    const mt_q_grads g = mt_q_grads_of(op, t);
    dense_s8_backward_rows(mt_q_s8(x), w, mt_q_weight_scales(w), bias, mt_q_s32(&t[op->inputs[3]]),
                           t[op->outputs[0]].grad, &g, n, x->count, w->dims[0], op->params[0]);
}

const mt_op_kernel mt_kernel_dense_s8 = {dense_s8_check, mt_no_scratch, dense_s8_forward, dense_s8_backward,
                                         mt_q_reads_input, 0};

/* ---- dW in tiles (kernel.h, mt_weight_tiling): a FullyConnected trained in place ----
 * A tile of R units: dW[u0 .. u0 + R) [R, D] = 0 + Σ, the whole gradient's sums (on a cleared
 * tile), from the dy the op's backward has just masked. */
static uint32_t dense_s8_tile_floats(const mt_image *img, const mt_op_desc *op, uint32_t batch, uint32_t rows)
{
    (void)batch;
    mt_tensor_desc w;
    mt_image_tensor(img, op->inputs[1], &w);
    return rows * w.dims[1];
}

static void dense_s8_grad_rows(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, uint32_t first, uint32_t rows,
                               float *tile)
{
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]];
    const uint32_t D = x->count;
    memset(tile, 0, (size_t)rows * D * sizeof(float));
    dense_s8_weight_rows(mt_q_s8(x), t[op->outputs[0]].grad, tile, mt_q_grads_of(op, t).x_scale, n, D, w->dims[0],
                         mt_q_unpack(op->params[0]).x_zp, first, rows);
}

const mt_weight_tiling mt_weight_tiling_dense_s8 = {dense_s8_tile_floats, dense_s8_grad_rows};
