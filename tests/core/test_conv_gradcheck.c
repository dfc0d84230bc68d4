/*
 * Spatial and graph-shaping kernels (ops.h, spatial.h) against double references and
 * central finite differences:
 *   Conv2D, DepthwiseConv2D (strides 1/2, VALID/SAME incl. asymmetric SAME padding, bias or
 *   not, fused NONE/RELU/RELU6), MaxPool2D, AveragePool2D, GlobalAveragePool, ReLU6,
 *   LeakyReLU, Add (raw and through the graph adapter, x + x included), Concatenation
 *   (graph adapter, 2 and 3 inputs, the same tensor twice); and mt_spatial_axis's TFLite
 *   output sizes and pad-before values.
 *
 * For each op f and random r, L(θ) = Σ_k r_k · f(θ)_k has ∂L/∂θ = backward(dy = r), compared
 * with (L(θ + h e_i) - L(θ - h e_i)) / 2h, L summed in double from the float outputs.
 * Kinks are kept out of every difference by construction: ReLU/ReLU6 inputs are drawn at
 * least 0.1 > h from 0 and 6; a fused activation's pre-activations z are redrawn until
 * every |z - kink| exceeds the most one perturbation can move z (h·max|operand| + slack);
 * max-pool inputs are distinct values 0.03 > 2h apart, so no window's argmax can change.
 * Glossary: B = batch, H/W/C = input height/width/channels, OH/OW/OC = output,
 * KH/KW = window, SH/SW = strides, PT/PL = padding before the first row/column.
 */
#include <math.h>
#include <stdlib.h>

#include "mt_test.h"
#include "ops/ops.h"
#include "ops/spatial.h"

#define RTOL 2e-3
#define MAXE 1024 /* elements of every buffer below; cases stay well under it */

/* ---- finite-difference driver ------------------------------------------------------------ */

typedef double (*objective_fn)(void *ctx);

static void gradcheck(const char *what, float *param, int n, const float *analytic, float h,
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

static void fill(float *a, int n, float lo, float hi)
{
    for (int i = 0; i < n; i++) a[i] = mt_test_uniform(lo, hi);
}

static double dot_r(const float *y, const float *r, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)r[i] * (double)y[i];
    return s;
}

/* g2 - g0 must be twice g1 - g0: backward adds, it does not overwrite. */
static void check_accumulates(const char *what, const float *g0, const float *g1, const float *g2, int n)
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
static void ref_axis(int in, int k, int s, int same, int *out, int *before)
{
    if (!same) {
        *out = (in - k) / s + 1, *before = 0;
        return;
    }
    *out = (in + s - 1) / s;
    int p = (*out - 1) * s + k - in;
    *before = p > 0 ? p / 2 : 0;
}

