/*
 * The siblings of the int8 pointwise Conv2D's backward (ops/conv_s8.c): its mask and its input
 * gradient.
 *
 * The mask (kernels.def's conv2d_s8_pointwise_mask, every column): dy[p,oc] = +0 where the
 * forward's clamp cut the output. It recomputes the forward's integer sums as the forward's
 * sibling does (s8_dot.h: Σ W·x - zx·Σ W, SMLAD pairs on the DSP cores, VMLADAVA on Helium,
 * AVX2 on x86), which are exact in any order, and tests each as the reference does
 * (mt_q_unsaturated): the same zeros.
 *
 * The DepthwiseConv2D's mask (depthwise_conv2d_s8_mask, every column): the same sums, exact in
 * any order, a block of 16 channels of one output pixel at a time over the taps in bounds (their
 * ranges found once a pixel, where the reference tested every tap of every channel).
 *
 * The weight gradient of a layer trained in place (conv2d_s8_pointwise_dw: every column with an
 * FPU, the M55's included) is blocked as the input gradient below is, 4 output channels by 4
 * input channels, each sum over the pixels from +0 in the reference's order:
 *   dW[oc,c] += Σ_p dy[p,oc]·x[p,c],   x[p,c] = sx·(x_q[p,c] - zx) (one float multiply a use)
 *
 * The input gradient (conv2d_s8_pointwise_dx), register-blocked for the scalar FPUs (Cortex-M4F,
 * M7, M33: the dsp column; x86 and the portable column run it too):
 *
 *   dx[p,c] += Σ_oc dy[p,oc]·w[oc,c],   w[oc,c] = sw[oc]·W[oc,c] (one float multiply a use)
 *
 * Exact bits: every sum is the reference's, term for term. Each (p, c) sum still starts from +0,
 * takes its terms by ascending oc, each one mt_fmaf (the FPU's VFMA) of the same two operands
 * (dy[p,oc] and the same rounded product sw[oc]·W[oc,c]; (float)W is exact), and is added to dx
 * once at the end. What changes is only which sums advance together: a block of 4 pixels by 4
 * channels keeps its 16 sums in registers, so each dequantized weight (a load, a conversion and
 * a multiply) serves 4 pixels and each dy load 4 channels, where the reference redid the
 * weight's multiply for every pixel and walked W by a stride of C for every term. The sums of
 * different (p, c) never meet, so their interleaving cannot change a bit.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__arm__)
/* the int8 backward's cost: speed even in -Os firmware; no float code vectorized (ops/mve/mve.h:
 * on the M55, GCC would turn it into Helium arithmetic that flushes subnormals) */
#pragma GCC optimize("O2", "no-tree-vectorize")
#endif
#include <string.h>

#include "mt_fma.h"
#include "ops/portable/s8_dense_rows.h"
#include "ops/quant_grad.h"
#include "ops/spatial.h"
#include "select/kernels.h"

/* the block's loops written out (their trip counts are constants): its sums stay in registers */
#if defined(__GNUC__)
#define MT_UNROLL4 _Pragma("GCC unroll 4")
#else
#define MT_UNROLL4
#endif

/* dx[p0 + i, c0 + j] += the sums of a block of NP pixels by NC channels (NP, NC <= 4, constants
 * where it is inlined: every array below becomes registers) */
static inline __attribute__((always_inline)) void dx_block(const float *dy, const int8_t *w, const float *w_scale,
                                                          float *dx, uint32_t C, uint32_t OC, uint32_t NP,
                                                          uint32_t NC)
{
    float acc[4][4];
    MT_UNROLL4 for (uint32_t i = 0; i < NP; ++i)
        MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) acc[i][j] = 0.0f;
    const int8_t *wc = w;
    for (uint32_t oc = 0; oc < OC; ++oc, wc += C) {
        const float s = w_scale[oc];
        float wd[4], d[4];
        MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) wd[j] = s * (float)wc[j];
        MT_UNROLL4 for (uint32_t i = 0; i < NP; ++i) d[i] = dy[(size_t)i * OC + oc];
        MT_UNROLL4 for (uint32_t i = 0; i < NP; ++i)
            MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) acc[i][j] = mt_fmaf(d[i], wd[j], acc[i][j]);
    }
    MT_UNROLL4 for (uint32_t i = 0; i < NP; ++i)
        MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) dx[(size_t)i * C + j] += acc[i][j];
}

/* the blocks of pixels p0 .. p0 + NP (NP <= 4) over every channel: 4 at a time, then one */
static inline __attribute__((always_inline)) void dx_pixels(const float *dy, const int8_t *w, const float *w_scale,
                                                           float *dx, uint32_t C, uint32_t OC, uint32_t NP)
{
    uint32_t c = 0;
    for (; c + 4 <= C; c += 4) dx_block(dy, w + c, w_scale, dx + c, C, OC, NP, 4);
    for (; c < C; ++c) dx_block(dy, w + c, w_scale, dx + c, C, OC, NP, 1);
}

