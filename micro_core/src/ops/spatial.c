#include "ops/spatial.h"
#include "ops/ops.h"

mt_status mt_spatial_axis(uint32_t in, uint32_t k, uint32_t stride, uint32_t padding, uint32_t *out,
                          uint32_t *pad_before)
{
    if (k == 0 || stride == 0) return MT_ERR_SHAPE;
    if (padding == MT_PADDING_VALID) {
        if (k > in) return MT_ERR_SHAPE;
        *out = (in - k) / stride + 1;
        *pad_before = 0;
        return MT_OK;
    }
    if (padding != MT_PADDING_SAME) return MT_ERR_BAD_MODEL;
    *out = (in + stride - 1) / stride;
    uint64_t needed = (uint64_t)(*out - 1) * stride + k;
    uint32_t total = needed > in ? (uint32_t)(needed - in) : 0u;
    *pad_before = total / 2;
    if (*pad_before >= k) return MT_ERR_SHAPE; /* a window entirely in padding */
    return MT_OK;
}

mt_status mt_spatial_explicit_axis(uint32_t in, uint32_t k, uint32_t stride, uint32_t before, uint32_t after,
                                   uint32_t *out)
{
    if (k == 0 || stride == 0) return MT_ERR_SHAPE;
    const uint64_t span = (uint64_t)before + in + after; /* 64 bits: a corrupt image never wraps */
    if (span < k || before >= k) return MT_ERR_SHAPE;    /* no window; the first one all padding */
    const uint64_t windows = (span - k) / stride + 1;
    if ((windows - 1) * stride >= (uint64_t)before + in) return MT_ERR_SHAPE; /* the last all padding */
    if (windows > 0xFFFFFFFFu) return MT_ERR_SHAPE;
    *out = (uint32_t)windows;
    return MT_OK;
}

/* Explicit pads live in params[3], which only the float pools leave free: a convolution's holds
 * its fused activation (its explicit pads run as a PAD op, whose zeros are what it would read),
 * and the int8 pools, TFLite's, have SAME and VALID only. */
static int explicit_pads(const mt_op_desc *op)
{
    return op->params[2] == MT_PADDING_EXPLICIT && (op->type == MT_OP_MAX_POOL2D || op->type == MT_OP_AVERAGE_POOL2D);
}

static void decode(const mt_op_desc *op, uint32_t *SH, uint32_t *SW)
{
    *SH = op->params[1] & 0xFFFFu;
    *SW = op->params[1] >> 16;
}

mt_status mt_spatial_check(const mt_op_desc *op, const mt_tensor_desc *x, const mt_tensor_desc *y,
                           uint32_t KH, uint32_t KW, uint32_t OC, mt_spatial *g)
{
    return mt_spatial_check_dtype(op, x, y, KH, KW, OC, MT_DTYPE_F32, g);
}

