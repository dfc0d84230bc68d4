/*
 * The sibling of the int8 pointwise Conv2D's input gradient (ops/conv_s8.c, kernels.def's
 * conv2d_s8_pointwise_dx), register-blocked for the scalar FPUs (Cortex-M4F, M7, M33: the dsp
 * column; x86 and the portable column run it too):
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
#pragma GCC optimize("O2") /* the int8 backward's cost: speed even in -Os firmware */
#endif
#include "mt_fma.h"
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
