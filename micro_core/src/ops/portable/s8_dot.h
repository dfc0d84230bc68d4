/*
 * The inner products of the int8 siblings (conv_s8_portable.c, dense_s8_portable.c, through
 * s8_dense_rows.h): a run of n int8 inputs x against up to four int8 weight rows,
 *
 *   acc[r] += Σ_{i<n} w[r·ws + i] · (x[i] - zx)          r < R <= MT_S8_ROWS
 *
 * which is the reference kernels' term (TFLite's W·(x - zx), weight zero point 0). Integer
 * sums are exact in any order (ops/quant.h), so each build takes the fastest form it has:
 *
 *   Helium (Cortex-M55): 16 lanes a vector. VMLADAVA.S8 adds the 16 products W·x to a
 *     scalar, VADDVA.S8 adds the 16 weights, and the run's total is Σ W·x - zx·Σ W
 *     (x - zx does not fit an int8 lane). Two rows at a time: each accumulator needs an
 *     even-numbered general-purpose register.
 *   DSP extension (Cortex-M4F, M7, M33; its naked loops in ops/dsp/s8_dot_dsp.h): four
 *     bytes a word. SXTB16 spreads bytes 0 and 2 (and, rotated, 1 and 3) into two int16
 *     halves, SSUB16 subtracts zx from both (x - zx is in [-255, 255]), and SMLAD adds both
 *     products of a pair to the sum: 5 instructions per 4 x values, then 5 per weight row for
 *     4 MACs. The words are read unaligned (LDR), as CMSIS-NN does.
 *   Elsewhere (Cortex-M3, x86, wasm): one x - zx per input, shared by the rows' MACs.
 * Their callers, mt_s8_dense_rows and its spread forms, are s8_dense_rows.h's. There each sum
 * starts from bias - zx·Σ W (mt_s8_sum) and mt_s8_dot4_pixels adds Σ W·x, no zx per term: two
 * rows against two pixels in assembly on the DSP cores, four rows a pixel by VMLADAVA on Helium
 * (a row of up to 16 inputs held in a vector register), and on x86-64 with AVX2 VPMADDWD
 * (ops/x86/s8_avx2.c, with the requantization's form, chosen at run time). Where the
 * reference's int32 sum would overflow (undefined in C), these forms wrap modulo 2^32 (uint32
 * arithmetic, SMLAD, VMLADAVA): equal to it wherever it is defined, and no target traps.
 */
#ifndef MT_OPS_FAST_S8_DOT_H
#define MT_OPS_FAST_S8_DOT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops/quant.h"

#if defined(__ARM_FEATURE_MVE) && !defined(MT_NO_MVE_KERNELS)
#include <arm_mve.h>
#define MT_S8_MVE 1
#define MT_S8_ROWS 2u
#else
#define MT_S8_MVE 0
#define MT_S8_ROWS 4u
#endif
#if !MT_S8_MVE && defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32)
#define MT_S8_DSP 1
#else
#define MT_S8_DSP 0
#endif
#if MT_S8_DSP || defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
#endif
#include "ops/x86/x86.h"
#if MT_X86_KERNELS
#include "ops/x86/s8_avx2.h"
#endif

#if MT_S8_MVE
/* Σ W·(x - zx) = Σ W·x - zx·Σ W, in uint32 (wrapping) arithmetic */
static inline int32_t mt_s8_centered(int32_t wx, int32_t wsum, int32_t zx)
{
    return (int32_t)((uint32_t)wx - (uint32_t)zx * (uint32_t)wsum);
}

