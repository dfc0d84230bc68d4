/*
 * The int8 siblings' dense products (conv_s8_portable.c, dense_s8_portable.c,
 * conv_s8_backward_portable.c): mt_s8_dense_rows, y = requant(W·(x - zx) + bias) for B rows of
 * x and U weight rows, built on the per-ISA inner products of s8_dot.h and the requantization
 * of s8_requant.h. It needs no zx per term: Σ W·(x - zx) = Σ W·x - zx·Σ W, so each sum starts
 * from bias - zx·Σ W (Σ W once per row block) and mt_s8_dot4_pixels adds Σ W·x; below
 * MT_S8_SUM_ROWS rows (a FullyConnected's batch) zx goes into the products instead (mt_s8_dot,
 * mt_s8_dot4_centered). On the DSP cores x's int16 halves less zx are spread once into a
 * scratch the caller lends (MT_S8_SPREAD_SCRATCH) and read by every weight row: a
 * FullyConnected's few rows (mt_s8_spread_x, mt_s8_dot4_xs_run), or pixel pairs for eight
 * output channels or more (mt_s8_dense_pairs: mt_s8_spread_pairs, mt_s8_dot2x2_xs_run).
 */
#ifndef MT_OPS_S8_DENSE_ROWS_H
#define MT_OPS_S8_DENSE_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/portable/s8_dot.h"

/* The most inputs (B rows of D) whose halves mt_s8_dense_rows spreads once for all its weight
 * rows below MT_S8_SUM_ROWS rows (mt_s8_dot4_xs_run): 2 bytes an input, 3 KB in the frame of
 * the FullyConnected's sibling, which lends it; MobileNetV2's classifier (1280 inputs at
 * batch 1) fits. Past it, zx in the products (mt_s8_dot4_zx_run). */
#define MT_S8_SPREAD 1536u

/* The scratch a caller of mt_s8_dense_rows lends it: MT_S8_SPREAD / 2 words on the DSP cores
 * (x's halves, spread once: mt_s8_spread_x, mt_s8_dense_pairs), none elsewhere */
#if MT_S8_DSP
#define MT_S8_SPREAD_SCRATCH(name) uint32_t name[MT_S8_SPREAD / 2u]
#else
#define MT_S8_SPREAD_SCRATCH(name) uint32_t *const name = NULL
#endif

/* The fewest x rows (pixels, a FullyConnected's batch) over which mt_s8_dense_rows sums each
 * weight row once (Σ W, then mt_s8_dot4_pixels without zx) rather than taking zx into the
 * products (mt_s8_dot: the rows sharing each x - zx; four rows on Helium: mt_s8_dot4_centered,
 * Σ W by VADDVA beside the products). Σ W costs about 2 instructions a weight on the DSP cores
 * (USADA8), 4 on the M3 and RISC-V (a byte a turn) and 0.2 on Helium, once a call; zx in the
 * products about 0.4 a MAC more on the DSP cores (mt_s8_dot4_zx_run's 28 instructions for 16
 * MACs against the 22 of mt_s8_dot2x2_run's pixel pairs), 0.25 on the scalar cores and 0.06 on
 * Helium (four VADDVA for 64 MACs), every row: a FullyConnected at batch 1 (1280 -> 1000)
 * spent more on Σ W than on its products. AVX2 has its own form (ops/x86/s8_avx2.c): there
 * Σ W always. */
#if MT_X86_KERNELS
#define MT_S8_SUM_ROWS 1u
#elif MT_S8_MVE
#define MT_S8_SUM_ROWS 4u
#elif MT_S8_DSP
#define MT_S8_SUM_ROWS 4u
#else
#define MT_S8_SUM_ROWS 8u
#endif

/* Output channels (units) u..u+R-1's requantization constants and their sums' starts (the
 * bias): FullyConnected's double scales (fc) or Conv2D's (multiplier, shift) pairs; a row
 * r >= R repeats unit u's */
