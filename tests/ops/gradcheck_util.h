/*
 * gradcheck_util.h: what the ops' C tests (tests/ops/test_<source>.c) share, header-only like
 * mt_test.h: the finite-difference driver, and generic checks of an op that a test file
 * describes by its functions and shapes (check_unary_op, check_binary_op), so that each file
 * holds only what is particular to its op.
 *
 * For each op f and random r, L(θ) = Σ_k r_k · f(θ)_k has ∂L/∂θ = backward(dy = r), compared
 * with (L(θ + h e_i) - L(θ - h e_i)) / 2h, L summed in double from the float outputs
 * (gradcheck); backward must add to the gradient, not overwrite it (check_accumulates).
 * ref_axis is TFLite's output size and padding rule written out independently of spatial.c;
 * make_geom builds the mt_spatial of a case with mt_spatial_axis and checks it against it.
 * Glossary: B = batch, H/W/C = input height/width/channels, OH/OW/OC = output,
 * KH/KW = window, SH/SW = strides, PT/PL = padding before the first row/column.
 */
#ifndef GRADCHECK_UTIL_H
#define GRADCHECK_UTIL_H

#include <math.h>
#include <stdlib.h>

#include "mt_test.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#define RTOL 2e-3
#define MAXE 1024 /* elements of every buffer of the checks; cases stay well under it */

/* ---- finite-difference driver ------------------------------------------------------------ */

typedef double (*objective_fn)(void *ctx);

static inline void gradcheck(const char *what, float *param, int n, const float *analytic, float h,
                      objective_fn f, void *ctx)
{
    for (int i = 0; i < n; i++) {
        float saved = param[i], up = saved + h, down = saved - h;
        param[i] = up;
        double lp = f(ctx);
        param[i] = down;
        double lm = f(ctx);
        param[i] = saved;
        double fd = (lp - lm) / ((double)up - (double)down); /* the step taken in float */
        if (!CHECK_CLOSE(analytic[i], fd, RTOL))
            printf("    in d%s[%d]\n", what, i);
    }
}

static inline void fill(float *a, int n, float lo, float hi)
{
    for (int i = 0; i < n; i++) a[i] = mt_test_uniform(lo, hi);
}

static inline double dot_r(const float *y, const float *r, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)r[i] * (double)y[i];
    return s;
}

/* g2 - g0 must be twice g1 - g0: backward adds, it does not overwrite. */
static inline void check_accumulates(const char *what, const float *g0, const float *g1, const float *g2, int n)
{
    for (int i = 0; i < n; i++) {
        double inc1 = (double)g1[i] - g0[i], inc2 = (double)g2[i] - g0[i];
        if (!CHECK_NEAR(inc2, 2.0 * inc1, 1e-5 * (1.0 + fabs(g0[i]) + fabs(inc1))))
            printf("    accumulation of d%s[%d]\n", what, i);
    }
}

/* ---- geometry ------------------------------------------------------------------------------- */

/* TFLite's rule written out independently of spatial.c: VALID O = (I - K)/S + 1, P = 0;
 * SAME O = ceil(I/S), P = max((O - 1)·S + K - I, 0), P/2 before. */
static inline void ref_axis(int in, int k, int s, int same, int *out, int *before)
{
    if (!same) {
        *out = (in - k) / s + 1, *before = 0;
        return;
    }
    *out = (in + s - 1) / s;
    int p = (*out - 1) * s + k - in;
    *before = p > 0 ? p / 2 : 0;
}