void mt_op_conv2d_s8_pointwise_dx_portable(const float *dy, const int8_t *w, const float *w_scale, float *dx,
                                           uint32_t P, uint32_t C, uint32_t OC)
{
    uint32_t p = 0;
    for (; p + 4 <= P; p += 4) dx_pixels(dy + (size_t)p * OC, w, w_scale, dx + (size_t)p * C, C, OC, 4);
    for (; p < P; ++p) dx_pixels(dy + (size_t)p * OC, w, w_scale, dx + (size_t)p * C, C, OC, 1);
}

/* dy[p, u + r] = +0 where output channel u + r of pixel p was cut: its sum (bias included, as
 * the forward's siblings start it) less the bias is the reference's acc (wrapping) */
static void mask_block(const int32_t *acc, uint32_t n, uint32_t R, const mt_q_requant *q, mt_q_params p, float *dy,
                       uint32_t OC)
{
    for (uint32_t j = 0; j < n; ++j, dy += OC)
        for (uint32_t r = 0; r < R; ++r) {
            const int32_t sum = (int32_t)((uint32_t)acc[4 * j + r] - (uint32_t)q[r].bias);
            if (!mt_q_unsaturated(sum, q[r], p.y_zp, p.act_min, p.act_max)) dy[r] = 0.0f;
        }
}

/* acc[4·j + r] = the sums of n pixels x [n, C] for the R (<= 4) weight rows wu [R, C], each from
 * start[r]: Σ W·x by mt_s8_dot4_pixels where start holds -zx·Σ W already (summed), else
 * Σ W·(x - zx) by mt_s8_dot, MT_S8_ROWS rows at a time */
static void mask_sums(const int8_t *xb, const int8_t *wu, uint32_t C, uint32_t n, int32_t zx, uint32_t R,
                      int summed, const int32_t start[4], int32_t *acc)
{
    if (summed) {
        mt_s8_dot4_pixels(xb, wu, C, n, start, acc);
        return;
    }
    for (int32_t *a = acc; a < acc + 4 * n; a += 4, xb += C) {
        memcpy(a, start, 4 * sizeof(int32_t));
        for (uint32_t r = 0; r < R; r += MT_S8_ROWS)
            mt_s8_dot(xb, wu + (size_t)r * C, C, C, zx, R - r < MT_S8_ROWS ? R - r : MT_S8_ROWS, a + r);
    }
}

/* mt_s8_dense_rows's sums (four output channels at a time over every pixel, each sum from its
 * bias), tested instead of requantized */
void mt_op_conv2d_s8_pointwise_mask_portable(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                             float *dy, uint32_t P, uint32_t C, uint32_t OC, uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    int32_t acc[4 * MT_S8_RUN];
    for (uint32_t u = 0, R; u < OC; u += R) {
        R = OC - u < 4 ? OC - u : 4;
        const int8_t *wu = w + (size_t)u * C;
        /* Σ W·(x - zx) = Σ W·x - zx·Σ W: four rows' Σ W once, for every pixel, where enough pixels */
        const int summed = R == 4 && C >= MT_S8_MIN_ROW && P >= MT_S8_SUM_ROWS;
        mt_q_requant q[4];
        mt_s8_requants(bias, rq, u, R, q);
        int32_t start[4];
        for (uint32_t r = 0; r < 4; ++r)
            start[r] = (int32_t)((uint32_t)q[r].bias -
                                 (summed ? (uint32_t)p.x_zp * mt_s8_sum(wu + (size_t)r * C, C) : 0u));
        for (uint32_t b = 0; b < P; b += MT_S8_RUN) {
            const uint32_t n = P - b < MT_S8_RUN ? P - b : MT_S8_RUN;
            mask_sums(x + (size_t)b * C, wu, C, n, p.x_zp, R, summed, start, acc);
            mask_block(acc, n, R, q, p, dy + (size_t)b * OC + u, OC);
        }
    }
}

/* dw[i, j] += the sums of NO output channels (dy's columns, from dy) by NC input channels (x's,
 * from x): NO, NC <= 4, constants where it is inlined */