static inline __attribute__((always_inline)) void mt_s8_dot(const int8_t *x, const int8_t *w, size_t ws, uint32_t n,
                                                            int32_t zx, uint32_t R, int32_t *acc)
{
    int32_t wx0 = 0, ws0 = 0, wx1 = 0, ws1 = 0;
    const int8_t *w1 = w + (R > 1 ? ws : 0); /* R = 1: row 1 repeats row 0, its sums unused */
    for (int32_t left = (int32_t)n; left > 0; left -= 16, x += 16, w += 16, w1 += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)left); /* lanes past the run load 0 */
        const int8x16_t xv = vldrbq_z_s8(x, p), a = vldrbq_z_s8(w, p), b = vldrbq_z_s8(w1, p);
        wx0 = vmladavaq_s8(wx0, xv, a), ws0 = vaddvaq_s8(ws0, a);
        wx1 = vmladavaq_s8(wx1, xv, b), ws1 = vaddvaq_s8(ws1, b);
    }
    acc[0] = (int32_t)((uint32_t)acc[0] + (uint32_t)mt_s8_centered(wx0, ws0, zx));
    if (R > 1) acc[1] = (int32_t)((uint32_t)acc[1] + (uint32_t)mt_s8_centered(wx1, ws1, zx));
}

/* acc[4·j + r] = start[r] + Σ_{i<D} W[r, i]·x[j·D + i] for n pixels j, four rows D bytes apart
 * (no zero point: the caller's start holds -zx·Σ W). A row of up to 16 inputs (a small
 * window's, a narrow pointwise layer's) keeps the four rows' weights in vector registers
 * across the pixels: a pixel is one predicated load of x (the lanes past D load 0) and four
 * VMLADAVA, 16 MACs each, where the two-row form spent about 25 instructions a pixel pair of
 * rows, Σ W and the zero point included. Longer rows: 16 inputs at a time, x's vector loaded
 * once for the four rows, the whole vectors unpredicated (ten instructions for 64 MACs, where
 * a predicate for every vector and the rows' addresses recomputed took 32), then one
 * predicated vector for the rest. Sums wrap, as VMLADAVA's. */
static __attribute__((noinline, unused)) void mt_s8_dot4_pixels(const int8_t *x, const int8_t *w, size_t D,
                                                                uint32_t n, const int32_t start[4], int32_t *acc)
{
    const int32_t s0 = start[0], s1 = start[1], s2 = start[2], s3 = start[3];
    if (D <= 16u) {
        const mve_pred16_t p = vctp8q((uint32_t)D);
        const int8x16_t w0 = vldrbq_z_s8(w, p), w1 = vldrbq_z_s8(w + D, p), w2 = vldrbq_z_s8(w + 2 * D, p),
                        w3 = vldrbq_z_s8(w + 3 * D, p);
        for (uint32_t j = 0; j < n; ++j, x += D, acc += 4) {
            const int8x16_t xv = vldrbq_z_s8(x, p);
            acc[0] = vmladavaq_s8(s0, xv, w0), acc[1] = vmladavaq_s8(s1, xv, w1);
            acc[2] = vmladavaq_s8(s2, xv, w2), acc[3] = vmladavaq_s8(s3, xv, w3);
        }
        return;
    }
    const uint32_t whole = (uint32_t)(D / 16u), tail = (uint32_t)(D % 16u);
    const mve_pred16_t p = vctp8q(tail); /* the last D mod 16 inputs; lanes past them load 0 */
    for (uint32_t j = 0; j < n; ++j, x += D, acc += 4) {
        int32_t a0 = s0, a1 = s1, a2 = s2, a3 = s3;
        const int8_t *xp = x, *w0 = w, *w1 = w + D, *w2 = w + 2 * D, *w3 = w + 3 * D;
        for (uint32_t k = whole; k; --k) { /* unpredicated: five loads with writeback, four VMLADAVA */
            const int8x16_t xv = vld1q_s8(xp);
            a0 = vmladavaq_s8(a0, xv, vld1q_s8(w0)), a1 = vmladavaq_s8(a1, xv, vld1q_s8(w1));
            a2 = vmladavaq_s8(a2, xv, vld1q_s8(w2)), a3 = vmladavaq_s8(a3, xv, vld1q_s8(w3));
            xp += 16, w0 += 16, w1 += 16, w2 += 16, w3 += 16;
        }
        if (tail) {
            const int8x16_t xv = vldrbq_z_s8(xp, p);
            a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0, p)), a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1, p));
            a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2, p)), a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3, p));
        }
        acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
    }
}

