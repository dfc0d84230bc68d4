/*
 * The DSP extension's 3 x 3 stride-1 int8 depthwise (ops/portable/depthwise_s8_rows.h includes
 * it on the M4F, M7 and M33), TinyEngine's form: each channel's rows in a plane of their own,
 * so that one word load holds four neighbouring pixels of one channel and SMLAD adds two taps
 * of one output at once, where the four-channel form (dw_interior_tap) adds one a SMLABB.
 *
 * An output row's three input rows are copied, four channels at a time, into the three slots of
 * a plane buffer (mt_s8_dw3_slot): plane[(4·j + r)·Wp + u] is channel c + r of the input row
 * slot j holds, at padded column u (input column u - PL), and zx where that column or row lies
 * in the padding. The slots hold the kernel rows in any order (the run's weights follow them,
 * mt_s8_dw3_slots), so across the output rows of a whole tensor each input row is copied once. A padded tap's
 * term W·x is then W·zx, which the sum's start, bias - zx·Σ W over all nine taps, takes away
 * again (Σ W·(x - zx) = Σ W·x - zx·Σ W, exact in wrapping int32 sums): every output is an
 * interior one, no edge pixel takes another path.
 *
 * mt_s8_dw3_run, two outputs j, j + 1 of one channel a turn: a kernel row's word
 * (x0, x1, x2, x3) = its columns j..j + 3, SXTB16 spreads (x0, x2) and, rotated, (x1, x3), and
 *   A += SMLAD((x0, x2), (w0, w2)) + x1·w1        output j:     x0·w0 + x1·w1 + x2·w2
 *   B += SMLAD((x1, x3), (w0, w2)) + x2·w1        output j + 1: x1·w0 + x2·w1 + x3·w2
 * 7 instructions a kernel row for 6 MACs, the channel's nine weights in five registers for
 * the whole run: 25 instructions a turn of 18 MACs. Integer sums: SMLAD and SMLAxy wrap as
 * the C forms' uint32 sums do, so the bits are the reference's (the int8 siblings,
 * boards/app/siblings_s8.c; the planted faults dw3-* of tests/boards/asm_faults.txt).
 */
#ifndef MT_OPS_DSP_DEPTHWISE_S8_DSP_H
#define MT_OPS_DSP_DEPTHWISE_S8_DSP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */

/* The planes' bytes (three slots of four channels' rows of Wp = OW + MT_DW3_PAD_COLS columns:
 * the last turn of an odd row reads columns OW - 1..OW + 2): rows of up to 82 outputs take
 * this form, wider ones the four-channel one */
#define MT_DW3_PLANE_BYTES 1020u
#define MT_DW3_PAD_COLS 3u
/* The narrowest row the row-a-call form (the fused expansion's) takes the planes for: every
 * width gains here (the MobileNetV2 step's 12 streamed stride-1 pairs on the M7: 22.23M
 * instructions with the planes at every width, 22.38M from 16 outputs, 23.20M without) */
#define MT_DW3_ROW_MIN 1u

/* One channel's run: x at its slot 0's row, column of the run's first output (slots 1 and 2
 * stride and 2·stride bytes on: 4·Wp); with k_j the kernel row slot j holds, w02[j] =
 * (W[k_j,0], W[k_j,2]) and w1 = (W[k_0,1], W[k_1,1]), w21 = (W[k_2,1], 0) as int16 halves; the sums start at start and go to acc[4·j] (the
 * requantization's layout), two a turn for `pairs` turns. */
#define MT_S8_DW3_FIELDS(F, S)                  \
    F(S, 0, const int8_t *, x, ) /* moved on */ \
    F(S, 4, uint32_t, stride, )                 \
    F(S, 8, uint32_t, w02, [3]) /* 8, 12, 16 */ \
    F(S, 20, uint32_t, w1, )                    \
    F(S, 24, uint32_t, w21, )                   \
    F(S, 28, int32_t, start, )                  \
    F(S, 32, int32_t *, acc, )                  \
    F(S, 36, uint32_t, pairs, )
