/*
 * int8_gradcheck_util.h: what the int8 ops' C tests share (test_conv_s8.c, test_dense_s8.c,
 * test_add_s8.c, test_pooling_s8.c, test_shape_s8.c), header-only beside gradcheck_util.h:
 * TFLite's QuantizeMultiplier, int8 fills, and Conv2D's, DepthwiseConv2D's and
 * FullyConnected's int8 layer with its float reading, checked by check_layer.
 *
 * The int8 ops' backward (ops/quant_grad.h: the straight-through estimator of fake
 * quantization) is checked against three independent things:
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
 *              the other reference (tests/convert/test_int8_backward.py).
 *
 * The weight's and bias's gradients (an int8 layer trained in place) likewise: dW and db bit
 * for bit against the float op's reference backward on the dequantized input and the masked
 * dy, their += (the second call adds the same sums again), and the surrogate's central finite
 * differences with respect to the real weights w = sw[c]·W_q and biases sx·sw[c]·b_q.
 */
#ifndef INT8_GRADCHECK_UTIL_H
#define INT8_GRADCHECK_UTIL_H

#include <string.h>

#include "gradcheck_util.h"
#include "ops/quant_grad.h"

#define LO (-100) /* the clamp range of the cases: both ends inside int8, so one more fits */
#define HI 90

