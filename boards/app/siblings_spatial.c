/*
 * The sibling cases of Conv2D, DepthwiseConv2D and MaxPool2D, forward and backward: each row's
 * kernel in a column against the row's reference, bit for bit (siblings.h), on the shapes of
 * the optimized paths (the FPU cores' assembly, Helium's blocks, slides and naked loops), with
 * ordinary data, subnormals and NaNs. A backward case computes its y with the reference.
 */
#include <stdint.h>
#include <string.h>

#include "ops/spatial.h"
#include "siblings.h"

enum { FORWARD, BACKWARD };

#define SP_X (2 * 7 * 6 * 5)
#define SP_W (6 * 3 * 3 * 5)
#define SP_Y (2 * 7 * 6 * 6)
static float sx[SP_X], sw[SP_W], sb[6], sy0[SP_Y], sy1[SP_Y], sdy0[SP_Y], sdy1[SP_Y];
static float sdx0[SP_X], sdx1[SP_X], sdw0[SP_W], sdw1[SP_W], sdb0[6], sdb1[6];

/* a 7 x 6 image of 5 channels, 3 x 3, a fused ReLU */
static void spatial_case(const mt_kernel_table *column, int pass, int depthwise, uint32_t stride, uint32_t padding,
                         float scale)
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
    mt_sib_fill(sx, nx, scale), mt_sib_fill(sw, nw, 1.0f), mt_sib_fill(sb, g.OC, 0.5f), mt_sib_fill(sdy0, ny, scale);
    memcpy(sdy1, sdy0, ny * sizeof(float));
    if (depthwise) mt_op_depthwise_conv2d_f32_forward_ref(sx, sw, sb, sy0, B, &g);
    else mt_op_conv2d_f32_forward_ref(sx, sw, sb, sy0, B, &g);
    if (pass == FORWARD) {
        if (depthwise) column->depthwise_conv2d_f32_forward(sx, sw, sb, sy1, B, &g);
        else column->conv2d_f32_forward(sx, sw, sb, sy1, B, &g);
        mt_sib_check(mt_sib_same(sy0, sy1, ny), depthwise ? "depthwise forward" : "conv forward");
        return;
    }
    mt_sib_fill(sdx0, nx, 0.5f), mt_sib_fill(sdw0, nw, 0.5f), mt_sib_fill(sdb0, g.OC, 0.5f);
    memcpy(sdx1, sdx0, nx * sizeof(float)), memcpy(sdw1, sdw0, nw * sizeof(float));
    memcpy(sdb1, sdb0, g.OC * sizeof(float));
    if (depthwise) {
        mt_op_depthwise_conv2d_f32_backward_ref(sx, sw, sy0, sdy0, sdx0, sdw0, sdb0, B, &g);
        column->depthwise_conv2d_f32_backward(sx, sw, sy0, sdy1, sdx1, sdw1, sdb1, B, &g);
    } else {
        mt_op_conv2d_f32_backward_ref(sx, sw, sy0, sdy0, sdx0, sdw0, sdb0, B, &g);
        column->conv2d_f32_backward(sx, sw, sy0, sdy1, sdx1, sdw1, sdb1, B, &g);
    }
    mt_sib_check(mt_sib_same(sdy0, sdy1, ny) && mt_sib_same(sdx0, sdx1, nx) && mt_sib_same(sdw0, sdw1, nw) &&
                     mt_sib_same(sdb0, sdb1, g.OC),
                 depthwise ? "depthwise backward" : "conv backward");
}

static void spatial_cases(const mt_kernel_table *column, int pass, int depthwise)
{
    for (uint32_t stride = 1; stride <= 2; ++stride) {
        spatial_case(column, pass, depthwise, stride, MT_PADDING_SAME, 2.0f);
        spatial_case(column, pass, depthwise, stride, MT_PADDING_VALID, 2.0f);
        spatial_case(column, pass, depthwise, stride, MT_PADDING_SAME, 1e-39f);
    }
}

/* DepthwiseConv2D with C <= 20 channels (20: two 8-channel blocks in assembly on the FPU cores
 * and 4 more; on the M55 a 16-channel block and a 4-channel one, 8 and 12 its other block
 * shapes, 7 a last vector that overlaps the one before). Tiny scale: x near the subnormals, dy
 * ordinary but for every third channel's, subnormal (dW's products and those channels' dbias
 * sums are subnormal), the gradients from 0 where a flushed sum shows. nans: NaNs of both signs
 * in x (1) or in dy (2), each in another channel: two NaNs that meet in one sum give the bits
 * of whichever the compiled code takes as the first operand, which C leaves to the compiler.
 * Scale DW_UNDER: x, W and dy normal (about 1e-20, 1e-19, 1e-20) and every product subnormal,
 * the gradients from 0: results that underflow with no subnormal operand (on Helium, FPSCR's
 * UFC without IDC). */
