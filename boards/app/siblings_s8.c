/*
 * The int8 half of the sibling test: the int8 Conv2D, DepthwiseConv2D (whole, and one output
 * row read from a ring of rows, as the fused expansion feeds it), pointwise and FullyConnected
 * siblings (ops/fast/conv_s8_fast.c, dense_s8_fast.c: Helium, the DSP extension or portable
 * C) beside the reference kernels, every output byte equal. The device's sibling test
 * (siblings.c) runs it on every board, the Cortex-M3 included (its adapters call these
 * siblings too), and the host's (tests/core/test_int8_siblings.c) on the host.
 *
 * Three kinds of data: all of int8 at random, requantized to spread the outputs; small
 * values (|x - zx| <= 3, |W| <= 3) with a requantization of exactly 1 (multiplier 2^30, shift
 * 1), so each output is its sum itself and one term too many or too few shows; and only the
 * extremes -128 and 127, the largest terms. Zero points include -128 and 127.
 */
#include "siblings_s8.h"

#include <string.h>

#include "ops/fast/fast.h"
#include "ops/quant.h"
#include "ops/spatial.h"

enum { S8_RANDOM, S8_SMALL, S8_EXTREME, S8_KINDS };

static uint32_t s8_state = 20261202u;

static uint32_t s8_next(void)
{
    s8_state = s8_state * 1664525u + 1013904223u;
    return s8_state >> 8;
}

