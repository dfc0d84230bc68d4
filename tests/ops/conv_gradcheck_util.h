/*
 * conv_gradcheck_util.h: Conv2D and DepthwiseConv2D (ops.h, spatial.h) against double references
 * and central finite differences, what test_conv2d.c and test_depthwise_conv2d.c share: strides
 * 1/2, VALID/SAME incl. asymmetric SAME padding, bias or not, fused NONE/RELU/RELU6, every
 * gradient, accumulation, NULL gradients skipped.
 *
 * Kinks are kept out of every difference by construction: a fused activation's
 * pre-activations z are redrawn until every |z - kink| exceeds the most one perturbation can
 * move z (h·max|operand| + slack).
 */
#ifndef CONV_GRADCHECK_UTIL_H
#define CONV_GRADCHECK_UTIL_H

#include "gradcheck_util.h"

/* ---- Conv2D and DepthwiseConv2D ------------------------------------------------------------- */

typedef struct conv_ctx {
    mt_spatial g;
    int B, dw, nx, nw, ny;
    float x[MAXE], w[MAXE], b[MAXE], r[MAXE], y[MAXE], tmp[MAXE];
    float *bias; /* b or NULL */
} conv_ctx;

/* z (pre-activation) in double, straight from the definition; optionally Σ|terms| for tolerances. */
static inline double ref_conv_z(const conv_ctx *c, int bb, int oh, int ow, int oc, double *abs_sum)
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

static inline double act_ref(int act, double z)
{
    if (act == MT_FUSED_NONE) return z;
    z = z < 0 ? 0 : z;
    return (act == MT_FUSED_RELU6 && z > 6) ? 6 : z;
}

static inline void conv_fwd(const conv_ctx *c, float *y)
{
    (c->dw ? mt_op_depthwise_conv2d_f32_forward_ref : mt_op_conv2d_f32_forward_ref)(c->x, c->w, c->bias, y,
                                                                                    (uint32_t)c->B, &c->g);
}

/* dy is copied from r first: the kernel masks it in place by the activation's derivative. */
static inline void conv_bwd(conv_ctx *c, float *dx, float *dw, float *db)
{
    memcpy(c->tmp, c->r, sizeof(float) * (size_t)c->ny);
    (c->dw ? mt_op_depthwise_conv2d_f32_backward_ref : mt_op_conv2d_f32_backward_ref)(c->x, c->w, c->y, c->tmp, dx, dw,
                                                                                      db, (uint32_t)c->B, &c->g);
}

static inline double conv_objective(void *p)
{
    conv_ctx *c = (conv_ctx *)p;
    static float y[MAXE];
    conv_fwd(c, y);
    return dot_r(y, c->r, c->ny);
}

/* Smallest distance of any pre-activation to a kink of act (0, and 6 for ReLU6). */
static inline double kink_distance(const conv_ctx *c)
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

static inline void test_conv_case(int dw, int B, int H, int W, int C, int OC, int KH, int KW, int SH, int SW,
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

/* The cases of both ops; depthwise takes OC = C. */
static inline void check_convolutions(int dw)
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *k = cases[i];
        int before = mt_test_passed_ + mt_test_failed_, failed = mt_test_failed_;
        test_conv_case(dw, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11]);
        if (mt_test_failed_ != failed)
            printf("    ^ %s case %u (%d checks)\n", dw ? "depthwise" : "conv2d", (unsigned)i,
                   mt_test_passed_ + mt_test_failed_ - before);
    }
}

#endif /* CONV_GRADCHECK_UTIL_H */