static inline __attribute__((always_inline)) void mt_s8_unit_constants(const int32_t *bias, const int32_t *rq,
                                                                       uint32_t u, uint32_t R, const int fc,
                                                                       mt_q_requant q[4], mt_q_fc f[4],
                                                                       int32_t start[4])
{
    if (fc) {
        for (uint32_t r = 0; r < 4; ++r) f[r] = mt_q_fc_of(bias, rq, u + (r < R ? r : 0)), start[r] = f[r].bias;
    } else {
        mt_s8_requants(bias, rq, u, R, q);
        for (uint32_t r = 0; r < 4; ++r) start[r] = q[r].bias;
    }
}

/* A Conv2D's four output channels' constants kept across the calls of one layer (kernels.def's
 * consts: the fused expansion's rows, each a call, made them every row): their requantizations,
 * their sums' start (the bias) and, once a call takes that path, bias - zx·Σ W (centered) */
typedef struct mt_s8_units {
    mt_q_requant q[4];
    int32_t start[4], centered[4];
    uint32_t centered_made;
} mt_s8_units;
typedef char mt_s8_units_fit[sizeof(mt_s8_units) <= MT_S8_POINTWISE_GROUP ? 1 : -1];

/* The constants of U output channels in consts (MT_S8_CONSTS_BYTES(U, MT_S8_POINTWISE_GROUP)
 * bytes: mt_s8_units a group's), made at the
 * layer's first call (its header 0), or NULL without consts */
static inline mt_s8_units *mt_s8_units_of(void *consts, const int32_t *bias, const int32_t *rq, uint32_t U)
{
    if (consts == NULL) return NULL;
    mt_s8_units *k = (mt_s8_units *)(void *)((char *)consts + MT_S8_CONSTS_HEADER);
    uint32_t *made = (uint32_t *)consts;
    if (!*made) {
        for (uint32_t u = 0; u < U; u += 4) {
            mt_s8_units *ku = k + u / 4u;
            mt_s8_requants(bias, rq, u, U - u < 4 ? U - u : 4, ku->q);
            for (uint32_t r = 0; r < 4; ++r) ku->start[r] = ku->q[r].bias;
            ku->centered_made = 0;
        }
        *made = 1;
    }
    return k;
}

#if MT_S8_DSP
/* The fewest output channels (units) for which mt_s8_dense_rows spreads x's pixel pairs once
 * for all of them (mt_s8_dense_pairs): the spread costs 14 instructions for a word of a pair
 * (8 inputs), once, and saves 12 of 44 for every 32 MACs of two rows; at 8 channels the M7's
 * projections gain (48 -> 8: 1.79 -> 1.67 instructions a MAC; 16 -> 8: 2.61 -> 2.58) */
#define MT_S8_PAIRS_UNITS 8u

/* The most pixels of a run of mt_s8_dense_pairs (1 KB of sums): each run pays every four
 * channels' requantization calls, loop setup (and, uncached, constants) again, so on the M7
 * MT_S8_RUN's 16 -> 32 -> 64 took the 8 -> 48 expansion from 3.66 to 3.33 and 3.16
 * instructions a MAC, the 16 -> 8 projection from 2.58 to 2.40 and 2.32 */
#define MT_S8_PAIRS_RUN 64u

/* xs[2k] and xs[2k + 1] = word k's bytes 0, 2 and bytes 1, 3, sign-extended to int16 halves,
 * less zx (in [-255, 255]), for the D / 4 words of each of B rows of D inputs (row b's at
 * xs + 2·(D / 4)·b; its last D mod 4 inputs are not spread) */
static void mt_s8_spread_x(const int8_t *x, uint32_t B, uint32_t D, int32_t zx, uint32_t *xs)
{
    const int16x2_t zz = mt_s8_pair(zx);
    for (uint32_t b = 0; b < B; ++b, x += D)
        for (uint32_t i = 0; i + 4 <= D; i += 4, xs += 2) {
            const uint32_t xw = mt_s8_word(x + i);
            xs[0] = (uint32_t)__ssub16(__sxtb16(xw), zz), xs[1] = (uint32_t)__ssub16(mt_s8_odd(xw), zz);
        }
}

