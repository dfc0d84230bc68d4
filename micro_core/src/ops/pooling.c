/*
 * Pooling over NHWC windows: MaxPool2D, AveragePool2D, GlobalAveragePool.
 *   x [B, H, W, C] -> y [B, OH, OW, C]  (global: y [B, C])
 */
#include "ops/ops.h"
#include "ops/spatial.h"

#if MT_REFERENCE_KERNELS
/* y = max over the in-bounds window; padding never wins (TFLite and PyTorch agree). */
void mt_op_max_pool2d_f32_forward_ref(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow)
        for (uint32_t c = 0; c < g->C; ++c) {
            int first = 1;
            float m = 0.0f;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                float v = x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c];
                if (first || v > m || v != v) { /* NaN wins, as in PyTorch */
                    m = v;
                    first = 0;
                }
            }
            y[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c] = m;
        }
}

/* dx at the window's first maximum += dy (PyTorch routes ties to the first index scanned). */
void mt_op_max_pool2d_f32_backward_ref(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                       const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow)
        for (uint32_t c = 0; c < g->C; ++c) {
            const size_t o = (((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c;
            const float m = y[o];
            int done = 0;
            for (uint32_t kh = 0; kh < g->KH && !done; ++kh) {
                int32_t ih = mt_spatial_tap(oh, kh, g->SH, g->PT, g->H);
                if (ih < 0) continue;
                for (uint32_t kw = 0; kw < g->KW && !done; ++kw) {
                    int32_t iw = mt_spatial_tap(ow, kw, g->SW, g->PL, g->W);
                    if (iw < 0) continue;
                    const size_t i = (((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c;
                    if (x[i] == m || (x[i] != x[i] && m != m)) {
                        dx[i] += dy[o];
                        done = 1;
                    }
                }
            }
        }
}
#endif /* MT_REFERENCE_KERNELS */

/* Number of in-bounds taps of a window: the divisor of the average. */
static uint32_t window_count(uint32_t oh, uint32_t ow, const mt_spatial *g)
{
    uint32_t rows = 0, cols = 0;
    for (uint32_t kh = 0; kh < g->KH; ++kh) rows += mt_spatial_tap(oh, kh, g->SH, g->PT, g->H) >= 0;
    for (uint32_t kw = 0; kw < g->KW; ++kw) cols += mt_spatial_tap(ow, kw, g->SW, g->PL, g->W) >= 0;
    return rows * cols;
}

/* y = (Σ in-bounds x) / count  (TFLite's SAME average; PyTorch count_include_pad=False) */
void mt_op_average_pool2d_f32_forward(const float *x, float *y, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        const float count = (float)window_count(oh, ow, g);
        for (uint32_t c = 0; c < g->C; ++c) {
            float acc = 0.0f;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                acc += x[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c];
            }
            y[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c] = acc / count;
        }
    }
}

/* dx[tap] += dy / count for every in-bounds tap of the window */
void mt_op_average_pool2d_f32_backward(const float *dy, float *dx, uint32_t B, const mt_spatial *g)
{
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        const float count = (float)window_count(oh, ow, g);
        for (uint32_t c = 0; c < g->C; ++c) {
            const float share = dy[(((size_t)b * g->OH + oh) * g->OW + ow) * g->C + c] / count;
            int32_t ih, iw;
            MT_SPATIAL_FOR_TAPS(g, oh, ow, kh, kw, ih, iw) {
                dx[(((size_t)b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C + c] += share;
            }
        }
    }
}

/* y[b,c] = (1/P) Σ_p x[b,p,c], P = H·W positions */
void mt_op_global_average_pool_f32_forward(const float *x, float *y, uint32_t B, uint32_t P, uint32_t C)
{
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t c = 0; c < C; ++c) {
            float acc = 0.0f;
            for (uint32_t p = 0; p < P; ++p) acc += x[((size_t)b * P + p) * C + c];
            y[(size_t)b * C + c] = acc / (float)P;
        }
}

/* dx[b,p,c] += dy[b,c] / P */
void mt_op_global_average_pool_f32_backward(const float *dy, float *dx, uint32_t B, uint32_t P, uint32_t C)
{
    for (uint32_t b = 0; b < B; ++b)
        for (uint32_t p = 0; p < P; ++p)
            for (uint32_t c = 0; c < C; ++c) dx[((size_t)b * P + p) * C + c] += dy[(size_t)b * C + c] / (float)P;
}

/* ---- graph adapters ---- */

static mt_status pool_check(const mt_image *img, const mt_op_desc *op)
{
    /* params[3]: no fused activation; under MT_PADDING_EXPLICIT, the pads (spatial.h) */
    if (op->num_inputs != 1 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    if (op->params[3] != 0 && op->params[2] != MT_PADDING_EXPLICIT) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.ndim != 3) return MT_ERR_SHAPE;
    mt_spatial g;
    return mt_spatial_check(op, &x, &y, op->params[0] & 0xFFFFu, op->params[0] >> 16, x.dims[2], &g);
}

static void pool_geometry(const mt_op_desc *op, const mt_tensor_rt *t, mt_spatial *g)
{
    mt_spatial_runtime(op, &t[op->inputs[0]], &t[op->outputs[0]], op->params[0] & 0xFFFFu,
                       op->params[0] >> 16, g);
}

/* MaxPool2D and AveragePool2D share their check, geometry and operands; the op's type picks the
 * kernel (the max's backward routes dy to the window's first maximum, so it also reads x and y) */
static void pool_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    mt_spatial g;
    pool_geometry(op, t, &g);
    const float *x = t[op->inputs[0]].data;
    float *y = t[op->outputs[0]].mutable_data;
    if (op->type == MT_OP_MAX_POOL2D) mt_kernel_max_pool2d_f32_forward(x, y, n, &g);
    else mt_op_average_pool2d_f32_forward(x, y, n, &g);
}

static void pool_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *y = &t[op->outputs[0]];
    if (!x->grad) return;
    mt_spatial g;
    pool_geometry(op, t, &g);
    if (op->type == MT_OP_MAX_POOL2D) mt_kernel_max_pool2d_f32_backward(x->data, y->data, y->grad, x->grad, n, &g);
    else mt_op_average_pool2d_f32_backward(y->grad, x->grad, n, &g);
}

static mt_status global_pool_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs != 1 || op->num_outputs != 1 || !mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.dtype != MT_DTYPE_F32 || y.dtype != MT_DTYPE_F32) return MT_ERR_SHAPE;
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    if (x.ndim != 3 || y.count != x.dims[2] || y.dims[y.ndim - 1] != x.dims[2]) return MT_ERR_SHAPE;
    return MT_OK;
}

static void global_pool_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_op_global_average_pool_f32_forward(x->data, t[op->outputs[0]].mutable_data, n, x->dims[0] * x->dims[1],
                                          x->dims[2]);
}

static void global_pool_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    if (!x->grad) return;
    mt_op_global_average_pool_f32_backward(t[op->outputs[0]].grad, x->grad, n, x->dims[0] * x->dims[1],
                                           x->dims[2]);
}

/* the routing of dy to the window's maximum compares x with y */
static uint32_t max_pool_reads(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op, (void)grad_inputs;
    return 1u | MT_READS_OUTPUT;
}

const mt_op_kernel mt_kernel_max_pool2d = {pool_check, mt_no_scratch, pool_forward, pool_backward, max_pool_reads,
                                           0};
const mt_op_kernel mt_kernel_average_pool2d = {pool_check, mt_no_scratch, pool_forward, pool_backward,
                                               mt_reads_nothing, 0};
const mt_op_kernel mt_kernel_global_average_pool = {global_pool_check, mt_no_scratch,
                                                    global_pool_forward, global_pool_backward, mt_reads_nothing, 0};
