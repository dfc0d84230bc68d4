/*
 * The int8 ops' backward (ops/quant_grad.h: the straight-through estimator of fake
 * quantization) against three independent things:
 *
 *   the mask   where the forward's clamp cut an output, its gradient is 0, elsewhere it passes,
 *              bounds included: checked against the forward kernel itself run with the clamp
 *              range widened by one at each end (an output that lands inside [lo, hi] then is
 *              one the clamp left unchanged), and for Mean and QUANTIZE against the real
 *              value computed in double away from the bounds;
 *   the sums   dx equals, bit for bit, the float op's reference backward run on the
 *              dequantized weights w = sw[c]·W_q and the masked dy (the same order, one fused
 *              multiply-add a term), so the int8 backward is the float one of the fake-quantized
 *              layer;
 *   the adjoint  central finite differences (gradcheck_util.h) of the float fake-quantized
 *              layer's surrogate L(x) = Σ_o r_o·mask_o·(w ⋆ x + b)_o in double, x the
 *              dequantized input: in float the int8 forward is piecewise constant (its finite
 *              differences are 0 or jumps), so the STE gradient is the gradient of this linear
 *              function with the mask held at the forward's. PyTorch's fake-quant autograd is
 *              the other reference (tests/test_parity_int8.py).
 */
#include <string.h>

#include "gradcheck_util.h"
#include "ops/quant_grad.h"

#define LO (-100) /* the clamp range of the cases: both ends inside int8, so one more fits */
#define HI 90