/* acc[4·j + r] = start[r] + Σ_{i<D} W[r, i]·(x[j·D + i] - zx) for n pixels j (few: a
 * FullyConnected's batch), four rows D bytes apart: mt_s8_dot4_pixels's loop with each row's
 * Σ W beside its products (a VADDVA on the vector the VMLADAVA read), so the weights are read
 * once where Σ W first (mt_s8_sum) read them twice: 14 instructions for 64 MACs. The sums
 * wrap, as VMLADAVA's. */
static __attribute__((noinline, unused)) void mt_s8_dot4_centered(const int8_t *x, const int8_t *w, size_t D,
                                                                  uint32_t n, int32_t zx, const int32_t start[4],
                                                                  int32_t *acc)
{
    const uint32_t whole = (uint32_t)(D / 16u), tail = (uint32_t)(D % 16u);
    const mve_pred16_t p = vctp8q(tail); /* the last D mod 16 inputs; lanes past them load 0 */
    for (uint32_t j = 0; j < n; ++j, x += D, acc += 4) {
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        const int8_t *xp = x, *w0 = w, *w1 = w + D, *w2 = w + 2 * D, *w3 = w + 3 * D;
        for (uint32_t k = whole; k; --k) {
            const int8x16_t xv = vld1q_s8(xp), v0 = vld1q_s8(w0), v1 = vld1q_s8(w1), v2 = vld1q_s8(w2),
                            v3 = vld1q_s8(w3);
            a0 = vmladavaq_s8(a0, xv, v0), s0 = vaddvaq_s8(s0, v0), a1 = vmladavaq_s8(a1, xv, v1), s1 = vaddvaq_s8(s1, v1);
            a2 = vmladavaq_s8(a2, xv, v2), s2 = vaddvaq_s8(s2, v2), a3 = vmladavaq_s8(a3, xv, v3), s3 = vaddvaq_s8(s3, v3);
            xp += 16, w0 += 16, w1 += 16, w2 += 16, w3 += 16;
        }
        if (tail) {
            const int8x16_t xv = vldrbq_z_s8(xp, p), v0 = vldrbq_z_s8(w0, p), v1 = vldrbq_z_s8(w1, p),
                            v2 = vldrbq_z_s8(w2, p), v3 = vldrbq_z_s8(w3, p);
            a0 = vmladavaq_s8(a0, xv, v0), s0 = vaddvaq_s8(s0, v0), a1 = vmladavaq_s8(a1, xv, v1), s1 = vaddvaq_s8(s1, v1);
            a2 = vmladavaq_s8(a2, xv, v2), s2 = vaddvaq_s8(s2, v2), a3 = vmladavaq_s8(a3, xv, v3), s3 = vaddvaq_s8(s3, v3);
        }
        acc[0] = (int32_t)((uint32_t)start[0] + (uint32_t)mt_s8_centered(a0, s0, zx));
        acc[1] = (int32_t)((uint32_t)start[1] + (uint32_t)mt_s8_centered(a1, s1, zx));
        acc[2] = (int32_t)((uint32_t)start[2] + (uint32_t)mt_s8_centered(a2, s2, zx));
        acc[3] = (int32_t)((uint32_t)start[3] + (uint32_t)mt_s8_centered(a3, s3, zx));
    }
}

/* Σ_{i<n} w[i] (wrapping): VADDVA.S8 adds 16 at a time, the whole vectors unpredicated (a
 * load with writeback and a VADDVA), then one predicated vector */
static inline uint32_t mt_s8_sum(const int8_t *w, uint32_t n)
{
    int32_t sum = 0;
    for (uint32_t k = n / 16u; k; --k, w += 16) sum = vaddvaq_s8(sum, vld1q_s8(w));
    if (n % 16u) sum = vaddvaq_s8(sum, vldrbq_z_s8(w, vctp8q(n % 16u)));
    return (uint32_t)sum;
}
#elif MT_S8_DSP
#include "ops/dsp/s8_dot_dsp.h"

static inline uint32_t mt_s8_word(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v); /* one LDR: these cores load unaligned words */
    return v;
}

/* zx in both int16 halves, for SSUB16 */
static inline int16x2_t mt_s8_pair(int32_t zx)
{
    return (int16x2_t)(((uint32_t)zx & 0xffffu) | ((uint32_t)zx << 16));
}

