/*
 * The sibling cases of Dense (forward and backward, and Conv2D's 1 x 1 layers, which run them),
 * the layer's activation derivative with its bias gradient, and a gradient's += and clear: each
 * row's kernel in a column against the row's reference, bit for bit (siblings.h).
 */
#include <stdint.h>
#include <string.h>

#include "ops/spatial.h"
#include "siblings.h"

#define MAXB 16
#define MAXI 64
#define MAXU 16
static float x[MAXB * MAXI], w[MAXU * MAXI], bias[MAXU], dy[MAXB * MAXU];
static float y0[MAXB * MAXU], y1[MAXB * MAXU], dx0[MAXB * MAXI], dx1[MAXB * MAXI];
static float dw0[MAXU * MAXI], dw1[MAXU * MAXI], db0[MAXU], db1[MAXU];

/* tiny: scale the data into the subnormal range's neighbourhood; SPIKE: ordinary data but
 * for one column of x and one row of dy whose sums are subnormal (some blocks redo theirs);
 * NANS + t: ordinary data but for two NaNs, one negative, other payloads, in x (t = 0), W (1) or
 * dy (2), in other rows and columns (Helium makes every NaN result the default NaN: the blocks
 * they reach redo theirs). One tensor at a time, so two NaNs never meet in one sum: which one
 * such a sum gives depends on the compiled operand order, which C leaves to the compiler.
 * RELU: about half of dy ±0 (both signs), a row and a column of it all zero, a NaN in dy (the
 * FPU cores' dW skips the zeros' terms); RELU_INF: the same zeros, no NaN, an infinity in x
 * (a skipped 0·inf would lose its NaN: the dense blocks must run). */
#define SPIKE 1
#define NANS 2
#define RELU 5
#define RELU_INF 6
static void relu_zeros(uint32_t B, uint32_t U, int with_nan)
{
    for (size_t k = 0; k < (size_t)B * U; ++k)
        if (dy[k] < 0.0f) dy[k] = (k & 4u) ? -0.0f : 0.0f; /* fill's values: half negative */
    for (uint32_t u = 0; u < U; ++u) dy[(size_t)(B / 2) * U + u] = 0.0f;
    for (uint32_t b = 0; b < B; ++b) dy[(size_t)b * U + U / 2] = -0.0f;
    if (with_nan) dy[(size_t)B * U - 1] = -__builtin_nanf("0x2a");
}

/* x, W, bias and dy of one case (see above) */
static void dense_data(uint32_t B, uint32_t I, uint32_t U, float xs, float ws, int kind)
{
    const int spike = kind == SPIKE;
    mt_sib_fill(x, (size_t)B * I, xs), mt_sib_fill(w, (size_t)U * I, ws), mt_sib_fill(bias, U, 0.5f);
    mt_sib_fill(dy, (size_t)B * U, ws);
    if (kind >= RELU) relu_zeros(B, U, kind == RELU);
    if (kind == RELU_INF) /* the last row's last column a sparse row takes: the finiteness test's last 8 or tail */
        x[(size_t)B * I - 1 - (I >= 16 ? I % 16u : 0u)] = -__builtin_inff();
    for (uint32_t b = 0; spike && b < B; ++b) x[(size_t)b * I + I / 2] *= 1e-39f; /* dW's column I / 2 */
    for (uint32_t u = 0; spike && u < U; ++u) dy[(size_t)(B / 3) * U + u] *= 1e-39f; /* dx's row B / 3 */
    if (kind >= NANS && kind < RELU) { /* at [R - 1, C / 3] and [R / 2, C - 1] of the R x C tensor, if apart */
        float *t = kind == NANS ? x : kind == NANS + 1 ? w : dy;
        const uint32_t R = kind == NANS ? B : kind == NANS + 1 ? U : B, C = kind == NANS + 2 ? U : I;
        t[(size_t)(R - 1) * C + C / 3] = -__builtin_nanf("0x2a");
        if (R / 2 != R - 1 && C / 3 != C - 1) t[(size_t)(R / 2) * C + C - 1] = __builtin_nanf("0x155");
    }
}

/* y = act(x·Wᵀ + b), the activation a pointwise Conv2D's (MT_FUSED_*, a different one a case) */
static void dense_forward_case(const mt_kernel_table *column, uint32_t B, uint32_t I, uint32_t U, float xs, float ws,
                               int kind)
{
    dense_data(B, I, U, xs, ws, kind);
    const float *fb = xs < 1e-10f ? NULL : bias; /* tiny data: no bias to hide a flushed sum */
    const uint32_t act = (B + (uint32_t)kind) % 3u;
    mt_op_dense_f32_forward_ref(x, w, fb, y0, B, I, U, act);
    column->dense_f32_forward(x, w, fb, y1, B, I, U, act);
    mt_sib_check(mt_sib_same(y0, y1, (size_t)B * U), "dense forward");
}

