/*
 * The update of an int8 layer trained in place: quantization-aware scaling (QAS; Lin et al.,
 * "On-Device Training Under 256KB Memory", NeurIPS 2022).
 *
 * The layer's real weight is w = s·W_q (s = sw[c], per output channel, fixed) and its real
 * bias sx·sw[c]·b_q. The backward gives G = dL/dw (ops/quant_grad.h). Read as a function of
 * W_q, the gradient is dL/dW_q = s·G: its scale relative to W_q is s² times G's relative to w,
 * which makes a float optimizer's step on W_q far too small (s ~ 1e-3). QAS multiplies it by
 * s⁻², so the SGD step on W_q is
 *
 *   W_q ← sat(round(W_q − lr·s⁻²·s·G)) = sat(round(W_q − lr·(G / s)))
 *
 * the step a float weight w would take (w − lr·G), expressed in W_q's units and rounded to
 * the grid: QAS makes the int8 update follow the float one. The int32 bias likewise, with its
 * scale sx·sw[c]. Momentum is PyTorch's, on the real gradient: buf = μ·buf + d, d = buf.
 *
 * Optional float master weights (MT_TENSOR_MASTER, int8 weights only: an int32 bias's steps are
 * fine already, its scale sx·sw[c] being small): the step applies to a float copy m, in W_q's
 * units, clamped to [−127, 127], and W_q is m rounded half to even, so steps smaller than half a
 * quantization step accumulate instead of vanishing; 4 bytes a weight more.
 *
 * Exactness: the float steps are IEEE single operations in a fixed order (d = g·grad_scale,
 * buf = μ·buf + d, r = d / s, δ = lr·r), then double(W_q) − double(δ) is exact for an int8
 * W_q and rounded once for an int32 one, the rounding is half to even by integer arithmetic
 * (no rounding mode, no libm), and the saturation is a comparison: the same bits on every
 * target, soft-float ones included. Rounding is deterministic, not stochastic: a step smaller
 * than half a quantization step (|δ| < 0.5, or exactly 0.5 toward an even value) leaves W_q
 * unchanged.
 */
#include "ops/ops.h"
#include "ops/quant_grad.h"

#include "mt_math.h"

/* round half to even of v, saturated to [lo, hi]: the saturation first (so that the integer
 * conversion is defined), then floor by truncation, then the tie to the even neighbour */
int64_t mt_qas_round(double v, int64_t lo, int64_t hi)
{
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    int64_t f = (int64_t)v; /* truncation toward 0, exact for |v| < 2^62 */
    if ((double)f > v) f -= 1; /* floor */
    const double frac = v - (double)f; /* exact: v and f share their integer bits */
    if (frac > 0.5 || (frac == 0.5 && (f & 1))) f += 1;
    return f < lo ? lo : (f > hi ? hi : f);
}

/* One element's step δ = lr·(d / s), d after momentum; *buf_out the new momentum */
static inline float qas_step(const mt_qas_tensor *t, size_t i, float lr, float momentum, float grad_scale,
                             float *buf_out)
{
    float d = t->g[i] * grad_scale;
    if (momentum > 0.0f) {
        d = momentum * t->buf[i] + d; /* buf starts at 0: the first step's buf is d, as PyTorch's */
        *buf_out = d;
    }
    const float s = t->scale[(i / t->inner) % t->channels];
    return lr * (d / s);
}

void mt_qas_sgd_update(const mt_qas_tensor *t, float lr, float momentum, float grad_scale)
{
    for (size_t i = 0; i < t->N; ++i) {
        float buf = 0.0f;
        const double step = (double)qas_step(t, i, lr, momentum, grad_scale, &buf);
        if (momentum > 0.0f) t->buf[i] = buf;
        if (t->master) { /* m ← clamp(m − δ), then the weight is m's rounding */
            float m = t->master[i] - (float)step;
            m = m < -127.0f ? -127.0f : (m > 127.0f ? 127.0f : m);
            t->master[i] = m;
            ((int8_t *)t->q)[i] = (int8_t)mt_qas_round((double)m, -127, 127);
        } else if (t->dtype == MT_DTYPE_I8) {
            int8_t *q = (int8_t *)t->q;
            q[i] = (int8_t)mt_qas_round((double)q[i] - step, -127, 127);
        } else {
            int32_t *q = (int32_t *)t->q;
            q[i] = (int32_t)mt_qas_round((double)q[i] - step, INT32_MIN, INT32_MAX);
        }
    }
}

int mt_qas_sgd_update_is_finite(const mt_qas_tensor *t, float lr, float momentum, float grad_scale)
{
    for (size_t i = 0; i < t->N; ++i) {
        float buf = 0.0f;
        const float step = qas_step(t, i, lr, momentum, grad_scale, &buf);
        if (!mt_isfinitef(t->g[i]) || !mt_isfinitef(step) || !mt_isfinitef(buf)) return 0;
    }
    return 1;
}