#define DW_C 20
#define DW_UNDER 1e-20f
#define DW_X (2 * 4 * 5 * DW_C)
static float dx_[DW_X], dy0_[DW_X], dy1_[DW_X], dy_0[DW_X], dy_1[DW_X], dx0_[DW_X], dx1_[DW_X];
static float dww[9 * DW_C], dwb[DW_C], dw0_[9 * DW_C], dw1_[9 * DW_C], db0_[DW_C], db1_[DW_C];

/* rows SH apart, columns SW apart */
static void depthwise_shape_s(const mt_kernel_table *column, int pass, uint32_t H, uint32_t W, uint32_t C, uint32_t SH,
                              uint32_t SW, uint32_t padding, uint32_t activation, int with_bias, float scale, int nans)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = H, g.W = W, g.C = g.OC = C, g.KH = g.KW = 3, g.SH = SH, g.SW = SW, g.activation = activation;
    mt_spatial_axis(g.H, g.KH, g.SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(g.W, g.KW, g.SW, padding, &g.OW, &g.PL);
    const size_t nx = (size_t)2 * g.H * g.W * C, ny = (size_t)2 * g.OH * g.OW * C, nw = 9 * (size_t)C;
    const float *b = with_bias ? dwb : NULL;
    const int tiny = scale < 1e-30f, under = scale == DW_UNDER;
    mt_sib_fill(dx_, nx, scale), mt_sib_fill(dww, nw, under ? 1e-19f : 1.0f), mt_sib_fill(dwb, C, 0.5f);
    mt_sib_fill(dy_0, ny, tiny ? 2.0f : scale);
    for (size_t i = 0; tiny && i < ny; ++i) dy_0[i] *= i % C % 3 ? 1.0f : 1e-39f;
    for (size_t i = 3; nans == 1 && i < nx; i += 61) dx_[i] = (i & 1u) ? -__builtin_nanf("0x7") : __builtin_nanf("");
    for (size_t i = 10; nans == 2 && i < ny; i += 47) dy_0[i] = (i & 1u) ? __builtin_nanf("0x3") : -__builtin_nanf("");
    memcpy(dy_1, dy_0, ny * sizeof(float));
    mt_op_depthwise_conv2d_f32_forward_ref(dx_, dww, b, dy0_, 2, &g);
    if (pass == FORWARD) {
        column->depthwise_conv2d_f32_forward(dx_, dww, b, dy1_, 2, &g);
        mt_sib_check(mt_sib_same(dy0_, dy1_, ny), "depthwise forward, C channels");
        return;
    }
    const float start = tiny || under ? 0.0f : 0.5f; /* 0: tiny sums are not absorbed by the += */
    mt_sib_fill(dx0_, nx, start), mt_sib_fill(dw0_, nw, start), mt_sib_fill(db0_, C, start);
    memcpy(dx1_, dx0_, nx * sizeof(float)), memcpy(dw1_, dw0_, nw * sizeof(float)), memcpy(db1_, db0_, sizeof db0_);
    mt_op_depthwise_conv2d_f32_backward_ref(dx_, dww, dy0_, dy_0, dx0_, dw0_, with_bias ? db0_ : NULL, 2, &g);
    column->depthwise_conv2d_f32_backward(dx_, dww, dy0_, dy_1, dx1_, dw1_, with_bias ? db1_ : NULL, 2, &g);
    mt_sib_check(mt_sib_same(dy_0, dy_1, ny) && mt_sib_same(dx0_, dx1_, nx) && mt_sib_same(dw0_, dw1_, nw) &&
                     mt_sib_same(db0_, db1_, C),
                 "depthwise backward, C channels");
}

static void depthwise_shape(const mt_kernel_table *column, int pass, uint32_t H, uint32_t W, uint32_t C,
                            uint32_t stride, uint32_t padding, uint32_t activation, int with_bias, float scale, int nans)
{
    depthwise_shape_s(column, pass, H, W, C, stride, stride, padding, activation, with_bias, scale, nans);
}

/* the 4 x 5 images above (at most DW_C channels) */
static void depthwise_case(const mt_kernel_table *column, int pass, uint32_t C, uint32_t stride, uint32_t padding,
                           uint32_t activation, int with_bias, float scale, int nans)
{
    depthwise_shape(column, pass, 4, 5, C, stride, padding, activation, with_bias, scale, nans);
}