/* dx, dW and dbias added to gradients that hold values (or 0, where a flushed sum shows), then
 * dW from zero (dw_zero: what the reference adds to a zeroed dW, whatever dW held; flushed and
 * NaN blocks included: a kernel's scalar path zeroes its block first) */
static void dense_backward_case(const mt_kernel_table *column, uint32_t B, uint32_t I, uint32_t U, float xs, float ws,
                                int kind)
{
    dense_data(B, I, U, xs, ws, kind);
    const float gs = xs < 1e-10f || kind == SPIKE ? 0.0f : 0.5f;
    mt_sib_fill(dx0, (size_t)B * I, gs), mt_sib_fill(dw0, (size_t)U * I, gs), mt_sib_fill(db0, U, gs);
    memcpy(dx1, dx0, sizeof(float) * B * I), memcpy(dw1, dw0, sizeof(float) * U * I);
    memcpy(db1, db0, sizeof(float) * U);
    mt_op_dense_f32_backward_ref(x, w, dy, dx0, dw0, db0, B, I, U, 0);
    column->dense_f32_backward(x, w, dy, dx1, dw1, db1, B, I, U, 0);
    mt_sib_check(mt_sib_same(dx0, dx1, (size_t)B * I), "dense dx");
    mt_sib_check(mt_sib_same(dw0, dw1, (size_t)U * I), "dense dW");
    mt_sib_check(mt_sib_same(db0, db1, U), "dense dbias");
    mt_sib_fill(dw0, (size_t)U * I, 3.0f);
    mt_sib_fill(dw1, (size_t)U * I, 7.0f);
    mt_op_dense_f32_backward_ref(x, w, dy, NULL, dw0, NULL, B, I, U, 1);
    column->dense_f32_backward(x, w, dy, NULL, dw1, NULL, B, I, U, 1);
    mt_sib_check(mt_sib_same(dw0, dw1, (size_t)U * I), "dense dW from zero");
}

static const uint32_t dense_shapes[][3] = {{1, 1, 1}, {2, 8, 8},  {4, 16, 10}, {9, 37, 13}, {5, 3, 7},
                                           {8, 32, 4}, {1, 12, 5}, {3, 6, 3},   {16, 64, 16}, {7, 5, 11},
                                           /* B·I >= 512 (the FPU cores' sparse dW): 3 x 16 + 9, 3 x 16 + 1
                                            * and 2 x 16 + 8 columns */
                                           {9, 57, 5}, {11, 49, 7}, {16, 40, 6}};

static void dense_cases(const mt_kernel_table *column,
                        void (*one)(const mt_kernel_table *, uint32_t, uint32_t, uint32_t, float, float, int))
{
    for (uint32_t s = 0; s < sizeof dense_shapes / sizeof dense_shapes[0]; ++s) {
        const uint32_t B = dense_shapes[s][0], I = dense_shapes[s][1], U = dense_shapes[s][2];
        one(column, B, I, U, 2.0f, 1.0f, 0);
        one(column, B, I, U, 3e-20f, 2e-19f, 0); /* products below 2^-126 */
        one(column, B, I, U, 1e-39f, 1.0f, 0);   /* subnormal inputs */
        one(column, B, I, U, 2.0f, 1.0f, SPIKE); /* one block's worth */
        for (int t = 0; t < 3; ++t) one(column, B, I, U, 2.0f, 1.0f, NANS + t);
        one(column, B, I, U, 2.0f, 1.0f, RELU);
        one(column, B, I, U, 2.0f, 1.0f, RELU_INF);
    }
}

/* A pointwise Conv2D runs Dense over its pixels (ops/conv2d.c): its forward against Conv2D's
 * reference, and its backward (the activation's derivative with the bias gradient, then Dense's
 * without it) too; edges: x holds 6, its neighbours, -0, NaN of either sign, infinities and
 * FLT_MAX, and W picks x[p, oc mod C] exactly (the other terms are 0·x) so the sums meet them */
#define CV_X (2 * 8 * 8 * 8)
#define CV_Y (2 * 8 * 8 * 16)
static float cx[CV_X], cw[16 * 8], cb[16], cy0[CV_Y], cy1[CV_Y], cdy0[CV_Y], cdy1[CV_Y];
static float cdx0[CV_X], cdx1[CV_X], cdw0[16 * 8], cdw1[16 * 8], cdb0[32], cdb1[32]; /* channels: at most 17 */