/* Geometry for the kernels, built by mt_spatial_axis (and checked against ref_axis). */
static inline int make_geom(mt_spatial *g, int H, int W, int C, int OC, int KH, int KW, int SH, int SW, int same,
                     int act)
{
    int eo, eb;
    memset(g, 0, sizeof *g);
    g->H = (uint32_t)H, g->W = (uint32_t)W, g->C = (uint32_t)C, g->OC = (uint32_t)OC;
    g->KH = (uint32_t)KH, g->KW = (uint32_t)KW, g->SH = (uint32_t)SH, g->SW = (uint32_t)SW;
    g->activation = (uint32_t)act;
    if (!CHECK_STATUS(mt_spatial_axis(g->H, g->KH, g->SH, (uint32_t)same, &g->OH, &g->PT), MT_OK) ||
        !CHECK_STATUS(mt_spatial_axis(g->W, g->KW, g->SW, (uint32_t)same, &g->OW, &g->PL), MT_OK))
        return 0;
    ref_axis(H, KH, SH, same, &eo, &eb);
    CHECK_EQ_INT(g->OH, eo), CHECK_EQ_INT(g->PT, eb);
    ref_axis(W, KW, SW, same, &eo, &eb);
    CHECK_EQ_INT(g->OW, eo), CHECK_EQ_INT(g->PL, eb);
    return 1;
}

/* ---- one-operand ops: x -> y, R rows of C ---------------------------------------------------
 * forward against a double reference of each element, backward (dy = r) against finite
 * differences, and backward's +=. An op whose kink lies at 0 (ReLU) draws x at least 0.1 > h
 * away from it. */

#define UNARY_MAXN 64

typedef struct unary_op {
    const char *name;
    void (*forward)(const float *x, float *y, int R, int C);
    /* dx += (∂y/∂x)ᵀ·dy, given x and y = forward(x): the kernel reads the one it needs */
    void (*backward)(const float *x, const float *y, const float *dy, float *dx, int R, int C);
    double (*reference)(const float *x, int k, int C); /* y[k] in double */
    int kink_at_zero;
} unary_op;

typedef struct unary_case {
    const unary_op *op;
    int R, C, n;
    float x[UNARY_MAXN], y[UNARY_MAXN], r[UNARY_MAXN];
} unary_case;

static inline double unary_objective(void *p)
{
    unary_case *c = (unary_case *)p;
    float y[UNARY_MAXN];
    c->op->forward(c->x, y, c->R, c->C);
    return dot_r(y, c->r, c->n);
}

/* Leaves x and y = forward(x) in *c for the caller's own checks. */
static inline void check_unary_op(unary_case *c, const unary_op *op, int R, int C, float lo, float hi)
{
    float dx[UNARY_MAXN] = { 0 }, g0[UNARY_MAXN], g1[UNARY_MAXN], g2[UNARY_MAXN];
    c->op = op, c->R = R, c->C = C, c->n = R * C;
    if (!CHECK(c->n <= UNARY_MAXN)) return;
    fill(c->x, c->n, lo, hi);
    fill(c->r, c->n, -1.f, 1.f);
    if (op->kink_at_zero) /* keep away from the kink: |x| >= 0.1 > h */
        for (int i = 0; i < c->n; i++)
            if (fabsf(c->x[i]) < 0.1f)
                c->x[i] += c->x[i] < 0.f ? -0.1f : 0.1f;

    op->forward(c->x, c->y, R, C);
    for (int k = 0; k < c->n; k++) {
        double ref = op->reference(c->x, k, C);
        if (!CHECK_NEAR(c->y[k], ref, 1e-6 * (1.0 + fabs(ref))))
            printf("    %s forward at x = %.9g\n", op->name, (double)c->x[k]);
    }

    op->backward(c->x, c->y, c->r, dx, R, C);
    gradcheck(op->name, c->x, c->n, dx, 1e-2f, unary_objective, c);

    fill(g0, c->n, -1.f, 1.f);
    memcpy(g2, g0, sizeof g0);
    op->backward(c->x, c->y, c->r, g2, R, C);
    memcpy(g1, g2, sizeof g1);
    op->backward(c->x, c->y, c->r, g2, R, C);
    check_accumulates(op->name, g0, g1, g2, c->n);
}

