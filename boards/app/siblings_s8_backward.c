/*
 * The sibling cases of the int8 backward rows: the pointwise Conv2D's mask and input gradient
 * (ops/conv_s8.c, ops/quant_grad.h) against their references, every bit of dy and dx equal
 * (siblings.h).
 *
 * The mask: the forward's integer sums recomputed, each tested against the clamp. Random int8
 * data with random requantizations (some outputs cut, most not), and small data (|x - zx|,
 * |W| <= 3) with a requantization of exactly 1 and a clamp range a few steps wide around zy, so
 * many sums land exactly on a bound (kept) or one step past it (cut); zero points -128, 0 and
 * 127; with and without a bias; pixel counts below and above the forward's Σ W threshold.
 *
 * The DepthwiseConv2D's mask: the same kinds over window geometries (3 x 3 at strides 1 and 2 with
 * SAME padding, 5 x 5 with more padding than window on one side, 1 x 1, channels past a block
 * of 16), two samples.
 *
 * The input gradient: float sums of dy times the dequantized int8 weights, added to a dx that
 * holds values. The weight gradient (a layer trained in place): float sums of dy times the
 * dequantized int8 input, for a tile of output channels (first, rows) or all of them, added
 * to a dW that holds values.
 *
 * The kinds of data: ordinary (dy and dx uniform, W all of int8, sw ~ 2^-7); subnormal dy
 * inputs (Helium flushes them: IDC); products below 2^-126 (tiny sw and dy: sums and weights
 * flushed as results, UFC); one pixel's dy scaled into the subnormals (some blocks redo
 * theirs, the others not); a NaN of each sign and payload in dy at two pixels (never in one
 * sum: which of two NaNs a sum keeps is the compiled operand order's) and an infinity in a
 * third whose weights hold zeros (0·inf: the default NaN everywhere); dx holding a NaN, an
 * infinity, -0 and a subnormal. Shapes: whole blocks of 4 pixels by 4 channels, and every
 * remainder of either.
 */
#include <string.h>

#include "ops/spatial.h"
#include "siblings.h"

/* ---- the mask ---- */

#define MK_P 19
#define MK_C 13
#define MK_OC 11
static int8_t mx[MK_P * MK_C], mw[MK_OC * MK_C];
static int32_t mbias[MK_OC], mrq[2 * MK_OC];
static float mdy0[MK_P * MK_OC], mdy1[MK_P * MK_OC];

static uint32_t mk_state = 20261208u;

static uint32_t mk_next(void)
{
    mk_state = mk_state * 1664525u + 1013904223u;
    return mk_state >> 8;
}

