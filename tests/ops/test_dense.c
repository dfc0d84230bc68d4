/*
 * Reference kernels of ops.h against central finite differences.
 *
 * For every op f and random r, the scalar objective L(θ) = Σ_k r_k · f(θ)_k has
 *   ∂L/∂θ_i = backward(dy = r)_i,
 * and the central difference (L(θ + h e_i) - L(θ - h e_i)) / 2h approximates it with
 * truncation error O(h² f''') and rounding error ~ ε_f32 · |L| / h. With h = 1e-2, |L| ~ 10
 * and L summed in double from float outputs, both are ~1e-4, well under the tolerance
 * |a - b| <= 2e-3 · max(1, |b|). ReLU points are kept at |x| >= 0.1 > h so no difference
 * straddles the kink at 0.
 *
 * Pad, Transpose, Mul and Sub: forward bit for bit against index arithmetic, gradients of the
 * activation operands against finite differences.
 *
 * Also: forward values against double references, backward accumulation (+=), and dense's
 * NULL gradient pointers (skipped, the others unchanged bit for bit).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "microtrain.h"
#include "mt_test.h"
#include "ops/ops.h"

#define H 1e-2f
#define RTOL 2e-3

/* ---- finite-difference driver --------------------------------------------------------- */

typedef double (*objective_fn)(void *ctx);

/* Compare analytic[i] with the central difference of f over param[i], for all i < n. */
static void gradcheck(const char *what, float *param, int n, const float *analytic,
                      objective_fn f, void *ctx)
{
    for (int i = 0; i < n; i++) {
        float saved = param[i];
        float up = saved + H, down = saved - H;
        param[i] = up;
        double lp = f(ctx);
        param[i] = down;
        double lm = f(ctx);
        param[i] = saved;
        /* divide by the step actually taken in float, not the nominal 2h */
        double fd = (lp - lm) / ((double)up - (double)down);
        if (!CHECK_CLOSE(analytic[i], fd, RTOL))
            printf("    in d%s[%d]\n", what, i);
    }
}

static void fill(float *a, int n, float lo, float hi)
{
    for (int i = 0; i < n; i++)
        a[i] = mt_test_uniform(lo, hi);
}

static double dot_r(const float *y, const float *r, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (double)r[i] * (double)y[i];
    return s;
}

/* g2 - g0 must be twice g1 - g0: backward adds, it does not overwrite. */
static void check_accumulates(const char *what, const float *g0, const float *g1,
                              const float *g2, int n)
{
    for (int i = 0; i < n; i++) {
        double inc1 = (double)g1[i] - (double)g0[i];
        double inc2 = (double)g2[i] - (double)g0[i];
        if (!CHECK_NEAR(inc2, 2.0 * inc1, 1e-5 * (1.0 + fabs(g0[i]) + fabs(inc1))))
            printf("    accumulation of d%s[%d]\n", what, i);
    }
}

/* ---- dense ----------------------------------------------------------------------------- */

typedef struct dense_ctx {
    float *x, *w, *b, *y, *r;
    int B, I, U;
} dense_ctx;

static double dense_objective(void *p)
{
    dense_ctx *c = (dense_ctx *)p;
    mt_op_dense_f32_forward_ref(c->x, c->w, c->b, c->y, (uint32_t)c->B, (uint32_t)c->I,
                                (uint32_t)c->U, MT_FUSED_NONE);
    return dot_r(c->y, c->r, c->B * c->U);
}