static void test_spatial_axis_table(void)
{
    static const struct { uint32_t in, k, s, pad; int status; uint32_t out, before; } cases[] = {
        { 5, 3, 1, MT_PADDING_VALID, MT_OK, 3, 0 },  { 5, 3, 2, MT_PADDING_VALID, MT_OK, 2, 0 },
        { 6, 3, 2, MT_PADDING_VALID, MT_OK, 2, 0 },  { 7, 2, 3, MT_PADDING_VALID, MT_OK, 2, 0 },
        { 3, 3, 1, MT_PADDING_VALID, MT_OK, 1, 0 },  { 8, 1, 3, MT_PADDING_VALID, MT_OK, 3, 0 },
        { 5, 2, 2, MT_PADDING_SAME, MT_OK, 3, 0 },   /* P = 1: nothing before, one after */
        { 6, 3, 2, MT_PADDING_SAME, MT_OK, 3, 0 },   /* P = 1: asymmetric as in TFLite */
        { 5, 3, 1, MT_PADDING_SAME, MT_OK, 5, 1 },   { 5, 3, 2, MT_PADDING_SAME, MT_OK, 3, 1 },
        { 4, 4, 1, MT_PADDING_SAME, MT_OK, 4, 1 },   /* P = 3: one before, two after */
        { 7, 3, 3, MT_PADDING_SAME, MT_OK, 3, 1 },   { 8, 2, 2, MT_PADDING_SAME, MT_OK, 4, 0 },
        { 3, 1, 2, MT_PADDING_SAME, MT_OK, 2, 0 },   { 1, 3, 1, MT_PADDING_SAME, MT_OK, 1, 1 },
        { 2, 5, 1, MT_PADDING_SAME, MT_OK, 2, 2 },   /* K > I is fine under SAME */
        /* invalid: K > I under VALID, an empty window, stride 0, an unknown padding */
        { 2, 3, 1, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 }, { 1, 2, 1, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 },
        { 5, 0, 1, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 }, { 5, 0, 1, MT_PADDING_SAME, MT_ERR_SHAPE, 0, 0 },
        { 5, 3, 0, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 }, { 5, 3, 0, MT_PADDING_SAME, MT_ERR_SHAPE, 0, 0 },
        { 5, 3, 1, 2, MT_ERR_BAD_MODEL, 0, 0 },            { 5, 3, 2, 7, MT_ERR_BAD_MODEL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t out = 12345, before = 12345;
        mt_status st = mt_spatial_axis(cases[i].in, cases[i].k, cases[i].s, cases[i].pad, &out, &before);
        if (!CHECK_STATUS(st, cases[i].status))
            printf("    case %u (in %u, k %u, s %u, pad %u)\n", (unsigned)i, cases[i].in, cases[i].k,
                   cases[i].s, cases[i].pad);
        if (cases[i].status == MT_OK && (!CHECK_EQ_INT(out, cases[i].out) || !CHECK_EQ_INT(before, cases[i].before)))
            printf("    case %u\n", (unsigned)i);
    }
    /* a sweep against the formula, with the window count never empty */
    for (int in = 1; in <= 9; in++)
        for (int k = 1; k <= 5; k++)
            for (int s = 1; s <= 3; s++)
                for (int same = 0; same <= 1; same++) {
                    uint32_t out, before;
                    int eo, eb;
                    mt_status st = mt_spatial_axis((uint32_t)in, (uint32_t)k, (uint32_t)s, (uint32_t)same, &out, &before);
                    if (!same && k > in) {
                        CHECK_STATUS(st, MT_ERR_SHAPE);
                        continue;
                    }
                    ref_axis(in, k, s, same, &eo, &eb);
                    if (!CHECK_STATUS(st, MT_OK) || !CHECK_EQ_INT(out, eo) || !CHECK_EQ_INT(before, eb))
                        printf("    in %d k %d s %d same %d\n", in, k, s, same);
                    CHECK((int)before < k); /* the first window reaches the input */
                    CHECK((int64_t)(out - 1) * s - (int64_t)before < in); /* and the last one */
                }
}

/* Geometry for the kernels, built by mt_spatial_axis (and checked against ref_axis). */
static int make_geom(mt_spatial *g, int H, int W, int C, int OC, int KH, int KW, int SH, int SW, int same,
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

/* ---- Conv2D and DepthwiseConv2D ------------------------------------------------------------- */

typedef struct conv_ctx {
    mt_spatial g;
    int B, dw, nx, nw, ny;
    float x[MAXE], w[MAXE], b[MAXE], r[MAXE], y[MAXE], tmp[MAXE];
    float *bias; /* b or NULL */
} conv_ctx;

/* z (pre-activation) in double, straight from the definition; optionally Σ|terms| for tolerances. */
static double ref_conv_z(const conv_ctx *c, int bb, int oh, int ow, int oc, double *abs_sum)
{
    const mt_spatial *g = &c->g;
    double z = c->bias ? c->bias[oc] : 0.0, a = fabs(z);
    for (int kh = 0; kh < (int)g->KH; kh++)
        for (int kw = 0; kw < (int)g->KW; kw++) {
            int ih = oh * (int)g->SH + kh - (int)g->PT, iw = ow * (int)g->SW + kw - (int)g->PL;
            if (ih < 0 || ih >= (int)g->H || iw < 0 || iw >= (int)g->W)
                continue; /* zero padding */
            for (int ci = 0; ci < (int)g->C; ci++) {
                if (c->dw && ci != oc)
                    continue;
                double xv = c->x[((bb * (int)g->H + ih) * (int)g->W + iw) * (int)g->C + ci];
                double wv = c->dw ? c->w[(kh * (int)g->KW + kw) * (int)g->C + ci]
                                  : c->w[((oc * (int)g->KH + kh) * (int)g->KW + kw) * (int)g->C + ci];
                z += xv * wv, a += fabs(xv * wv);
            }
        }
    if (abs_sum)
        *abs_sum = a;
    return z;
}

static double act_ref(int act, double z)
{
    if (act == MT_FUSED_NONE) return z;
    z = z < 0 ? 0 : z;
    return (act == MT_FUSED_RELU6 && z > 6) ? 6 : z;
}

static void conv_fwd(const conv_ctx *c, float *y)
{
    (c->dw ? mt_op_depthwise_conv2d_f32_forward : mt_op_conv2d_f32_forward)(c->x, c->w, c->bias, y,
                                                                           (uint32_t)c->B, &c->g);
}

/* dy is copied from r first: the kernel masks it in place by the activation's derivative. */
static void conv_bwd(conv_ctx *c, float *dx, float *dw, float *db)
{
    memcpy(c->tmp, c->r, sizeof(float) * (size_t)c->ny);
    (c->dw ? mt_op_depthwise_conv2d_f32_backward : mt_op_conv2d_f32_backward)(c->x, c->w, c->y, c->tmp, dx, dw,
                                                                             db, (uint32_t)c->B, &c->g);
}

static double conv_objective(void *p)
{
    conv_ctx *c = (conv_ctx *)p;
    static float y[MAXE];
    conv_fwd(c, y);
    return dot_r(y, c->r, c->ny);
}

/* Smallest distance of any pre-activation to a kink of act (0, and 6 for ReLU6). */
static double kink_distance(const conv_ctx *c)
{
    const mt_spatial *g = &c->g;
    double d = 1e30;
    for (int bb = 0; bb < c->B; bb++)
        for (int oh = 0; oh < (int)g->OH; oh++)
            for (int ow = 0; ow < (int)g->OW; ow++)
                for (int oc = 0; oc < (int)g->OC; oc++) {
                    double z = ref_conv_z(c, bb, oh, ow, oc, NULL);
                    d = fmin(d, g->activation == MT_FUSED_RELU6 ? fmin(fabs(z), fabs(z - 6.0)) : fabs(z));
                }
    return d;
}

static void test_conv_case(int dw, int B, int H, int W, int C, int OC, int KH, int KW, int SH, int SW,
                           int same, int act, int with_bias)
{
    static conv_ctx c;
    static float dx[MAXE], dwt[MAXE], db[MAXE], g0[3][MAXE], g1[3][MAXE], g2[3][MAXE], s[3][MAXE];
    const float h = act == MT_FUSED_NONE ? 1e-2f : 4e-3f;
    /* ReLU6: weights scaled so z = Σ x·w has a standard deviation near 5 and some pass 6 */
    const float wmax = act != MT_FUSED_RELU6 ? 1.0f : (float)(16.0 / sqrt((double)KH * KW * (dw ? 1 : C)));
    memset(&c, 0, sizeof c);
    c.dw = dw, c.B = B;
    OC = dw ? C : OC;
    if (!make_geom(&c.g, H, W, C, OC, KH, KW, SH, SW, same, act)) return;
    c.nx = B * H * W * C, c.nw = (dw ? 1 : OC) * KH * KW * C, c.ny = B * (int)(c.g.OH * c.g.OW) * OC;
    c.bias = with_bias ? c.b : NULL;
    int tries = 0;
    do { /* redraw until no perturbation can move a pre-activation across a kink */
        fill(c.x, c.nx, -1.f, 1.f);
        fill(c.w, c.nw, -wmax, wmax);
        fill(c.b, OC, -1.f, 1.f);
    } while (act != MT_FUSED_NONE && kink_distance(&c) < 1.5 * h * wmax && ++tries < 500);
    CHECK(tries < 500);
    fill(c.r, c.ny, -1.f, 1.f);

    /* forward */
    conv_fwd(&c, c.y);
    int hit[3] = { 0, 0, 0 }; /* outputs clipped at 0, inside, clipped at 6 */
    for (int bb = 0, k = 0; bb < B; bb++)
        for (int oh = 0; oh < (int)c.g.OH; oh++)
            for (int ow = 0; ow < (int)c.g.OW; ow++)
                for (int oc = 0; oc < OC; oc++, k++) {
                    double a, z = ref_conv_z(&c, bb, oh, ow, oc, &a), want = act_ref(act, z);
                    if (!CHECK_NEAR(c.y[k], want, 4e-6 * (1.0 + a)))
                        printf("    %s y[%d,%d,%d,%d]\n", dw ? "depthwise" : "conv2d", bb, oh, ow, oc);
                    hit[z <= 0 ? 0 : z < 6 ? 1 : 2]++;
                }
    CHECK(act == MT_FUSED_NONE || (hit[0] > 0 && hit[1] > 0)); /* the mask is exercised both ways */
    CHECK(act != MT_FUSED_RELU6 || hit[2] > 0);

    /* backward against finite differences */
    memset(dx, 0, sizeof dx), memset(dwt, 0, sizeof dwt), memset(db, 0, sizeof db);
    conv_bwd(&c, dx, dwt, with_bias ? db : NULL);
    gradcheck("x", c.x, c.nx, dx, h, conv_objective, &c);
    gradcheck("W", c.w, c.nw, dwt, h, conv_objective, &c);
    if (with_bias) gradcheck("bias", c.b, OC, db, h, conv_objective, &c);

    /* accumulation from random starting gradients; a NULL dbias leaves its buffer alone */
    static const char *names[3] = { "x", "W", "bias" };
    const int n[3] = { c.nx, c.nw, with_bias ? OC : 0 };
    for (int t = 0; t < 3; t++) fill(g0[t], MAXE, -1.f, 1.f);
    memcpy(g2, g0, sizeof g2);
    conv_bwd(&c, g2[0], g2[1], with_bias ? g2[2] : NULL);
    memcpy(g1, g2, sizeof g1);
    conv_bwd(&c, g2[0], g2[1], with_bias ? g2[2] : NULL);
    for (int t = 0; t < 3; t++) check_accumulates(names[t], g0[t], g1[t], g2[t], n[t]);
    CHECK(with_bias || memcmp(g2[2], g0[2], sizeof g0[2]) == 0);

    /* NULL gradients are skipped; each one given gets the bits of the full call */
    memset(s, 0, sizeof s);
    conv_bwd(&c, s[0], NULL, NULL);
    conv_bwd(&c, NULL, s[1], NULL);
    conv_bwd(&c, NULL, NULL, s[2]);
    conv_bwd(&c, NULL, NULL, NULL);
    CHECK(memcmp(s[0], dx, sizeof(float) * (size_t)n[0]) == 0);
    CHECK(memcmp(s[1], dwt, sizeof(float) * (size_t)n[1]) == 0);
    CHECK(memcmp(s[2], db, sizeof(float) * (size_t)n[2]) == 0);
}

static void test_convolutions(void)
{
    /* B, H, W, C, OC, KH, KW, SH, SW, same, act, bias */
    static const int cases[][12] = {
        { 2, 5, 5, 2, 3, 3, 3, 1, 1, 0, MT_FUSED_NONE, 1 },
        { 2, 5, 7, 3, 2, 3, 3, 1, 1, 1, MT_FUSED_NONE, 0 },
        { 2, 5, 5, 2, 3, 2, 2, 2, 2, 1, MT_FUSED_RELU, 1 },  /* H=5,K=2,S=2: pad 0 before, 1 after */
        { 2, 6, 6, 2, 2, 3, 3, 2, 2, 1, MT_FUSED_RELU6, 1 }, /* H=6,K=3,S=2: pad 0 before, 1 after */
        { 2, 7, 5, 3, 2, 3, 2, 2, 1, 0, MT_FUSED_RELU, 0 },
        { 2, 6, 5, 2, 4, 3, 3, 2, 2, 0, MT_FUSED_RELU6, 1 },
        { 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, MT_FUSED_NONE, 1 },
        { 2, 5, 6, 2, 2, 3, 3, 1, 2, 1, MT_FUSED_RELU, 1 },
        { 2, 4, 4, 3, 2, 4, 4, 1, 1, 1, MT_FUSED_NONE, 0 },  /* P = 3: 1 before, 2 after */
        { 2, 7, 7, 1, 3, 3, 3, 2, 2, 1, MT_FUSED_RELU6, 0 },
    };
    for (int dw = 0; dw <= 1; dw++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *k = cases[i];
            int before = mt_test_passed_ + mt_test_failed_, failed = mt_test_failed_;
            test_conv_case(dw, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11]);
            if (mt_test_failed_ != failed)
                printf("    ^ %s case %u (%d checks)\n", dw ? "depthwise" : "conv2d", (unsigned)i,
                       mt_test_passed_ + mt_test_failed_ - before);
        }
}

/* ---- pools ------------------------------------------------------------------------------------ */

/* GlobalAveragePool is checked as what it is: an average pool with an H×W VALID window. */
enum { AVG, MAX, GLOBAL };
typedef struct pool_ctx {
    mt_spatial g;
    int B, mode, nx, ny;
    float x[MAXE], y[MAXE], r[MAXE];
} pool_ctx;

static void pool_fwd(const pool_ctx *c, float *y)
{
    const uint32_t B = (uint32_t)c->B;
    if (c->mode == MAX) mt_op_max_pool2d_f32_forward(c->x, y, B, &c->g);
    else if (c->mode == AVG) mt_op_average_pool2d_f32_forward(c->x, y, B, &c->g);
    else mt_op_global_average_pool_f32_forward(c->x, y, B, c->g.H * c->g.W, c->g.C);
}

static void pool_bwd(const pool_ctx *c, float *dx)
{
    const uint32_t B = (uint32_t)c->B;
    if (c->mode == MAX) mt_op_max_pool2d_f32_backward(c->x, c->y, c->r, dx, B, &c->g);
    else if (c->mode == AVG) mt_op_average_pool2d_f32_backward(c->r, dx, B, &c->g);
    else mt_op_global_average_pool_f32_backward(c->r, dx, B, c->g.H * c->g.W, c->g.C);
}

static double pool_objective(void *p)
{
    pool_ctx *c = (pool_ctx *)p;
    static float y[MAXE];
    pool_fwd(c, y);
    return dot_r(y, c->r, c->ny);
}

static void test_pool_case(int mode, int B, int H, int W, int C, int KH, int KW, int SH, int SW, int same)
{
    static pool_ctx c;
    static float dx[MAXE], g0[MAXE], g1[MAXE], g2[MAXE];
    memset(&c, 0, sizeof c);
    c.mode = mode, c.B = B;
    if (!make_geom(&c.g, H, W, C, C, KH, KW, SH, SW, same, 0)) return;
    c.nx = B * H * W * C, c.ny = B * (int)(c.g.OH * c.g.OW) * C;
    if (mode == MAX) { /* distinct values 0.03 apart, shuffled: no ties, no argmax switch under ±h */
        for (int i = 0; i < c.nx; i++)
            c.x[i] = 0.03f * (float)(i - c.nx / 2);
        for (int i = c.nx - 1; i > 0; i--) {
            int j = (int)(mt_test_rand_u32() % (unsigned)(i + 1));
            float t = c.x[i];
            c.x[i] = c.x[j], c.x[j] = t;
        }
    } else {
        fill(c.x, c.nx, -1.f, 1.f);
    }
    fill(c.r, c.ny, -1.f, 1.f);
    pool_fwd(&c, c.y);
    for (int bb = 0, k = 0; bb < B; bb++)
        for (int oh = 0; oh < (int)c.g.OH; oh++)
            for (int ow = 0; ow < (int)c.g.OW; ow++)
                for (int ch = 0; ch < C; ch++, k++) {
                    double acc = 0.0, m = -1e30;
                    int count = 0;
                    for (int kh = 0; kh < KH; kh++)
                        for (int kw = 0; kw < KW; kw++) {
                            int ih = oh * SH + kh - (int)c.g.PT, iw = ow * SW + kw - (int)c.g.PL;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                continue;
                            double v = c.x[((bb * H + ih) * W + iw) * C + ch];
                            acc += v, m = v > m ? v : m, count++;
                        }
                    CHECK(count > 0);
                    double want = mode == MAX ? m : acc / count;
                    if (!CHECK_NEAR(c.y[k], want, 1e-6 * (1.0 + fabs(want) * count)))
                        printf("    pool mode %d y[%d]\n", mode, k);
                }
    memset(dx, 0, sizeof dx);
    pool_bwd(&c, dx);
    gradcheck("x", c.x, c.nx, dx, 1e-2f, pool_objective, &c);
    fill(g0, c.nx, -1.f, 1.f);
    memcpy(g2, g0, sizeof g0);
    pool_bwd(&c, g2);
    memcpy(g1, g2, sizeof g1);
    pool_bwd(&c, g2);
    check_accumulates("x", g0, g1, g2, c.nx);
}

static void test_pools(void)
{
    /* B, H, W, C, KH, KW, SH, SW, same */
    static const int cases[][9] = {
        { 2, 5, 5, 2, 2, 2, 2, 2, 0 }, { 2, 5, 5, 2, 2, 2, 2, 2, 1 }, /* SAME: last window partial */
        { 2, 6, 7, 3, 3, 3, 2, 2, 1 }, { 2, 5, 5, 1, 3, 3, 1, 1, 1 }, { 2, 7, 6, 2, 3, 3, 2, 2, 0 },
        { 2, 4, 5, 2, 3, 2, 1, 2, 0 }, { 2, 3, 5, 2, 3, 3, 1, 1, 0 }, { 2, 6, 6, 2, 2, 3, 2, 1, 1 },
    };
    for (int mode = AVG; mode <= MAX; mode++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *k = cases[i], failed = mt_test_failed_;
            test_pool_case(mode, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8]);
            if (mt_test_failed_ != failed) printf("    ^ %s case %u\n", mode == MAX ? "max" : "average", (unsigned)i);
        }
    test_pool_case(GLOBAL, 2, 3, 5, 3, 3, 5, 1, 1, 0); /* [3, 5, 3] -> [3] */
    test_pool_case(GLOBAL, 2, 1, 1, 4, 1, 1, 1, 1, 0);
}