static uint32_t packed_of(int32_t zx, int32_t zy, int32_t lo, int32_t hi)
{
    return (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8 | (uint32_t)(uint8_t)lo << 16 |
           (uint32_t)(uint8_t)hi << 24;
}

/* TFLite's QuantizeMultiplier: M = q·2^shift, q in [0.5, 1) as round(q·2^31) */
static void quantize_multiplier(double m, int32_t *multiplier, int32_t *shift)
{
    int e;
    const double q = frexp(m, &e);
    long long fixed = llround(q * 2147483648.0);
    if (fixed == 2147483648LL) fixed /= 2, ++e;
    *multiplier = (int32_t)fixed;
    *shift = e;
}

static int8_t rand_s8(int lo, int hi)
{
    return (int8_t)(lo + (int)(mt_test_rand_u32() % (unsigned)(hi - lo + 1)));
}

static void fill_s8(int8_t *a, int n, int lo, int hi)
{
    for (int i = 0; i < n; i++) a[i] = rand_s8(lo, hi);
}

/* ---- Conv2D, DepthwiseConv2D, FullyConnected: one layer, its float reading ---------------- */

typedef struct layer {
    int kind; /* 0 Conv2D, 1 Depthwise, 2 FullyConnected */
    mt_spatial g;
    uint32_t B, D, U; /* FullyConnected: x [B, D], W [U, D] */
    int8_t x[MAXE], w[MAXE];
    int32_t bias[64], rq[128];
    float sw[64], sx, sy;
    int32_t zx, zy;
    float xd[MAXE], wd[MAXE], r_masked[MAXE]; /* dequantized input and weights; masked dy */
} layer;

static uint32_t in_count(const layer *l)
{
    return l->kind == 2 ? l->B * l->D : l->B * l->g.H * l->g.W * l->g.C;
}

static uint32_t out_count(const layer *l)
{
    return l->kind == 2 ? l->B * l->U : l->B * l->g.OH * l->g.OW * l->g.OC;
}

static uint32_t weight_count(const layer *l)
{
    if (l->kind == 2) return l->U * l->D;
    return (l->kind == 1 ? 1u : l->g.OC) * l->g.KH * l->g.KW * l->g.C;
}

static uint32_t channels(const layer *l)
{
    return l->kind == 2 ? l->U : l->g.OC;
}

/* the output channel a weight element scales with */
static uint32_t weight_channel(const layer *l, uint32_t i)
{
    if (l->kind == 1) return i % l->g.C;
    return i / (weight_count(l) / channels(l));
}

static void forward_s8(const layer *l, int8_t *y, int32_t lo, int32_t hi)
{
    const uint32_t packed = packed_of(l->zx, l->zy, lo, hi);
    if (l->kind == 0) mt_kernel_conv2d_s8_forward(l->x, l->w, l->bias, l->rq, y, l->B, &l->g, packed);
    else if (l->kind == 1) mt_kernel_depthwise_conv2d_s8_forward(l->x, l->w, l->bias, l->rq, y, l->B, &l->g, packed);
    else mt_kernel_dense_s8_forward(l->x, l->w, l->bias, l->rq, y, l->B, l->D, l->U, packed);
}

static void backward_s8(const layer *l, float *dy, float *dx)
{
    const uint32_t packed = packed_of(l->zx, l->zy, LO, HI);
    if (l->kind == 0) mt_op_conv2d_s8_backward(l->x, l->w, l->sw, l->bias, l->rq, dy, dx, l->B, &l->g, packed);
    else if (l->kind == 1)
        mt_op_depthwise_conv2d_s8_backward(l->x, l->w, l->sw, l->bias, l->rq, dy, dx, l->B, &l->g, packed);
    else mt_op_dense_s8_backward(l->x, l->w, l->sw, l->bias, l->rq, dy, dx, l->B, l->D, l->U, packed);
}

/* The float op's reference backward on the dequantized weights (activation none: dy as given) */
static void backward_f32(layer *l, float *dy, float *dx)
{
    if (l->kind == 0) mt_op_conv2d_f32_backward_ref(NULL, l->wd, NULL, dy, dx, NULL, NULL, l->B, &l->g);
    else if (l->kind == 1) mt_op_depthwise_conv2d_f32_backward_ref(NULL, l->wd, NULL, dy, dx, NULL, NULL, l->B, &l->g);
    else mt_op_dense_f32_backward_ref(NULL, l->wd, dy, dx, NULL, NULL, l->B, l->D, l->U, 0);
}

/* L(xd) = Σ_o r_masked[o] · z_o, z the float layer on the dequantized values, in double, its
 * taps written out here (spatial.h's tap rule: input row oh·SH + kh - PT when in bounds) */
static double surrogate(void *ctx)
{
    const layer *l = (const layer *)ctx;
    double total = 0.0;
    if (l->kind == 2) {
        for (uint32_t b = 0; b < l->B; ++b)
            for (uint32_t u = 0; u < l->U; ++u) {
                double z = (double)l->bias[u] * l->sx * l->sw[u];
                for (uint32_t d = 0; d < l->D; ++d) z += (double)l->wd[u * l->D + d] * l->xd[b * l->D + d];
                total += (double)l->r_masked[b * l->U + u] * z;
            }
        return total;
    }
    const mt_spatial *g = &l->g;
    for (uint32_t b = 0; b < l->B; ++b)
        for (uint32_t oh = 0; oh < g->OH; ++oh)
            for (uint32_t ow = 0; ow < g->OW; ++ow)
                for (uint32_t oc = 0; oc < g->OC; ++oc) {
                    double z = (double)l->bias[oc] * l->sx * l->sw[oc];
                    for (uint32_t kh = 0; kh < g->KH; ++kh)
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const long ih = (long)(oh * g->SH + kh) - (long)g->PT;
                            const long iw = (long)(ow * g->SW + kw) - (long)g->PL;
                            if (ih < 0 || iw < 0 || ih >= (long)g->H || iw >= (long)g->W) continue;
                            const float *xp = l->xd + ((b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
                            if (l->kind == 1) {
                                z += (double)l->wd[(kh * g->KW + kw) * g->C + oc] * xp[oc];
                            } else {
                                for (uint32_t c = 0; c < g->C; ++c)
                                    z += (double)l->wd[((oc * g->KH + kh) * g->KW + kw) * g->C + c] * xp[c];
                            }
                        }
                    total += (double)l->r_masked[((b * g->OH + oh) * g->OW + ow) * g->OC + oc] * z;
                }
    return total;
}

/* Random int8 operands and scales that make some outputs saturate at each end of [LO, HI] */
static void make_layer(layer *l, int kind)
{
    l->kind = kind;
    l->sx = 0.02f, l->sy = 0.05f, l->zx = 5, l->zy = -7;
    fill_s8(l->x, (int)in_count(l), -128, 127);
    fill_s8(l->w, (int)weight_count(l), -127, 127);
    const uint32_t C = channels(l);
    const double typical = kind == 2 ? 0.0025 : (kind == 1 ? 0.008 : 0.004); /* the requantization's size */
    for (uint32_t c = 0; c < C; ++c) {
        l->sw[c] = mt_test_uniform(0.7f, 1.3f) * (float)(typical * l->sy / l->sx);
        l->bias[c] = (int32_t)(mt_test_rand_u32() % 4001u) - 2000;
        const double m = (double)l->sx * (double)l->sw[c] / (double)l->sy;
        if (kind == 2) { /* FullyConnected: E's binary64 bits (low word, high word) */
            uint64_t bits;
            memcpy(&bits, &m, sizeof bits);
            l->rq[2 * c] = (int32_t)(uint32_t)bits, l->rq[2 * c + 1] = (int32_t)(uint32_t)(bits >> 32);
        } else {
            quantize_multiplier(m, &l->rq[2 * c], &l->rq[2 * c + 1]);
        }
    }
    for (uint32_t i = 0; i < in_count(l); ++i) l->xd[i] = l->sx * (float)((int32_t)l->x[i] - l->zx);
    for (uint32_t i = 0; i < weight_count(l); ++i) l->wd[i] = l->sw[weight_channel(l, i)] * (float)l->w[i];
}

static void check_layer(const char *name, int kind, int H, int W, int C, int OC, int K, int S, int same)
{
    static layer l;
    static int8_t y[MAXE], wide[MAXE];
    static float dy[MAXE], r[MAXE], dx[MAXE], dx_f32[MAXE], dy_f32[MAXE];
    memset(&l, 0, sizeof l);
    if (kind == 2) l.B = 2, l.D = (uint32_t)C, l.U = (uint32_t)OC;
    else if (!make_geom(&l.g, H, W, C, kind == 1 ? C : OC, K, K, S, S, same, MT_FUSED_NONE)) return;
    else l.B = 2;
    make_layer(&l, kind);
    const uint32_t N = out_count(&l), I = in_count(&l);
    forward_s8(&l, y, LO, HI);
    forward_s8(&l, wide, LO - 1, HI + 1);
    fill(r, (int)N, -1.0f, 1.0f);
    memcpy(dy, r, N * sizeof(float));
    for (uint32_t i = 0; i < I; ++i) dx[i] = dx_f32[i] = mt_test_uniform(-0.5f, 0.5f); /* it adds */
    backward_s8(&l, dy, dx);

    /* the mask: dy kept where the clamp left the value, 0 where it cut it */
    int low = 0, high = 0, kept = 0, wrong = 0;
    for (uint32_t o = 0; o < N; ++o) {
        const int passes = wide[o] >= LO && wide[o] <= HI;
        low += wide[o] < LO, high += wide[o] > HI, kept += passes;
        if (memcmp(&dy[o], passes ? &r[o] : &(float){0.0f}, sizeof(float)) != 0) ++wrong;
        if (passes && y[o] != wide[o]) ++wrong; /* the widened forward changed only what was cut */
    }
    printf("  %s: %u outputs, %d cut low, %d cut high, %d kept\n", name, N, low, high, kept);
    CHECK(low > 0 && high > 0 && kept > (int)N / 3);
    CHECK_EQ_INT(wrong, 0);

    /* the sums: the float op's reference backward on the dequantized weights, bit for bit */
    memcpy(dy_f32, dy, N * sizeof(float));
    backward_f32(&l, dy_f32, dx_f32);
    int differ = 0;
    for (uint32_t i = 0; i < I; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
    if (!CHECK_EQ_INT(differ, 0)) printf("    %s: dx differs from the float reference's bits\n", name);

    /* the adjoint: finite differences of the surrogate, from a gradient that starts at 0 */
    static float analytic[MAXE];
    memcpy(l.r_masked, dy, N * sizeof(float));
    memcpy(dy, r, N * sizeof(float));
    memset(analytic, 0, I * sizeof(float));
    backward_s8(&l, dy, analytic);
    gradcheck(name, l.xd, (int)I, analytic, 1e-2f, surrogate, &l);
}

/* ---- Add: both operands take the masked gradient --------------------------------------- */

static void check_add(void)
{
    enum { N = 96 };
    static int8_t a[N], b[N], y[N], wide[N];
    static float dy[N], r[N], da[N], db[N], da0[N];
    const float sa = 0.05f, sb = 0.03f, sy = 0.04f;
    const double twice_max = 2.0 * (sa > sb ? sa : sb);
    int32_t rq[8];
    quantize_multiplier(sa / twice_max, &rq[0], &rq[1]);
    quantize_multiplier(sb / twice_max, &rq[2], &rq[3]);
    quantize_multiplier(twice_max / ((double)(1 << 20) * sy), &rq[4], &rq[5]);
    rq[6] = 20, rq[7] = 0;
    const uint32_t zero_points = (uint32_t)(uint8_t)3 | (uint32_t)(uint8_t)-9 << 8 | (uint32_t)(uint8_t)4 << 16;
    fill_s8(a, N, -128, 127), fill_s8(b, N, -128, 127);
    mt_kernel_add_s8_forward(a, b, y, N, rq, zero_points, (uint32_t)(uint8_t)LO | (uint32_t)(uint8_t)HI << 8);
    mt_kernel_add_s8_forward(a, b, wide, N, rq, zero_points,
                             (uint32_t)(uint8_t)(LO - 1) | (uint32_t)(uint8_t)(HI + 1) << 8);
    fill(r, N, -1.0f, 1.0f);
    memcpy(dy, r, sizeof dy);
    fill(da, N, -0.5f, 0.5f);
    memcpy(da0, da, sizeof da);
    memset(db, 0, sizeof db);
    mt_op_add_s8_backward(a, b, dy, da, db, N, rq, zero_points, (uint32_t)(uint8_t)LO | (uint32_t)(uint8_t)HI << 8);
    int low = 0, high = 0, wrong = 0;
    for (int i = 0; i < N; ++i) {
        const int passes = wide[i] >= LO && wide[i] <= HI;
        low += wide[i] < LO, high += wide[i] > HI;
        const float want = passes ? r[i] : 0.0f;
        wrong += memcmp(&db[i], &want, sizeof want) != 0 || da[i] != da0[i] + want;
    }
    printf("  add: %d cut low, %d cut high of %d\n", low, high, N);
    CHECK(low > 0 && high > 0);
    CHECK_EQ_INT(wrong, 0);
}

/* ---- pools and Mean -------------------------------------------------------------------------- */

static void check_pools(void)
{
    static int8_t x[MAXE];
    static float xf[MAXE], dy[MAXE], dx[MAXE], dx_f32[MAXE];
    mt_spatial g;
    for (int same = 0; same <= 1; ++same) {
        if (!make_geom(&g, 5, 6, 3, 3, 3, 2, 2, 2, same, MT_FUSED_NONE)) return;
        const uint32_t B = 2, I = B * g.H * g.W * g.C, N = B * g.OH * g.OW * g.C;
        fill_s8(x, (int)I, -128, -120); /* narrow: ties inside windows, routed to the first */
        for (uint32_t i = 0; i < I; ++i) xf[i] = 0.25f * (float)((int32_t)x[i] + 3); /* dequantized: same order */
        fill(dy, (int)N, -1.0f, 1.0f);
        fill(dx, (int)I, -0.5f, 0.5f);
        memcpy(dx_f32, dx, I * sizeof(float));
        static float y_f32[MAXE];
        mt_op_max_pool2d_f32_forward_ref(xf, y_f32, B, &g);
        mt_op_max_pool2d_s8_backward(x, dy, dx, B, &g);
        mt_op_max_pool2d_f32_backward_ref(xf, y_f32, dy, dx_f32, B, &g);
        int differ = 0;
        for (uint32_t i = 0; i < I; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
        CHECK_EQ_INT(differ, 0); /* the float max pool's first maximum, bit for bit */
    }
    /* average: the float pool's backward (an int8 average never leaves int8: nothing is cut),
     * reached through the op's adapter */
    static mt_tensor_rt t[2];
    mt_op_desc op;
    memset(&op, 0, sizeof op);
    memset(t, 0, sizeof t);
    op.type = MT_OP_AVERAGE_POOL2D_S8, op.num_inputs = 1, op.num_outputs = 1, op.inputs[0] = 0, op.outputs[0] = 1;
    op.params[0] = 3u | 3u << 16, op.params[1] = 2u | 2u << 16, op.params[2] = MT_PADDING_SAME;
    t[0].dims[0] = 5, t[0].dims[1] = 6, t[0].dims[2] = 3, t[0].count = 90;
    t[1].dims[0] = 3, t[1].dims[1] = 3, t[1].dims[2] = 3, t[1].count = 27;
    t[0].data = (const float *)(const void *)x, t[0].grad = dx;
    t[1].grad = dy;
    if (!make_geom(&g, 5, 6, 3, 3, 3, 3, 2, 2, 1, MT_FUSED_NONE)) return;
    fill(dy, 2 * 27, -1.0f, 1.0f);
    fill(dx, 2 * 90, -0.5f, 0.5f);
    memcpy(dx_f32, dx, 2 * 90 * sizeof(float));
    mt_op_kernel_for(MT_OP_AVERAGE_POOL2D_S8)->backward(&op, t, 2, NULL);
    mt_op_average_pool2d_f32_backward(dy, dx_f32, 2, &g);
    int differ = 0;
    for (uint32_t i = 0; i < 180; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
    CHECK_EQ_INT(differ, 0);
}

static void check_mean(void)
{
    enum { B = 2, P = 4, C = 16 };
    static int8_t x[B * P * C];
    static float dy[B * C], r[B * C], dx[B * P * C], dx_f32[B * P * C];
    const int32_t zx = 6, zy = -3;
    const double ratio = 6.0; /* sx / sy: many means saturate */
    int32_t multiplier, shift;
    quantize_multiplier(ratio, &multiplier, &shift);
    fill_s8(x, B * P * C, -128, 127);
    fill(r, B * C, -1.0f, 1.0f);
    memcpy(dy, r, sizeof dy);
    memset(dx, 0, sizeof dx);
    memset(dx_f32, 0, sizeof dx_f32);
    const uint32_t zero_points = (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8;
    mt_op_mean_s8_backward(x, dy, dx, B, P, C, zero_points, multiplier, shift);
    int checked = 0, cut = 0, wrong = 0;
    for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c) {
            double sum = 0.0;
            for (int p = 0; p < P; ++p) sum += x[(b * P + p) * C + c] - zx;
            const double v = sum / P * ratio + zy; /* the real value before rounding and clamp */
            if ((v > -129.5 && v < -126.5) || (v > 125.5 && v < 128.5)) continue; /* too near a bound */
            const int passes = v >= -126.5 && v <= 125.5;
            ++checked, cut += !passes;
            wrong += dy[b * C + c] != (passes ? r[b * C + c] : 0.0f);
        }
    printf("  mean: %d of %d checked away from the bounds, %d cut\n", checked, B * C, cut);
    CHECK(checked >= B * C / 2 && cut > 0 && cut < checked);
    CHECK_EQ_INT(wrong, 0);
    mt_op_global_average_pool_f32_backward(dy, dx_f32, B, P, C); /* the float pool's, on the masked dy */
    int differ = 0;
    for (int i = 0; i < B * P * C; ++i) differ += memcmp(&dx[i], &dx_f32[i], sizeof(float)) != 0;
    CHECK_EQ_INT(differ, 0);
}

/* ---- QUANTIZE: the gradient passes where round(x / s) + zp lies in [-128, 127] -------------- */

static void check_quantize(void)
{
    enum { N = 270 };
    static float x[N], dy[N], dx[N];
    static int8_t q[N];
    const float s = 0.037f;
    const int32_t zp = -11;
    for (int i = 0; i < N; ++i) {
        const int k = -135 + i; /* round(x / s) + zp = k: -135 .. 134 */
        x[i] = s * ((float)(k - zp) + mt_test_uniform(-0.3f, 0.3f));
        dy[i] = mt_test_uniform(-1.0f, 1.0f);
        dx[i] = 0.0f;
    }
    mt_op_quantize_f32_s8(x, q, N, s, zp);
    mt_op_quantize_f32_s8_backward(x, dy, dx, N, s, zp);
    int wrong = 0;
    for (int i = 0; i < N; ++i) {
        const int k = -135 + i, passes = k >= -128 && k <= 127;
        wrong += dx[i] != (passes ? dy[i] : 0.0f);
        if (passes) wrong += q[i] != k; /* the forward agrees on the value */
    }
    CHECK_EQ_INT(wrong, 0);
}

int main(void)
{
    mt_test_seed(40);
    check_layer("conv2d_s8 3x3 SAME stride 2", 0, 6, 5, 3, 4, 3, 2, 1);
    check_layer("conv2d_s8 2x2 VALID stride 1", 0, 4, 4, 2, 3, 2, 1, 0);
    check_layer("depthwise_conv2d_s8 3x3 SAME", 1, 5, 6, 4, 4, 3, 1, 1);
    check_layer("depthwise_conv2d_s8 3x3 VALID stride 2", 1, 7, 5, 3, 3, 3, 2, 0);
    check_layer("dense_s8", 2, 0, 0, 24, 7, 0, 0, 0);
    check_add();
    check_pools();
    check_mean();
    check_quantize();
    return MT_TEST_END();
}