/* spread[4·(k·D/4 + i) + 2·p + h] = word i of pixel 2k + p, its bytes 0, 2 (h = 0) or 1, 3
 * (h = 1) as int16 halves less zx, for the pairs pixel pairs of x [2·pairs, D], D a multiple
 * of 4 (>= 4): what mt_s8_dot2x2_xs_run reads with one LDM a word. In assembly: 14
 * instructions a word of the pair, where GCC's C took 21 (at 8 output channels that was a
 * third of an instruction a MAC). */
static void mt_s8_spread_pairs(const int8_t *x, uint32_t pairs, uint32_t D, int32_t zx, uint32_t *spread)
{
    const uint32_t zz = (uint32_t)mt_s8_pair(zx);
    for (uint32_t k = 0; k < pairs; ++k, x += 2 * (size_t)D) {
        const int8_t *xp = x;
        uint32_t n = D / 4u, a, b, t, u;
        __asm volatile("1:\n\t"
                       "ldr %[b], [%[x], %[D]]\n\t" /* pixel 2k + 1's word */
                       "ldr %[a], [%[x]], #4\n\t"   /* pixel 2k's */
                       "sxtb16 %[t], %[a]\n\t"
                       "sxtb16 %[a], %[a], ror #8\n\t"
                       "ssub16 %[t], %[t], %[zz]\n\t"
                       "ssub16 %[a], %[a], %[zz]\n\t"
                       "strd %[t], %[a], [%[o]], #16\n\t"
                       "sxtb16 %[u], %[b]\n\t"
                       "sxtb16 %[b], %[b], ror #8\n\t"
                       "ssub16 %[u], %[u], %[zz]\n\t"
                       "ssub16 %[b], %[b], %[zz]\n\t"
                       "strd %[u], %[b], [%[o], #-8]\n\t"
                       "subs %[n], %[n], #1\n\t"
                       "bne 1b"
                       : [x] "+r"(xp), [o] "+r"(spread), [n] "+r"(n), [a] "=&r"(a), [b] "=&r"(b), [t] "=&r"(t),
                         [u] "=&r"(u)
                       : [D] "r"(D), [zz] "r"(zz)
                       : "cc", "memory");
    }
}

/* mt_s8_dense_rows over runs of pixels (B >= 2, D a multiple of 4 and at most MT_S8_SPREAD / 2,
 * U >= MT_S8_PAIRS_UNITS): each run's pixel pairs spread once less zx into the caller's scratch
 * (no Σ W), then every four output channels' products from them, two rows a call of
 * mt_s8_dot2x2_xs_run; an odd last pixel and the last 1-3 channels with zx in the products
 * (mt_s8_dot) */