/* mt_s8_dw3_run reads mt_s8_dw3 */
MT_ASM_ARGS(mt_s8_dw3, MT_S8_DW3_FIELDS, 40);

/* The turn's registers: r0 x, r1 the slots' stride, r2-r4 w02 of slots 0-2, r5 w1,
 * r6 w21, r7 start, r8 A (output j), r9 B (j + 1), r10 (x0, x2), r11 (x1, x3), r12 acc, lr the
 * turns left: 14, more than GCC gives an asm statement, so a naked function saving the AAPCS
 * callee registers. Slots 1 and 2 first (their loads address from x), slot 0's load moves
 * x on. Unaligned LDRs, as the other DSP kernels read (these cores allow them). */
__attribute__((naked, noinline, unused)) static void mt_s8_dw3_run(mt_s8_dw3 *p __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "ldr r12, [r0, #32]\n\t"
                   "ldr lr, [r0, #36]\n\t"
                   "ldrd r2, r3, [r0, #8]\n\t"
                   "ldrd r4, r5, [r0, #16]\n\t"
                   "ldrd r6, r7, [r0, #24]\n\t"
                   "ldrd r0, r1, [r0, #0]\n\t"
                   "1:\n\t"
                   "ldr r10, [r0, r1]\n\t"          /* slot 1: x0 x1 x2 x3 */
                   "sxtb16 r11, r10, ror #8\n\t"    /* (x1, x3) */
                   "sxtb16 r10, r10\n\t"            /* (x0, x2) */
                   "smlad r8, r10, r3, r7\n\t"      /* A = start + x0·w0 + x2·w2 */
                   "smlad r9, r11, r3, r7\n\t"      /* B = start + x1·w0 + x3·w2 */
                   "smlabt r8, r11, r5, r8\n\t"     /* A += x1·w1 (slot 1's: w1's top) */
                   "smlatt r9, r10, r5, r9\n\t"     /* B += x2·w1 */
                   "ldr r10, [r0, r1, lsl #1]\n\t"  /* slot 2 */
                   "sxtb16 r11, r10, ror #8\n\t"
                   "sxtb16 r10, r10\n\t"
                   "smlad r8, r10, r4, r8\n\t"
                   "smlad r9, r11, r4, r9\n\t"
                   "smlabb r8, r11, r6, r8\n\t"
                   "smlatb r9, r10, r6, r9\n\t"
                   "ldr r10, [r0], #2\n\t"          /* slot 0; x on two outputs */
                   "sxtb16 r11, r10, ror #8\n\t"
                   "sxtb16 r10, r10\n\t"
                   "smlad r8, r10, r2, r8\n\t"
                   "smlad r9, r11, r2, r9\n\t"
                   "smlabb r8, r11, r5, r8\n\t"
                   "smlatb r9, r10, r5, r9\n\t"
                   "str r8, [r12], #16\n\t"
                   "str r9, [r12], #16\n\t"
                   "subs lr, lr, #1\n\t"
                   "bne 1b\n\t"
                   "pop {r4-r11, pc}\n\t");
}

/* Four channels' rows of a slot from `quads` x 4 input pixels (mt_s8_dw3_slot): x at pixel u's
 * channel c (C bytes a pixel), d at channel 0's row at column u, channel r's r·Wp further. */
#define MT_S8_DW3_COPY_FIELDS(F, S) \
    F(S, 0, const int8_t *, x, )    \
    F(S, 4, uint32_t, C, )          \
    F(S, 8, int8_t *, d, )          \
    F(S, 12, uint32_t, Wp, )        \
    F(S, 16, uint32_t, quads, )  /* >= 1 */
/* mt_s8_dw3_copy_run reads mt_s8_dw3_copy */
MT_ASM_ARGS(mt_s8_dw3_copy, MT_S8_DW3_COPY_FIELDS, 20);