static int8_t mk_clamp(int32_t v)
{
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

static uint32_t mk_byte(int32_t v)
{
    return (uint32_t)(uint8_t)(int8_t)v;
}

static void pointwise_mask_case(const mt_kernel_table *column, uint32_t P, uint32_t C, uint32_t OC, int small,
                                int32_t zx, int with_bias)
{
    const int32_t zy = small ? (int32_t)(mk_next() % 7u) - 3 : (int32_t)(mk_next() % 41u) - 20;
    const int32_t lo = small ? zy - 4 : -100, hi = small ? zy + 3 : 90;
    const uint32_t packed = mk_byte(zx) | mk_byte(zy) << 8 | mk_byte(lo) << 16 | mk_byte(hi) << 24;
    uint32_t log2k = 0;
    while ((1u << log2k) < C) ++log2k;
    for (size_t i = 0; i < (size_t)P * C; ++i)
        mx[i] = small ? mk_clamp(zx + (int32_t)(mk_next() % 7u) - 3) : (int8_t)(int32_t)(mk_next() % 256u - 128u);
    for (size_t i = 0; i < (size_t)OC * C; ++i)
        mw[i] = small ? (int8_t)((int32_t)(mk_next() % 7u) - 3) : (int8_t)(int32_t)(mk_next() % 256u - 128u);
    for (uint32_t oc = 0; oc < OC; ++oc) {
        if (small) {
            mrq[2 * oc] = 1 << 30, mrq[2 * oc + 1] = 1; /* acc · 2^30 · 2^(1 - 31) = acc */
            mbias[oc] = (int32_t)(mk_next() % 5u) - 2;
        } else {
            mrq[2 * oc] = (int32_t)((1u << 30) + mk_next() % (1u << 30)); /* [2^30, 2^31) */
            mrq[2 * oc + 1] = -(int32_t)(7 + log2k / 2) + (int32_t)(mk_next() % 3u);
            mbias[oc] = (int32_t)(mk_next() % 20001u) - 10000;
        }
    }
    mt_sib_fill(mdy0, (size_t)P * OC, 1.0f);
    mdy0[0] = -0.0f, mdy0[(size_t)P * OC - 1] = -__builtin_nanf("0x2a"); /* kept, or made +0 */
    memcpy(mdy1, mdy0, sizeof(float) * P * OC);
    const int32_t *b = with_bias ? mbias : NULL;
    mt_op_conv2d_s8_pointwise_mask_ref(mx, mw, b, mrq, mdy0, P, C, OC, packed);
    column->conv2d_s8_pointwise_mask(mx, mw, b, mrq, mdy1, P, C, OC, packed);
    mt_sib_check(mt_sib_same(mdy0, mdy1, (size_t)P * OC), "int8 pointwise Conv2D mask");
}

/* P pixels (the forward's sibling sums W once at 4 or 8 and more: both sides), C, OC */
static const uint32_t mask_shapes[][3] = {{1, 1, 1}, {3, 4, 4}, {4, 8, 5}, {8, 13, 11}, {19, 12, 8}, {17, 3, 6}};

void mt_sib_case_conv2d_s8_pointwise_mask(const mt_kernel_table *column)
{
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    for (uint32_t s = 0; s < sizeof mask_shapes / sizeof mask_shapes[0]; ++s)
        for (int small = 0; small < 2; ++small)
            for (uint32_t z = 0; z < sizeof zero_points / sizeof zero_points[0]; ++z)
                pointwise_mask_case(column, mask_shapes[s][0], mask_shapes[s][1], mask_shapes[s][2], small,
                                    zero_points[z], (int)(z & 1u));
}

/* ---- the DepthwiseConv2D's mask ---- */

#define DM_X (2 * 7 * 6 * 21)
#define DM_Y (2 * 7 * 6 * 21)
static int8_t dmx[DM_X], dmw[5 * 5 * 21];
static int32_t dmbias[21], dmrq[2 * 21];
static float dmdy0[DM_Y], dmdy1[DM_Y];

/* H, W, C, KH, KW, SH, SW, PT, PL, OH, OW */
static const uint32_t dm_shapes[][11] = {{7, 6, 5, 3, 3, 1, 1, 1, 1, 7, 6},    {7, 6, 21, 3, 3, 2, 2, 1, 1, 4, 3},
                                         {5, 4, 18, 5, 5, 1, 2, 3, 0, 5, 2},   {3, 3, 16, 1, 1, 1, 1, 0, 0, 3, 3},
                                         {6, 5, 4, 3, 3, 2, 1, 0, 1, 2, 5}};

static void depthwise_mask_case(const mt_kernel_table *column, const uint32_t *sh, int small, int32_t zx, int with_bias)
{
    mt_spatial g;
    memset(&g, 0, sizeof g);
    g.H = sh[0], g.W = sh[1], g.C = g.OC = sh[2], g.KH = sh[3], g.KW = sh[4], g.SH = sh[5], g.SW = sh[6];
    g.PT = sh[7], g.PL = sh[8], g.OH = sh[9], g.OW = sh[10];
    const uint32_t B = 2, C = g.C;
    const int32_t zy = small ? (int32_t)(mk_next() % 7u) - 3 : (int32_t)(mk_next() % 41u) - 20;
    const int32_t lo = small ? zy - 4 : -100, hi = small ? zy + 3 : 90;
    const uint32_t packed = mk_byte(zx) | mk_byte(zy) << 8 | mk_byte(lo) << 16 | mk_byte(hi) << 24;
    const size_t nx = (size_t)B * g.H * g.W * C, ny = (size_t)B * g.OH * g.OW * C;
    for (size_t i = 0; i < nx; ++i)
        dmx[i] = small ? mk_clamp(zx + (int32_t)(mk_next() % 7u) - 3) : (int8_t)(int32_t)(mk_next() % 256u - 128u);
    for (size_t i = 0; i < (size_t)g.KH * g.KW * C; ++i)
        dmw[i] = small ? (int8_t)((int32_t)(mk_next() % 7u) - 3) : (int8_t)(int32_t)(mk_next() % 256u - 128u);
    for (uint32_t c = 0; c < C; ++c) {
        if (small) {
            dmrq[2 * c] = 1 << 30, dmrq[2 * c + 1] = 1; /* the sum itself */
            dmbias[c] = (int32_t)(mk_next() % 5u) - 2;
        } else {
            dmrq[2 * c] = (int32_t)((1u << 30) + mk_next() % (1u << 30));
            dmrq[2 * c + 1] = -(int32_t)(9 + mk_next() % 3u);
            dmbias[c] = (int32_t)(mk_next() % 20001u) - 10000;
        }
    }
    mt_sib_fill(dmdy0, ny, 1.0f);
    dmdy0[0] = -0.0f, dmdy0[ny - 1] = -__builtin_nanf("0x2a");
    memcpy(dmdy1, dmdy0, sizeof(float) * ny);
    const int32_t *b = with_bias ? dmbias : NULL;
    mt_op_depthwise_conv2d_s8_mask_ref(dmx, dmw, b, dmrq, dmdy0, B, &g, packed);
    column->depthwise_conv2d_s8_mask(dmx, dmw, b, dmrq, dmdy1, B, &g, packed);
    mt_sib_check(mt_sib_same(dmdy0, dmdy1, ny), "int8 DepthwiseConv2D mask");
}

void mt_sib_case_depthwise_conv2d_s8_mask(const mt_kernel_table *column)
{
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    for (uint32_t s = 0; s < sizeof dm_shapes / sizeof dm_shapes[0]; ++s)
        for (int small = 0; small < 2; ++small)
            for (uint32_t z = 0; z < sizeof zero_points / sizeof zero_points[0]; ++z)
                depthwise_mask_case(column, dm_shapes[s], small, zero_points[z], (int)(z & 1u));
}

/* ---- the input gradient ---- */

#define DX_P 9
#define DX_C 21
#define DX_OC 19
static float dy[DX_P * DX_OC], sw[DX_OC], dx0[DX_P * DX_C], dx1[DX_P * DX_C];
static int8_t w8[DX_OC * DX_C];

static uint32_t dx_state = 20261207u;

static int8_t dx_int8(void)
{
    dx_state = dx_state * 1664525u + 1013904223u;
    return (int8_t)(int32_t)((dx_state >> 8) % 256u - 128u);
}

enum { DX_ORDINARY, DX_SUBNORMAL_DY, DX_TINY_PRODUCTS, DX_SPIKE, DX_NANS, DX_SPECIAL_DX, DX_KINDS };

static void pointwise_dx_case(const mt_kernel_table *column, uint32_t P, uint32_t C, uint32_t OC, int kind)
{
    const size_t ny = (size_t)P * OC, nx = (size_t)P * C;
    for (size_t i = 0; i < (size_t)OC * C; ++i) w8[i] = dx_int8();
    for (uint32_t oc = 0; oc < OC; ++oc) sw[oc] = 0.0078125f + mt_sib_uniform(0.004f); /* > 0, as a scale */
    mt_sib_fill(dy, ny, 1.0f);
    mt_sib_fill(dx0, nx, 0.5f);
    if (kind == DX_SUBNORMAL_DY)
        for (size_t i = 0; i < ny; ++i) dy[i] *= 1e-39f;
    if (kind == DX_TINY_PRODUCTS) {
        for (uint32_t oc = 0; oc < OC; ++oc) sw[oc] *= 1e-30f; /* weights about 1e-32 ... 1e-30 */
        for (size_t i = 0; i < ny; ++i) dy[i] *= 1e-8f;        /* terms about 1e-40: subnormal sums */
        for (size_t i = 0; i < nx; ++i) dx0[i] *= 1e-37f;
    }
    if (kind == DX_SPIKE)
        for (uint32_t oc = 0; oc < OC; ++oc) dy[(size_t)(P / 2) * OC + oc] *= 1e-39f;
    if (kind == DX_NANS) {
        dy[(size_t)(P - 1) * OC + OC / 3] = -__builtin_nanf("0x2a");
        if (P > 1) dy[(size_t)(P / 2 == P - 1 ? 0 : P / 2) * OC + OC - 1] = __builtin_nanf("0x155");
        if (P > 3) { /* pixel 1, apart from both: an infinity against a zero weight */
            dy[(size_t)OC + 0] = __builtin_inff();
            w8[0] = 0;
        }
    }
    if (kind == DX_SPECIAL_DX) {
        static const float special[] = {-__builtin_nanf("0x3"), __builtin_inff(), -0.0f, 1e-40f, -1e-45f};
        for (uint32_t k = 0; k < sizeof special / sizeof special[0]; ++k) dx0[(k * 7u) % nx] = special[k];
    }
    memcpy(dx1, dx0, nx * sizeof(float));
    mt_op_conv2d_s8_pointwise_dx_ref(dy, w8, sw, dx0, P, C, OC);
    column->conv2d_s8_pointwise_dx(dy, w8, sw, dx1, P, C, OC);
    mt_sib_check(mt_sib_same(dx0, dx1, nx), "int8 pointwise Conv2D dx");
}

/* P pixels, C input channels, OC output channels */
static const uint32_t dx_shapes[][3] = {{1, 1, 1}, {4, 4, 4}, {8, 16, 19}, {5, 7, 3}, {9, 21, 6},
                                        {3, 5, 17}, {1, 12, 8}, {6, 4, 1}};

void mt_sib_case_conv2d_s8_pointwise_dx(const mt_kernel_table *column)
{
    for (uint32_t s = 0; s < sizeof dx_shapes / sizeof dx_shapes[0]; ++s)
        for (int kind = 0; kind < DX_KINDS; ++kind)
            pointwise_dx_case(column, dx_shapes[s][0], dx_shapes[s][1], dx_shapes[s][2], kind);
}

/* ---- the weight gradient (DX_ kinds: dy's as above; the tiny products from a tiny sx) ---- */

#define DW_P 9
#define DW_C 21
#define DW_OC 19
static int8_t wx[DW_P * DW_C];
static float wdy[DW_P * DW_OC], wdw0[DW_OC * DW_C], wdw1[DW_OC * DW_C];

static void pointwise_dw_case(const mt_kernel_table *column, uint32_t P, uint32_t C, uint32_t OC, uint32_t first,
                              uint32_t rows, int kind)
{
    const size_t ny = (size_t)P * OC, nw = (size_t)rows * C;
    const int32_t zx = (int32_t)(kind * 37 % 256) - 128; /* -128, -91, ...: a different zx a kind */
    for (size_t i = 0; i < (size_t)P * C; ++i) wx[i] = dx_int8();
    float sx = 0.0078125f + mt_sib_uniform(0.004f);
    mt_sib_fill(wdy, ny, 1.0f);
    mt_sib_fill(wdw0, nw, 0.5f);
    if (kind == DX_SUBNORMAL_DY)
        for (size_t i = 0; i < ny; ++i) wdy[i] *= 1e-39f;
    if (kind == DX_TINY_PRODUCTS) {
        sx *= 1e-30f;
        for (size_t i = 0; i < ny; ++i) wdy[i] *= 1e-8f;
        for (size_t i = 0; i < nw; ++i) wdw0[i] *= 1e-37f;
    }
    if (kind == DX_SPIKE)
        for (uint32_t p = 0; p < P; ++p) wdy[(size_t)p * OC + first + rows / 2] *= 1e-39f;
    if (kind == DX_NANS) { /* in two output channels' columns (never one sum), an infinity in a third */
        wdy[(size_t)(P - 1) * OC + first] = -__builtin_nanf("0x2a");
        if (rows > 1) wdy[(size_t)(P / 2) * OC + first + rows - 1] = __builtin_nanf("0x155");
        if (rows > 2) { /* against x = zx: 0·inf */
            wdy[first + 1] = __builtin_inff();
            wx[0] = (int8_t)zx;
        }
    }
    if (kind == DX_SPECIAL_DX) {
        static const float special[] = {-__builtin_nanf("0x3"), __builtin_inff(), -0.0f, 1e-40f, -1e-45f};
        for (uint32_t k = 0; k < sizeof special / sizeof special[0]; ++k) wdw0[(k * 7u) % nw] = special[k];
    }
    memcpy(wdw1, wdw0, nw * sizeof(float));
    const uint32_t packed = (uint32_t)(uint8_t)(int8_t)zx;
    mt_op_conv2d_s8_pointwise_dw_ref(wx, wdy, wdw0, sx, packed, P, C, OC, first, rows);
    column->conv2d_s8_pointwise_dw(wx, wdy, wdw1, sx, packed, P, C, OC, first, rows);
    mt_sib_check(mt_sib_same(wdw0, wdw1, nw), "int8 pointwise Conv2D dW");
}

/* P, C, OC, first, rows: whole weights and tiles of every remainder */
static const uint32_t dw_shapes[][5] = {{1, 1, 1, 0, 1},   {4, 4, 4, 0, 4},   {8, 16, 19, 0, 19}, {5, 7, 9, 3, 5},
                                        {9, 21, 6, 0, 6},  {3, 5, 17, 8, 9},  {1, 12, 8, 4, 4},  {6, 4, 11, 10, 1}};

void mt_sib_case_conv2d_s8_pointwise_dw(const mt_kernel_table *column)
{
    for (uint32_t s = 0; s < sizeof dw_shapes / sizeof dw_shapes[0]; ++s)
        for (int kind = 0; kind < DX_KINDS; ++kind)
            pointwise_dw_case(column, dw_shapes[s][0], dw_shapes[s][1], dw_shapes[s][2], dw_shapes[s][3],
                              dw_shapes[s][4], kind);
}