static void depthwise_cases(const mt_kernel_table *column, int pass)
{
    spatial_cases(column, pass, 1);
    for (uint32_t stride = 1; stride <= 2; ++stride)
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
            const uint32_t relu6_or_none = with_bias ? MT_FUSED_RELU6 : MT_FUSED_NONE;
            depthwise_case(column, pass, DW_C, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 0);
            depthwise_case(column, pass, DW_C, stride, MT_PADDING_VALID, relu6_or_none, with_bias, 2.0f, 0);
            depthwise_case(column, pass, DW_C, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 1e-39f, 0);
            for (uint32_t c = 7; c <= 16; c += c == 7 ? 1 : 4) {
                depthwise_case(column, pass, c, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 0);
                depthwise_case(column, pass, c, stride, MT_PADDING_SAME, relu6_or_none, with_bias, 2.0f,
                               with_bias ? 2 : 1);
                depthwise_case(column, pass, c, stride, MT_PADDING_VALID, MT_FUSED_RELU, with_bias, 1e-39f, 0);
            }
            depthwise_case(column, pass, DW_C, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 1);
            /* rows for the Helium slides: 3 and 4 pixels (no whole turn of the weight gradient's
             * loop), odd and even counts inside, the input gradient's from 8 pixels and 7 below
             * it; at most 4 x 5 x DW_C floats an image */
            for (uint32_t wide = 3; wide <= 13; ++wide) {
                depthwise_shape(column, pass, 3, wide, 8, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 0);
                depthwise_shape(column, pass, 2, wide, 6, stride, MT_PADDING_VALID, MT_FUSED_RELU6, with_bias, 2.0f, 1);
                depthwise_shape(column, pass, 3, wide, 8, stride, MT_PADDING_SAME, MT_FUSED_NONE, with_bias, 1e-39f, 0);
                depthwise_shape(column, pass, 2, wide, 4, stride, MT_PADDING_SAME, MT_FUSED_RELU, with_bias, 2.0f, 2);
            }
        }
    for (int a = 0; a < 3; ++a) { /* 16 channels on rows of 8 (the Helium input gradient's blocks) */
        const float scale = a == 1 ? 1e-39f : 2.0f;
        depthwise_shape(column, pass, 3, 8, 16, 1, MT_PADDING_SAME, (uint32_t)a, a != 1, scale, a == 0);
        depthwise_shape(column, pass, 3, 8, 16, 1, MT_PADDING_VALID, MT_FUSED_RELU, a != 0, scale, a == 2 ? 2 : 0);
    }
    for (uint32_t C = 8; C <= 16; C += 8) /* the Helium blocks (8 and 16 channels) with rows two apart */
        for (int a = 0; a < 3; ++a) {
            const float scale = a == 1 ? 1e-39f : 2.0f;
            depthwise_shape_s(column, pass, 5, 5, C, 2, 1, MT_PADDING_SAME, (uint32_t)a, a != 1, scale, a == 0);
            depthwise_shape_s(column, pass, 5, 5, C, 2, 1, MT_PADDING_VALID, MT_FUSED_RELU, a != 0, scale,
                              a == 2 ? 2 : 0);
        }
    for (uint32_t C = 8; C <= 16; C += 8) /* the Helium blocks, their results underflowing */
        depthwise_shape(column, pass, 3, 8, C, 1, MT_PADDING_SAME, MT_FUSED_NONE, 0, DW_UNDER, 0);
}

void mt_sib_case_depthwise_conv2d_f32_forward(const mt_kernel_table *column)
{
    depthwise_cases(column, FORWARD);
}

void mt_sib_case_depthwise_conv2d_f32_backward(const mt_kernel_table *column)
{
    depthwise_cases(column, BACKWARD);
}

/* MaxPool2D of geometry g on 4 x 5 images, ties and NaNs included (the gradient's routing must
 * match too) */