/* A turn: four pixels' words a, b, e, f of four channels (bytes a0..a3: pixel u's channels
 * 0-3), transposed in registers into four channels' words of four pixels: PKHBT and PKHTB make
 * (a0 a1 e0 e1), (a2 a3 e2 e3), (b0 b1 f0 f1), (b2 b3 f2 f3), then UXTB16 (rotated for bytes
 * 1, 3) and a mask interleave their bytes: 28 instructions for 16 bytes, where GCC's C of it
 * took 40 (its offsets reloaded from the stack). Registers: r0 x, r1 C, r2 d (channel 0's),
 * r3 Wp, r4 channel 3's row (d + 3·Wp), r5 the turns left, r6-r12 the words, lr the mask
 * 0xff00ff00 (MOVW/MOVT: no ARM-state immediate holds it, where the Thumb-2 one does, and an
 * ARMv7-A Linux build in ARM state takes these kernels too). Unaligned LDR and STR, as these
 * cores allow. */
__attribute__((naked, noinline, unused)) static void mt_s8_dw3_copy_run(mt_s8_dw3_copy *p __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "movw lr, #0xff00\n\t"
                   "movt lr, #0xff00\n\t"           /* the odd bytes' mask */
                   "ldr r5, [r0, #16]\n\t"
                   "ldrd r2, r3, [r0, #8]\n\t"
                   "ldrd r0, r1, [r0, #0]\n\t"
                   "add r4, r2, r3\n\t"
                   "add r4, r4, r3, lsl #1\n\t"
                   "1:\n\t"
                   "ldr r6, [r0]\n\t"                /* a: pixel u */
                   "ldr r7, [r0, r1]\n\t"            /* b: u + 1 */
                   "add r0, r0, r1, lsl #1\n\t"
                   "ldr r8, [r0]\n\t"                /* e: u + 2 */
                   "ldr r9, [r0, r1]\n\t"            /* f: u + 3 */
                   "add r0, r0, r1, lsl #1\n\t"
                   "pkhbt r10, r6, r8, lsl #16\n\t"  /* a0 a1 e0 e1 */
                   "pkhtb r8, r8, r6, asr #16\n\t"   /* a2 a3 e2 e3 */
                   "pkhbt r6, r7, r9, lsl #16\n\t"   /* b0 b1 f0 f1 */
                   "pkhtb r9, r9, r7, asr #16\n\t"   /* b2 b3 f2 f3 */
                   "uxtb16 r11, r10\n\t"             /* a0 .. e0 .. */
                   "uxtb16 r12, r6\n\t"              /* b0 .. f0 .. */
                   "orr r11, r11, r12, lsl #8\n\t"   /* channel 0: a0 b0 e0 f0 */
                   "uxtb16 r10, r10, ror #8\n\t"     /* a1 .. e1 .. */
                   "and r6, r6, lr\n\t"              /* .. b1 .. f1 */
                   "orr r10, r10, r6\n\t"            /* channel 1 */
                   "uxtb16 r12, r8\n\t"
                   "uxtb16 r7, r9\n\t"
                   "orr r12, r12, r7, lsl #8\n\t"    /* channel 2 */
                   "uxtb16 r8, r8, ror #8\n\t"
                   "and r9, r9, lr\n\t"
                   "orr r8, r8, r9\n\t"              /* channel 3 */
                   "str r10, [r2, r3]\n\t"
                   "str r12, [r2, r3, lsl #1]\n\t"
                   "str r11, [r2], #4\n\t"           /* d on four columns */
                   "str r8, [r4], #4\n\t"
                   "subs r5, r5, #1\n\t"
                   "bne 1b\n\t"
                   "pop {r4-r11, pc}\n\t");
}

/* One slot of the planes (the layout atop this file): d[r·Wp + u] = channel c + r of an input
 * row at padded column u, for r < 4; row at channel c of its pixel 0, or NULL for a row in the
 * padding (all zx). W input columns, C bytes a pixel, the first at padded column PL <= 4, and
 * at most 4 columns of padding after them (Wp - PL - W <= 4, Wp >= 4). Four pixels at a time
 * are a 4 x 4 byte transpose (mt_s8_dw3_copy_run), the rest a byte at a time; the padding is a
 * word of zx at each end of a row, stored first and partly overwritten (GCC made byte loops
 * for it into calls to memset). */
