/*
 * gradcheck_util.h: what the spatial and graph-shaping kernel checks (test_conv_gradcheck.c,
 * test_pool_gradcheck.c, test_activation_gradcheck.c, test_add_concat_gradcheck.c) share,
 * header-only like mt_test.h.
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

#endif /* GRADCHECK_UTIL_H */
