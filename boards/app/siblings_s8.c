/*
 * The sibling cases of the int8 rows: Conv2D, DepthwiseConv2D (whole, and one output row read
 * from a ring of rows, as the fused expansion feeds it), the pointwise Conv2D and
 * FullyConnected (the portable siblings, ops/portable/<src>_portable.c, whose products are
 * Helium, the DSP extension's or C: s8_dot.h) beside the reference kernels, every output byte
 * equal (siblings.h). Every column names these siblings, the Cortex-M3's included, so every
 * board runs them, and the host at each of its x86 levels (tests/core/test_int8_siblings.c).
 *
 * Three kinds of data: all of int8 at random, requantized to spread the outputs; small
 * values (|x - zx| <= 3, |W| <= 3) with a requantization of exactly 1 (multiplier 2^30, shift
 * 1), so each output is its sum itself and one term too many or too few shows; and only the
 * extremes -128 and 127, the largest terms. Zero points include -128 and 127.
 *
 * The int8 Add's and Mean's siblings against their references too. And the requantization of
 * whole runs each build takes (s8_dot.h's mt_s8_requant_block: portable, the DSP cores',
 * Helium's, AVX2's) against mt_q_requantize output by output, at and beside every rounding tie
 * and on random constants, where the kernels' cases meet few ties; FullyConnected's (which
 * scales in double, as LiteRT's reference does) against C's double arithmetic
 * (siblings_s8_fc.c).
 */
#include <string.h>

#include "ops/portable/s8_dot.h"
#include "ops/quant.h"
#include "ops/spatial.h"
#include "siblings.h"
#include "siblings_s8_fc.h"

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

/* bias (or none, every other case) and FullyConnected's rq for U units of D terms: E's binary64
 * bits (siblings_s8_fc.h). The small kind: E = 1 (each output its sum itself) on even units,
 * 1/2 on odd ones (every odd sum a tie); else E = f·2^-(8 + log2(D)/2 (+ 4 for the extremes))
 * (0..2 less), f = 1/2 on odd units (ties) and a random 48-bit fraction in [1/2, 1) on even. */