static __attribute__((noinline)) void mt_s8_dw3_slot(const int8_t *row, uint32_t W, size_t C, uint32_t PL,
                                                     uint32_t Wp, int8_t zx, int8_t *d)
{
    if (!row) {
        memset(d, zx, 4u * Wp);
        return;
    }
    const uint32_t z4 = (uint8_t)zx * 0x01010101u;
    for (uint32_t r = 0; r < 4; ++r) memcpy(d + r * Wp, &z4, 4), memcpy(d + r * Wp + Wp - 4, &z4, 4);
    if (W >= 4u) {
        mt_s8_dw3_copy q = {row, (uint32_t)C, d + PL, Wp, W / 4u};
        mt_s8_dw3_copy_run(&q);
    }
    const int8_t *s = row + (size_t)(W & ~3u) * C;
    for (int8_t *o = d + PL + (W & ~3u); o < d + PL + W; ++o, s += C)
        o[0] = s[0], o[Wp] = s[1], o[2 * Wp] = s[2], o[3 * Wp] = s[3];
}

/* One channel's weights (w: W [3, 3, C] at the channel) as int16 halves, per kernel row k:
 * w02[k] = (W[k,0], W[k,2]) and w1[k] = W[k,1]; and the sums' start, bias - zx·Σ W over the
 * nine taps (wrapping) */
typedef struct mt_s8_dw3_weights {
    uint32_t w02[3];
    uint16_t w1[3];
    int32_t start;
} mt_s8_dw3_weights;

static inline void mt_s8_dw3_weights_of(mt_s8_dw3_weights *k, const int8_t *w, size_t C, int32_t bias, int32_t zx)
{
    uint32_t sum = 0;
    for (uint32_t t = 0; t < 9; ++t) sum += (uint32_t)(int32_t)w[t * C];
    for (uint32_t kh = 0; kh < 3; ++kh) {
        k->w02[kh] = (uint16_t)w[3 * kh * C] | (uint32_t)(uint16_t)w[(3 * kh + 2) * C] << 16;
        k->w1[kh] = (uint16_t)w[(3 * kh + 1) * C];
    }
    k->start = (int32_t)((uint32_t)bias - (uint32_t)zx * sum);
}

/* The run's weights where slot j of the planes holds kernel row kernel_row[j] (the sum is
 * the same in any order of its terms) */
static inline void mt_s8_dw3_slots(mt_s8_dw3 *run, const mt_s8_dw3_weights *k, const uint32_t kernel_row[3])
{
    run->w02[0] = k->w02[kernel_row[0]], run->w02[1] = k->w02[kernel_row[1]], run->w02[2] = k->w02[kernel_row[2]];
    run->w1 = k->w1[kernel_row[0]] | (uint32_t)k->w1[kernel_row[1]] << 16, run->w21 = k->w1[kernel_row[2]];
    run->start = k->start;
}

/* Whether mt_s8_dw3_slot can make a slot: padding of at most a word on each side */
static inline int mt_s8_dw3_fits(uint32_t W, size_t C, uint32_t PL, uint32_t Wp)
{
    (void)C;
    return PL <= 4u && Wp - PL - W <= 4u;
}

/* acc[4·j] for n outputs of one channel from its plane's slot 0 at x (slots stride bytes
 * apart), with the run's weights (mt_s8_dw3_slots): two a turn, so an odd n's last turn makes
 * one sum more, at acc[4·n] (the caller's runs are even but for a row's last) */
static inline void mt_s8_dw3_channel(mt_s8_dw3 *run, const int8_t *x, size_t stride, uint32_t n, int32_t *acc)
{
    run->x = x, run->stride = (uint32_t)stride, run->acc = acc, run->pairs = (n + 1u) / 2u;
    mt_s8_dw3_run(run);
}

#endif /* MT_OPS_DSP_DEPTHWISE_S8_DSP_H */