static void pointwise_case(const mt_kernel_table *column, int backward, uint32_t H, uint32_t W, uint32_t C, uint32_t OC,
                           uint32_t activation, int with_bias, int edges)
{
    static const float special[] = {6.0f, -6.0f, 6.0000005f, 5.9999995f, -0.0f, 0.0f, 7.0f, -1.0f,
                                    __builtin_nanf(""), -__builtin_nanf(""), 1.0f, 0.5f, __builtin_inff(),
                                    -__builtin_inff(), 3.4028235e38f, -3.4028235e38f, 1e-39f, 6.5f};
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = g.OH = H, g.W = g.OW = W, g.C = C, g.OC = OC, g.KH = g.KW = g.SH = g.SW = 1, g.activation = activation;
    const uint32_t B = 2, P = B * H * W;
    const size_t nx = (size_t)P * C, ny = (size_t)P * OC, nw = (size_t)OC * C;
    mt_sib_fill(cx, nx, 8.0f), mt_sib_fill(cw, nw, 1.0f), mt_sib_fill(cb, OC, 0.5f);
    for (size_t i = 0; edges && i < nx; ++i) cx[i] = special[i % (sizeof special / sizeof special[0])];
    for (uint32_t o = 0; edges && o < OC; ++o)
        for (uint32_t c = 0; c < C; ++c) cw[(size_t)o * C + c] = c == o % C ? 1.0f : 0.0f;
    if (OC > 1) cb[0] = -0.0f;
    const float *b = with_bias ? cb : NULL;
    mt_op_conv2d_f32_forward_ref(cx, cw, b, cy0, B, &g);
    if (!backward) {
        column->dense_f32_forward(cx, cw, b, cy1, P, C, OC, activation);
        mt_sib_check(mt_sib_same(cy0, cy1, ny), "pointwise forward");
        return;
    }
    mt_sib_fill(cdy0, ny, 1.0f), mt_sib_fill(cdx0, nx, 0.5f), mt_sib_fill(cdw0, nw, 0.5f), mt_sib_fill(cdb0, OC, 0.5f);
    memcpy(cdy1, cdy0, ny * sizeof(float)), memcpy(cdx1, cdx0, nx * sizeof(float));
    memcpy(cdw1, cdw0, nw * sizeof(float)), memcpy(cdb1, cdb0, OC * sizeof(float));
    mt_op_conv2d_f32_backward_ref(cx, cw, cy0, cdy0, cdx0, cdw0, b ? cdb0 : NULL, B, &g);
    column->activation_bias_f32_backward(activation, cy0, cdy1, b ? cdb1 : NULL, P, OC);
    column->dense_f32_backward(cx, cw, cdy1, cdx1, cdw1, NULL, P, C, OC, 0);
    mt_sib_check(mt_sib_same(cdy0, cdy1, ny) && mt_sib_same(cdx0, cdx1, nx) && mt_sib_same(cdw0, cdw1, nw) &&
                     mt_sib_same(cdb0, cdb1, OC),
                 "pointwise backward");
}

static void pointwise_cases(const mt_kernel_table *column, int backward)
{
    static const uint32_t shapes[][4] = {/* H, W, C, OC */ {8, 8, 8, 16}, {3, 5, 5, 7}, {2, 3, 1, 4}, {1, 7, 3, 9}};
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (uint32_t act = MT_FUSED_NONE; act <= MT_FUSED_RELU6; ++act)
            for (int kind = 0; kind < 4; ++kind)
                if (!backward || !(kind >> 1)) /* the backward on ordinary data */
                    pointwise_case(column, backward, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], act,
                                   kind & 1, kind >> 1);
}

void mt_sib_case_dense_f32_forward(const mt_kernel_table *column)
{
    dense_cases(column, dense_forward_case);
    pointwise_cases(column, 0);
}

void mt_sib_case_dense_f32_backward(const mt_kernel_table *column)
{
    dense_cases(column, dense_backward_case);
    pointwise_cases(column, 1);
}

/* dz = dy·act'(y) and dbias += Σ_p dz over P pixels of C channels (fewer than a vector of them,
 * one vector, a last vector that overlaps the one before, two and four side by side): y with
 * zeros of both signs, 6 and its neighbours, NaNs and infinities; dy ordinary, or with sums that
 * are subnormal (Helium flushes them), or a NaN in two channels */