/* bytes 1 and 3 of v sign-extended into the halves: one SXTB16 with ROR #8 (GCC's __sxtb16 of
 * a rotated word compiles to a separate MOV ROR) */
static inline __attribute__((always_inline)) int16x2_t mt_s8_odd(uint32_t v)
{
    int16x2_t r;
    __asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}

/* acc += Σ of one weight row's four products with x's halves xe (bytes 0, 2) and xo (1, 3) */
static inline __attribute__((always_inline)) int32_t mt_s8_smlad4(uint32_t ww, int16x2_t xe, int16x2_t xo, int32_t acc)
{
    acc = __smlad(xe, __sxtb16(ww), acc);
    return __smlad(xo, mt_s8_odd(ww), acc);
}

/* One weight row's turn of mt_s8_dot4_pixels: wt = the row's word (addressed by `load`), then
 * a += xe·W's bytes 0, 2 + xo·W's bytes 1, 3 */
#define MT_S8_ROW(a, load)                                                                                        \
    load "\n\tsxtb16 %[t], %[wt]\n\tsmlad %[" a "], %[xe], %[t], %[" a "]\n\t"                               \
         "sxtb16 %[wt], %[wt], ror #8\n\tsmlad %[" a "], %[xo], %[wt], %[" a "]\n\t"

/* acc[4·j + r] = start[r] + Σ_{i<D} W[r, i]·x[j·D + i] for n pixels j (no zero point: the
 * caller's start holds -zx·Σ W), four rows D bytes apart, D >= 4. Where D is a multiple of 4,
 * pixel pairs go through mt_s8_dot2x2_run; the rest (an odd last pixel, or every pixel of a D
 * with 1-3 inputs past its words, such as a first layer's 27) four rows against one pixel:
 * the words in an assembly loop, 27 instructions a turn of 16 MACs, then the last 1-3 inputs.
 * Not inlined: the C form of that loop with zx left GCC two registers short and spilled 8 a
 * turn; this one needs 12 (4 sums, x, row 0, the stride, the count, 4 temporaries), which
 * GCC finds even where PIC or a frame pointer holds one, and the loop over the pixels is here
 * too (from the caller, each pixel's call reloaded some 40 instructions of its state). */
static __attribute__((noinline, unused)) void mt_s8_dot4_pixels(const int8_t *x, const int8_t *w, size_t D,
                                                                uint32_t n, const int32_t start[4], int32_t *acc)
{
    const uint32_t words = (uint32_t)(D / 4u), tail = (uint32_t)(D & 3u);
    if (tail == 0 && n >= 2) { /* pixel pairs two rows at a time (mt_s8_dot2x2_run), the odd one below */
        for (uint32_t r = 0; r < 4; r += 2) {
            mt_s8_dot2x2 p = {x, w + r * D, (uint32_t)D, n / 2u, acc + r, start[r], start[r + 1]};
            mt_s8_dot2x2_run(&p);
        }
        const uint32_t done = n & ~1u;
        x += done * D, acc += 4 * done, n -= done;
    }
    for (uint32_t j = 0; j < n; ++j, acc += 4, x += D) {
        int32_t a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3];
        const int8_t *xp = x, *wp = w;
        uint32_t k = words, xe, xo, wt, t;
        __asm volatile("1:\n\t"
                       "ldr %[xo], [%[x]], #4\n\t"
                       "sxtb16 %[xe], %[xo]\n\t"
                       "sxtb16 %[xo], %[xo], ror #8\n\t"
                       MT_S8_ROW("a1", "ldr %[wt], [%[w], %[ws]]")
                       MT_S8_ROW("a2", "add %[wt], %[w], %[ws], lsl #1\n\tldr %[wt], [%[wt]]")
                       MT_S8_ROW("a3", "add %[wt], %[w], %[ws], lsl #1\n\tldr %[wt], [%[wt], %[ws]]")
                       MT_S8_ROW("a0", "ldr %[wt], [%[w]], #4")
                       "subs %[n], %[n], #1\n\t"
                       "bne 1b"
                       : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(xp), [w] "+r"(wp),
                         [n] "+r"(k), [xe] "=&r"(xe), [xo] "=&r"(xo), [wt] "=&r"(wt), [t] "=&r"(t)
                       : [ws] "r"(D)
                       : "cc", "memory");
        for (uint32_t i = 0; i < tail; ++i) { /* xp and wp are past the words; sums wrap, as SMLAD's */
            const uint32_t xv = (uint32_t)(int32_t)xp[i];
            a0 = (int32_t)((uint32_t)a0 + (uint32_t)(int32_t)wp[i] * xv);
            a1 = (int32_t)((uint32_t)a1 + (uint32_t)(int32_t)wp[D + i] * xv);
            a2 = (int32_t)((uint32_t)a2 + (uint32_t)(int32_t)wp[2 * D + i] * xv);
            a3 = (int32_t)((uint32_t)a3 + (uint32_t)(int32_t)wp[3 * D + i] * xv);
        }
        acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
    }
}
#undef MT_S8_ROW

