/*
 * MaxPool2D, AveragePool2D and GlobalAveragePool (ops.h, spatial.h) against double references
 * and central finite differences (gradcheck_util.h), VALID, SAME and explicit pads. Max-pool inputs
 * are distinct values 0.03 > 2h apart, so no window's argmax can change under a perturbation.
 */
#include "gradcheck_util.h"

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
    if (c->mode == MAX) mt_op_max_pool2d_f32_forward_ref(c->x, y, B, &c->g);
    else if (c->mode == AVG) mt_op_average_pool2d_f32_forward(c->x, y, B, &c->g);
    else mt_op_global_average_pool_f32_forward(c->x, y, B, c->g.H * c->g.W, c->g.C);
}

static void pool_bwd(const pool_ctx *c, float *dx)
{
    const uint32_t B = (uint32_t)c->B;
    if (c->mode == MAX) mt_op_max_pool2d_f32_backward_ref(c->x, c->y, c->r, dx, B, &c->g);
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

/* The pool of geometry g (its H, W, C, windows, strides and PT, PL; OH, OW) against a double
 * reference and finite differences. */
static void check_pool(int mode, int B, const mt_spatial *g)
{
    static pool_ctx c;
    static float dx[MAXE], g0[MAXE], g1[MAXE], g2[MAXE];
    const int H = (int)g->H, W = (int)g->W, C = (int)g->C, KH = (int)g->KH, KW = (int)g->KW;
    const int SH = (int)g->SH, SW = (int)g->SW;
    memset(&c, 0, sizeof c);
    c.mode = mode, c.B = B, c.g = *g;
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

static void test_pool_case(int mode, int B, int H, int W, int C, int KH, int KW, int SH, int SW, int same)
{
    mt_spatial g;
    if (make_geom(&g, H, W, C, C, KH, KW, SH, SW, same, 0)) check_pool(mode, B, &g);
}

/* Explicit pads (MT_PADDING_EXPLICIT, ONNX's and PyTorch's): O = (T + H + Bo - K) / S + 1 */
static void test_pool_explicit(int mode, int B, int H, int W, int C, int K, int S, int T, int Bo, int L, int R)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = (uint32_t)H, g.W = (uint32_t)W, g.C = g.OC = (uint32_t)C;
    g.KH = g.KW = (uint32_t)K, g.SH = g.SW = (uint32_t)S, g.PT = (uint32_t)T, g.PL = (uint32_t)L;
    if (!CHECK_STATUS(mt_spatial_explicit_axis(g.H, g.KH, g.SH, g.PT, (uint32_t)Bo, &g.OH), MT_OK) ||
        !CHECK_STATUS(mt_spatial_explicit_axis(g.W, g.KW, g.SW, g.PL, (uint32_t)R, &g.OW), MT_OK))
        return;
    CHECK_EQ_INT(g.OH, (T + H + Bo - K) / S + 1);
    CHECK_EQ_INT(g.OW, (L + W + R - K) / S + 1);
    check_pool(mode, B, &g);
}

/* Windows of padding alone are refused: before >= K, or the last window starting past the input */
static void test_explicit_refusals(void)
{
    uint32_t out = 77;
    CHECK_STATUS(mt_spatial_explicit_axis(112, 3, 2, 1, 1, &out), MT_OK); /* ResNet's stem pool */
    CHECK_EQ_INT(out, 56);
    CHECK_STATUS(mt_spatial_explicit_axis(5, 2, 2, 0, 1, &out), MT_OK); /* ceil_mode's window */
    CHECK_EQ_INT(out, 3);
    CHECK_STATUS(mt_spatial_explicit_axis(4, 2, 2, 2, 0, &out), MT_ERR_SHAPE); /* first all padding */
    CHECK_STATUS(mt_spatial_explicit_axis(4, 1, 2, 0, 2, &out), MT_ERR_SHAPE); /* last all padding */
    CHECK_STATUS(mt_spatial_explicit_axis(2, 5, 1, 1, 1, &out), MT_ERR_SHAPE); /* no window */
    CHECK_STATUS(mt_spatial_explicit_axis(4, 0, 1, 0, 0, &out), MT_ERR_SHAPE);
    CHECK_STATUS(mt_spatial_explicit_axis(4, 2, 0, 0, 0, &out), MT_ERR_SHAPE);
    CHECK_STATUS(mt_spatial_explicit_axis(0xFFFFFFFFu, 2, 1, 255, 255, &out), MT_ERR_SHAPE); /* O past 32 bits */
    CHECK_STATUS(mt_spatial_explicit_axis(0xFFFFFF00u, 2, 1, 1, 1, &out), MT_OK);
    CHECK_EQ_INT(out, 0xFFFFFF01u);
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
    /* explicit pads: B, H, W, C, K, S, top, bottom, left, right */
    static const int explicit_cases[][11] = {
        { 2, 6, 6, 2, 3, 2, 1, 1, 1, 1 }, /* ResNet's stem pool on an even size: neither SAME nor VALID */
        { 1, 5, 5, 2, 2, 2, 0, 1, 0, 1 }, /* ceil_mode: a last window over one row and column */
        { 2, 5, 6, 1, 3, 2, 2, 0, 0, 2 }, /* more padding on one side; every window of row 0 partial */
        { 1, 7, 4, 2, 3, 1, 1, 1, 2, 1 }, /* stride 1, pads on every side */
    };
    for (int mode = AVG; mode <= MAX; mode++)
        for (size_t i = 0; i < sizeof explicit_cases / sizeof explicit_cases[0]; i++) {
            const int *k = explicit_cases[i], failed = mt_test_failed_;
            test_pool_explicit(mode, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9]);
            if (mt_test_failed_ != failed)
                printf("    ^ %s explicit case %u\n", mode == MAX ? "max" : "average", (unsigned)i);
        }
    test_explicit_refusals();
}

int main(void)
{
    /* Where the generator stood after the convolution cases when one program (test_conv_gradcheck.c)
     * ran every spatial and graph-shaping check: each case draws the numbers it
     * always did. */
    mt_test_seed(0xb9428e5au);
    test_pools();
    return MT_TEST_END();
}