static void activation_bias_case(const mt_kernel_table *column, uint32_t P, uint32_t C, uint32_t act, int with_bias,
                                 int kind)
{
    static const float special[] = {0.0f, -0.0f, 6.0f, 5.9999995f, 6.0000005f, 1e-39f, -1e-39f, 3.0f, -2.0f,
                                    __builtin_nanf("0x3"), -__builtin_nanf("0x5"), __builtin_inff(), -__builtin_inff()};
    const size_t n = (size_t)P * C;
    mt_sib_fill(cy0, n, 8.0f), mt_sib_fill(cdy0, n, kind == 1 ? 1e-38f : 2.0f);
    mt_sib_fill(cdb0, C, kind == 1 ? 0.0f : 0.5f);
    for (size_t i = 0; i < n; i += 3) cy0[i] = special[(i / 3) % (sizeof special / sizeof special[0])];
    if (kind == 2) { /* one NaN a channel: two that meet in one sum give the compiled operand order's */
        cdy0[(size_t)(P / 2) * C + C / 2] = -__builtin_nanf("0x9");
        if (C > 1) cdy0[(size_t)(P - 1) * C] = __builtin_nanf("0x7");
    }
    memcpy(cdy1, cdy0, n * sizeof(float)), memcpy(cdb1, cdb0, C * sizeof(float));
    mt_activation_bias_f32_backward_ref(act, cy0, cdy0, with_bias ? cdb0 : NULL, P, C);
    column->activation_bias_f32_backward(act, cy0, cdy1, with_bias ? cdb1 : NULL, P, C);
    mt_sib_check(mt_sib_same(cdy0, cdy1, n) && mt_sib_same(cdb0, cdb1, C), "activation derivative and bias gradient");
}

void mt_sib_case_activation_bias_f32_backward(const mt_kernel_table *column)
{
    static const uint32_t shapes[][2] = {/* P, C */ {12, 1}, {20, 3}, {33, 4}, {17, 7}, {8, 8}, {25, 16}, {9, 17}};
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (uint32_t act = MT_FUSED_NONE; act <= MT_FUSED_RELU6; ++act)
            for (int kind = 0; kind < 3; ++kind)
                for (int with_bias = 0; with_bias < 2; ++with_bias)
                    activation_bias_case(column, shapes[s][0], shapes[s][1], act, with_bias, kind);
}

/* A gradient's += against the scalar FPU's additions, every length from 1 to 40, the element
 * past it left alone: random sums; sums that are subnormal (dx close to -dy: MVE flushes them)
 * or -0 + 0; and specials on both sides (NaNs of either sign and payload, infinities that make
 * a NaN). */
#define ACC_N 40
void mt_sib_case_add_f32_accumulate(const mt_kernel_table *column)
{
    static const float special[] = {0.0f, -0.0f, 1e-45f, -1e-39f, __builtin_nanf("0x7"), -__builtin_nanf("0x9"),
                                    __builtin_inff(), -__builtin_inff(), 3.0f, -2.5f, __builtin_nansf("0x1")};
    static float ady[ACC_N], adx0[ACC_N + 1], adx1[ACC_N + 1];
    const uint32_t ns = (uint32_t)(sizeof special / sizeof special[0]);
    for (uint32_t n = 1; n <= ACC_N; ++n)
        for (int turn = 0; turn < 3; ++turn) {
            for (uint32_t i = 0; i < n; ++i) {
                ady[i] = turn == 0   ? mt_sib_uniform(2.0f)
                         : turn == 1 ? mt_sib_uniform(1e-37f)
                                     : special[(i * 7u + 3u) % ns];
                adx0[i] = turn == 0 ? mt_sib_uniform(2.0f) : turn == 1 ? -ady[i] * 0.99f : special[(i * 5u + 1u) % ns];
            }
            if (turn == 1) adx0[n / 2] = -0.0f, ady[n / 2] = 0.0f; /* -0 + 0 = +0 */
            adx0[n] = adx1[n] = -1234.5f;
            memcpy(adx1, adx0, sizeof(float) * n);
            mt_op_add_f32_accumulate_ref(ady, adx0, n);
            column->add_f32_accumulate(ady, adx1, n);
            mt_sib_check(mt_sib_same(adx0, adx1, n + 1), "gradient +=");
        }
}

/* A gradient's clear, every length from 0 to 70 from two alignments: +0.0f's bits in [0, n),
 * the element past it and the one before left alone */
#define CLEAR_N 70
void mt_sib_case_grad_clear_f32(const mt_kernel_table *column)
{
    static float buf[CLEAR_N + 2], zeros[CLEAR_N];
    for (uint32_t n = 0; n <= CLEAR_N; ++n)
        for (uint32_t at = 0; at < 2; ++at) {
            for (uint32_t i = 0; i < CLEAR_N + 2; ++i) buf[i] = -1234.5f;
            column->grad_clear_f32(buf + at, n);
            mt_sib_check(mt_sib_same(buf + at, zeros, n) && buf[at + n] == -1234.5f && (at == 0 || buf[0] == -1234.5f),
                         "gradient clear");
        }
}
