/*
 * Conv2D and DepthwiseConv2D (ops.h, spatial.h) against double references and central finite
 * differences (gradcheck_util.h): strides 1/2, VALID/SAME incl. asymmetric SAME padding, bias
 * or not, fused NONE/RELU/RELU6; and mt_spatial_axis's TFLite output sizes and pad-before
 * values. The other spatial and graph-shaping kernels: test_pool_gradcheck.c,
 * test_activation_gradcheck.c, test_add_concat_gradcheck.c.
 *
 * Kinks are kept out of every difference by construction: a fused activation's
 * pre-activations z are redrawn until every |z - kink| exceeds the most one perturbation can
 * move z (h·max|operand| + slack).
 */
#include "gradcheck_util.h"

/* ---- geometry ------------------------------------------------------------------------------- */

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
    (c->dw ? mt_op_depthwise_conv2d_f32_forward_ref : mt_op_conv2d_f32_forward_ref)(c->x, c->w, c->bias, y,
                                                                                    (uint32_t)c->B, &c->g);
}

/* dy is copied from r first: the kernel masks it in place by the activation's derivative. */
static void conv_bwd(conv_ctx *c, float *dx, float *dw, float *db)
{
    memcpy(c->tmp, c->r, sizeof(float) * (size_t)c->ny);
    (c->dw ? mt_op_depthwise_conv2d_f32_backward_ref : mt_op_conv2d_f32_backward_ref)(c->x, c->w, c->y, c->tmp, dx, dw,
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

int main(void)
{
    mt_test_seed(20240611u);
    test_spatial_axis_table();
    test_convolutions();
    return MT_TEST_END();
}