static void test_dense(int B, int I, int U, int with_bias)
{
    int nx = B * I, nw = U * I, ny = B * U;
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
    float *b = malloc(sizeof(float) * (size_t)U), *y = malloc(sizeof(float) * (size_t)ny);
    float *r = malloc(sizeof(float) * (size_t)ny);
    float *dx = calloc((size_t)nx, sizeof(float)), *dw = calloc((size_t)nw, sizeof(float));
    float *db = calloc((size_t)U, sizeof(float));
    float *gx = malloc(sizeof(float) * (size_t)nx), *gw = malloc(sizeof(float) * (size_t)nw);
    float *gb = malloc(sizeof(float) * (size_t)U);
    float *g0x = malloc(sizeof(float) * (size_t)nx), *g0w = malloc(sizeof(float) * (size_t)nw);
    float *g0b = malloc(sizeof(float) * (size_t)U);
    fill(x, nx, -1.f, 1.f);
    fill(w, nw, -1.f, 1.f);
    fill(b, U, -1.f, 1.f);
    fill(r, ny, -1.f, 1.f);
    dense_ctx c = { x, w, with_bias ? b : NULL, y, r, B, I, U };

    /* forward: y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u] */
    mt_op_dense_f32_forward_ref(x, w, c.b, y, (uint32_t)B, (uint32_t)I, (uint32_t)U, MT_FUSED_NONE);
    for (int bb = 0; bb < B; bb++)
        for (int u = 0; u < U; u++) {
            double s = with_bias ? (double)b[u] : 0.0;
            for (int i = 0; i < I; i++)
                s += (double)x[bb * I + i] * (double)w[u * I + i];
            CHECK_NEAR(y[bb * U + u], s, 1e-5 * (1.0 + fabs(s)));
        }

    /* backward with dy = r against finite differences of L */
    mt_op_dense_f32_backward_ref(x, w, r, dx, dw, with_bias ? db : NULL, (uint32_t)B, (uint32_t)I,
                                 (uint32_t)U, 0);
    gradcheck("x", x, nx, dx, dense_objective, &c);
    gradcheck("W", w, nw, dw, dense_objective, &c);
    if (with_bias)
        gradcheck("bias", b, U, db, dense_objective, &c);

    /* accumulation: start from random gradients, run backward twice */
    fill(g0x, nx, -1.f, 1.f);
    fill(g0w, nw, -1.f, 1.f);
    fill(g0b, U, -1.f, 1.f);
    memcpy(gx, g0x, sizeof(float) * (size_t)nx);
    memcpy(gw, g0w, sizeof(float) * (size_t)nw);
    memcpy(gb, g0b, sizeof(float) * (size_t)U);
    mt_op_dense_f32_backward_ref(x, w, r, gx, gw, with_bias ? gb : NULL, (uint32_t)B, (uint32_t)I,
                                 (uint32_t)U, 0);
    float *g1x = malloc(sizeof(float) * (size_t)nx), *g1w = malloc(sizeof(float) * (size_t)nw);
    float *g1b = malloc(sizeof(float) * (size_t)U);
    memcpy(g1x, gx, sizeof(float) * (size_t)nx);
    memcpy(g1w, gw, sizeof(float) * (size_t)nw);
    memcpy(g1b, gb, sizeof(float) * (size_t)U);
    mt_op_dense_f32_backward_ref(x, w, r, gx, gw, with_bias ? gb : NULL, (uint32_t)B, (uint32_t)I,
                                 (uint32_t)U, 0);
    check_accumulates("x", g0x, g1x, gx, nx);
    check_accumulates("W", g0w, g1w, gw, nw);
    if (with_bias)
        check_accumulates("bias", g0b, g1b, gb, U);
    else
        for (int u = 0; u < U; u++) /* dbias NULL: the buffer we kept aside is untouched */
            CHECK_BITS_EQ(gb[u], g0b[u]);

    /* NULL gradients are skipped; the ones given get the same bits as in the full call */
    float *sx = calloc((size_t)nx, sizeof(float)), *sw = calloc((size_t)nw, sizeof(float));
    float *sb = calloc((size_t)U, sizeof(float));
    mt_op_dense_f32_backward_ref(x, w, r, NULL, sw, NULL, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    mt_op_dense_f32_backward_ref(x, w, r, sx, NULL, NULL, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    if (with_bias)
        mt_op_dense_f32_backward_ref(x, w, r, NULL, NULL, sb, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    mt_op_dense_f32_backward_ref(x, w, r, NULL, NULL, NULL, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    for (int i = 0; i < nx; i++)
        CHECK_BITS_EQ(sx[i], dx[i]);
    for (int i = 0; i < nw; i++)
        CHECK_BITS_EQ(sw[i], dw[i]);
    for (int i = 0; with_bias && i < U; i++)
        CHECK_BITS_EQ(sb[i], db[i]);

    free(x), free(w), free(b), free(y), free(r), free(dx), free(dw), free(db);
    free(gx), free(gw), free(gb), free(g0x), free(g0w), free(g0b), free(g1x), free(g1w);
    free(g1b), free(sx), free(sw), free(sb);
}

/* ---- elementwise activations and softmax ------------------------------------------------- */

enum { RELU, SIGMOID, TANH, SOFTMAX };
#define MAXN 64

typedef struct act_ctx {
    int op, n, R, C;
    float x[MAXN], y[MAXN], r[MAXN];
} act_ctx;

static void act_forward(const act_ctx *c, const float *x, float *y)
{
    switch (c->op) {
    case RELU: mt_op_relu_f32_forward_ref(x, y, (size_t)c->n); break;
    case SIGMOID: mt_op_sigmoid_f32_forward(x, y, (size_t)c->n); break;
    case TANH: mt_op_tanh_f32_forward(x, y, (size_t)c->n); break;
    default: mt_op_softmax_f32_forward(x, y, (uint32_t)c->R, (uint32_t)c->C); break;
    }
}

/* ReLU's backward reads x, the others read y = forward(x). */
static void act_backward(const act_ctx *c, const float *dy, float *dx)
{
    switch (c->op) {
    case RELU: mt_op_relu_f32_backward_ref(c->x, dy, dx, (size_t)c->n); break;
    case SIGMOID: mt_op_sigmoid_f32_backward(c->y, dy, dx, (size_t)c->n); break;
    case TANH: mt_op_tanh_f32_backward(c->y, dy, dx, (size_t)c->n); break;
    default: mt_op_softmax_f32_backward(c->y, dy, dx, (uint32_t)c->R, (uint32_t)c->C); break;
    }
}

static double act_objective(void *p)
{
    act_ctx *c = (act_ctx *)p;
    float y[MAXN];
    act_forward(c, c->x, y);
    return dot_r(y, c->r, c->n);
}

/* Double-precision forward reference of element k. */
static double act_reference(const act_ctx *c, int k)
{
    double x = (double)c->x[k];
    switch (c->op) {
    case RELU: return x > 0.0 ? x : 0.0;
    case SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TANH: return tanh(x);
    default: {
        int row = k / c->C;
        double m = -INFINITY, s = 0.0;
        for (int j = 0; j < c->C; j++)
            m = fmax(m, (double)c->x[row * c->C + j]);
        for (int j = 0; j < c->C; j++)
            s += exp((double)c->x[row * c->C + j] - m);
        return exp(x - m) / s;
    }
    }
}

static void test_activation(int op, const char *name, int R, int C, float lo, float hi)
{
    static act_ctx c; /* static: gradcheck's objective reads it through a pointer */
    float dx[MAXN] = { 0 }, g0[MAXN], g1[MAXN], g2[MAXN];
    c.op = op, c.R = R, c.C = C, c.n = R * C;
    fill(c.x, c.n, lo, hi);
    fill(c.r, c.n, -1.f, 1.f);
    if (op == RELU) /* keep away from the kink: |x| >= 0.1 > h */
        for (int i = 0; i < c.n; i++)
            if (fabsf(c.x[i]) < 0.1f)
                c.x[i] += c.x[i] < 0.f ? -0.1f : 0.1f;

    act_forward(&c, c.x, c.y);
    for (int k = 0; k < c.n; k++) {
        double ref = act_reference(&c, k);
        if (!CHECK_NEAR(c.y[k], ref, 1e-6 * (1.0 + fabs(ref))))
            printf("    %s forward at x = %.9g\n", name, (double)c.x[k]);
    }
    if (op == SOFTMAX)
        for (int row = 0; row < R; row++) {
            double s = 0.0;
            for (int j = 0; j < C; j++)
                s += (double)c.y[row * C + j];
            CHECK_NEAR(s, 1.0, 1e-6 * C);
        }

    act_backward(&c, c.r, dx);
    gradcheck(name, c.x, c.n, dx, act_objective, &c);

    fill(g0, c.n, -1.f, 1.f);
    memcpy(g2, g0, sizeof g0);
    act_backward(&c, c.r, g2);
    memcpy(g1, g2, sizeof g1);
    act_backward(&c, c.r, g2);
    check_accumulates(name, g0, g1, g2, c.n);
}

/* Softmax subtracts the row maximum: huge logits give exact, finite probabilities. */
static void test_softmax_stability(void)
{
    const float x[6] = { 1000.f, 999.f, -1000.f, -1e30f, -1e30f, -1e30f };
    float y[6], dx[6] = { 0 };
    const float dy[6] = { 1, 0, 0, 1, 2, 3 };
    double e = exp(-1.0);
    mt_op_softmax_f32_forward(x, y, 2, 3);
    CHECK_NEAR(y[0], 1.0 / (1.0 + e), 1e-6);
    CHECK_NEAR(y[1], e / (1.0 + e), 1e-6);
    CHECK_BITS_EQ(y[2], 0.0f);
    for (int j = 3; j < 6; j++) /* equal logits: uniform */
        CHECK_NEAR(y[j], 1.0 / 3.0, 1e-7);
    mt_op_softmax_f32_backward(y, dy, dx, 2, 3);
    for (int j = 0; j < 6; j++)
        CHECK(isfinite(dx[j]));
    /* dx_j = y_j (dy_j - Σ_k dy_k y_k); second row: (1/3)(dy_j - 2) = -1/3, 0, 1/3 */
    CHECK_NEAR(dx[3], -1.0 / 3.0, 1e-6);
    CHECK_NEAR(dx[4], 0.0, 1e-6);
    CHECK_NEAR(dx[5], 1.0 / 3.0, 1e-6);
}

/* ReLU's gradient is the step function [x > 0]: exactly dy or exactly 0. */
static void test_relu_exact(void)
{
    const float x[4] = { -2.f, -1e-30f, 1e-30f, 3.f };
    const float dy[4] = { 5.f, 5.f, 5.f, 5.f };
    float y[4], dx[4] = { 0 };
    mt_op_relu_f32_forward_ref(x, y, 4);
    mt_op_relu_f32_backward_ref(x, dy, dx, 4);
    CHECK_BITS_EQ(y[0], 0.f);
    CHECK_BITS_EQ(y[2], 1e-30f);
    CHECK_BITS_EQ(y[3], 3.f);
    CHECK_BITS_EQ(dx[0], 0.f);
    CHECK_BITS_EQ(dx[1], 0.f);
    CHECK_BITS_EQ(dx[2], 5.f);
    CHECK_BITS_EQ(dx[3], 5.f);
}


/* ---- layout and arithmetic: Pad, Transpose, Mul, Sub --------------------------------------
 * One context for the four: input a (an activation, [B, H, W, C]), b (a second activation of
 * a's shape, or a constant of C values or 1), output y. Forward values are checked bit for
 * bit against index arithmetic written independently of the kernels (each output element is
 * one copy or one float operation); gradients of the activations against finite differences,
 * and the += of every backward. */

enum { PAD, TRANSPOSE, MUL_SAME, MUL_CHANNEL, MUL_SCALAR_FIRST, SUB_SAME, SUB_CHANNEL, SUB_CONST_FIRST };
#define MAXL 512

typedef struct layout_ctx {
    int kind, nb, ih, iw, ic, na, ny;
    uint32_t top, bottom, left, right; /* Pad */
    uint32_t X[4], perm[4];            /* Transpose, 4-D as the kernels see it */
    float a[MAXL], b[MAXL], y[MAXL], r[MAXL];
} layout_ctx;

static void layout_forward(layout_ctx *c)
{
    const size_t R = (size_t)c->nb * c->ih * c->iw;
    const uint32_t C = (uint32_t)c->ic;
    switch (c->kind) {
    case PAD:
        mt_op_pad_f32_forward(c->a, c->y, (uint32_t)c->nb, (uint32_t)c->ih, (uint32_t)c->iw, C, c->top, c->bottom,
                              c->left, c->right);
        break;
    case TRANSPOSE: mt_op_transpose_f32_forward(c->a, c->y, (uint32_t)c->nb, c->X, c->perm); break;
    case MUL_SAME: mt_op_mul_f32_forward(c->a, C, 1, c->b, C, 1, c->y, R, C); break;
    case MUL_CHANNEL: mt_op_mul_f32_forward(c->a, C, 1, c->b, 0, 1, c->y, R, C); break;
    case MUL_SCALAR_FIRST: mt_op_mul_f32_forward(c->b, 0, 0, c->a, C, 1, c->y, R, C); break;
    case SUB_SAME: mt_op_sub_f32_forward(c->a, C, 1, c->b, C, 1, c->y, R, C); break;
    case SUB_CHANNEL: mt_op_sub_f32_forward(c->a, C, 1, c->b, 0, 1, c->y, R, C); break;
    default: mt_op_sub_f32_forward(c->b, 0, 1, c->a, C, 1, c->y, R, C); break; /* constant − a */
    }
}

/* dy = r; db only where b is an activation */
static void layout_backward(const layout_ctx *c, float *da, float *db)
{
    const size_t R = (size_t)c->nb * c->ih * c->iw, N = R * (size_t)c->ic;
    const uint32_t C = (uint32_t)c->ic;
    switch (c->kind) {
    case PAD:
        mt_op_pad_f32_backward(c->r, da, (uint32_t)c->nb, (uint32_t)c->ih, (uint32_t)c->iw, C, c->top, c->bottom,
                               c->left, c->right);
        break;
    case TRANSPOSE: mt_op_transpose_f32_backward(c->r, da, (uint32_t)c->nb, c->X, c->perm); break;
    case MUL_SAME:
        mt_op_mul_f32_backward(c->b, C, 1, c->r, da, R, C);
        if (db) mt_op_mul_f32_backward(c->a, C, 1, c->r, db, R, C);
        break;
    case MUL_CHANNEL: mt_op_mul_f32_backward(c->b, 0, 1, c->r, da, R, C); break;
    case MUL_SCALAR_FIRST: mt_op_mul_f32_backward(c->b, 0, 0, c->r, da, R, C); break;
    case SUB_SAME:
        mt_op_add_f32_accumulate_ref(c->r, da, N);
        if (db) mt_op_sub_f32_backward(c->r, db, N);
        break;
    case SUB_CHANNEL: mt_op_add_f32_accumulate_ref(c->r, da, N); break;
    default: mt_op_sub_f32_backward(c->r, da, N); break;
    }
}

static double layout_objective(void *p)
{
    layout_ctx *c = p;
    layout_forward(c);
    return dot_r(c->y, c->r, c->ny);
}

/* y by index arithmetic, bit for bit */
static void check_layout_forward(const layout_ctx *c, const char *name)
{
    int bad = 0;
    if (c->kind == PAD) {
        const int OH = (int)(c->top + c->bottom) + c->ih, OW = (int)(c->left + c->right) + c->iw;
        for (int b = 0; b < c->nb; b++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    for (int ch = 0; ch < c->ic; ch++) {
                        int h = oh - (int)c->top, w = ow - (int)c->left;
                        float want = (h < 0 || h >= c->ih || w < 0 || w >= c->iw) ? 0.0f
                                     : c->a[((b * c->ih + h) * c->iw + w) * c->ic + ch];
                        bad += !CHECK_BITS_EQ(c->y[((b * OH + oh) * OW + ow) * c->ic + ch], want);
                    }
    } else if (c->kind == TRANSPOSE) {
        /* walk x in order; its element j lands at y's index i with i_k = j_perm[k] */
        const int count = (int)(c->X[0] * c->X[1] * c->X[2] * c->X[3]);
        for (int b = 0; b < c->nb; b++)
            for (int e = 0; e < count; e++) {
                uint32_t j[4], rest = (uint32_t)e, o = 0;
                for (int d = 3; d >= 0; d--) j[d] = rest % c->X[d], rest /= c->X[d];
                for (int k = 0; k < 4; k++) o = o * c->X[c->perm[k]] + j[c->perm[k]];
                bad += !CHECK_BITS_EQ(c->y[b * count + (int)o], c->a[b * count + e]);
            }
    } else {
        for (int i = 0; i < c->na; i++) {
            const int ch = i % c->ic;
            float want;
            switch (c->kind) {
            case MUL_SAME: want = c->a[i] * c->b[i]; break;
            case MUL_CHANNEL: want = c->a[i] * c->b[ch]; break;
            case MUL_SCALAR_FIRST: want = c->b[0] * c->a[i]; break;
            case SUB_SAME: want = c->a[i] - c->b[i]; break;
            case SUB_CHANNEL: want = c->a[i] - c->b[ch]; break;
            default: want = c->b[ch] - c->a[i]; break;
            }
            bad += !CHECK_BITS_EQ(c->y[i], want);
        }
    }
    if (bad) printf("    forward of %s\n", name);
}

static void test_layout(layout_ctx *c, const char *name)
{
    c->na = c->nb * c->ih * c->iw * c->ic;
    c->ny = c->na;
    if (c->kind == PAD)
        c->ny = c->nb * (c->ih + (int)(c->top + c->bottom)) * (c->iw + (int)(c->left + c->right)) * c->ic;
    const int two = c->kind == MUL_SAME || c->kind == SUB_SAME;
    if (!CHECK(c->na <= MAXL && c->ny <= MAXL)) return;
    fill(c->a, c->na, -2.f, 2.f);
    fill(c->b, c->na, 0.5f, 2.f);
    fill(c->r, c->ny, -1.f, 1.f);
    layout_forward(c);
    check_layout_forward(c, name);

    static float da[MAXL], db[MAXL], g0[MAXL], g1[MAXL], g2[MAXL];
    memset(da, 0, sizeof da), memset(db, 0, sizeof db);
    layout_backward(c, da, two ? db : NULL);
    gradcheck(name, c->a, c->na, da, layout_objective, c);
    if (two) gradcheck(name, c->b, c->na, db, layout_objective, c);

    fill(g0, c->na, -1.f, 1.f); /* backward adds to what is there */
    memcpy(g1, g0, sizeof g0);
    layout_backward(c, g1, NULL);
    memcpy(g2, g1, sizeof g1);
    layout_backward(c, g2, NULL);
    check_accumulates(name, g0, g1, g2, c->na);
}

static void test_layout_ops(void)
{
    layout_ctx c;
    memset(&c, 0, sizeof c);
    const uint32_t pads[][4] = { { 1, 1, 1, 1 }, { 0, 2, 3, 0 }, { 2, 0, 0, 1 }, { 0, 0, 0, 0 } };
    for (int k = 0; k < 4; k++) {
        c.kind = PAD, c.nb = 2, c.ih = 3, c.iw = 4, c.ic = 2;
        c.top = pads[k][0], c.bottom = pads[k][1], c.left = pads[k][2], c.right = pads[k][3];
        test_layout(&c, "pad");
    }
    /* sample dims as the adapter passes them: leading axes of size 1 that stay in place */
    static const struct { uint32_t X[4], perm[4]; } tr[] = {
        { { 1, 3, 4, 2 }, { 0, 2, 3, 1 } }, /* [C, H, W] -> [H, W, C]: an ONNX input */
        { { 1, 4, 2, 3 }, { 0, 3, 1, 2 } }, /* [H, W, C] -> [C, H, W]: an ONNX output */
        { { 1, 1, 5, 3 }, { 0, 1, 3, 2 } }, /* a matrix */
        { { 2, 3, 1, 4 }, { 3, 1, 0, 2 } }, /* 4-D */
        { { 1, 1, 1, 6 }, { 0, 1, 2, 3 } }, /* identity */
    };
    for (size_t k = 0; k < sizeof tr / sizeof tr[0]; k++) {
        c.kind = TRANSPOSE, c.nb = 2;
        memcpy(c.X, tr[k].X, sizeof c.X), memcpy(c.perm, tr[k].perm, sizeof c.perm);
        c.ih = (int)(c.X[0] * c.X[1]), c.iw = (int)c.X[2], c.ic = (int)c.X[3]; /* same element count */
        test_layout(&c, "transpose");
    }
    static const int kinds[] = { MUL_SAME, MUL_CHANNEL, MUL_SCALAR_FIRST, SUB_SAME, SUB_CHANNEL, SUB_CONST_FIRST };
    static const char *names[] = { "mul", "mul_channel", "mul_scalar_first", "sub", "sub_channel", "sub_const_first" };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        c.kind = kinds[k], c.nb = 3, c.ih = 2, c.iw = 2, c.ic = 3;
        test_layout(&c, names[k]);
    }
}

int main(void)
{
    static const int shapes[][3] = { { 3, 4, 5 }, { 1, 1, 1 }, { 2, 7, 3 }, { 5, 17, 9 } };
    mt_test_seed(20240601u);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        test_dense(shapes[s][0], shapes[s][1], shapes[s][2], 1);
        test_dense(shapes[s][0], shapes[s][1], shapes[s][2], 0);
    }
    test_activation(RELU, "relu", 1, 24, -2.f, 2.f);
    test_activation(SIGMOID, "sigmoid", 1, 24, -5.f, 5.f);
    test_activation(TANH, "tanh", 1, 24, -3.f, 3.f);
    test_activation(SOFTMAX, "softmax", 3, 5, -3.f, 3.f);
    test_activation(SOFTMAX, "softmax_1col", 4, 1, -3.f, 3.f);
    test_activation(SOFTMAX, "softmax_wide", 2, 17, -4.f, 4.f);
    test_softmax_stability();
    test_relu_exact();
    test_layout_ops();
    return MT_TEST_END();
}