mt_status mt_spatial_check_dtype(const mt_op_desc *op, const mt_tensor_desc *x, const mt_tensor_desc *y,
                                 uint32_t KH, uint32_t KW, uint32_t OC, uint32_t dtype, mt_spatial *g)
{
    if (x->ndim != 3 || y->ndim != 3) return MT_ERR_SHAPE;
    if (x->dtype != dtype || y->dtype != dtype) return MT_ERR_SHAPE;
    if (x->flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    g->H = x->dims[0], g->W = x->dims[1], g->C = x->dims[2];
    g->KH = KH, g->KW = KW, g->OC = OC;
    decode(op, &g->SH, &g->SW);
    mt_status st;
    if (explicit_pads(op)) {
        const uint32_t p3 = op->params[3];
        g->activation = MT_FUSED_NONE;
        g->PT = MT_POOL_PAD_TOP(p3), g->PL = MT_POOL_PAD_LEFT(p3);
        if ((st = mt_spatial_explicit_axis(g->H, KH, g->SH, g->PT, MT_POOL_PAD_BOTTOM(p3), &g->OH)) != MT_OK)
            return st;
        if ((st = mt_spatial_explicit_axis(g->W, KW, g->SW, g->PL, MT_POOL_PAD_RIGHT(p3), &g->OW)) != MT_OK)
            return st;
    } else {
        g->activation = op->params[3];
        if (g->activation > MT_FUSED_RELU6) return MT_ERR_BAD_MODEL;
        if ((st = mt_spatial_axis(g->H, KH, g->SH, op->params[2], &g->OH, &g->PT)) != MT_OK) return st;
        if ((st = mt_spatial_axis(g->W, KW, g->SW, op->params[2], &g->OW, &g->PL)) != MT_OK) return st;
    }
    if (y->dims[0] != g->OH || y->dims[1] != g->OW || y->dims[2] != OC) return MT_ERR_SHAPE;
    return MT_OK;
}

void mt_spatial_runtime(const mt_op_desc *op, const mt_tensor_rt *x, const mt_tensor_rt *y,
                        uint32_t KH, uint32_t KW, mt_spatial *g)
{
    g->H = x->dims[0], g->W = x->dims[1], g->C = x->dims[2];
    g->OH = y->dims[0], g->OW = y->dims[1], g->OC = y->dims[2];
    g->KH = KH, g->KW = KW;
    decode(op, &g->SH, &g->SW);
    if (explicit_pads(op)) {
        g->activation = MT_FUSED_NONE;
        g->PT = MT_POOL_PAD_TOP(op->params[3]), g->PL = MT_POOL_PAD_LEFT(op->params[3]);
        return; /* the pads after are those that give y's OH, OW */
    }
    g->activation = op->params[3];
    uint32_t out;
    mt_spatial_axis(g->H, KH, g->SH, op->params[2], &out, &g->PT);
    mt_spatial_axis(g->W, KW, g->SW, op->params[2], &out, &g->PL);
}

/* [o0, o1): the outputs along one axis whose tap k is in bounds (a contiguous range) */
void mt_spatial_in_bounds(uint32_t O, uint32_t k, uint32_t stride, uint32_t pad, uint32_t size, uint32_t *o0,
                          uint32_t *o1)
{
    uint32_t o = 0;
    while (o < O && mt_spatial_tap(o, k, stride, pad, size) < 0) ++o;
    *o0 = o;
    while (o < O && mt_spatial_tap(o, k, stride, pad, size) >= 0) ++o;
    *o1 = o;
}

void mt_spatial_window_inside(uint32_t O, uint32_t stride, uint32_t pad, uint32_t K, uint32_t size, uint32_t *o0,
                              uint32_t *o1)
{
    uint32_t a0, a1, b0, b1; /* the taps are in order: a window is inside when its first and last taps are */
    mt_spatial_in_bounds(O, 0, stride, pad, size, &a0, &a1);
    mt_spatial_in_bounds(O, K - 1, stride, pad, size, &b0, &b1);
    *o0 = a0 > b0 ? a0 : b0;
    *o1 = a1 < b1 ? a1 : b1;
    if (*o1 < *o0) *o1 = *o0;
}

void mt_spatial_tap_range(uint32_t o, uint32_t stride, uint32_t pad, uint32_t K, uint32_t size, uint32_t *k0,
                          uint32_t *k1)
{
    const int64_t start = (int64_t)o * stride - pad; /* the input index of tap 0 */
    const int64_t first = start < 0 ? -start : 0, end = (int64_t)size - start;
    *k0 = first < (int64_t)K ? (uint32_t)first : K;
    *k1 = end < (int64_t)K ? (end > (int64_t)*k0 ? (uint32_t)end : *k0) : K;
}

void mt_fused_activation_forward(uint32_t activation, float *y, size_t N)
{
    if (activation == MT_FUSED_NONE) return;
    for (size_t i = 0; i < N; ++i) {
        float v = y[i] < 0.0f ? 0.0f : y[i]; /* NaN passes through */
        if (activation == MT_FUSED_RELU6 && v > 6.0f) v = 6.0f;
        y[i] = v;
    }
}

/* ReLU: dy·[y > 0];  ReLU6: dy·[0 < y < 6] (the subgradient at the kinks is 0, as in PyTorch) */
void mt_fused_activation_backward(uint32_t activation, const float *y, float *dy, size_t N)
{
    if (activation == MT_FUSED_NONE) return;
    for (size_t i = 0; i < N; ++i) {
        int pass = y[i] > 0.0f && (activation != MT_FUSED_RELU6 || y[i] < 6.0f);
        if (!pass) dy[i] = 0.0f;
    }
}

mt_status mt_conv_operands(const mt_image *img, const mt_op_desc *op, mt_tensor_desc *x, mt_tensor_desc *w,
                           mt_tensor_desc *y)
{
    if (op->num_inputs < 2 || op->num_inputs > 3 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    if (op->inputs[1] == MT_NO_TENSOR || op->params[0] != 0) return MT_ERR_BAD_MODEL;
    mt_image_tensor(img, op->inputs[0], x);
    mt_image_tensor(img, op->inputs[1], w);
    mt_image_tensor(img, op->outputs[0], y);
    if (w->dtype != MT_DTYPE_F32 || !(w->flags & MT_TENSOR_CONST)) return MT_ERR_UNSUPPORTED;
    if (w->ndim != 4 || x->ndim != 3) return MT_ERR_SHAPE;
    return MT_OK;
}

void mt_conv_runtime(const mt_op_desc *op, mt_tensor_rt *t, mt_conv_view *v)
{
    v->x = &t[op->inputs[0]];
    v->w = &t[op->inputs[1]];
    v->b = mt_bias_of(op, t);
    v->y = &t[op->outputs[0]];
    mt_spatial_runtime(op, v->x, v->y, v->w->dims[1], v->w->dims[2], &v->g);
}

/* dz = dy·act'(y) in place, then dbias[c] += Σ_p dz[p, c] (select/kernels.def) */
void mt_activation_bias_f32_backward_ref(uint32_t act, const float *y, float *dy, float *dbias, size_t P, uint32_t C)
{
    mt_fused_activation_backward(act, y, dy, P * C);
    if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, P, C);
}