static inline __attribute__((always_inline)) void mt_s8_dense_pairs(const int8_t *x, const int8_t *w,
                                                                    const int32_t *bias, const int32_t *rq, int8_t *y,
                                                                    uint32_t B, uint32_t D, uint32_t U,
                                                                    mt_q_params p, const int fc, uint32_t *spread,
                                                                    const mt_s8_units *kept)
{
    int32_t acc[4 * MT_S8_PAIRS_RUN];
    uint32_t run = (MT_S8_SPREAD / D) & ~1u; /* pixels whose halves fit the scratch: >= 2 */
    if (run > MT_S8_PAIRS_RUN) run = MT_S8_PAIRS_RUN;
    /* more than one run: a Conv2D's channels' constants made once, past the halves, where they
     * fit (20 bytes a channel: an expansion's 48 and 96 from 8 and 16 inputs do), not every run
     * (at 8 inputs an output that was 0.2 instructions a MAC) */
    const size_t halves = (size_t)run * D / 2u, U4 = (U + 3u) & ~(size_t)3u;
    mt_q_requant *cached = NULL;
    if (!fc && !kept && B > run && U4 * (sizeof(mt_q_requant) / 4u) <= MT_S8_SPREAD / 2u - halves) {
        cached = (mt_q_requant *)(void *)(spread + halves);
        for (uint32_t u = 0; u < U; u += 4) mt_s8_requants(bias, rq, u, U - u < 4 ? U - u : 4, cached + u);
    }
    for (uint32_t b = 0; b < B; b += run, x += (size_t)run * D, y += (size_t)run * U) {
        const uint32_t n = B - b < run ? B - b : run, pairs = n / 2u;
        mt_s8_spread_pairs(x, pairs, D, p.x_zp, spread);
        for (uint32_t u = 0; u < U; u += 4) {
            const uint32_t R = U - u < 4 ? U - u : 4;
            mt_q_requant q[4];
            mt_q_fc f[4];
            int32_t start[4];
            if (kept)
                for (uint32_t r = 0; r < 4; ++r) start[r] = kept[u / 4u].start[r];
            else if (cached)
                for (uint32_t r = 0; r < 4; ++r) start[r] = cached[u + r].bias;
            else
                mt_s8_unit_constants(bias, rq, u, R, fc, q, f, start);
            const mt_q_requant *qu = kept ? kept[u / 4u].q : cached ? cached + u : q;
            const int8_t *wu = w + (size_t)u * D;
            uint32_t j = 0;
            if (R == 4 && pairs) {
                for (uint32_t r = 0; r < 4; r += 2) {
                    mt_s8_dot2x2 dot = {(const int8_t *)(const void *)spread, wu + (size_t)r * D, D, pairs, acc + r,
                                        start[r], start[r + 1]}; /* x: the pairs' halves */
                    mt_s8_dot2x2_xs_run(&dot);
                }
                j = 2 * pairs;
            }
            for (; j < n; ++j) { /* an odd last pixel; every pixel of the last 1-3 channels */
                int32_t *a = acc + 4 * j;
                a[0] = start[0], a[1] = start[1], a[2] = start[2], a[3] = start[3];
                mt_s8_dot(x + (size_t)j * D, wu, D, D, p.x_zp, R, a);
            }
            mt_s8_rows_requant(acc, n, R, qu, f, p, y + u, U, fc);
        }
    }
}
#endif

/* y[b, u] for B rows x [B, D] and weights W [U, D] (FullyConnected; a pointwise Conv2D's
 * pixels; a Conv2D's copied windows): four units at a time over every row (the last 1-3 by
 * mt_s8_dot, MT_S8_ROWS at a time), each row's inputs read once for them, each sum started
 * from its bias. fc (a constant where it is inlined): rq holds FullyConnected's double scales
 * (mt_q_fc_of) and the sums are requantized as LiteRT's reference FullyConnected does, else
 * Conv2D's (multiplier, shift) pairs with gemmlowp's rounding. consts (Conv2D's alone, or
 * NULL): the layer's constants kept across its calls (mt_s8_units_of). */