static const int32_t *s8_fc_requant(int kind, uint32_t U, uint32_t D, int32_t *bias, int32_t *rq)
{
    uint32_t log2d = 0;
    while ((1u << log2d) < D) ++log2d;
    for (uint32_t u = 0; u < U; ++u) {
        double e;
        if (kind == S8_SMALL) {
            e = u & 1u ? 0.5 : 1.0;
            bias[u] = (int32_t)(s8_next() % 21u) - 10;
        } else {
            const uint32_t j = 8u + log2d / 2u + (kind == S8_EXTREME ? 4u : 0u) - s8_next() % 3u;
            const double fraction = (double)((uint64_t)s8_next() << 24 | s8_next()) / 281474976710656.0; /* 2^48 */
            e = (u & 1u ? 0.5 : 0.5 + fraction / 2.0) / (double)(1u << j);
            bias[u] = (int32_t)(s8_next() % 20001u) - 10000;
        }
        s8_fc_words(e, rq + 2 * u);
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
/* the row kernels' constants kept across a layer's rows (kernels.def's consts), 64 channels */
static uint32_t consts[MT_S8_CONSTS_BYTES(64u, MT_S8_DEPTHWISE_GROUP) / 4u];

/* The geometry of a row of a shape table: H, W, C, OC, KH, KW, SH, SW, padding (a depthwise
 * table has no OC column: OC is C). A row whose geometry the core refuses is a failed check
 * named `what` (the tables hold none). */
static int s8_geometry(const uint32_t *v, int depthwise, s8_check_fn check, const char *what, mt_spatial *g)
{
    const uint32_t *k = v + (depthwise ? 3 : 4); /* KH, KW, SH, SW, padding */
    memset(g, 0, sizeof *g);
    g->H = v[0], g->W = v[1], g->C = v[2], g->OC = depthwise ? v[2] : v[3];
    g->KH = k[0], g->KW = k[1], g->SH = k[2], g->SW = k[3];
    if (mt_spatial_axis(g->H, g->KH, g->SH, k[4], &g->OH, &g->PT) == MT_OK &&
        mt_spatial_axis(g->W, g->KW, g->SW, k[4], &g->OW, &g->PL) == MT_OK)
        return 1;
    check(0, what);
    return 0;
}

/* Conv2D (pointwise 0) or the pointwise kernel on the 1 x 1 shapes (1), against Conv2D's
 * reference */
static void conv_cases(const mt_kernel_table *column, s8_check_fn check, int pointwise)
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
                                         /* windows past MT_S8_WINDOW_BYTES (conv_s8_portable.c): by kernel rows */
                                         {4, 5, 60, 5, 3, 3, 1, 2, MT_PADDING_SAME},
                                         /* the DSP cores' pixel pairs spread once (s8_dense_rows.h's
                                          * mt_s8_dense_pairs, from 16 channels): 3 words (an odd
                                          * one and a pair) and 2 channels past the fours; runs of
                                          * 6 pixels (200 inputs); one word; runs of 64 (72
                                          * pixels: MT_S8_PAIRS_RUN and 8 more) */
                                         {3, 3, 12, 18, 1, 1, 1, 1, MT_PADDING_VALID},
                                         {2, 5, 200, 16, 1, 1, 1, 1, MT_PADDING_VALID},
                                         {1, 3, 4, 16, 1, 1, 1, 1, MT_PADDING_VALID},
                                         {6, 6, 8, 8, 1, 1, 1, 1, MT_PADDING_VALID}};
    const uint32_t B = 2;
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            mt_spatial g;
            if (!s8_geometry(shapes[s], 0, check, "int8 conv geometry", &g)) continue;
            const uint32_t K = g.KH * g.KW * g.C, zx = (uint32_t)zero_points[(s + (uint32_t)kind) % 4];
            const size_t nx = (size_t)B * g.H * g.W * g.C, ny = (size_t)B * g.OH * g.OW * g.OC;
            s8_fill(x, nx, kind, (int32_t)zx), s8_fill(w, (size_t)g.OC * K, kind == S8_SMALL ? S8_SMALL : kind, 0);
            const int32_t *b = s8_requant(kind, g.OC, K, bias, rq);
            const uint32_t packed = s8_packed((int32_t)zx, (int32_t)(s8_next() % 41u) - 20, (int)(s & 1u));
            memset(y0, 0x55, ny), memset(y1, 0x2a, ny);
            mt_op_conv2d_s8_forward_ref(x, w, b, rq, y0, B, &g, packed);
            if (!pointwise) {
                column->conv2d_s8_forward(x, w, b, rq, y1, B, &g, packed);
                check(memcmp(y0, y1, ny) == 0, "int8 Conv2D");
            } else if (g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1) {
                /* the fused expansion's kernel as it calls it: a row of W pixels a call, the
                 * layer's constants made at the first and kept for the others */
                consts[0] = 0;
                for (uint32_t r = 0; r < B * g.H; ++r)
                    column->conv2d_s8_pointwise(x + (size_t)r * g.W * g.C, w, b, rq, y1 + (size_t)r * g.W * g.OC, g.W,
                                                g.C, g.OC, packed, consts);
                check(memcmp(y0, y1, ny) == 0, "int8 pointwise Conv2D");
            }
        }
}

