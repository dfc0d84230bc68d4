/*
 * Dense (fully connected): y = x · Wᵀ + b.
 *   x [B, I] activations (one sample flattened), W [U, I] (torch.nn.Linear,
 *   TFLite FullyConnected), b [U] optional, y [B, U].
 */
#include <string.h>

#include "mt_fma.h"
#include "ops/kernel.h"
#include "ops/ops.h"
#include "ops/spatial.h"

/* y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u], summed from +0 in ascending i, each term a fused
 * multiply-add (mt_fma.h), bias added last. Its own function, not inlined: the loops then keep
 * the registers they had before the activation joined the slot (on the Cortex-M3, whose every
 * term is a call, one more live value costs a spill per term). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void dense_forward_rows(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                               uint32_t I, uint32_t U)
{
    for (uint32_t b = 0; b < B; ++b) {
        const float *xb = x + (size_t)b * I;
        float *yb = y + (size_t)b * U;
        for (uint32_t u = 0; u < U; ++u) {
            const float *wu = w + (size_t)u * I;
            float acc = 0.0f;
            for (uint32_t i = 0; i < I; ++i) acc = mt_fmaf(xb[i], wu[i], acc);
            yb[u] = bias ? acc + bias[u] : acc;
        }
    }
}

/* y[b,u] = act(Σ_i x[b,i]·W[u,i] + bias[u]): the sums above, then the fused activation (Conv2D's
 * 1 x 1 layers run Dense with theirs; the op itself has none). Always compiled: the Helium
 * kernel computes its edges with it. */
void mt_op_dense_f32_forward_ref(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                 uint32_t I, uint32_t U, uint32_t act)
{
    dense_forward_rows(x, w, bias, y, B, I, U);
    mt_fused_activation_forward(act, y, (size_t)B * U);
}

#if MT_REFERENCE_KERNELS
/*
 * dx[b,i]   += Σ_u dy[b,u]·W[u,i]
 * dW[u,i]    = (dw_zero ? 0 : dW[u,i]) + Σ_b dy[b,u]·x[b,i]
 * dbias[u]  += Σ_b dy[b,u]
 * Each sum runs in ascending order of its index over the B valid rows only,
 * so padded rows of a partial batch contribute nothing.
 */
#if defined(__GNUC__)
__attribute__((noinline)) /* as dense_forward_rows: the memset's values live apart */
#endif
static void dense_backward_sums(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                float *dbias, uint32_t B, uint32_t I, uint32_t U)
{
    if (dx) {
        for (uint32_t b = 0; b < B; ++b) {
            const float *dyb = dy + (size_t)b * U;
            float *dxb = dx + (size_t)b * I;
            for (uint32_t i = 0; i < I; ++i) {
                float acc = 0.0f;
                for (uint32_t u = 0; u < U; ++u) acc = mt_fmaf(dyb[u], w[(size_t)u * I + i], acc);
                dxb[i] += acc;
            }
        }
    }
    if (dw) {
        for (uint32_t u = 0; u < U; ++u) {
            float *dwu = dw + (size_t)u * I;
            for (uint32_t i = 0; i < I; ++i) {
                float acc = 0.0f;
                for (uint32_t b = 0; b < B; ++b) acc = mt_fmaf(dy[(size_t)b * U + u], x[(size_t)b * I + i], acc);
                dwu[i] += acc;
            }
        }
    }
    if (dbias) mt_op_bias_f32_backward_ref(dy, dbias, B, U);
}

void mt_op_dense_f32_backward_ref(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                  float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero)
{
    if (dw && dw_zero) memset(dw, 0, (size_t)U * I * sizeof(float));
    dense_backward_sums(x, w, dy, dx, dw, dbias, B, I, U);
}
#endif /* MT_REFERENCE_KERNELS */

/* ---- a weight whose first rows alone the arena holds (kernel.h, mt_weight_row) ----
 * A sparse update training the first k of U rows keeps only those in the arena; rows k.. are
 * read in place from the image. Every sum keeps the reference's terms and order, so the bits
 * are those of the whole weight in one array. */

/* y[b,u] = act(Σ_i x[b,i]·W[u,i] + bias[u]) with W = w's rows (mt_weight_row): the build's
 * kernel one input row at a time, over rows 0..k-1 and then k..U-1 (each output element is its
 * own sum, which the kernel computes with the reference's bits at every shape). */
void mt_dense_f32_forward_rows(const float *x, const mt_tensor_rt *w, const float *bias, float *y, uint32_t B,
                               uint32_t I, uint32_t U, uint32_t act)
{
    const uint32_t k = w->rows_held;
    if (k == 0) {
        mt_kernel_dense_f32_forward(x, w->data, bias, y, B, I, U, act);
        return;
    }
    for (uint32_t b = 0; b < B; ++b) {
        const float *xb = x + (size_t)b * I;
        float *yb = y + (size_t)b * U;
        mt_kernel_dense_f32_forward(xb, mt_weight_row(w, 0, I), bias, yb, 1, I, k, act);
        mt_kernel_dense_f32_forward(xb, mt_weight_row(w, k, I), bias ? bias + k : NULL, yb + k, 1, I, U - k, act);
    }
}

/* dx[b,i] += Σ_u dy[b,u]·W[u,i] from +0 in ascending u (the reference's sum, dense_backward_sums),
 * row u of W where mt_weight_row says: one sum runs across both row ranges, so no kernel that
 * takes one array computes it (mt_weight_rows_dx, ops/shared.c). */
