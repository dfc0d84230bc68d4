/*
 * The sibling cases of the int8 backward rows: the pointwise Conv2D's input gradient (ops/
 * conv_s8.c; float sums of dy times the dequantized int8 weights, ops/quant_grad.h) against its
 * reference, every bit of dx equal (siblings.h), added to a dx that holds values.
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

#include "siblings.h"

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