/* DepthwiseConv2D whole (rows 0) or one output row at a time from a ring (1) */
static void depthwise_cases(const mt_kernel_table *column, s8_check_fn check, int rows)
{
    static const uint32_t shapes[][8] = {/* H, W, C, KH, KW, SH, SW, padding */
                                         {8, 8, 8, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {7, 9, 19, 3, 3, 2, 2, MT_PADDING_SAME},
                                         {5, 6, 3, 3, 3, 1, 1, MT_PADDING_VALID},
                                         {6, 5, 17, 5, 5, 1, 2, MT_PADDING_SAME},
                                         {4, 4, 1, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {9, 9, 4, 3, 3, 2, 2, MT_PADDING_VALID},
                                         {3, 4, 6, 3, 2, 3, 1, MT_PADDING_SAME},
                                         /* the DSP cores' planes (ops/dsp/depthwise_s8_dsp.h):
                                          * an odd row (9 outputs: 2 words and a byte a plane
                                          * row), 7 channels (one group and 3 left), VALID; past
                                          * MT_DW3_PLANE_BYTES (83 outputs) the four-channel form;
                                          * the rows from a ring take the planes from
                                          * MT_DW3_ROW_MIN outputs: 34 */
                                         {7, 9, 12, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {6, 11, 7, 3, 3, 1, 1, MT_PADDING_VALID},
                                         {3, 83, 4, 3, 3, 1, 1, MT_PADDING_SAME},
                                         {5, 34, 8, 3, 3, 1, 1, MT_PADDING_SAME},
                                         /* Helium's gathered interior (ops/mve/depthwise_s8_mve.h,
                                          * from 8 interior outputs): stride 2, 9 inside (two
                                          * turns and one lane) and both edges, two groups;
                                          * VALID stride 2 and 5 channels (a group, one left);
                                          * one input row (a kernel row in bounds: two of
                                          * weight 0) */
                                         {5, 21, 8, 3, 3, 2, 2, MT_PADDING_SAME},
                                         {7, 20, 5, 3, 3, 2, 2, MT_PADDING_VALID},
                                         {1, 12, 4, 3, 3, 1, 1, MT_PADDING_SAME}};
    const uint32_t B = 2;
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            mt_spatial g;
            if (!s8_geometry(shapes[s], 1, check, "int8 depthwise geometry", &g)) continue;
            const int32_t zx = zero_points[(s + (uint32_t)kind + 1u) % 4];
            const size_t row = (size_t)g.W * g.C, nx = (size_t)B * g.H * row, ny = (size_t)B * g.OH * g.OW * g.C;
            s8_fill(x, nx, kind, zx), s8_fill(w, (size_t)g.KH * g.KW * g.C, kind, 0);
            const int32_t *b = s8_requant(kind, g.C, g.KH * g.KW, bias, rq);
            const uint32_t packed = s8_packed(zx, (int32_t)(s8_next() % 41u) - 20, (int)(s & 1u));
            memset(y0, 0x55, ny), memset(y1, 0x2a, ny);
            mt_op_depthwise_conv2d_s8_forward_ref(x, w, b, rq, y0, B, &g, packed);
            if (!rows) {
                column->depthwise_conv2d_s8_forward(x, w, b, rq, y1, B, &g, packed);
                check(memcmp(y0, y1, ny) == 0, "int8 DepthwiseConv2D");
                continue;
            }
            /* sample 1's rows through a ring of KH slots, filled as the fused expansion fills it:
             * row r in slot r mod KH, each row once, before the first output row that reads it */
            const int8_t *x1 = x + (size_t)g.H * row;
            const size_t out_row = (size_t)g.OW * g.C;
            memset(y1, 0x2a, ny);
            uint32_t next = 0;
            consts[0] = 0; /* its constants made at the first row, kept for the others */
            for (uint32_t oh = 0; oh < g.OH; ++oh) {
                for (; (int64_t)next <= (int64_t)oh * g.SH - g.PT + g.KH - 1 && next < g.H; ++next)
                    memcpy(ring + (size_t)(next % g.KH) * row, x1 + (size_t)next * row, row);
                column->depthwise_conv2d_s8_row(ring, g.KH, w, b, rq, y1 + oh * out_row, oh, &g, packed, consts);
            }
            check(memcmp(y0 + (size_t)g.OH * out_row, y1, (size_t)g.OH * out_row) == 0,
                  "int8 DepthwiseConv2D rows from a ring");
        }
}

static void dense_cases(const mt_kernel_table *column, s8_check_fn check)
{
    static const uint32_t shapes[][3] = {/* B, D, U */ {1, 1, 1}, {2, 7, 3}, {3, 16, 4}, {2, 33, 9}, {1, 100, 10},
                                         {4, 5, 17}, {2, 64, 2},
                                         {5, 9, 6}, {17, 20, 8},
                                         /* the DSP cores' spread x (s8_dense_rows.h): 2 words and 3
                                          * inputs; 3 single words, 3 turns of 4 and 3 inputs;
                                          * past its scratch (B·D > 1536) */
                                         {3, 11, 5}, {1, 63, 4}, {2, 772, 4},
                                         /* its pixel pairs (mt_s8_dense_pairs): an odd pixel;
                                          * runs of 6, the last odd */
                                         {5, 12, 18}, {9, 200, 16}};
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            const uint32_t B = shapes[s][0], D = shapes[s][1], U = shapes[s][2];
            const int32_t zx = zero_points[(s + (uint32_t)kind + 2u) % 4];
            s8_fill(x, (size_t)B * D, kind, zx), s8_fill(w, (size_t)U * D, kind, 0);
            const int32_t *b = s8_fc_requant(kind, U, D, bias, rq);
            const uint32_t packed = s8_packed(zx, (int32_t)(s8_next() % 41u) - 20, (int)(s & 1u));
            memset(y0, 0x55, (size_t)B * U), memset(y1, 0x2a, (size_t)B * U);
            mt_op_dense_s8_forward_ref(x, w, b, rq, y0, B, D, U, packed);
            column->dense_s8_forward(x, w, b, rq, y1, B, D, U, packed);
            check(memcmp(y0, y1, (size_t)B * U) == 0, "int8 FullyConnected");
        }
}

/* The int8 Add beside its reference: random inputs, zero points and clamps, lengths around
 * the four lanes and past the scalar cores' tables (add_s8_portable.c, from 512), rescalings as TFLite makes them (each input's multiplier below one half,
 * shifts of -1 to -3; the output's shift in [-12, -1]) or, in the second check, with left
 * shifts on all three */
static void add_cases(const mt_kernel_table *column, s8_check_fn check)
{
    static const uint32_t lengths[] = {1, 3, 4, 5, 8, 13, 64, 99, 511, 512, 777};
    for (int shifted = 0; shifted < 2; ++shifted) {
        int same = 1;
        for (uint32_t s = 0; s < sizeof lengths / sizeof lengths[0]; ++s)
            for (int kind = 0; kind < S8_KINDS; ++kind) {
                const uint32_t N = lengths[s];
                int32_t rq_[8];
                for (uint32_t k = 0; k < 3; ++k) {
                    rq_[2 * k] = (int32_t)((1u << 30) + s8_next() % (1u << 30)); /* [2^30, 2^31) */
                    rq_[2 * k + 1] = shifted ? (int32_t)(s8_next() % 3u)
                                             : k < 2 ? -1 - (int32_t)(s8_next() % 3u) : -1 - (int32_t)(s8_next() % 12u);
                }
                rq_[6] = shifted ? (int32_t)(s8_next() % 8u) : 20, rq_[7] = 0; /* TFLite's left shift: 20 */
                const int32_t za = zero_points[(s + (uint32_t)kind) % 4], zb = zero_points[(s + 1u) % 4];
                const int32_t zy = (int32_t)(s8_next() % 41u) - 20;
                const uint32_t zp = (uint32_t)(uint8_t)za | (uint32_t)(uint8_t)zb << 8 | (uint32_t)(uint8_t)zy << 16;
                const uint32_t range = s & 1u ? (uint32_t)(uint8_t)-128 | 127u << 8
                                              : (uint32_t)(uint8_t)zy | (uint32_t)100 << 8; /* a ReLU's */
                s8_fill(x, N, kind, za), s8_fill(w, N, kind, zb);
                memset(y0, 0x55, N + 4), memset(y1, 0x55, N + 4);
                mt_op_add_s8_forward_ref(x, w, y0, N, rq_, zp, range);
                column->add_s8_forward(x, w, y1, N, rq_, zp, range);
                same &= memcmp(y0, y1, N + 4) == 0; /* and nothing written past N */
            }
        check(same, shifted ? "int8 Add with left shifts" : "int8 Add");
    }
}

/* The int8 MEAN beside its reference: pixels P from 1 to 49, channels around the four lanes,
 * random zero points, multipliers and shifts of both signs (1/P folded in as TFLite folds it) */
static void mean_cases(const mt_kernel_table *column, s8_check_fn check)
{
    static const uint32_t shapes[][2] = {/* P, C */ {1, 1}, {4, 3}, {16, 4}, {9, 7}, {49, 32}, {16, 33}};
    const uint32_t B = 2;
    int same = 1;
    for (uint32_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (int kind = 0; kind < S8_KINDS; ++kind) {
            const uint32_t P = shapes[s][0], C = shapes[s][1];
            const int32_t zx = zero_points[(s + (uint32_t)kind) % 4], zy = (int32_t)(s8_next() % 41u) - 20;
            const int32_t multiplier = (int32_t)((1u << 30) + s8_next() % (1u << 30));
            const int32_t shift = (int32_t)(s8_next() % 15u) - 12; /* [-12, 2] */
            const uint32_t zp = (uint32_t)(uint8_t)zx | (uint32_t)(uint8_t)zy << 8;
            s8_fill(x, (size_t)B * P * C, kind, zx);
            memset(y0, 0x55, (size_t)B * C + 4), memset(y1, 0x55, (size_t)B * C + 4);
            mt_op_mean_s8_forward_ref(x, y0, B, P, C, zp, multiplier, shift);
            column->mean_s8_forward(x, y1, B, P, C, zp, multiplier, shift);
            same &= memcmp(y0, y1, (size_t)B * C + 4) == 0; /* and nothing written past B·C */
        }
    check(same, "int8 Mean");
}

/* mt_s8_requant_block on n pixels' sums (plus each channel's bias) for R channels, with the
 * constants mt_s8_requants makes (Helium's gathers and scatters), their pixels 5 bytes apart
 * in y, equals mt_q_requantize with mt_q_requant_of's constants output by output and leaves
 * the bytes between untouched */
static int requant_block_matches(const int32_t *sums, uint32_t n, uint32_t R, const int32_t rq_[8],
                                 const int32_t bias_[4], uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    mt_q_requant q[4];
    mt_s8_requants(bias_, rq_, 0, R, q);
    int32_t acc[4 * MT_S8_RUN] = {0}; /* lanes past n unread; -O1 cannot tell */
    int8_t out[MT_S8_RUN * 5];
    memset(out, 0x5a, sizeof out);
    for (uint32_t j = 0; j < n; ++j) /* lanes past R: channel 0's, as mt_s8_requants makes them */
        for (uint32_t r = 0; r < 4; ++r)
            acc[4 * j + r] = (int32_t)((uint32_t)sums[4 * j + r] + (uint32_t)bias_[r < R ? r : 0]);
    mt_s8_requant_block(acc, n, R, q, p, out, 5);
    int same = 1;
    for (uint32_t j = 0; j < n; ++j) {
        for (uint32_t r = 0; r < R; ++r)
            same &= out[5 * j + r] == mt_q_requantize(sums[4 * j + r], mt_q_requant_of(bias_, rq_, r), p.y_zp,
                                                      p.act_min, p.act_max);
        for (uint32_t r = R; r < 5; ++r) same &= out[5 * j + r] == 0x5a;
    }
    return same;
}

/* Two checks: the ties, then random runs. Ties: a multiplier of 2^30 and a shift of -e halve
 * 2h exactly to h, then divide by 2^e, so sums h = t·2^e ± 2^(e-1) (+ -1, 0, 1) sit at and
 * beside the rounding shift's ties (gemmlowp's: away from zero), beside channels with and
 * without a left shift and the largest multiplier. Random: multipliers in [0, 2^31), shifts in
 * [-31, 30], biases and sums of every magnitude, runs of 1 to 16 pixels, 1 to 4 channels, both
 * clamps. */
static void requant_cases(s8_check_fn check)
{
    int32_t sums[4 * MT_S8_RUN];
    int same = 1;
    for (int32_t e = 1; e <= 31; ++e) {
        /* with a left shift on channel 1, and without one (the form without VSHL on Helium) */
        const int32_t rq_[8] = {1 << 30, -e, 1 << 30 | 12345, 3, 1 << 30, -e, 0x7fffffff, -(e / 2)};
        const int32_t rq_right[8] = {1 << 30, -e, 1 << 30 | 12345, -(e / 3), 1 << 30, -e, 0x7fffffff, -(e / 2)};
        const int32_t bias_[4] = {0, 0, 0, 0};
        uint32_t k = 0;
        for (int64_t t = -3; t <= 3; ++t)
            for (int64_t side = -1; side <= 1; side += 2)
                for (int64_t off = -1; off <= 1; ++off) {
                    const int64_t h = t * ((int64_t)1 << e) + side * ((int64_t)1 << (e - 1)) + off;
                    if (h >= (1 << 30) || h < -(1 << 30)) continue;
                    sums[k++ % (4 * MT_S8_RUN)] = (int32_t)(2 * h);
                }
        for (uint32_t n = 1; n <= MT_S8_RUN; n += 5) {
            same &= requant_block_matches(sums, n, 4, rq_, bias_, 0x7f80u << 16 | 3u << 8 | 0u);
            same &= requant_block_matches(sums, n, 4, rq_right, bias_, 0x7f80u << 16 | 3u << 8 | 0u);
            same &= requant_block_matches(sums, n, 3, rq_, bias_, 0x7f80u << 16 | (uint32_t)(uint8_t)-7 << 8);
        }
    }
    /* the bound of the DSP cores' zy folded into the high word (ops/dsp/s8_requant_dsp.h: e <= 24):
     * the largest multiplier, sums at both ends of int32 and around 0, zy at both ends */
    for (int32_t e = 23; e <= 25; ++e) {
        const int32_t rq_[8] = {0x7fffffff, -e, 0x7fffffff, -e, 1 << 30, -e, 0x7ffffffe, -e};
        const int32_t bias_[4] = {0, 0, 0, 0};
        const int32_t ends[6] = {INT32_MIN, INT32_MIN + 1, -1, 0, INT32_MAX - 1, INT32_MAX};
        for (uint32_t k = 0; k < 4 * MT_S8_RUN; ++k) sums[k] = ends[k % 6];
        for (uint32_t zy = 0; zy < 256; zy += 255) /* -128 ... 127 as the packed byte 0x80 + zy */
            same &= requant_block_matches(sums, MT_S8_RUN, 4, rq_, bias_,
                                          0x7f80u << 16 | (uint32_t)(uint8_t)(zy + 128u) << 8);
    }
    check(same, "int8 requantization of runs at rounding ties");
    same = 1;
    for (int k = 0; k < 4000; ++k) {
        int32_t rq_[8], bias_[4];
        for (uint32_t c = 0; c < 4; ++c) {
            rq_[2 * c] = (int32_t)(s8_next() << 7 | (s8_next() & 127u)) | (k & 3 ? 1 << 30 : 0);
            rq_[2 * c] &= 0x7fffffff;
            rq_[2 * c + 1] = -31 + (int32_t)(s8_next() % 62u);
            bias_[c] = (int32_t)(s8_next() << 8) >> 8;
        }
        for (uint32_t i = 0; i < 4 * MT_S8_RUN; ++i) {
            const uint32_t v = s8_next() << 8 | (s8_next() & 255u);
            sums[i] = k & 1 ? (int32_t)v >> (v & 31u) : (int32_t)v;
        }
        const uint32_t r = s8_next();
        /* zy in [-128, 100]: the lower bound of the narrower clamp [zy, 100] */
        const uint32_t n = 1u + r % MT_S8_RUN, R = 1u + (r >> 4) % 4u, zy = (uint8_t)((int32_t)((r >> 8) % 229u) - 128);
        const uint32_t packed =
            (k & 4 ? (uint32_t)127 << 24 | (uint32_t)128 << 16 : (uint32_t)100 << 24 | zy << 16) | zy << 8;
        same &= requant_block_matches(sums, n, R, rq_, bias_, packed);
    }
    check(same, "int8 requantization of random runs");
}

void mt_sib_case_conv2d_s8_forward(const mt_kernel_table *column)
{
    conv_cases(column, mt_sib_check, 0);
}

void mt_sib_case_conv2d_s8_pointwise(const mt_kernel_table *column)
{
    conv_cases(column, mt_sib_check, 1);
}

void mt_sib_case_depthwise_conv2d_s8_forward(const mt_kernel_table *column)
{
    depthwise_cases(column, mt_sib_check, 0);
}

void mt_sib_case_depthwise_conv2d_s8_row(const mt_kernel_table *column)
{
    depthwise_cases(column, mt_sib_check, 1);
}

/* FullyConnected; its requantization (LiteRT's double scaling, ops/quant.h's mt_q_fc_scale)
 * against C's double arithmetic, alone and over the runs its portable kernel takes
 * (siblings_s8_fc.c); and the requantization of runs the pointwise and copied-window
 * convolutions take on this target */
void mt_sib_case_dense_s8_forward(const mt_kernel_table *column)
{
    dense_cases(column, mt_sib_check);
    s8_fc_rounding_cases(mt_sib_check);
    requant_cases(mt_sib_check);
}

void mt_sib_case_add_s8_forward(const mt_kernel_table *column)
{
    add_cases(column, mt_sib_check);
}

void mt_sib_case_mean_s8_forward(const mt_kernel_table *column)
{
    mean_cases(column, mt_sib_check);
}