/* ---- ReLU6 and LeakyReLU ---------------------------------------------------------------------- */

enum { RELU6, LEAKY };
typedef struct act_ctx {
    int op, n;
    float alpha, x[64], r[64];
} act_ctx;

static void act_fwd(const act_ctx *c, float *y)
{
    if (c->op == RELU6) mt_op_relu6_f32_forward(c->x, y, (size_t)c->n);
    else mt_op_leaky_relu_f32_forward(c->x, y, (size_t)c->n, c->alpha);
}

static double act_objective(void *p)
{
    act_ctx *c = (act_ctx *)p;
    float y[64];
    act_fwd(c, y);
    return dot_r(y, c->r, c->n);
}

static void test_activation(int op, float alpha)
{
    act_ctx c;
    float y[64], dx[64], g1[64];
    c.op = op, c.n = 48, c.alpha = alpha;
    for (int i = 0; i < c.n; i++) { /* [-3, 9), at least 0.1 away from the kinks 0 and 6 */
        float v;
        do
            v = mt_test_uniform(-3.f, 9.f);
        while (fabsf(v) < 0.1f || fabsf(v - 6.f) < 0.1f);
        c.x[i] = v;
    }
    fill(c.r, c.n, -1.f, 1.f);
    act_fwd(&c, y);
    for (int i = 0; i < c.n; i++) {
        double x = c.x[i];
        double want = op == RELU6 ? (x < 0 ? 0 : x > 6 ? 6 : x) : (x > 0 ? x : (double)alpha * x);
        CHECK_NEAR(y[i], want, 1e-6 * (1 + fabs(want)));
    }
    fill(dx, c.n, -1.f, 1.f); /* from non-zero: the gradient is added */
    memcpy(g1, dx, sizeof dx);
    if (op == RELU6) mt_op_relu6_f32_backward(y, c.r, dx, (size_t)c.n);
    else mt_op_leaky_relu_f32_backward(y, c.r, dx, (size_t)c.n, alpha);
    for (int i = 0; i < c.n; i++) dx[i] -= g1[i];
    gradcheck(op == RELU6 ? "relu6 x" : "leaky x", c.x, c.n, dx, 1e-2f, act_objective, &c);

    /* at the kinks the subgradient is 0 (ReLU6 at 0 and 6; LeakyReLU at 0 gives α) */
    float kx[3] = { 0.0f, 6.0f, -0.0f }, ky[3], ones[3] = { 1, 1, 1 }, kd[3] = { 0, 0, 0 };
    if (op == RELU6) {
        mt_op_relu6_f32_forward(kx, ky, 3);
        mt_op_relu6_f32_backward(ky, ones, kd, 3);
        CHECK_NEAR(ky[1], 6.0, 0);
        for (int i = 0; i < 3; i++)
            CHECK_BITS_EQ(kd[i] + 0.0f, 0.0f);
    } else {
        mt_op_leaky_relu_f32_forward(kx, ky, 1, alpha);
        mt_op_leaky_relu_f32_backward(ky, ones, kd, 1, alpha);
        CHECK_NEAR(ky[0], 0.0, 0);
        CHECK_NEAR(kd[0], alpha, 0);
    }
}