static inline __attribute__((always_inline)) void dw_block(const int8_t *x, const float *dy, float *dw, float x_scale,
                                                          int32_t zx, uint32_t P, uint32_t C, uint32_t OC,
                                                          uint32_t NO, uint32_t NC)
{
    float acc[4][4];
    MT_UNROLL4 for (uint32_t i = 0; i < NO; ++i)
        MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) acc[i][j] = 0.0f;
    for (uint32_t p = 0; p < P; ++p, x += C, dy += OC) {
        float d[4], xv[4];
        MT_UNROLL4 for (uint32_t i = 0; i < NO; ++i) d[i] = dy[i];
        MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) xv[j] = x_scale * (float)((int32_t)x[j] - zx);
        MT_UNROLL4 for (uint32_t i = 0; i < NO; ++i)
            MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) acc[i][j] = mt_fmaf(d[i], xv[j], acc[i][j]);
    }
    MT_UNROLL4 for (uint32_t i = 0; i < NO; ++i)
        MT_UNROLL4 for (uint32_t j = 0; j < NC; ++j) dw[(size_t)i * C + j] += acc[i][j];
}

/* output channels o .. o + NO over every input channel: 4 at a time, then one */
static inline __attribute__((always_inline)) void dw_rows(const int8_t *x, const float *dy, float *dw, float x_scale,
                                                         int32_t zx, uint32_t P, uint32_t C, uint32_t OC, uint32_t NO)
{
    uint32_t c = 0;
    for (; c + 4 <= C; c += 4) dw_block(x + c, dy, dw + c, x_scale, zx, P, C, OC, NO, 4);
    for (; c < C; ++c) dw_block(x + c, dy, dw + c, x_scale, zx, P, C, OC, NO, 1);
}

void mt_op_conv2d_s8_pointwise_dw_portable(const int8_t *x, const float *dy, float *dw, float x_scale, uint32_t packed,
                                           uint32_t P, uint32_t C, uint32_t OC, uint32_t first, uint32_t rows)
{
    const int32_t zx = mt_q_unpack(packed).x_zp;
    uint32_t o = 0;
    for (; o + 4 <= rows; o += 4) dw_rows(x, dy + first + o, dw + (size_t)o * C, x_scale, zx, P, C, OC, 4);
    for (; o < rows; ++o) dw_rows(x, dy + first + o, dw + (size_t)o * C, x_scale, zx, P, C, OC, 1);
}

/* the in-bounds taps k of output o: [*k0, *k1) (input o·stride + k - pad in [0, size)) */
static void tap_range(uint32_t o, uint32_t K, uint32_t stride, uint32_t pad, uint32_t size, uint32_t *k0, uint32_t *k1)
{
    const int64_t first = (int64_t)o * stride - pad; /* the input under tap 0 */
    *k0 = first < 0 ? (uint32_t)(-first < (int64_t)K ? -first : (int64_t)K) : 0u;
    const int64_t past = (int64_t)size - first; /* taps before the input's end */
    *k1 = past <= 0 ? 0u : past < (int64_t)K ? (uint32_t)past : K;
    if (*k1 < *k0) *k1 = *k0;
}

#define MASK_CHANNELS 16u
void mt_op_depthwise_conv2d_s8_mask_portable(const int8_t *x, const int8_t *w, const int32_t *bias,
                                             const int32_t *rq, float *dy, uint32_t B, const mt_spatial *g,
                                             uint32_t packed)
{
    const mt_q_params p = mt_q_unpack(packed);
    const uint32_t C = g->C;
    uint32_t acc[MASK_CHANNELS];
    MT_SPATIAL_FOR_PIXELS(g, B, b, oh, ow) {
        uint32_t kh0, kh1, kw0, kw1;
        tap_range(oh, g->KH, g->SH, g->PT, g->H, &kh0, &kh1);
        tap_range(ow, g->KW, g->SW, g->PL, g->W, &kw0, &kw1);
        const int8_t *xb = x + (size_t)b * g->H * g->W * C;
        float *dyp = dy + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
        for (uint32_t c0 = 0; c0 < C; c0 += MASK_CHANNELS) {
            const uint32_t n = C - c0 < MASK_CHANNELS ? C - c0 : MASK_CHANNELS;
            memset(acc, 0, sizeof acc);
            for (uint32_t kh = kh0; kh < kh1; ++kh) {
                const uint32_t ih = oh * g->SH + kh - g->PT;
                for (uint32_t kw = kw0; kw < kw1; ++kw) {
                    const int8_t *xp = xb + ((size_t)ih * g->W + (ow * g->SW + kw - g->PL)) * C + c0;
                    const int8_t *wp = w + ((size_t)kh * g->KW + kw) * C + c0;
                    for (uint32_t j = 0; j < n; ++j) acc[j] += (uint32_t)((int32_t)wp[j] * ((int32_t)xp[j] - p.x_zp));
                }
            }
            for (uint32_t j = 0; j < n; ++j)
                if (!mt_q_unsaturated((int32_t)acc[j], mt_q_requant_of(bias, rq, c0 + j), p.y_zp, p.act_min, p.act_max))
                    dyp[c0 + j] = 0.0f;
        }
    }
}