static inline void mt_s8_dense_rows(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *rq,
                                    int8_t *y, uint32_t B, uint32_t D, uint32_t U, uint32_t packed, const int fc,
                                    uint32_t *spread, void *consts)
{
    const mt_q_params p = mt_q_unpack(packed);
    int32_t acc[4 * MT_S8_RUN];
    mt_s8_units *kept = fc ? NULL : mt_s8_units_of(consts, bias, rq, U);
#if MT_S8_DSP
    if (spread != NULL && B >= 2 && D >= 4u && (D & 3u) == 0 && D <= MT_S8_SPREAD / 2u &&
        U >= MT_S8_PAIRS_UNITS) {
        mt_s8_dense_pairs(x, w, bias, rq, y, B, D, U, p, fc, spread, kept); /* x's pixel pairs spread once */
        return;
    }
    /* else below MT_S8_SUM_ROWS rows (no Σ W), x's halves less zx made once for every four
     * weight rows (mt_s8_dot4_xs_run), in the caller's scratch of MT_S8_SPREAD / 2 words */
    const uint32_t words = D / 4u;
    const int spread_x = spread != NULL && B < MT_S8_SUM_ROWS && words > 0 && (size_t)B * D <= MT_S8_SPREAD;
    if (spread_x) mt_s8_spread_x(x, B, D, p.x_zp, spread);
#else
    (void)spread; /* the DSP cores' alone */
#endif
    for (uint32_t u = 0; u < U; u += 4) {
        const uint32_t R = U - u < 4 ? U - u : 4;
        mt_q_requant own[4];
        mt_q_fc f[4];
        int32_t start[4];
        mt_s8_units *k = kept ? kept + u / 4u : NULL;
        const mt_q_requant *q = k ? k->q : own;
        if (k)
            for (uint32_t r = 0; r < 4; ++r) start[r] = k->start[r];
        else
            mt_s8_unit_constants(bias, rq, u, R, fc, own, f, start);
        const int8_t *xb = x, *wu = w + (size_t)u * D;
        int8_t *yb = y + u;
        if (R == 4 && D >= MT_S8_MIN_ROW && B >= MT_S8_SUM_ROWS) {
            /* Σ W·(x - zx) = Σ W·x - zx·Σ W: the rows' sums once, for every x row (and, kept,
             * for every call of the layer) */
            if (k && k->centered_made) {
                for (uint32_t r = 0; r < 4; ++r) start[r] = k->centered[r];
            } else {
                for (uint32_t r = 0; r < 4; ++r)
                    start[r] = (int32_t)((uint32_t)start[r] - (uint32_t)p.x_zp * mt_s8_sum(wu + (size_t)r * D, D));
                if (k) {
                    for (uint32_t r = 0; r < 4; ++r) k->centered[r] = start[r];
                    k->centered_made = 1;
                }
            }
            for (uint32_t b = 0; b < B; b += MT_S8_RUN, yb += (size_t)MT_S8_RUN * U) {
                const uint32_t n = B - b < MT_S8_RUN ? B - b : MT_S8_RUN;
                mt_s8_dot4_pixels(xb, wu, D, n, start, acc);
                xb += (size_t)n * D;
                mt_s8_rows_requant(acc, n, 4, q, f, p, yb, U, fc);
            }
            continue;
        }
        for (uint32_t b = 0; b < B; b += MT_S8_RUN, yb += (size_t)MT_S8_RUN * U) {
            const uint32_t n = B - b < MT_S8_RUN ? B - b : MT_S8_RUN;
#if MT_S8_DSP
            if (R == 4 && spread_x) { /* n = B: every row's halves spread above */
                for (uint32_t j = 0; j < n; ++j, xb += D) {
                    int32_t *a = acc + 4 * j;
                    a[0] = start[0], a[1] = start[1], a[2] = start[2], a[3] = start[3];
                    mt_s8_dot4_zx dot = {(const int8_t *)(const void *)(spread + (size_t)2 * words * j), wu, D, words,
                                         a, 0u}; /* x: the row's halves, less zx already */
                    mt_s8_dot4_xs_run(&dot);
                    if (D & 3u) mt_s8_dot(xb + 4 * words, wu + 4 * words, D, D & 3u, p.x_zp, 4, a); /* the last 1-3 */
                }
                mt_s8_rows_requant(acc, n, 4, q, f, p, yb, U, fc);
                continue;
            }
#endif
#if MT_S8_MVE
            if (R == 4) {
                mt_s8_dot4_centered(xb, wu, D, n, p.x_zp, start, acc);
                xb += (size_t)n * D;
                mt_s8_rows_requant(acc, n, 4, q, f, p, yb, U, fc);
                continue;
            }
#endif
            for (uint32_t j = 0; j < n; ++j, xb += D) {
                int32_t *a = acc + 4 * j;
                a[0] = start[0], a[1] = start[1], a[2] = start[2], a[3] = start[3];
                for (uint32_t r = 0; r < R; r += MT_S8_ROWS)
                    mt_s8_dot(xb, wu + (size_t)r * D, D, D, p.x_zp, R - r < MT_S8_ROWS ? R - r : MT_S8_ROWS, a + r);
            }
            mt_s8_rows_requant(acc, n, R, q, f, p, yb, U, fc);
        }
    }
}

#endif /* MT_OPS_S8_DENSE_ROWS_H */