static void max_pool_geometry_case(const mt_kernel_table *column, int pass, mt_spatial g, int tiny)
{
    const uint32_t C = g.C;
    const size_t nx = (size_t)2 * g.H * g.W * g.C, ny = (size_t)2 * g.OH * g.OW * g.C;
    mt_sib_fill(dx_, nx, tiny == 1 ? 1e-39f : 2.0f), mt_sib_fill(dy_0, ny, 1.5f);
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
    mt_op_max_pool2d_f32_forward_ref(dx_, dy0_, 2, &g);
    if (pass == FORWARD) {
        column->max_pool2d_f32_forward(dx_, dy1_, 2, &g);
        mt_sib_check(mt_sib_same(dy0_, dy1_, ny), "max pool forward");
        return;
    }
    mt_sib_fill(dx0_, nx, 0.5f);
    /* tiny == 0: a dy of 1.3e-38 added to -1.2e-38, both normal, makes a subnormal (flushed
     * by Helium: FPSCR.UFC), where the comparisons flushed nothing */
    for (size_t i = 0; tiny == 0 && i < nx; ++i) dx0_[i] = -1.2e-38f;
    memcpy(dx1_, dx0_, nx * sizeof(float));
    mt_op_max_pool2d_f32_backward_ref(dx_, dy0_, dy_0, dx0_, 2, &g);
    column->max_pool2d_f32_backward(dx_, dy0_, dy_0, dx1_, 2, &g);
    mt_sib_check(mt_sib_same(dx0_, dx1_, nx), "max pool backward");
}

static mt_spatial pool_geometry(uint32_t K, uint32_t stride, uint32_t C)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = 4, g.W = 5, g.C = g.OC = C, g.KH = g.KW = K, g.SH = g.SW = stride;
    return g;
}

static void max_pool_case(const mt_kernel_table *column, int pass, uint32_t K, uint32_t stride, uint32_t padding,
                          uint32_t C, int tiny)
{
    mt_spatial g = pool_geometry(K, stride, C);
    mt_spatial_axis(g.H, g.KH, g.SH, padding, &g.OH, &g.PT);
    mt_spatial_axis(g.W, g.KW, g.SW, padding, &g.OW, &g.PL);
    max_pool_geometry_case(column, pass, g, tiny);
}

/* explicit pads (MT_PADDING_EXPLICIT): rows top, bottom and columns left, right */
static void max_pool_explicit_case(const mt_kernel_table *column, int pass, uint32_t K, uint32_t stride,
                                   const uint32_t pads[4], uint32_t C, int tiny)
{
    mt_spatial g = pool_geometry(K, stride, C);
    g.PT = pads[0], g.PL = pads[2];
    if (mt_spatial_explicit_axis(g.H, K, stride, pads[0], pads[1], &g.OH) != MT_OK ||
        mt_spatial_explicit_axis(g.W, K, stride, pads[2], pads[3], &g.OW) != MT_OK) {
        mt_sib_check(0, "max pool explicit geometry");
        return;
    }
    max_pool_geometry_case(column, pass, g, tiny);
}

static void max_pool_cases(const mt_kernel_table *column, int pass)
{
    for (int tiny = 0; tiny < 3; ++tiny) /* ordinary, subnormal, signed zeros */
        for (uint32_t C = 3; C <= DW_C - 1; C += C == 3 ? 5 : 11) { /* 3, 8, 19 channels */
            max_pool_case(column, pass, 2, 2, MT_PADDING_VALID, C, tiny);
            max_pool_case(column, pass, 3, 2, MT_PADDING_SAME, C, tiny);
            max_pool_case(column, pass, 3, 1, MT_PADDING_SAME, C, tiny);
            /* explicit pads: ResNet's stem pool (3 x 3, stride 2, one on each side), and more
             * padding before than after (no SAME has that) */
            static const uint32_t ones[4] = {1, 1, 1, 1}, skewed[4] = {2, 0, 0, 2};
            max_pool_explicit_case(column, pass, 3, 2, ones, C, tiny);
            max_pool_explicit_case(column, pass, 3, 1, skewed, C, tiny);
        }
    for (int tiny = 0; tiny < 4; ++tiny) /* 2 x 2 at stride 2, four vectors of channels a pixel */
        max_pool_case(column, pass, 2, 2, MT_PADDING_VALID, 16, tiny);
    max_pool_case(column, pass, 2, 2, MT_PADDING_VALID, 8, 3); /* no special value: no window leaves the fast path */
}

void mt_sib_case_max_pool2d_f32_forward(const mt_kernel_table *column)
{
    max_pool_cases(column, FORWARD);
}

void mt_sib_case_max_pool2d_f32_backward(const mt_kernel_table *column)
{
    max_pool_cases(column, BACKWARD);
}

/* Conv2D shapes of the assembly paths (the FPU cores' conv2d_dsp.h; conv2d_mve.c's one-channel
 * forward and conv2d_backward_mve.c's one-channel weight gradient): one channel and 4 to 16
 * output channels, rows of 5 to 12 pixels, every padding edge; a few NaN inputs (the fused ReLU
 * passes them; its derivative zeroes them) */