/* A sparse update's part (session.h, mt_weight_part): `blocks` runs of `len` elements, run j
 * at element j·stride of q, g and the master copy and at j·len of the momentum (the state
 * holds the runs back to back). The first k rows of a Conv2D's or FullyConnected's weight are
 * one run from element 0; the first k channels of a depthwise [1, KH, KW, C] weight KH·KW runs
 * of k, stride C; a whole tensor one run of N. A run starts at a multiple of the channel
 * period (inner·channels), so its element i scales as the whole tensor's at that element, and
 * each element's step reads its own gradient, momentum and scale alone: run by run gives the
 * trained elements the whole update's bits and leaves the others untouched. */
int mt_qas_sgd_update_runs(const mt_qas_tensor *t, uint32_t blocks, uint32_t len, uint32_t stride, float lr,
                           float momentum, float grad_scale, int check_only)
{
    const size_t width = t->dtype == MT_DTYPE_I8 ? 1u : 4u;
    for (uint32_t j = 0; j < blocks; ++j) {
        mt_qas_tensor run = *t;
        const size_t first = (size_t)j * stride;
        run.q = (uint8_t *)t->q + first * width;
        run.g = t->g + first;
        run.buf = t->buf ? t->buf + (size_t)j * len : NULL;
        run.master = t->master ? t->master + first : NULL;
        run.N = len;
        if (check_only && !mt_qas_sgd_update_is_finite(&run, lr, momentum, grad_scale)) return 0;
        if (!check_only) mt_qas_sgd_update(&run, lr, momentum, grad_scale);
    }
    return 1;
}

/* Element i of a Conv2D weight [OC, KH, KW, C] or a Dense one [U, D] belongs to channel
 * i / (count / channels); of a depthwise weight [1, KH, KW, C] to i % C; of a bias to i. */
void mt_qas_tensor_of(const mt_image *img, const mt_op_desc *op, int k, mt_tensor_rt *t, const float *g,
                      float momentum, mt_qas_tensor *v)
{
    const int weight = k == 1;
    v->q = t->mutable_data;
    v->dtype = t->dtype;
    v->g = g;
    v->scale = t->opt_state;
    v->N = t->count;
    if (!weight) { /* the bias's scales sx·sw[c] as the image holds them: one a channel, or one
                    * for all (channels 1: element i reads scale[0]), the values its decoded
                    * record held before (plan_qas.c) */
        mt_tensor_desc d;
        mt_quant q;
        mt_image_tensor(img, op->inputs[k], &d);
        mt_image_quant(img, &d, &q); /* a trained int32 bias has one (model_image.c) */
        v->scale = mt_quant_scales_f32(&q);
        v->channels = q.channels, v->inner = 1;
    } else if (op->type == MT_OP_DEPTHWISE_CONV2D_S8) {
        v->channels = t->dims[3], v->inner = 1;
    } else {
        v->channels = t->dims[0], v->inner = t->count / t->dims[0];
    }
    v->buf = momentum > 0.0f ? t->opt_state + mt_q_record_floats(t->dtype, v->channels) : NULL;
    v->master = mt_q_master_of(t);
}

/* ---- an int8 weight whose first rows alone the arena holds (quant_grad.h) ---- */

void mt_s8_held_rows(mt_s8_rows_kernel forward, mt_s8_mask_kernel mask, const int8_t *x, const mt_tensor_rt *w,
                     const int32_t *bias, const int32_t *rq, void *out, uint32_t N, uint32_t D, uint32_t U,
                     uint32_t packed)
{
    const uint32_t k = w->rows_held;
    for (uint32_t r = 0; r < N; ++r)
        for (uint32_t range = 0; range < 2; ++range) { /* units 0..k-1, then k..U-1 */
            const uint32_t first = range ? k : 0u, units = range ? U - k : k;
            const int8_t *xr = x + (size_t)r * D, *wr = mt_weight_row_s8(w, first, D);
            const int32_t *br = bias ? bias + first : NULL, *rqr = rq + 2u * first;
            const size_t at = (size_t)r * U + first;
            if (forward)
                forward(xr, wr, br, rqr, (int8_t *)out + at, 1, D, units, packed);
            else
                mask(xr, wr, br, rqr, (float *)out + at, 1, D, units, packed);
        }
}

void mt_q_weight_rows_dx(const mt_tensor_rt *w, const float *w_scale, const float *dz, uint32_t R, uint32_t D,
                         float *dx)
{
    uint32_t j = 0;
    for (; j + 4u <= D; j += 4u) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        for (uint32_t r = 0; r < R; ++r) {
            const int8_t *v = mt_weight_row_s8(w, r, D) + j;
            const float d = dz[r], s = w_scale[r];
            a0 = mt_fmaf(d, s * (float)v[0], a0), a1 = mt_fmaf(d, s * (float)v[1], a1);
            a2 = mt_fmaf(d, s * (float)v[2], a2), a3 = mt_fmaf(d, s * (float)v[3], a3);
        }
        dx[j] += a0, dx[j + 1] += a1, dx[j + 2] += a2, dx[j + 3] += a3;
    }
    for (; j < D; ++j) {
        float a = 0.0f;
        for (uint32_t r = 0; r < R; ++r) a = mt_fmaf(dz[r], w_scale[r] * (float)mt_weight_row_s8(w, r, D)[j], a);
        dx[j] += a;
    }
}