/* ---- Add and Concatenation, raw and through their graph adapters ------------------------------- */

static void tensor_rt(mt_tensor_rt *t, float *data, float *grad, uint32_t rows, uint32_t cols)
{
    memset(t, 0, sizeof *t);
    t->data = data, t->mutable_data = data, t->grad = grad;
    t->dims[0] = rows, t->dims[1] = cols;
    t->count = rows * cols, t->last_dim = cols;
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

static double graph_objective(void *p)
{
    graph_ctx *c = (graph_ctx *)p;
    c->k->forward(&c->op, c->t, c->n, NULL);
    return dot_r(c->t[c->out].data, c->r, c->ny);
}

static void test_add(void)
{
    enum { N = 2 * 3 * 4 };
    float a[N], b[N], y[N], r[N], da[N], db[N], d0[N];
    fill(a, N, -1.f, 1.f), fill(b, N, -1.f, 1.f), fill(r, N, -1.f, 1.f), fill(d0, N, -1.f, 1.f);
    mt_op_add_f32_forward(a, b, y, N);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(y[i], a[i] + b[i]);
    memcpy(da, d0, sizeof da);
    mt_op_add_f32_accumulate(r, da, N);
    mt_op_add_f32_accumulate(r, da, N);
    for (int i = 0; i < N; i++)
        CHECK_NEAR(da[i], (double)d0[i] + 2.0 * r[i], 1e-6);

    /* adapter, y = a + a (one tensor in both slots): da = 2·dy */
    graph_ctx c;
    memset(&c, 0, sizeof c);
    c.k = mt_op_kernel_for(MT_OP_ADD);
    if (!CHECK(c.k != NULL))
        return;
    c.op.type = MT_OP_ADD, c.op.num_inputs = 2, c.op.num_outputs = 1;
    c.op.inputs[0] = 0, c.op.inputs[1] = 0, c.op.inputs[2] = c.op.inputs[3] = MT_NO_TENSOR;
    c.op.outputs[0] = 1, c.op.outputs[1] = MT_NO_TENSOR;
    c.n = 2, c.out = 1, c.ny = N, c.r = r;
    memset(da, 0, sizeof da);
    tensor_rt(&c.t[0], a, da, 3, 4);
    tensor_rt(&c.t[1], y, (float *)r, 3, 4); /* dy = r */
    c.k->forward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(y[i], a[i] + a[i]);
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(da[i], 2.0f * r[i]);
    gradcheck("add(a,a) a", a, N, da, 1e-2f, graph_objective, &c);

    /* adapter, y = a + b with b carrying no gradient: b skipped, a gets dy */
    c.op.inputs[1] = 2;
    memset(da, 0, sizeof da);
    memcpy(db, d0, sizeof db);
    tensor_rt(&c.t[2], b, NULL, 3, 4);
    c.k->forward(&c.op, c.t, c.n, NULL);
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(da[i], r[i]);
    CHECK(memcmp(db, d0, sizeof db) == 0);
}

/* inputs: widths of the K inputs (0 ends), each [R = 3, C_k] per sample, batch 2;
 * same_twice: the first tensor also fills the last slot. */
static void test_concat(const uint32_t *widths, int K, int same_twice)
{
    enum { R = 3, NB = 2 };
    static float x[4][MAXE], dx[4][MAXE], y[MAXE], r[MAXE], d0[4][MAXE];
    graph_ctx c;
    memset(&c, 0, sizeof c);
    c.k = mt_op_kernel_for(MT_OP_CONCATENATION);
    if (!CHECK(c.k != NULL))
        return;
    uint32_t total = 0;
    int distinct = same_twice ? K - 1 : K;
    c.op.type = MT_OP_CONCATENATION, c.op.num_inputs = (uint8_t)K, c.op.num_outputs = 1;
    for (int k = 0; k < 4; k++)
        c.op.inputs[k] = k < K ? (uint16_t)(k < distinct ? k : 0) : MT_NO_TENSOR;
    for (int k = 0; k < distinct; k++) {
        fill(x[k], NB * R * (int)widths[k], -1.f, 1.f);
        memset(dx[k], 0, sizeof dx[k]);
        tensor_rt(&c.t[k], x[k], dx[k], R, widths[k]);
    }
    for (int k = 0; k < K; k++)
        total += widths[k < distinct ? k : 0];
    c.ny = NB * R * (int)total, c.out = 4, c.n = NB, c.r = r;
    fill(r, c.ny, -1.f, 1.f);
    tensor_rt(&c.t[4], y, r, R, total);
    c.op.outputs[0] = 4, c.op.outputs[1] = MT_NO_TENSOR;
    c.k->forward(&c.op, c.t, c.n, NULL);
    int bad = 0;
    for (int row = 0; row < NB * R; row++) {
        uint32_t off = 0;
        for (int k = 0; k < K; k++) {
            int src = k < distinct ? k : 0;
            uint32_t w = widths[src];
            for (uint32_t j = 0; j < w; j++)
                bad += memcmp(&y[(size_t)row * total + off + j], &x[src][(size_t)row * w + j], 4) != 0;
            off += w;
        }
    }
    CHECK_EQ_INT(bad, 0);
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int k = 0; k < distinct; k++)
        gradcheck("concat x", x[k], NB * R * (int)widths[k], dx[k], 1e-2f, graph_objective, &c);
    /* accumulation, and an input without a gradient is skipped */
    for (int k = 0; k < distinct; k++)
        memcpy(d0[k], dx[k], sizeof d0[k]);
    c.t[distinct - 1].grad = NULL;
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int k = 0; k < distinct - 1; k++)
        for (int i = 0; i < NB * R * (int)widths[k]; i++)
            CHECK_NEAR(dx[k][i], 2.0 * d0[k][i], 1e-6);
    CHECK(memcmp(dx[distinct - 1], d0[distinct - 1], sizeof d0[0]) == 0);
}

int main(void)
{
    static const uint32_t w2[] = { 2, 3 }, w3[] = { 1, 4, 2 }, wsame[] = { 3, 2, 3 };
    mt_test_seed(20240611u);
    test_spatial_axis_table();
    test_convolutions();
    test_pools();
    test_activation(RELU6, 0.0f);
    test_activation(LEAKY, 0.1f);
    test_activation(LEAKY, 0.0f);
    test_add();
    test_concat(w2, 2, 0);
    test_concat(w3, 3, 0);
    test_concat(wsame, 3, 1); /* Concatenation(a, b, a) */
    return MT_TEST_END();
}
