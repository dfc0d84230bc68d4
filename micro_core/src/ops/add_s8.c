/*
 * int8 Add of two tensors of the same shape (TFLite's reference integer Add, residual
 * branches): with L = left_shift (20 for int8),
 *   a' = MultiplyByQuantizedMultiplierSmallerThanOneExp((a - za) · 2^L, rq[0])
 *   b' = MultiplyByQuantizedMultiplierSmallerThanOneExp((b - zb) · 2^L, rq[1])
 *   y  = clamp(MultiplyByQuantizedMultiplierSmallerThanOneExp(a' + b', rq[2]) + zy, min, max)
 * rq [4, 2] int32: (multiplier, shift) of sa / (2·max(sa, sb)), sb / (2·max(sa, sb)) and
 * 2·max(sa, sb) / (2^L · sy), then (L, 0). params[0] = za | zb << 8 | zy << 16,
 * params[1] = act_min | act_max << 8 (signed bytes).
 *
 * Backward (ops/quant_grad.h): y = FQ(a + b) in the float reading, so both operands take the
 * output's gradient where the forward's clamp left the rescaled sum as it was:
 *   da += dy · mask,  db += dy · mask,  mask = [act_min <= requant(a' + b') + zy <= act_max]
 */
#include "ops/quant_grad.h"

void mt_op_add_s8_forward_ref(const int8_t *a, const int8_t *b, int8_t *y, size_t N, const int32_t *rq,
                              uint32_t zero_points, uint32_t range)
{
    const int32_t za = mt_q_param_byte(zero_points, 0), zb = mt_q_param_byte(zero_points, 1);
    const int32_t zy = mt_q_param_byte(zero_points, 2);
    const int32_t lo = mt_q_param_byte(range, 0), hi = mt_q_param_byte(range, 1);
    const int left = (int)rq[6];
    /* the three rescalings' constants once (multipliers >= 0, add_s8_check: no saturation) */
    const mt_q_requant qa = mt_q_requant_of(NULL, rq, 0), qb = mt_q_requant_of(NULL, rq, 1);
    const mt_q_requant qy = mt_q_requant_of(NULL, rq, 2);
    for (size_t i = 0; i < N; ++i) {
        const int32_t sa = (int32_t)((uint32_t)((int32_t)a[i] - za) << left);
        const int32_t sb = (int32_t)((uint32_t)((int32_t)b[i] - zb) << left);
        const int32_t raw = mt_q_scale(sa, qa) + mt_q_scale(sb, qb);
        y[i] = mt_q_clamp(mt_q_scale(raw, qy) + zy, lo, hi);
    }
}

void mt_op_add_s8_backward(const int8_t *a, const int8_t *b, float *dy, float *da, float *db, size_t N,
                           const int32_t *rq, uint32_t zero_points, uint32_t range)
{
    const int32_t za = mt_q_param_byte(zero_points, 0), zb = mt_q_param_byte(zero_points, 1);
    const int32_t zy = mt_q_param_byte(zero_points, 2);
    const int32_t lo = mt_q_param_byte(range, 0), hi = mt_q_param_byte(range, 1);
    const int left = (int)rq[6];
    const mt_q_requant qa = mt_q_requant_of(NULL, rq, 0), qb = mt_q_requant_of(NULL, rq, 1);
    const mt_q_requant qy = mt_q_requant_of(NULL, rq, 2);
    for (size_t i = 0; i < N; ++i) {
        const int32_t sa = (int32_t)((uint32_t)((int32_t)a[i] - za) << left);
        const int32_t sb = (int32_t)((uint32_t)((int32_t)b[i] - zb) << left);
        const int32_t raw = mt_q_scale(sa, qa) + mt_q_scale(sb, qb);
        if (!mt_q_unsaturated(raw, qy, zy, lo, hi)) dy[i] = 0.0f;
        if (da) da[i] += dy[i];
        if (db) db[i] += dy[i];
    }
}

static mt_status add_s8_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 3 || op->num_outputs != 1 || op->inputs[1] == MT_NO_TENSOR ||
        op->inputs[2] == MT_NO_TENSOR)
        return MT_ERR_BAD_MODEL;
    if ((op->params[0] >> 24) != 0 || (op->params[1] >> 16) != 0 || op->params[2] != 0 || op->params[3] != 0)
        return MT_ERR_BAD_MODEL;
    mt_tensor_desc a, b, y, r;
    mt_image_tensor(img, op->inputs[0], &a);
    mt_image_tensor(img, op->inputs[1], &b);
    mt_image_tensor(img, op->outputs[0], &y);
    if ((a.flags | b.flags) & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    if (a.ndim != b.ndim || a.ndim != y.ndim) return MT_ERR_SHAPE;
    for (int d = 0; d < a.ndim; ++d)
        if (a.dims[d] != b.dims[d] || a.dims[d] != y.dims[d]) return MT_ERR_SHAPE;
    float s;
    int32_t za, zb, zy;
    if (mt_q_per_tensor(img, &a, &s, &za) != MT_OK || mt_q_per_tensor(img, &b, &s, &zb) != MT_OK ||
        mt_q_per_tensor(img, &y, &s, &zy) != MT_OK)
        return MT_ERR_SHAPE;
    if (mt_q_param_byte(op->params[0], 0) != za || mt_q_param_byte(op->params[0], 1) != zb ||
        mt_q_param_byte(op->params[0], 2) != zy)
        return MT_ERR_BAD_MODEL;
    if (mt_q_param_byte(op->params[1], 0) > mt_q_param_byte(op->params[1], 1)) return MT_ERR_BAD_MODEL;
    mt_status st = mt_q_check_requant(img, op->inputs[2], 4);
    if (st != MT_OK) return st;
    mt_image_tensor(img, op->inputs[2], &r);
    /* row 3: the left shift (0..30, TFLite uses 20) and 0 */
    const uint8_t *p = img->base + img->data_offset + r.data_offset + 24u;
    const uint32_t left = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    const uint32_t zero = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    if (left > 30u || zero != 0) return MT_ERR_BAD_MODEL;
    return MT_OK;
}

static void add_s8_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *a = &t[op->inputs[0]];
    mt_kernel_add_s8_forward(mt_q_s8(a), mt_q_s8(&t[op->inputs[1]]), mt_q_s8_out(&t[op->outputs[0]]),
                             (size_t)n * a->count, mt_q_s32(&t[op->inputs[2]]), op->params[0], op->params[1]);
}

static void add_s8_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *a = &t[op->inputs[0]], *b = &t[op->inputs[1]];
    /* x + x: one tensor, one gradient, both terms added to it */
    mt_op_add_s8_backward(mt_q_s8(a), mt_q_s8(b), t[op->outputs[0]].grad, a->grad, b->grad, (size_t)n * a->count,
                          mt_q_s32(&t[op->inputs[2]]), op->params[0], op->params[1]);
}

const mt_op_kernel mt_kernel_add_s8 = {add_s8_check, mt_no_scratch, add_s8_forward, add_s8_backward,
                                       mt_q_reads_inputs_0_1, 0};