/* Σ_{i<n} w[i] (wrapping): bytes + 128 are unsigned, and USADA8 adds four of them a word
 * (|w + 128 - 0|), where a byte a turn took five instructions */
static inline uint32_t mt_s8_sum(const int8_t *w, uint32_t n)
{
    uint32_t sum = 0u - 128u * (n & ~3u);
    for (const int8_t *end = w + (n & ~3u); w != end; w += 4) sum = __usada8(mt_s8_word(w) ^ 0x80808080u, 0u, sum);
    for (uint32_t i = 0; i < (n & 3u); ++i) sum += (uint32_t)(int32_t)w[i];
    return sum;
}

static inline __attribute__((always_inline)) void mt_s8_dot(const int8_t *x, const int8_t *w, size_t ws, uint32_t n,
                                                            int32_t zx, uint32_t R, int32_t *acc)
{
    const int16x2_t zz = mt_s8_pair(zx);
    const int8_t *w1 = w + ws, *w2 = w + 2 * ws, *w3 = w + 3 * ws;
    uint32_t i = 0;
    if (R == 4 && n >= 4) { /* the words in assembly */
        mt_s8_dot4_zx p = {x, w, (uint32_t)ws, n / 4u, acc, (uint32_t)zz};
        mt_s8_dot4_zx_run(&p);
        i = n & ~3u;
    }
    int32_t a0 = acc[0], a1 = R > 1 ? acc[1] : 0, a2 = R > 2 ? acc[2] : 0, a3 = R > 3 ? acc[3] : 0;
    if (R < 4)
        for (; i + 4 <= n; i += 4) {
            const uint32_t xw = mt_s8_word(x + i);
            const int16x2_t xe = __ssub16(__sxtb16(xw), zz), xo = __ssub16(mt_s8_odd(xw), zz);
            a0 = mt_s8_smlad4(mt_s8_word(w + i), xe, xo, a0);
            if (R > 1) a1 = mt_s8_smlad4(mt_s8_word(w1 + i), xe, xo, a1);
            if (R > 2) a2 = mt_s8_smlad4(mt_s8_word(w2 + i), xe, xo, a2);
        }
    for (; i < n; ++i) { /* the run's last 1-3 inputs */
        const int32_t xv = (int32_t)x[i] - zx; /* sums wrap, as SMLAD's */
        a0 = (int32_t)((uint32_t)a0 + (uint32_t)((int32_t)w[i] * xv));
        if (R > 1) a1 = (int32_t)((uint32_t)a1 + (uint32_t)((int32_t)w1[i] * xv));
        if (R > 2) a2 = (int32_t)((uint32_t)a2 + (uint32_t)((int32_t)w2[i] * xv));
        if (R > 3) a3 = (int32_t)((uint32_t)a3 + (uint32_t)((int32_t)w3[i] * xv));
    }
    acc[0] = a0;
    if (R > 1) acc[1] = a1;
    if (R > 2) acc[2] = a2;
    if (R > 3) acc[3] = a3;
}
#else
static inline __attribute__((always_inline)) void mt_s8_dot(const int8_t *x, const int8_t *w, size_t ws, uint32_t n,
                                                            int32_t zx, uint32_t R, int32_t *acc)
{
    const int8_t *w1 = w + ws, *w2 = w + 2 * ws, *w3 = w + 3 * ws;
    int32_t a0 = acc[0], a1 = R > 1 ? acc[1] : 0, a2 = R > 2 ? acc[2] : 0, a3 = R > 3 ? acc[3] : 0;
    if (R == 4)
        for (uint32_t i = 0; i < n; ++i) {
            const int32_t xv = (int32_t)x[i] - zx;
            a0 += (int32_t)w[i] * xv, a1 += (int32_t)w1[i] * xv;
            a2 += (int32_t)w2[i] * xv, a3 += (int32_t)w3[i] * xv;
        }
    else
        for (uint32_t i = 0; i < n; ++i) {
            const int32_t xv = (int32_t)x[i] - zx;
            a0 += (int32_t)w[i] * xv;
            if (R > 1) a1 += (int32_t)w1[i] * xv;
            if (R > 2) a2 += (int32_t)w2[i] * xv;
        }
    acc[0] = a0;
    if (R > 1) acc[1] = a1;
    if (R > 2) acc[2] = a2;
    if (R > 3) acc[3] = a3;
}

