/*
 * The device's sibling test: the kernels this build's op adapters call in place of the
 * reference (Helium on a Cortex-M55, the portable scalar siblings on the other FPU cores)
 * run beside the reference kernels on random data, once with ordinary values, once with
 * subnormal inputs and results (which Helium flushes, so its kernels must fall back to
 * scalar code) and once with a few NaNs of either sign (Helium makes every NaN result the
 * default NaN: the same fallback), and every output bit must be equal: the device half of
 * tests/core/test_kernel_siblings.c. Prints "siblings: N passed, M failed" and exits with
 * M != 0. A core without an FPU (Cortex-M3) runs the float reference itself: only the int8
 * siblings (siblings_s8.c), which every core calls, are compared there.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mt_board.h"
#include "mt_math.h"
#include "ops/arm/mve.h"
#include "ops/fast/fast.h"
#include "ops/ops.h"
#include "ops/spatial.h"
#include "optimizers.h"
#include "siblings.h"
#include "siblings_s8.h"

#if MT_SCALAR_SIBLINGS
static uint32_t rng = 12345u;
#endif
static uint32_t passed, failed;

static void puts_(const char *s)
{
    while (*s) mt_board_putc(*s++);
}

static void put_u32(uint32_t v)
{
    char text[11];
    int n = 0;
    do text[n++] = (char)('0' + v % 10u), v /= 10u;
    while (v);
    while (n) mt_board_putc(text[--n]);
}

#if MT_SCALAR_SIBLINGS
/* uniform in [-scale, scale) */
float uniform(float scale)
{
    rng = rng * 1664525u + 1013904223u;
    return ((float)(rng >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
}
#endif

void check(int ok, const char *what)
{
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    puts_("FAILED: ");
    puts_(what);
    mt_board_putc('\n');
}

#if MT_SCALAR_SIBLINGS
void fill(float *v, size_t n, float scale)
{
    for (size_t i = 0; i < n; ++i) v[i] = uniform(scale);
}

int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}
#endif

#if MT_SCALAR_SIBLINGS
#define MAXB 16
#define MAXI 64
#define MAXU 16
static float x[MAXB * MAXI], w[MAXU * MAXI], bias[MAXU], dy[MAXB * MAXU];
static float y0[MAXB * MAXU], y1[MAXB * MAXU], dx0[MAXB * MAXI], dx1[MAXB * MAXI];
static float dw0[MAXU * MAXI], dw1[MAXU * MAXI], db0[MAXU], db1[MAXU];
#if !MT_MVE_KERNELS
static float acc[MAXI];
#endif

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

static void dense_case(uint32_t B, uint32_t I, uint32_t U, float xs, float ws, int kind)
{
    const int spike = kind == SPIKE;
    fill(x, (size_t)B * I, xs), fill(w, (size_t)U * I, ws), fill(bias, U, 0.5f), fill(dy, (size_t)B * U, ws);
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
    const float *fb = xs < 1e-10f ? NULL : bias; /* tiny data: no bias to hide a flushed sum */
    mt_op_dense_f32_forward(x, w, fb, y0, B, I, U);
#if MT_MVE_KERNELS
    const uint32_t act = (B + (uint32_t)kind) % 3u; /* a pointwise Conv2D's fused activation (MT_FUSED_*) */
    mt_op_dense_f32_forward_mve(x, w, fb, y1, B, I, U, act);
    mt_fused_activation_forward(act, y0, (size_t)B * U);
#else
    mt_op_dense_f32_forward_blocked(x, w, fb, y1, B, I, U);
#endif
    check(same(y0, y1, (size_t)B * U), "dense forward");
    const float gs = xs < 1e-10f || spike ? 0.0f : 0.5f; /* gradients from 0, where a flushed sum shows */
    fill(dx0, (size_t)B * I, gs), fill(dw0, (size_t)U * I, gs), fill(db0, U, gs);
    memcpy(dx1, dx0, sizeof(float) * B * I), memcpy(dw1, dw0, sizeof(float) * U * I), memcpy(db1, db0, sizeof(float) * U);
    mt_op_dense_f32_backward(x, w, dy, dx0, dw0, db0, B, I, U);
#if MT_MVE_KERNELS
    mt_op_dense_f32_backward_mve(x, w, dy, dx1, dw1, db1, B, I, U, 0);
#else
    mt_op_dense_f32_backward_rows(x, w, dy, dx1, dw1, db1, B, I, U, acc);
#endif
    check(same(dx0, dx1, (size_t)B * I), "dense dx");
    check(same(dw0, dw1, (size_t)U * I), "dense dW");
    check(same(db0, db1, U), "dense dbias");
#if MT_MVE_KERNELS
    /* dw_zero: what the reference adds to a zeroed dW, whatever dW held (flushed and NaN
     * blocks included: the scalar path zeroes its block first) */
    memset(dw0, 0, sizeof(float) * U * I);
    fill(dw1, (size_t)U * I, 7.0f);
    mt_op_dense_f32_backward(x, w, dy, NULL, dw0, NULL, B, I, U);
    mt_op_dense_f32_backward_mve(x, w, dy, NULL, dw1, NULL, B, I, U, 1);
    check(same(dw0, dw1, (size_t)U * I), "dense dW from zero");
#endif
}

#define SP_X (2 * 7 * 6 * 5)
#define SP_W (6 * 3 * 3 * 5)
#define SP_Y (2 * 7 * 6 * 6)
static float sx[SP_X], sw[SP_W], sb[6], sy0[SP_Y], sy1[SP_Y], sdy0[SP_Y], sdy1[SP_Y];
static float sdx0[SP_X], sdx1[SP_X], sdw0[SP_W], sdw1[SP_W], sdb0[6], sdb1[6];

static void spatial_case(int depthwise, uint32_t stride, uint32_t padding, float scale)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = 7, g.W = 6, g.C = 5, g.OC = depthwise ? 5 : 6, g.KH = 3, g.KW = 3, g.SH = stride, g.SW = 1;
    g.activation = MT_FUSED_RELU;
    mt_spatial_axis(g.H, g.KH, g.SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(g.W, g.KW, g.SW, padding, &g.OW, &g.PL);
    const uint32_t B = 2;
    const size_t nx = (size_t)B * g.H * g.W * g.C, ny = (size_t)B * g.OH * g.OW * g.OC;
    const size_t nw = depthwise ? (size_t)9 * g.C : (size_t)g.OC * 9 * g.C;
    fill(sx, nx, scale), fill(sw, nw, 1.0f), fill(sb, g.OC, 0.5f), fill(sdy0, ny, scale);
    memcpy(sdy1, sdy0, ny * sizeof(float));
    if (depthwise) {
        mt_op_depthwise_conv2d_f32_forward(sx, sw, sb, sy0, B, &g);
#if MT_MVE_KERNELS
        mt_op_depthwise_conv2d_f32_forward_mve(sx, sw, sb, sy1, B, &g);
#else
        mt_op_depthwise_conv2d_f32_forward_fast(sx, sw, sb, sy1, B, &g);
#endif
    } else {
        mt_op_conv2d_f32_forward(sx, sw, sb, sy0, B, &g);
#if MT_MVE_KERNELS
        mt_op_conv2d_f32_forward_mve(sx, sw, sb, sy1, B, &g);
#else
        mt_op_conv2d_f32_forward_fast(sx, sw, sb, sy1, B, &g);
#endif
    }
    check(same(sy0, sy1, ny), depthwise ? "depthwise forward" : "conv forward");
    fill(sdx0, nx, 0.5f), fill(sdw0, nw, 0.5f), fill(sdb0, g.OC, 0.5f);
    memcpy(sdx1, sdx0, nx * sizeof(float)), memcpy(sdw1, sdw0, nw * sizeof(float)), memcpy(sdb1, sdb0, g.OC * sizeof(float));
    if (depthwise) {
        mt_op_depthwise_conv2d_f32_backward(sx, sw, sy0, sdy0, sdx0, sdw0, sdb0, B, &g);
#if MT_MVE_KERNELS
        mt_op_depthwise_conv2d_f32_backward_mve(sx, sw, sy0, sdy1, sdx1, sdw1, sdb1, B, &g);
#else
        mt_op_depthwise_conv2d_f32_backward_fast(sx, sw, sy0, sdy1, sdx1, sdw1, sdb1, B, &g);
#endif
    } else {
        mt_op_conv2d_f32_backward(sx, sw, sy0, sdy0, sdx0, sdw0, sdb0, B, &g);
        mt_op_conv2d_f32_backward_fast(sx, sw, sy0, sdy1, sdx1, sdw1, sdb1, B, &g);
    }
    check(same(sdx0, sdx1, nx) && same(sdw0, sdw1, nw) && same(sdb0, sdb1, g.OC),
          depthwise ? "depthwise backward" : "conv backward");
}

/* DepthwiseConv2D with C <= 20 channels (20: two 8-channel blocks in assembly on the FPU cores
 * and 4 more; on the M55 a 16-channel block and a 4-channel one, 8 and 12 its other block
 * shapes, 7 a last vector that overlaps the one before). Tiny scale: x near the subnormals, dy
 * ordinary but for every third channel's, subnormal (dW's products and those channels' dbias
 * sums are subnormal), the gradients from 0 where a flushed sum shows. nans: NaNs of both signs
 * in x (1) or in dy (2), each in another channel: two NaNs that meet in one sum give the bits
 * of whichever the compiled code takes as the first operand, which C leaves to the compiler. */
#define DW_C 20
#define DW_X (2 * 4 * 5 * DW_C)
static float dx_[DW_X], dy0_[DW_X], dy1_[DW_X], dy_0[DW_X], dy_1[DW_X], dx0_[DW_X], dx1_[DW_X];
static float dww[9 * DW_C], dwb[DW_C], dw0_[9 * DW_C], dw1_[9 * DW_C], db0_[DW_C], db1_[DW_C];

/* rows SH apart, columns SW apart */
static void depthwise_shape_s(uint32_t H, uint32_t W, uint32_t C, uint32_t SH, uint32_t SW, uint32_t padding,
                              uint32_t activation, int with_bias, float scale, int nans)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = H, g.W = W, g.C = g.OC = C, g.KH = g.KW = 3, g.SH = SH, g.SW = SW, g.activation = activation;
    mt_spatial_axis(g.H, g.KH, g.SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(g.W, g.KW, g.SW, padding, &g.OW, &g.PL);
    const size_t nx = (size_t)2 * g.H * g.W * C, ny = (size_t)2 * g.OH * g.OW * C, nw = 9 * (size_t)C;
    const float *b = with_bias ? dwb : NULL;
    const int tiny = scale < 1e-10f;
    fill(dx_, nx, scale), fill(dww, nw, 1.0f), fill(dwb, C, 0.5f), fill(dy_0, ny, tiny ? 2.0f : scale);
    for (size_t i = 0; tiny && i < ny; ++i) dy_0[i] *= i % C % 3 ? 1.0f : 1e-39f;
    for (size_t i = 3; nans == 1 && i < nx; i += 61) dx_[i] = (i & 1u) ? -__builtin_nanf("0x7") : __builtin_nanf("");
    for (size_t i = 10; nans == 2 && i < ny; i += 47) dy_0[i] = (i & 1u) ? __builtin_nanf("0x3") : -__builtin_nanf("");
    memcpy(dy_1, dy_0, ny * sizeof(float));
    mt_op_depthwise_conv2d_f32_forward(dx_, dww, b, dy0_, 2, &g);
#if MT_MVE_KERNELS
    mt_op_depthwise_conv2d_f32_forward_mve(dx_, dww, b, dy1_, 2, &g);
#else
    mt_op_depthwise_conv2d_f32_forward_fast(dx_, dww, b, dy1_, 2, &g);
#endif
    check(same(dy0_, dy1_, ny), "depthwise forward, C channels");
    fill(dx0_, nx, tiny ? 0.0f : 0.5f), fill(dw0_, nw, tiny ? 0.0f : 0.5f), fill(db0_, C, tiny ? 0.0f : 0.5f);
    memcpy(dx1_, dx0_, nx * sizeof(float)), memcpy(dw1_, dw0_, nw * sizeof(float)), memcpy(db1_, db0_, sizeof db0_);
    mt_op_depthwise_conv2d_f32_backward(dx_, dww, dy0_, dy_0, dx0_, dw0_, with_bias ? db0_ : NULL, 2, &g);
#if MT_MVE_KERNELS
    mt_op_depthwise_conv2d_f32_backward_mve(dx_, dww, dy0_, dy_1, dx1_, dw1_, with_bias ? db1_ : NULL, 2, &g);
#else
    mt_op_depthwise_conv2d_f32_backward_fast(dx_, dww, dy0_, dy_1, dx1_, dw1_, with_bias ? db1_ : NULL, 2, &g);
#endif
    check(same(dy_0, dy_1, ny) && same(dx0_, dx1_, nx) && same(dw0_, dw1_, nw) && same(db0_, db1_, C),
          "depthwise backward, C channels");
}

static void depthwise_shape(uint32_t H, uint32_t W, uint32_t C, uint32_t stride, uint32_t padding,
                            uint32_t activation, int with_bias, float scale, int nans)
{
    depthwise_shape_s(H, W, C, stride, stride, padding, activation, with_bias, scale, nans);
}

/* the 4 x 5 images above (at most DW_C channels) */
static void depthwise_case(uint32_t C, uint32_t stride, uint32_t padding, uint32_t activation, int with_bias,
                           float scale, int nans)
{
    depthwise_shape(4, 5, C, stride, padding, activation, with_bias, scale, nans);
}

/* MaxPool2D of geometry g on 4 x 5 images, ties and NaNs included (the gradient's routing must
 * match too) */
static void max_pool_geometry_case(mt_spatial g, int tiny)
{
    const uint32_t C = g.C;
    const size_t nx = (size_t)2 * g.H * g.W * g.C, ny = (size_t)2 * g.OH * g.OW * g.C;
    fill(dx_, nx, tiny == 1 ? 1e-39f : 2.0f), fill(dy_0, ny, 1.5f);
    /* ties, and NaNs of both signs and two payloads (the last NaN of a window wins, and the
     * gradient goes to the first); tiny == 1: subnormal inputs, which Helium's comparisons flush */
    for (size_t i = 0; tiny != 3 && i < nx; i += 7)
        dx_[i] = i % 21 == 0 ? ((i & 1u) ? -__builtin_nanf("0x5") : __builtin_nanf("0x9"))
                             : tiny == 1 ? 3e-39f : 1.0f;
    /* tiny == 3: none of these, every window on Helium's fast path where it has one;
     * tiny == 2: maxima that are zeros of either sign, the first of a tie kept (0 > -0 fails) */
    for (size_t i = 0; tiny == 2 && i < nx; ++i) dx_[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : -1.0f;
    /* channel 1 of the first 2 x 2 window, whose order shows: three NaNs (the last one is the
     * maximum, the first one gets the gradient), or -1, -1, +0, -0 (+0 is the maximum and its
     * tap, not -0's, the gradient's) */
    const size_t taps[4] = {1, C + 1, (size_t)g.W * C + 1, (size_t)g.W * C + C + 1};
    if (tiny == 0)
        dx_[taps[1]] = __builtin_nanf("0x21"), dx_[taps[2]] = __builtin_nanf("0x22"),
        dx_[taps[3]] = -__builtin_nanf("0x23");
    if (tiny == 2) dx_[taps[0]] = dx_[taps[1]] = -1.0f, dx_[taps[2]] = 0.0f, dx_[taps[3]] = -0.0f;
    /* dy too: NaNs (dx + dy carries the payload on the FPU, Helium makes the default NaN) and
     * subnormals (flushed by Helium's add), a few windows apart */
    for (size_t i = 5; tiny != 3 && i < ny; i += 13)
        dy_0[i] = tiny == 1 ? -2e-39f : (i & 1u) ? -__builtin_nanf("0x3") : __builtin_nanf("0x11");
    for (size_t i = 9; tiny == 0 && i < ny; i += 13) dy_0[i] = 1.3e-38f; /* see dx0_ below */
    mt_op_max_pool2d_f32_forward(dx_, dy0_, 2, &g);
#if MT_MVE_KERNELS
    mt_op_max_pool2d_f32_forward_mve(dx_, dy1_, 2, &g);
#else
    mt_op_max_pool2d_f32_forward_fast(dx_, dy1_, 2, &g);
#endif
    check(same(dy0_, dy1_, ny), "max pool forward");
    fill(dx0_, nx, 0.5f);
    /* tiny == 0: a dy of 1.3e-38 added to -1.2e-38, both normal, makes a subnormal (flushed
     * by Helium: FPSCR.UFC), where the comparisons flushed nothing */
    for (size_t i = 0; tiny == 0 && i < nx; ++i) dx0_[i] = -1.2e-38f;
    memcpy(dx1_, dx0_, nx * sizeof(float));
    mt_op_max_pool2d_f32_backward(dx_, dy0_, dy_0, dx0_, 2, &g);
#if MT_MVE_KERNELS
    mt_op_max_pool2d_f32_backward_mve(dx_, dy0_, dy_0, dx1_, 2, &g);
#else
    mt_op_max_pool2d_f32_backward_fast(dx_, dy0_, dy_0, dx1_, 2, &g);
#endif
    check(same(dx0_, dx1_, nx), "max pool backward");
}

static mt_spatial pool_geometry(uint32_t k, uint32_t stride, uint32_t C)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = 4, g.W = 5, g.C = g.OC = C, g.KH = g.KW = k, g.SH = g.SW = stride;
    return g;
}

static void max_pool_case(uint32_t k, uint32_t stride, uint32_t padding, uint32_t C, int tiny)
{
    mt_spatial g = pool_geometry(k, stride, C);
    mt_spatial_axis(g.H, g.KH, g.SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(g.W, g.KW, g.SW, padding, &g.OW, &g.PL);
    max_pool_geometry_case(g, tiny);
}

/* explicit pads (MT_PADDING_EXPLICIT): rows top, bottom and columns left, right */
static void max_pool_explicit_case(uint32_t k, uint32_t stride, const uint32_t pads[4], uint32_t C, int tiny)
{
    mt_spatial g = pool_geometry(k, stride, C);
    g.PT = pads[0], g.PL = pads[2];
    if (mt_spatial_explicit_axis(g.H, k, stride, pads[0], pads[1], &g.OH) != MT_OK ||
        mt_spatial_explicit_axis(g.W, k, stride, pads[2], pads[3], &g.OW) != MT_OK) {
        check(0, "max pool explicit geometry");
        return;
    }
    max_pool_geometry_case(g, tiny);
}

/* Conv2D shapes of the assembly paths (conv2d_fast.c; conv2d_mve.c's one-channel forward and
 * conv2d_backward_mve.c's one-channel weight gradient): one channel and 4 to 16 output
 * channels, rows of 5 to 12 pixels, every padding edge; a few NaN inputs (the fused ReLU passes
 * them; its derivative zeroes them) */
#define CV_X (2 * 8 * 8 * 8)
#define CV_Y (2 * 8 * 8 * 16)
#define CV_W (16 * 9 * 8)
static float cx[CV_X], cw[CV_W], cb[16], cy0[CV_Y], cy1[CV_Y], cdy0[CV_Y], cdy1[CV_Y];
static float cdx0[CV_X], cdx1[CV_X], cdw0[CV_W], cdw1[CV_W], cdb0[16], cdb1[16];

/* a kernel KH x 3 at strides SH (rows) and SW (columns) */
static void conv_case_k(uint32_t H, uint32_t W, uint32_t C, uint32_t OC, uint32_t KH, uint32_t SH, uint32_t SW,
                        uint32_t padding, uint32_t activation, int with_bias, float scale, int nans)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = H, g.W = W, g.C = C, g.OC = OC, g.KH = KH, g.KW = 3, g.SH = SH, g.SW = SW;
    g.activation = activation;
    mt_spatial_axis(H, KH, SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(W, 3, SW, padding, &g.OW, &g.PL);
    const uint32_t B = 2;
    const size_t nx = (size_t)B * H * W * C, ny = (size_t)B * g.OH * g.OW * OC, nw = (size_t)OC * KH * 3 * C;
    /* subnormal x: dy stays normal, so the weight gradient's products are subnormal too */
    fill(cx, nx, scale), fill(cw, nw, 1.0f), fill(cb, OC, 0.5f), fill(cdy0, ny, scale < 1e-30f ? 2.0f : scale);
    for (size_t i = 5; nans && i < nx; i += 53) cx[i] = (i & 1u) ? -__builtin_nanf("") : __builtin_nanf("");
    memcpy(cdy1, cdy0, ny * sizeof(float));
    const float *b = with_bias ? cb : NULL;
    mt_op_conv2d_f32_forward(cx, cw, b, cy0, B, &g);
#if MT_MVE_KERNELS
    mt_op_conv2d_f32_forward_mve(cx, cw, b, cy1, B, &g);
#else
    mt_op_conv2d_f32_forward_fast(cx, cw, b, cy1, B, &g);
#endif
    check(same(cy0, cy1, ny), "conv shape forward");
    const float start = scale < 1e-30f ? 0.0f : 0.5f; /* 0: tiny sums are not absorbed by the += */
    fill(cdx0, nx, start), fill(cdw0, nw, start), fill(cdb0, OC, start);
    memcpy(cdx1, cdx0, nx * sizeof(float)), memcpy(cdw1, cdw0, nw * sizeof(float));
    memcpy(cdb1, cdb0, OC * sizeof(float));
    mt_op_conv2d_f32_backward(cx, cw, cy0, cdy0, cdx0, cdw0, with_bias ? cdb0 : NULL, B, &g);
#if MT_MVE_KERNELS
    mt_op_conv2d_f32_backward_mve(cx, cw, cy0, cdy1, cdx1, cdw1, with_bias ? cdb1 : NULL, B, &g);
#else
    mt_op_conv2d_f32_backward_fast(cx, cw, cy0, cdy1, cdx1, cdw1, with_bias ? cdb1 : NULL, B, &g);
#endif
    check(same(cdy0, cdy1, ny) && same(cdx0, cdx1, nx) && same(cdw0, cdw1, nw) && same(cdb0, cdb1, OC),
          "conv shape backward");
}

static void conv_case(uint32_t H, uint32_t W, uint32_t C, uint32_t OC, uint32_t stride, uint32_t padding,
                      uint32_t activation, int with_bias, float scale, int nans)
{
    conv_case_k(H, W, C, OC, 3, stride, stride, padding, activation, with_bias, scale, nans);
}

/* a pointwise Conv2D (Dense over the pixels, the activation fused on the FPU cores) against the
 * reference; edges: x holds 6, its neighbours, -0, NaN of either sign, infinities and FLT_MAX,
 * and W picks x[p, oc mod C] exactly (the other terms are 0·x) so the sums meet them */
static void pointwise_case(uint32_t H, uint32_t W, uint32_t C, uint32_t OC, uint32_t activation, int with_bias,
                           int edges)
{
    static const float special[] = {6.0f, -6.0f, 6.0000005f, 5.9999995f, -0.0f, 0.0f, 7.0f, -1.0f,
                                    __builtin_nanf(""), -__builtin_nanf(""), 1.0f, 0.5f, __builtin_inff(),
                                    -__builtin_inff(), 3.4028235e38f, -3.4028235e38f, 1e-39f, 6.5f};
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = g.OH = H, g.W = g.OW = W, g.C = C, g.OC = OC, g.KH = g.KW = g.SH = g.SW = 1, g.activation = activation;
    const uint32_t B = 2, P = B * H * W;
    const size_t nx = (size_t)P * C, ny = (size_t)P * OC, nw = (size_t)OC * C;
    fill(cx, nx, 8.0f), fill(cw, nw, 1.0f), fill(cb, OC, 0.5f);
    for (size_t i = 0; edges && i < nx; ++i) cx[i] = special[i % (sizeof special / sizeof special[0])];
    for (uint32_t o = 0; edges && o < OC; ++o)
        for (uint32_t c = 0; c < C; ++c) cw[(size_t)o * C + c] = c == o % C ? 1.0f : 0.0f;
    if (OC > 1) cb[0] = -0.0f;
    const float *b = with_bias ? cb : NULL;
    mt_op_conv2d_f32_forward(cx, cw, b, cy0, B, &g);
    mt_pointwise_forward_selected(cx, cw, b, cy1, P, C, OC, activation);
    check(same(cy0, cy1, ny), "pointwise forward");
#if MT_MVE_KERNELS
    if (OC >= 4 && !edges) { /* conv2d.c's pointwise backward: the derivative and dbias, then Dense */
        fill(cdy0, ny, 1.0f), fill(cdx0, nx, 0.5f), fill(cdw0, nw, 0.5f), fill(cdb0, OC, 0.5f);
        memcpy(cdy1, cdy0, ny * sizeof(float)), memcpy(cdx1, cdx0, nx * sizeof(float));
        memcpy(cdw1, cdw0, nw * sizeof(float)), memcpy(cdb1, cdb0, OC * sizeof(float));
        mt_op_conv2d_f32_backward(cx, cw, cy0, cdy0, cdx0, cdw0, b ? cdb0 : NULL, B, &g);
        mt_mve_relu_bias(activation, cy0, cdy1, b ? cdb1 : NULL, P, OC);
        mt_op_dense_f32_backward_mve(cx, cw, cdy1, cdx1, cdw1, NULL, P, C, OC, 0);
        check(same(cdy0, cdy1, ny) && same(cdx0, cdx1, nx) && same(cdw0, cdw1, nw) && same(cdb0, cdb1, OC),
              "pointwise backward");
    }
#endif
}
#endif

#if MT_SCALAR_SIBLINGS
/* A gradient's += (mt_op_add_f32_accumulate: Helium, or VLDM/VSTM blocks of eight on the
 * other FPU cores) against the scalar FPU's additions, every length from 1 to 40, the element
 * past it left alone: random sums; sums that are subnormal (dx close to -dy: MVE flushes
 * them) or -0 + 0; and specials on both sides (NaNs of either sign and payload, infinities
 * that make a NaN). */
#define ACC_N 40
static void accumulate_case(void)
{
    static const float special[] = {0.0f, -0.0f, 1e-45f, -1e-39f, __builtin_nanf("0x7"), -__builtin_nanf("0x9"),
                                    __builtin_inff(), -__builtin_inff(), 3.0f, -2.5f, __builtin_nansf("0x1")};
    static float ady[ACC_N], adx0[ACC_N + 1], adx1[ACC_N + 1];
    const uint32_t ns = (uint32_t)(sizeof special / sizeof special[0]);
    for (uint32_t n = 1; n <= ACC_N; ++n)
        for (int turn = 0; turn < 3; ++turn) {
            for (uint32_t i = 0; i < n; ++i) {
                ady[i] = turn == 0 ? uniform(2.0f) : turn == 1 ? uniform(1e-37f) : special[(i * 7u + 3u) % ns];
                adx0[i] = turn == 0 ? uniform(2.0f) : turn == 1 ? -ady[i] * 0.99f : special[(i * 5u + 1u) % ns];
            }
            if (turn == 1) adx0[n / 2] = -0.0f, ady[n / 2] = 0.0f; /* -0 + 0 = +0 */
            adx0[n] = adx1[n] = -1234.5f;
            memcpy(adx1, adx0, sizeof(float) * n);
            for (uint32_t i = 0; i < n; ++i) adx0[i] += ady[i];
            mt_op_add_f32_accumulate(ady, adx1, n);
            check(same(adx0, adx1, n + 1), "gradient +=");
        }
}

/* A gradient's clear (mt_grad_clear_f32: Helium stores, or VSTM blocks of sixteen on the other
 * FPU cores), every length from 0 to 70 from two alignments: +0.0f's bits in [0, n), the
 * element past it and the one before left alone */
#define CLEAR_N 70
static void clear_case(void)
{
    static float buf[CLEAR_N + 2], zeros[CLEAR_N];
    for (uint32_t n = 0; n <= CLEAR_N; ++n)
        for (uint32_t at = 0; at < 2; ++at) {
            for (uint32_t i = 0; i < CLEAR_N + 2; ++i) buf[i] = -1234.5f;
            mt_grad_clear_f32(buf + at, n);
            check(same(buf + at, zeros, n) && buf[at + n] == -1234.5f && (at == 0 || buf[0] == -1234.5f),
                  "gradient clear");
        }
}
#endif

int main(void)
{
    mt_board_init();
#if MT_SCALAR_SIBLINGS
    static const uint32_t shapes[][3] = {{1, 1, 1}, {2, 8, 8},  {4, 16, 10}, {9, 37, 13}, {5, 3, 7},
                                         {8, 32, 4}, {1, 12, 5}, {3, 6, 3},   {16, 64, 16}, {7, 5, 11},
                                         /* B·I >= 512 (the FPU cores' sparse dW): 3 x 16 + 9, 3 x 16 + 1 and
                                          * 2 x 16 + 8 columns */
                                         {9, 57, 5}, {11, 49, 7}, {16, 40, 6}};
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 2.0f, 1.0f, 0);
        dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 3e-20f, 2e-19f, 0); /* products below 2^-126 */
        dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 1e-39f, 1.0f, 0);   /* subnormal inputs */
        dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 2.0f, 1.0f, SPIKE); /* one block's worth */
        for (int t = 0; t < 3; ++t) dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 2.0f, 1.0f, NANS + t);
        dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 2.0f, 1.0f, RELU);
        dense_case(shapes[s][0], shapes[s][1], shapes[s][2], 2.0f, 1.0f, RELU_INF);
    }
    for (int depthwise = 0; depthwise < 2; ++depthwise)
        for (uint32_t stride = 1; stride <= 2; ++stride) {
            spatial_case(depthwise, stride, MT_PADDING_SAME, 2.0f);
            spatial_case(depthwise, stride, MT_PADDING_VALID, 2.0f);
            spatial_case(depthwise, stride, MT_PADDING_SAME, 1e-39f);
        }
    for (uint32_t stride = 1; stride <= 2; ++stride)
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
            depthwise_case(DW_C, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 0);
            depthwise_case(DW_C, stride, MT_PADDING_VALID, with_bias ? MT_FUSED_RELU6 : MT_FUSED_NONE, with_bias, 2.0f, 0);
            depthwise_case(DW_C, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 1e-39f, 0);
            for (uint32_t c = 7; c <= 16; c += c == 7 ? 1 : 4) {
                depthwise_case(c, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 0);
                depthwise_case(c, stride, MT_PADDING_SAME, with_bias ? MT_FUSED_RELU6 : MT_FUSED_NONE, with_bias, 2.0f,
                               with_bias ? 2 : 1);
                depthwise_case(c, stride, MT_PADDING_VALID, MT_FUSED_RELU, with_bias, 1e-39f, 0);
            }
            depthwise_case(DW_C, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 1);
            /* rows for the Helium slides: 3 and 4 pixels (no whole turn of the weight gradient's
             * loop), odd and even counts inside, the input gradient's from 8 pixels and 7 below
             * it; at most 4 x 5 x DW_C floats an image */
            for (uint32_t wide = 3; wide <= 13; ++wide) {
                depthwise_shape(3, wide, 8, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 0);
                depthwise_shape(2, wide, 6, stride, MT_PADDING_VALID, MT_FUSED_RELU6, with_bias, 2.0f, 1);
                depthwise_shape(3, wide, 8, stride, MT_PADDING_SAME, MT_FUSED_NONE, with_bias, 1e-39f, 0);
                depthwise_shape(2, wide, 4, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 2);
            }
        }
    for (int k = 0; k < 3; ++k) { /* 16 channels on rows of 8 (the Helium input gradient's blocks) */
        depthwise_shape(3, 8, 16, 1, MT_PADDING_SAME, (uint32_t)k, k != 1, k == 1 ? 1e-39f : 2.0f, k == 0);
        depthwise_shape(3, 8, 16, 1, MT_PADDING_VALID, MT_FUSED_RELU, k != 0, k == 1 ? 1e-39f : 2.0f, k == 2 ? 2 : 0);
    }
    for (uint32_t C = 8; C <= 16; C += 8) /* the Helium blocks (8 and 16 channels) with rows two apart */
        for (int k = 0; k < 3; ++k) {
            depthwise_shape_s(5, 5, C, 2, 1, MT_PADDING_SAME, (uint32_t)k, k != 1, k == 1 ? 1e-39f : 2.0f, k == 0);
            depthwise_shape_s(5, 5, C, 2, 1, MT_PADDING_VALID, MT_FUSED_RELU, k != 0, k == 1 ? 1e-39f : 2.0f, k == 2 ? 2 : 0);
        }
    for (int tiny = 0; tiny < 3; ++tiny) /* ordinary, subnormal, signed zeros */
        for (uint32_t C = 3; C <= DW_C - 1; C += C == 3 ? 5 : 11) { /* 3, 8, 19 channels */
            max_pool_case(2, 2, MT_PADDING_VALID, C, tiny);
            max_pool_case(3, 2, MT_PADDING_SAME, C, tiny);
            max_pool_case(3, 1, MT_PADDING_SAME, C, tiny);
            /* explicit pads: ResNet's stem pool (3 x 3, stride 2, one on each side), and more
             * padding before than after (no SAME has that) */
            static const uint32_t ones[4] = {1, 1, 1, 1}, skewed[4] = {2, 0, 0, 2};
            max_pool_explicit_case(3, 2, ones, C, tiny);
            max_pool_explicit_case(3, 1, skewed, C, tiny);
        }
    for (int tiny = 0; tiny < 4; ++tiny) /* 2 x 2 at stride 2, four vectors of channels a pixel */
        max_pool_case(2, 2, MT_PADDING_VALID, 16, tiny);
    max_pool_case(2, 2, MT_PADDING_VALID, 8, 3); /* no special value: no window leaves the fast path */
    static const uint32_t convs[][7] = {/* H, W, C, OC, stride, padding, activation */
                                        {8, 8, 1, 8, 1, MT_PADDING_SAME, MT_FUSED_RELU},
                                        {7, 5, 1, 16, 1, MT_PADDING_SAME, MT_FUSED_NONE},
                                        {8, 7, 1, 8, 2, MT_PADDING_SAME, MT_FUSED_RELU},
                                        {6, 8, 1, 8, 1, MT_PADDING_VALID, MT_FUSED_RELU},
                                        {8, 8, 8, 16, 1, MT_PADDING_SAME, MT_FUSED_RELU},
                                        {5, 6, 4, 8, 1, MT_PADDING_SAME, MT_FUSED_RELU6},
                                        {7, 6, 1, 6, 1, MT_PADDING_SAME, MT_FUSED_RELU6},
                                        {3, 12, 1, 8, 1, MT_PADDING_SAME, MT_FUSED_RELU},
                                        {4, 11, 1, 12, 1, MT_PADDING_VALID, MT_FUSED_RELU6},
                                        {2, 9, 1, 4, 1, MT_PADDING_SAME, MT_FUSED_NONE},
                                        {3, 4, 1, 8, 1, MT_PADDING_SAME, MT_FUSED_RELU},    /* one block, L and R */
                                        {2, 13, 1, 5, 1, MT_PADDING_SAME, MT_FUSED_RELU6}}; /* 3 blocks, a pixel */
    for (uint32_t s = 0; s < sizeof convs / sizeof convs[0]; ++s)
        for (int k = 0; k < 3; ++k) { /* NaNs; subnormals; ordinary values (no block recomputed) */
            const uint32_t *v = convs[s];
            conv_case(v[0], v[1], v[2], v[3], v[4], v[5], v[6], k != 0, k == 1 ? 1e-39f : 2.0f, k == 0);
        }
    static const uint32_t tall[][6] = {/* H, W, OC, KH, SH, padding: one channel, SW = 1 (the one-channel
                                        * Helium paths with 5 kernel rows, and rows two apart) */
                                       {8, 7, 8, 5, 1, MT_PADDING_SAME},
                                       {7, 6, 8, 5, 2, MT_PADDING_SAME},
                                       {7, 9, 12, 3, 2, MT_PADDING_VALID},
                                       {6, 5, 8, 5, 1, MT_PADDING_VALID}};
    for (uint32_t s = 0; s < sizeof tall / sizeof tall[0]; ++s)
        for (int k = 0; k < 3; ++k) {
            const uint32_t *v = tall[s];
            conv_case_k(v[0], v[1], 1, v[2], v[3], v[4], 1, v[5], (uint32_t)k % 3u, k != 0, k == 1 ? 1e-39f : 2.0f,
                        k == 0);
        }
    static const uint32_t pointwise[][4] = {/* H, W, C, OC */ {8, 8, 8, 16}, {3, 5, 5, 7}, {2, 3, 1, 4}, {1, 7, 3, 9}};
    for (uint32_t s = 0; s < sizeof pointwise / sizeof pointwise[0]; ++s)
        for (uint32_t act = MT_FUSED_NONE; act <= MT_FUSED_RELU6; ++act)
            for (int k = 0; k < 4; ++k) {
                const uint32_t *v = pointwise[s];
                pointwise_case(v[0], v[1], v[2], v[3], act, k & 1, k >> 1);
            }
    accumulate_case();
    clear_case();
#if MT_MVE_KERNELS
    mve_elementwise_cases();
#endif
#endif
    s8_sibling_cases(check); /* every board: the int8 siblings replace the reference everywhere */
    puts_("siblings: ");
    put_u32(passed);
    puts_(" passed, ");
    put_u32(failed);
    puts_(" failed\n");
    mt_board_exit(failed ? 1 : 0);
}