#define CV_X (2 * 8 * 8 * 8)
#define CV_Y (2 * 8 * 8 * 16)
#define CV_W (16 * 9 * 8)
static float cx[CV_X], cw[CV_W], cb[16], cy0[CV_Y], cy1[CV_Y], cdy0[CV_Y], cdy1[CV_Y];
static float cdx0[CV_X], cdx1[CV_X], cdw0[CV_W], cdw1[CV_W], cdb0[16], cdb1[16];

/* a kernel KH x 3 at strides SH (rows) and SW (columns) */
static void conv_case_k(const mt_kernel_table *column, int pass, uint32_t H, uint32_t W, uint32_t C, uint32_t OC,
                        uint32_t KH, uint32_t SH, uint32_t SW, uint32_t padding, uint32_t activation, int with_bias,
                        float scale, int nans)
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
    mt_sib_fill(cx, nx, scale), mt_sib_fill(cw, nw, 1.0f), mt_sib_fill(cb, OC, 0.5f);
    mt_sib_fill(cdy0, ny, scale < 1e-30f ? 2.0f : scale);
    for (size_t i = 5; nans && i < nx; i += 53) cx[i] = (i & 1u) ? -__builtin_nanf("") : __builtin_nanf("");
    memcpy(cdy1, cdy0, ny * sizeof(float));
    const float *b = with_bias ? cb : NULL;
    mt_op_conv2d_f32_forward_ref(cx, cw, b, cy0, B, &g);
    if (pass == FORWARD) {
        column->conv2d_f32_forward(cx, cw, b, cy1, B, &g);
        mt_sib_check(mt_sib_same(cy0, cy1, ny), "conv shape forward");
        return;
    }
    const float start = scale < 1e-30f ? 0.0f : 0.5f; /* 0: tiny sums are not absorbed by the += */
    mt_sib_fill(cdx0, nx, start), mt_sib_fill(cdw0, nw, start), mt_sib_fill(cdb0, OC, start);
    memcpy(cdx1, cdx0, nx * sizeof(float)), memcpy(cdw1, cdw0, nw * sizeof(float));
    memcpy(cdb1, cdb0, OC * sizeof(float));
    mt_op_conv2d_f32_backward_ref(cx, cw, cy0, cdy0, cdx0, cdw0, with_bias ? cdb0 : NULL, B, &g);
    column->conv2d_f32_backward(cx, cw, cy0, cdy1, cdx1, cdw1, with_bias ? cdb1 : NULL, B, &g);
    mt_sib_check(mt_sib_same(cdy0, cdy1, ny) && mt_sib_same(cdx0, cdx1, nx) && mt_sib_same(cdw0, cdw1, nw) &&
                     mt_sib_same(cdb0, cdb1, OC),
                 "conv shape backward");
}

static void conv_cases(const mt_kernel_table *column, int pass)
{
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
    static const uint32_t tall[][6] = {/* H, W, OC, KH, SH, padding: one channel, SW = 1 (the one-channel
                                        * Helium paths with 5 kernel rows, and rows two apart) */
                                       {8, 7, 8, 5, 1, MT_PADDING_SAME},
                                       {7, 6, 8, 5, 2, MT_PADDING_SAME},
                                       {7, 9, 12, 3, 2, MT_PADDING_VALID},
                                       {6, 5, 8, 5, 1, MT_PADDING_VALID}};
    spatial_cases(column, pass, 0);
    for (uint32_t s = 0; s < sizeof convs / sizeof convs[0]; ++s)
        for (int a = 0; a < 3; ++a) { /* NaNs; subnormals; ordinary values (no block recomputed) */
            const uint32_t *v = convs[s];
            conv_case_k(column, pass, v[0], v[1], v[2], v[3], 3, v[4], v[4], v[5], v[6], a != 0, a == 1 ? 1e-39f : 2.0f,
                        a == 0);
        }
    for (uint32_t s = 0; s < sizeof tall / sizeof tall[0]; ++s)
        for (int a = 0; a < 3; ++a) {
            const uint32_t *v = tall[s];
            conv_case_k(column, pass, v[0], v[1], 1, v[2], v[3], v[4], 1, v[5], (uint32_t)a % 3u, a != 0,
                        a == 1 ? 1e-39f : 2.0f, a == 0);
        }
}

void mt_sib_case_conv2d_f32_forward(const mt_kernel_table *column)
{
    conv_cases(column, FORWARD);
}

void mt_sib_case_conv2d_f32_backward(const mt_kernel_table *column)
{
    conv_cases(column, BACKWARD);
}