/* ---- two-operand and layout ops: a (an activation), b (a second activation, or a constant the
 * op does not differentiate), y -------------------------------------------------------------
 * Forward bit for bit against index arithmetic the test file writes independently of the
 * kernel (each output element is one copy or one float operation); gradients of the
 * activations against finite differences; backward's += on a's gradient. */

#define BINARY_MAXN 512

typedef struct binary_op binary_op;
struct binary_op {
    const char *name;
    int na, ny;    /* elements of a (b draws as many), of y */
    int b_trains;  /* b is an activation whose gradient is checked too */
    const void *shape; /* the op's own description: pads, permutation, broadcast */
    void (*forward)(const binary_op *op, const float *a, const float *b, float *y);
    /* da += ∂L/∂a, db += ∂L/∂b (db NULL: not asked) for dy = ∂L/∂y */
    void (*backward)(const binary_op *op, const float *a, const float *b, const float *dy, float *da,
                     float *db);
    float (*expected)(const binary_op *op, const float *a, const float *b, int i); /* y[i] */
};

typedef struct binary_case {
    const binary_op *op;
    float a[BINARY_MAXN], b[BINARY_MAXN], y[BINARY_MAXN], r[BINARY_MAXN];
} binary_case;

static inline double binary_objective(void *p)
{
    binary_case *c = (binary_case *)p;
    c->op->forward(c->op, c->a, c->b, c->y);
    return dot_r(c->y, c->r, c->op->ny);
}

static inline void check_binary_op(const binary_op *op)
{
    static binary_case c;
    static float da[BINARY_MAXN], db[BINARY_MAXN], g0[BINARY_MAXN], g1[BINARY_MAXN], g2[BINARY_MAXN];
    if (!CHECK(op->na <= BINARY_MAXN && op->ny <= BINARY_MAXN)) return;
    c.op = op;
    fill(c.a, op->na, -2.f, 2.f);
    fill(c.b, op->na, 0.5f, 2.f);
    fill(c.r, op->ny, -1.f, 1.f);
    op->forward(op, c.a, c.b, c.y);
    int bad = 0;
    for (int i = 0; i < op->ny; i++)
        bad += !CHECK_BITS_EQ(c.y[i], op->expected(op, c.a, c.b, i));
    if (bad) printf("    forward of %s\n", op->name);

    memset(da, 0, sizeof da), memset(db, 0, sizeof db);
    op->backward(op, c.a, c.b, c.r, da, op->b_trains ? db : NULL);
    gradcheck(op->name, c.a, op->na, da, 1e-2f, binary_objective, &c);
    if (op->b_trains) gradcheck(op->name, c.b, op->na, db, 1e-2f, binary_objective, &c);

    fill(g0, op->na, -1.f, 1.f); /* backward adds to what is there */
    memcpy(g1, g0, sizeof g0);
    op->backward(op, c.a, c.b, c.r, g1, NULL);
    memcpy(g2, g1, sizeof g1);
    op->backward(op, c.a, c.b, c.r, g2, NULL);
    check_accumulates(op->name, g0, g1, g2, op->na);
}

/* ---- graph adapters: an op through its mt_op_kernel, on runtime tensors -------------------- */

static inline void tensor_rt(mt_tensor_rt *t, float *data, float *grad, uint32_t rows, uint32_t cols)
{
    memset(t, 0, sizeof *t);
    t->data = data, t->mutable_data = data, t->grad = grad;
    t->dims[0] = rows, t->dims[1] = cols;
    t->count = rows * cols;
    t->dtype = MT_DTYPE_F32;
}

typedef struct graph_ctx {
    const mt_op_kernel *k;
    mt_op_desc op;
    mt_tensor_rt t[5];
    int out, ny;
    uint32_t n;
    const float *r;
} graph_ctx;

static inline double graph_objective(void *p)
{
    graph_ctx *c = (graph_ctx *)p;
    c->k->forward(&c->op, c->t, c->n, NULL);
    return dot_r(c->t[c->out].data, c->r, c->ny);
}

#endif /* GRADCHECK_UTIL_H */