/* a value of the kind around zero point z (z: 0 for weights) */
static int8_t s8_value(int kind, int32_t z)
{
    if (kind == S8_EXTREME) return (int8_t)(s8_next() & 1u ? 127 : -128);
    if (kind == S8_RANDOM) return (int8_t)(int32_t)(s8_next() % 256u - 128u);
    int32_t v = z + (int32_t)(s8_next() % 7u) - 3;
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

static void s8_fill(int8_t *v, size_t n, int kind, int32_t z)
{
    for (size_t i = 0; i < n; ++i) v[i] = s8_value(kind, z);
}

/* bias (or none, every other case) and rq for OC outputs of K terms */
static const int32_t *s8_requant(int kind, uint32_t OC, uint32_t K, int32_t *bias, int32_t *rq)
{
    uint32_t log2k = 0;
    while ((1u << log2k) < K) ++log2k;
    for (uint32_t oc = 0; oc < OC; ++oc) {
        if (kind == S8_SMALL) {
            rq[2 * oc] = 1 << 30, rq[2 * oc + 1] = 1; /* acc · 2^30 · 2^(1 - 31) = acc */
            bias[oc] = (int32_t)(s8_next() % 21u) - 10;
        } else {
            rq[2 * oc] = (int32_t)((1u << 30) + s8_next() % (1u << 30)); /* [2^30, 2^31) */
            rq[2 * oc + 1] = -(int32_t)(8 + log2k / 2 + (kind == S8_EXTREME ? 4 : 0)) + (int32_t)(s8_next() % 3u);
            bias[oc] = (int32_t)(s8_next() % 20001u) - 10000;
        }
    }
    return s8_next() & 1u ? bias : NULL;
}

/* packed params: zx, zy, and a clamp range: a ReLU6's [zy, zy + 96], else every int8 (odd zx)
 * or [-128, 100] */
static uint32_t s8_packed(int32_t zx, int32_t zy, int relu)
{
    const int32_t lo = relu ? zy : -128, hi = relu ? (zy + 96 < 127 ? zy + 96 : 127) : (zx & 1 ? 127 : 100);
    return (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8 | (uint32_t)(uint8_t)lo << 16 |
           (uint32_t)(uint8_t)hi << 24;
}

static const int32_t zero_points[] = {-128, 0, 7, 127};

#define S8_X 4096
#define S8_W 4096
#define S8_Y 4096
static int8_t x[S8_X], w[S8_W], y0[S8_Y], y1[S8_Y], ring[S8_X];
static int32_t bias[64], rq[128];

static int s8_geometry(uint32_t H, uint32_t W, uint32_t C, uint32_t OC, uint32_t KH, uint32_t KW, uint32_t SH,
                       uint32_t SW, uint32_t padding, mt_spatial *g)
{
    memset(g, 0, sizeof *g);
    g->H = H, g->W = W, g->C = C, g->OC = OC, g->KH = KH, g->KW = KW, g->SH = SH, g->SW = SW;
    return mt_spatial_axis(H, KH, SH, padding, &g->OH, &g->PT) == MT_OK &&
           mt_spatial_axis(W, KW, SW, padding, &g->OW, &g->PL) == MT_OK;
}

static void conv_cases(s8_check_fn check)
{
    static const uint32_t shapes[][9] = {/* H, W, C, OC, KH, KW, SH, SW, padding */
                                         {8, 8, 3, 8, 3, 3, 2, 2, MT_PADDING_SAME},
                                         {6, 7, 5, 7, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {5, 5, 16, 4, 1, 1, 1, 1, MT_PADDING_VALID},
                                         {7, 6, 19, 9, 1, 1, 1, 1, MT_PADDING_VALID},
                                         {9, 9, 2, 5, 5, 5, 2, 1, MT_PADDING_SAME},
                                         {4, 4, 1, 1, 2, 2, 1, 1, MT_PADDING_VALID},
                                         {3, 5, 33, 6, 3, 1, 1, 2, MT_PADDING_SAME},
                                         {2, 2, 3, 4, 5, 5, 1, 1, MT_PADDING_SAME},
                                         {6, 6, 4, 6, 3, 3, 3, 3, MT_PADDING_SAME},
                                         {3, 3, 40, 3, 3, 3, 1, 1, MT_PADDING_VALID},
                                         /* one channel (the digits CNN's first layer): windows
                                          * copied across output rows, 16 a row on Helium */
                                         {8, 8, 1, 16, 3, 3, 1, 1, MT_PADDING_SAME},
                                         /* K = 18: 28 windows a batch, ending mid-row */
                                         {5, 7, 2, 6, 3, 3, 1, 1, MT_PADDING_SAME},
                                         /* Helium gathers windows of K <= 16 (12, 16) within 256
                                          * bytes; past them (2·130 + 3) it copies them */
                                         {7, 6, 2, 5, 2, 3, 2, 2, MT_PADDING_SAME},
                                         {5, 5, 4, 3, 2, 2, 1, 1, MT_PADDING_SAME},
                                         {3, 130, 1, 2, 3, 3, 1, 1, MT_PADDING_SAME},
                                         /* windows past MT_S8_WINDOW_BYTES (conv_s8_fast.c): by kernel rows */
                                         {4, 5, 60, 5, 3, 3, 1, 2, MT_PADDING_SAME}};
    const uint32_t B = 2;
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            const uint32_t *v = shapes[s];
            mt_spatial g;
            if (!s8_geometry(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], &g)) {
                check(0, "int8 conv geometry");
                continue;
            }
            const uint32_t K = g.KH * g.KW * g.C, zx = (uint32_t)zero_points[(s + (uint32_t)kind) % 4];
            const size_t nx = (size_t)B * g.H * g.W * g.C, ny = (size_t)B * g.OH * g.OW * g.OC;
            s8_fill(x, nx, kind, (int32_t)zx), s8_fill(w, (size_t)g.OC * K, kind == S8_SMALL ? S8_SMALL : kind, 0);
            const int32_t *b = s8_requant(kind, g.OC, K, bias, rq);
            const uint32_t packed = s8_packed((int32_t)zx, (int32_t)(s8_next() % 41u) - 20, (int)(s & 1u));
            memset(y0, 0x55, ny), memset(y1, 0x2a, ny);
            mt_op_conv2d_s8_forward(x, w, b, rq, y0, B, &g, packed);
            mt_op_conv2d_s8_forward_fast(x, w, b, rq, y1, B, &g, packed);
            check(memcmp(y0, y1, ny) == 0, "int8 Conv2D");
            if (g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1) { /* the fused expansion's kernel */
                memset(y1, 0x2a, ny);
                mt_op_conv2d_s8_pointwise_fast(x, w, b, rq, y1, B * g.H * g.W, g.C, g.OC, packed);
                check(memcmp(y0, y1, ny) == 0, "int8 pointwise Conv2D");
            }
        }
}

static void depthwise_cases(s8_check_fn check)
{
    static const uint32_t shapes[][8] = {/* H, W, C, KH, KW, SH, SW, padding */
                                         {8, 8, 8, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {7, 9, 19, 3, 3, 2, 2, MT_PADDING_SAME},
                                         {5, 6, 3, 3, 3, 1, 1, MT_PADDING_VALID},
                                         {6, 5, 17, 5, 5, 1, 2, MT_PADDING_SAME},
                                         {4, 4, 1, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {9, 9, 4, 3, 3, 2, 2, MT_PADDING_VALID},
                                         {3, 4, 6, 3, 2, 3, 1, MT_PADDING_SAME}};
    const uint32_t B = 2;
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            const uint32_t *v = shapes[s];
            mt_spatial g;
            if (!s8_geometry(v[0], v[1], v[2], v[2], v[3], v[4], v[5], v[6], v[7], &g)) {
                check(0, "int8 depthwise geometry");
                continue;
            }
            const int32_t zx = zero_points[(s + (uint32_t)kind + 1u) % 4];
            const size_t row = (size_t)g.W * g.C, nx = (size_t)B * g.H * row, ny = (size_t)B * g.OH * g.OW * g.C;
            s8_fill(x, nx, kind, zx), s8_fill(w, (size_t)g.KH * g.KW * g.C, kind, 0);
            const int32_t *b = s8_requant(kind, g.C, g.KH * g.KW, bias, rq);
            const uint32_t packed = s8_packed(zx, (int32_t)(s8_next() % 41u) - 20, (int)(s & 1u));
            memset(y0, 0x55, ny), memset(y1, 0x2a, ny);
            mt_op_depthwise_conv2d_s8_forward(x, w, b, rq, y0, B, &g, packed);
            mt_op_depthwise_conv2d_s8_forward_fast(x, w, b, rq, y1, B, &g, packed);
            check(memcmp(y0, y1, ny) == 0, "int8 DepthwiseConv2D");
            /* sample 1's rows through a ring of KH slots, filled as the fused expansion fills it:
             * row r in slot r mod KH, each row once, before the first output row that reads it */
            const int8_t *x1 = x + (size_t)g.H * row;
            const size_t out_row = (size_t)g.OW * g.C;
            memset(y1, 0x2a, ny);
            uint32_t next = 0;
            for (uint32_t oh = 0; oh < g.OH; ++oh) {
                for (; (int64_t)next <= (int64_t)oh * g.SH - g.PT + g.KH - 1 && next < g.H; ++next)
                    memcpy(ring + (size_t)(next % g.KH) * row, x1 + (size_t)next * row, row);
                mt_op_depthwise_conv2d_s8_row_fast(ring, g.KH, w, b, rq, y1 + oh * out_row, oh, &g, packed);
            }
            check(memcmp(y0 + (size_t)g.OH * out_row, y1, (size_t)g.OH * out_row) == 0,
                  "int8 DepthwiseConv2D rows from a ring");
        }
}

static void dense_cases(s8_check_fn check)
{
    static const uint32_t shapes[][3] = {/* B, D, U */ {1, 1, 1}, {2, 7, 3}, {3, 16, 4}, {2, 33, 9}, {1, 100, 10},
                                         {4, 5, 17}, {2, 64, 2},
                                         {5, 9, 6}, {17, 20, 8}};
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            const uint32_t B = shapes[s][0], D = shapes[s][1], U = shapes[s][2];
            const int32_t zx = zero_points[(s + (uint32_t)kind + 2u) % 4];
            s8_fill(x, (size_t)B * D, kind, zx), s8_fill(w, (size_t)U * D, kind, 0);
            const int32_t *b = s8_requant(kind, U, D, bias, rq);
            const uint32_t packed = s8_packed(zx, (int32_t)(s8_next() % 41u) - 20, (int)(s & 1u));
            memset(y0, 0x55, (size_t)B * U), memset(y1, 0x2a, (size_t)B * U);
            mt_op_dense_s8_forward(x, w, b, rq, y0, B, D, U, packed);
            mt_op_dense_s8_forward_fast(x, w, b, rq, y1, B, D, U, packed);
            check(memcmp(y0, y1, (size_t)B * U) == 0, "int8 FullyConnected");
        }
}

static s8_check_fn s8_report;
static unsigned s8_checks;

static void s8_count(int ok, const char *what)
{
    ++s8_checks;
    s8_report(ok, what);
}

unsigned s8_sibling_cases(s8_check_fn check)
{
    s8_report = check, s8_checks = 0;
    conv_cases(s8_count);
    depthwise_cases(s8_count);
    dense_cases(s8_count);
    return s8_checks;
}