void mt_dense_f32_dx_rows(const mt_tensor_rt *w, const float *dy, float *dx, uint32_t B, uint32_t I, uint32_t U)
{
    for (uint32_t b = 0; b < B; ++b)
        mt_weight_rows_dx(w, dy + (size_t)b * U, U, I, 0, I, dx + (size_t)b * I);
}

/* ---- graph adapter ----
 * The kernels are the build's column's (mt_kernel_dense_f32_*, select/kernels.h): each computes
 * the reference's exact bits, and scratch_bytes is the same on every target, so a plan made on
 * the host holds on the device. */

static mt_status dense_check(const mt_image *img, const mt_op_desc *op)
{
    if (op->num_inputs < 2 || op->num_inputs > 3 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    if (op->inputs[1] == MT_NO_TENSOR || !mt_params_zero(op)) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, w, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->inputs[1], &w);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.dtype != MT_DTYPE_F32 || w.dtype != MT_DTYPE_F32 || y.dtype != MT_DTYPE_F32)
        return MT_ERR_SHAPE;
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    if (!(w.flags & MT_TENSOR_CONST)) return MT_ERR_UNSUPPORTED; /* computed weights: not in v1 */
    if (w.ndim != 2 || w.dims[1] != x.count || y.count != w.dims[0]) return MT_ERR_SHAPE;
    return mt_check_bias(img, op, w.dims[0]);
}

/* I floats of scratch, though no backward kernel uses it any more (the portable one's row
 * accumulators once did): kept, so that every plan and arena size stays what it was */
size_t mt_op_dense_f32_scratch_bytes(uint32_t B, uint32_t I, uint32_t U)
{
    (void)B, (void)U;
    return (size_t)I * sizeof(float);
}

static size_t dense_scratch(const mt_image *img, const mt_op_desc *op, uint32_t batch)
{
    mt_tensor_desc w;
    mt_image_tensor(img, op->inputs[1], &w);
    return mt_op_dense_f32_scratch_bytes(batch, w.dims[1], w.dims[0]);
}

static void dense_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]], *b = mt_bias_of(op, t);
    mt_tensor_rt *y = &t[op->outputs[0]];
    mt_dense_f32_forward_rows(x->data, w, b ? b->data : NULL, y->mutable_data, n, x->count, y->count, MT_FUSED_NONE);
}

static void dense_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]], *b = mt_bias_of(op, t);
    mt_tensor_rt *w = &t[op->inputs[1]];
    const mt_tensor_rt *y = &t[op->outputs[0]];
    const int fresh = w->grad_fresh;
    w->grad_fresh = 0;
    /* a weight updated in tiles gets its dW from dense_grad_rows, after this dx (from the old W);
     * one whose first rows alone the arena holds gets its dx from mt_dense_f32_dx_rows (the
     * kernel, given no dx, reads no W: w->data, the image's whole weight, is a valid array) */
    float *dx = w->rows_held ? NULL : x->grad;
    mt_kernel_dense_f32_backward(x->data, w->data, y->grad, dx, w->tiled ? NULL : w->grad, b ? b->grad : NULL, n,
                                 x->count, y->count, fresh);
    if (w->rows_held && x->grad) mt_dense_f32_dx_rows(w, y->grad, x->grad, n, x->count, y->count);
}

/* dW needs x; dx needs only W (a weight, never planned) */
static uint32_t dense_reads(const mt_op_desc *op, uint32_t grad_inputs)
{
    (void)op;
    return (grad_inputs & 2u) ? 1u : 0u;
}

const mt_op_kernel mt_kernel_dense = {dense_check, dense_scratch, dense_forward,
                                      dense_backward, dense_reads, MT_KERNEL_ZEROES_WEIGHT_GRAD};

/* ---- dW in tiles (kernel.h, mt_weight_tiling) ----
 * A tile of R units: dW[u0 .. u0 + R) [R, I], then dy's columns u0 .. u0 + R of the n rows,
 * copied side by side [n, R], so the backward kernel computes the block as a Dense of R units:
 * dW[u,i] = 0 + Σ_b dy[b,u]·x[b,i] in ascending b, the very sum the whole layer's backward
 * computes for that element (every sibling has the reference's bits at every shape). */
static uint32_t dense_tile_floats(const mt_image *img, const mt_op_desc *op, uint32_t batch, uint32_t rows)
{
    mt_tensor_desc w;
    mt_image_tensor(img, op->inputs[1], &w);
    return rows * (w.dims[1] + batch);
}

static void dense_grad_rows(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, uint32_t first,
                            uint32_t rows, float *tile)
{
    const mt_tensor_rt *x = &t[op->inputs[0]], *w = &t[op->inputs[1]], *y = &t[op->outputs[0]];
    const uint32_t I = x->count, U = y->count;
    float *dy = tile + (size_t)rows * I;
    for (uint32_t b = 0; b < n; ++b) memcpy(dy + (size_t)b * rows, y->grad + (size_t)b * U + first, rows * sizeof(float));
    mt_kernel_dense_f32_backward(x->data, w->data + (size_t)first * I, dy, NULL, tile, NULL, n, I, rows, 1);
}

const mt_weight_tiling mt_weight_tiling_dense = {dense_tile_floats, dense_grad_rows};