static inline uint32_t packed_of(int32_t zx, int32_t zy, int32_t lo, int32_t hi)
{
    return (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8 | (uint32_t)(uint8_t)lo << 16 |
           (uint32_t)(uint8_t)hi << 24;
}

/* TFLite's QuantizeMultiplier: M = q·2^shift, q in [0.5, 1) as round(q·2^31) */
static inline void quantize_multiplier(double m, int32_t *multiplier, int32_t *shift)
{
    int e;
    const double q = frexp(m, &e);
    long long fixed = llround(q * 2147483648.0);
    if (fixed == 2147483648LL) fixed /= 2, ++e;
    *multiplier = (int32_t)fixed;
    *shift = e;
}

static inline int8_t rand_s8(int lo, int hi)
{
    return (int8_t)(lo + (int)(mt_test_rand_u32() % (unsigned)(hi - lo + 1)));
}

static inline void fill_s8(int8_t *a, int n, int lo, int hi)
{
    for (int i = 0; i < n; i++) a[i] = rand_s8(lo, hi);
}

/* ---- Conv2D, DepthwiseConv2D, FullyConnected: one layer, its float reading ---------------- */

enum layer_kind { LAYER_CONV2D, LAYER_DEPTHWISE, LAYER_DENSE };

typedef struct layer {
    enum layer_kind kind;
    mt_spatial g;
    uint32_t B, D, U; /* FullyConnected: x [B, D], W [U, D] */
    int8_t x[MAXE], w[MAXE];
    int32_t bias[64], rq[128];
    float sw[64], sx, sy;
    int32_t zx, zy;
    float xd[MAXE], wd[MAXE], r_masked[MAXE]; /* dequantized input and weights; masked dy */
    float bd[64]; /* the real biases sx·sw[c]·b[c] */
} layer;

static inline uint32_t in_count(const layer *l)
{
    return l->kind == LAYER_DENSE ? l->B * l->D : l->B * l->g.H * l->g.W * l->g.C;
}

static inline uint32_t out_count(const layer *l)
{
    return l->kind == LAYER_DENSE ? l->B * l->U : l->B * l->g.OH * l->g.OW * l->g.OC;
}

static inline uint32_t weight_count(const layer *l)
{
    if (l->kind == LAYER_DENSE) return l->U * l->D;
    return (l->kind == LAYER_DEPTHWISE ? 1u : l->g.OC) * l->g.KH * l->g.KW * l->g.C;
}

static inline uint32_t channels(const layer *l)
{
    return l->kind == LAYER_DENSE ? l->U : l->g.OC;
}

/* the output channel a weight element scales with */
static inline uint32_t weight_channel(const layer *l, uint32_t i)
{
    if (l->kind == LAYER_DEPTHWISE) return i % l->g.C;
    return i / (weight_count(l) / channels(l));
}

static inline void forward_s8(const layer *l, int8_t *y, int32_t lo, int32_t hi)
{
    const uint32_t packed = packed_of(l->zx, l->zy, lo, hi);
    if (l->kind == LAYER_CONV2D)
        mt_kernel_conv2d_s8_forward(l->x, l->w, l->bias, l->rq, y, l->B, &l->g, packed);
    else if (l->kind == LAYER_DEPTHWISE)
        mt_kernel_depthwise_conv2d_s8_forward(l->x, l->w, l->bias, l->rq, y, l->B, &l->g, packed);
    else
        mt_kernel_dense_s8_forward(l->x, l->w, l->bias, l->rq, y, l->B, l->D, l->U, packed);
}

/* dx, dw, db: += the input's, the real weight's and the real bias's gradients (NULL: none) */
static inline void backward_s8_all(const layer *l, float *dy, float *dx, float *dw, float *db)
{
    const uint32_t packed = packed_of(l->zx, l->zy, LO, HI);
    const mt_q_grads d = {dx, dw, db, l->sx};
    if (l->kind == LAYER_CONV2D)
        mt_op_conv2d_s8_backward(l->x, l->w, l->sw, l->bias, l->rq, dy, &d, l->B, &l->g, packed);
    else if (l->kind == LAYER_DEPTHWISE)
        mt_op_depthwise_conv2d_s8_backward(l->x, l->w, l->sw, l->bias, l->rq, dy, &d, l->B, &l->g, packed);
    else
        mt_op_dense_s8_backward(l->x, l->w, l->sw, l->bias, l->rq, dy, &d, l->B, l->D, l->U, packed);
}

static inline void backward_s8(const layer *l, float *dy, float *dx)
{
    backward_s8_all(l, dy, dx, NULL, NULL);
}

/* The float op's reference backward on the dequantized input and weights (activation none:
 * dy as given); dw, db += as the int8 one's */
static inline void backward_f32_all(layer *l, float *dy, float *dx, float *dw, float *db)
{
    if (l->kind == LAYER_CONV2D)
        mt_op_conv2d_f32_backward_ref(l->xd, l->wd, NULL, dy, dx, dw, db, l->B, &l->g);
    else if (l->kind == LAYER_DEPTHWISE)
        mt_op_depthwise_conv2d_f32_backward_ref(l->xd, l->wd, NULL, dy, dx, dw, db, l->B, &l->g);
    else
        mt_op_dense_f32_backward_ref(l->xd, l->wd, dy, dx, dw, db, l->B, l->D, l->U, 0);
}

static inline void backward_f32(layer *l, float *dy, float *dx)
{
    backward_f32_all(l, dy, dx, NULL, NULL);
}

/* L(xd) = Σ_o r_masked[o] · z_o, z the float layer on the dequantized values, in double, its
 * taps written out here (spatial.h's tap rule: input row oh·SH + kh - PT when in bounds) */
static inline double surrogate(void *ctx)
{
    const layer *l = (const layer *)ctx;
    double total = 0.0;
    if (l->kind == LAYER_DENSE) {
        for (uint32_t b = 0; b < l->B; ++b)
            for (uint32_t u = 0; u < l->U; ++u) {
                double z = l->bd[u];
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
                    double z = l->bd[oc];
                    for (uint32_t kh = 0; kh < g->KH; ++kh)
                        for (uint32_t kw = 0; kw < g->KW; ++kw) {
                            const long ih = (long)(oh * g->SH + kh) - (long)g->PT;
                            const long iw = (long)(ow * g->SW + kw) - (long)g->PL;
                            if (ih < 0 || iw < 0 || ih >= (long)g->H || iw >= (long)g->W) continue;
                            const float *xp = l->xd + ((b * g->H + (uint32_t)ih) * g->W + (uint32_t)iw) * g->C;
                            if (l->kind == LAYER_DEPTHWISE) {
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
static inline void make_layer(layer *l, enum layer_kind kind)
{
    l->kind = kind;
    l->sx = 0.02f, l->sy = 0.05f, l->zx = 5, l->zy = -7;
    fill_s8(l->x, (int)in_count(l), -128, 127);
    fill_s8(l->w, (int)weight_count(l), -127, 127);
    const uint32_t C = channels(l);
    /* the requantization's size */
    const double typical = kind == LAYER_DENSE ? 0.0025 : (kind == LAYER_DEPTHWISE ? 0.008 : 0.004);
    for (uint32_t c = 0; c < C; ++c) {
        l->sw[c] = mt_test_uniform(0.7f, 1.3f) * (float)(typical * l->sy / l->sx);
        l->bias[c] = (int32_t)(mt_test_rand_u32() % 4001u) - 2000;
        l->bd[c] = (float)((double)l->bias[c] * l->sx * l->sw[c]);
        const double m = (double)l->sx * (double)l->sw[c] / (double)l->sy;
        if (kind == LAYER_DENSE) { /* FullyConnected: E's binary64 bits (low word, high word) */
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

/* The weight's and bias's gradients of layer l (its dy before the mask: r): bit for bit the
 * float reference's on the dequantized input, accumulating, and the surrogate's finite
 * differences in the real weights and biases */
static inline void check_weight_grads(layer *l, const char *name, const float *r)
{
    static float dy[MAXE], dy_f32[MAXE], dw[MAXE], dw_f32[MAXE], dw_once[MAXE];
    float db[64], db_f32[64], db_once[64];
    const uint32_t N = out_count(l), WN = weight_count(l), C = channels(l);
    memcpy(dy, r, N * sizeof(float));
    fill(dw, (int)WN, -0.5f, 0.5f); /* it adds */
    fill(db, (int)C, -0.5f, 0.5f);
    memcpy(dw_f32, dw, WN * sizeof(float));
    memcpy(db_f32, db, C * sizeof(float));
    backward_s8_all(l, dy, NULL, dw, db);
    memcpy(dy_f32, dy, N * sizeof(float)); /* masked */
    backward_f32_all(l, dy_f32, NULL, dw_f32, db_f32);
    int differ = 0;
    for (uint32_t i = 0; i < WN; ++i) differ += memcmp(&dw[i], &dw_f32[i], sizeof(float)) != 0;
    for (uint32_t c = 0; c < C; ++c) differ += memcmp(&db[c], &db_f32[c], sizeof(float)) != 0;
    if (!CHECK_EQ_INT(differ, 0)) printf("    %s: dW or db differs from the float reference's bits\n", name);

    /* from 0, then once more: the second call adds the same sums */
    memset(dw_once, 0, sizeof dw_once);
    memset(db_once, 0, sizeof db_once);
    memcpy(dy, r, N * sizeof(float));
    backward_s8_all(l, dy, NULL, dw_once, db_once);
    memcpy(dw, dw_once, WN * sizeof(float));
    memcpy(db, db_once, C * sizeof(float));
    memcpy(dy, r, N * sizeof(float));
    backward_s8_all(l, dy, NULL, dw, db);
    int not_added = 0;
    for (uint32_t i = 0; i < WN; ++i) not_added += dw[i] != dw_once[i] + dw_once[i];
    for (uint32_t c = 0; c < C; ++c) not_added += db[c] != db_once[c] + db_once[c];
    CHECK_EQ_INT(not_added, 0);
    int nonzero = 0;
    for (uint32_t i = 0; i < WN; ++i) nonzero += dw_once[i] != 0.0f;
    CHECK(nonzero > (int)WN / 2); /* the check compares gradients that are there */

    char what[96];
    snprintf(what, sizeof what, "%s weight", name);
    gradcheck(what, l->wd, (int)WN, dw_once, 1e-2f, surrogate, l);
    snprintf(what, sizeof what, "%s bias", name);
    gradcheck(what, l->bd, (int)C, db_once, 1e-2f, surrogate, l);
}

static inline void check_layer(const char *name, enum layer_kind kind, int H, int W, int C, int OC, int K, int S,
                               int same)
{
    static layer l;
    static int8_t y[MAXE], wide[MAXE];
    static float dy[MAXE], r[MAXE], dx[MAXE], dx_f32[MAXE], dy_f32[MAXE];
    memset(&l, 0, sizeof l);
    if (kind == LAYER_DENSE) l.B = 2, l.D = (uint32_t)C, l.U = (uint32_t)OC;
    else if (!make_geom(&l.g, H, W, C, kind == LAYER_DEPTHWISE ? C : OC, K, K, S, S, same, MT_FUSED_NONE)) return;
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
    check_weight_grads(&l, name, r);
}

#endif /* INT8_GRADCHECK_UTIL_H */