/* mt_s8_dot4_pixels's portable form: acc[4·j + r] = start[r] + Σ_{i<D} W[r, i]·x[j·D + i], no
 * zero point (start holds -zx·Σ W), so a term is two loads and a multiply-accumulate. Not
 * inlined: in mt_s8_dense_rows's registers the four row pointers went through the stack
 * (the M3's turn of 4 MACs took 18 instructions). Sums wrap, as the DSP forms' do. On x86-64
 * with AVX2, ops/x86/s8_avx2.c's form instead. */
static __attribute__((noinline, unused)) void mt_s8_dot4_pixels(const int8_t *x, const int8_t *w, size_t D,
                                                                uint32_t n, const int32_t start[4], int32_t *acc)
{
#if MT_X86_KERNELS
    if (mt_x86_vector()) { /* the CPU has AVX2 (ops/x86/s8_avx2.c) */
        mt_s8_dot4_pixels_avx2(x, w, D, n, start, acc);
        return;
    }
#endif
    const int8_t *w1 = w + D, *w2 = w + 2 * D, *w3 = w + 3 * D;
    for (uint32_t j = 0; j < n; ++j, acc += 4, x += D) {
        uint32_t a0 = (uint32_t)start[0], a1 = (uint32_t)start[1], a2 = (uint32_t)start[2], a3 = (uint32_t)start[3];
        for (size_t i = 0; i < D; ++i) {
            const int32_t xv = x[i];
            a0 += (uint32_t)(w[i] * xv), a1 += (uint32_t)(w1[i] * xv);
            a2 += (uint32_t)(w2[i] * xv), a3 += (uint32_t)(w3[i] * xv);
        }
        acc[0] = (int32_t)a0, acc[1] = (int32_t)a1, acc[2] = (int32_t)a2, acc[3] = (int32_t)a3;
    }
}

/* Σ_{i<n} w[i] (wrapping) */
static inline uint32_t mt_s8_sum(const int8_t *w, uint32_t n)
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) sum += (uint32_t)(int32_t)w[i];
    return sum;
}
#endif

/* The shortest weight row (D) mt_s8_dot4_pixels takes: the DSP form's assembly loop runs at
 * least one word */
#if MT_S8_DSP
#define MT_S8_MIN_ROW 4u
#else
#define MT_S8_MIN_ROW 1u
#endif

/* The length a Conv2D's copied windows of D inputs are padded to (with zx, their weight rows
 * with 0: terms 0·(zx - zx) = 0): D rounded up to a word on the DSP cores (a first layer's 27
 * inputs took a C loop for their last 3 at every pixel and four rows, and its pixels could
 * not pair in mt_s8_dot2x2_run), D elsewhere */
static inline size_t mt_s8_padded_row(size_t D)
{
    return MT_S8_DSP ? (D + 3u) & ~(size_t)3u : D;
}

#include "ops/portable/s8_requant.h"

#endif /* MT_OPS_FAST_S8_DOT_H */
