/*
 * The DSP extension's assembly of the int8 products (ops/portable/s8_dot.h includes it on the
 * cores that have it: M4F, M7, M33): naked functions whose loops hold more registers than GCC
 * gives an asm statement, each reading its parameters from a struct whose field offsets a
 * typedef checks. Integer sums: SMLAD wraps as the C forms' uint32 sums do, so every form
 * gives the reference's bits (the int8 siblings, boards/app/siblings_s8.c; the planted faults
 * s8-* of tests/boards/asm_faults.txt).
 */
#ifndef MT_OPS_DSP_S8_DOT_DSP_H
#define MT_OPS_DSP_S8_DOT_DSP_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */

/* Two weight rows against two pixels (mt_s8_dot2x2_run): x, w at pixel j's and row r's first
 * byte (the next pixel and the next row D bytes on), pairs >= 1 pixel pairs, D a multiple of 4
 * (>= 4); acc at acc[4·j + r] of mt_s8_dot4_pixels's layout, advanced 8 sums a pair; the
 * rows' sums start at start0 and start1. mt_s8_dot2x2_xs_run reads the same, x then the
 * pairs' spread halves (mt_s8_spread_pairs's uint32 words). */
#define MT_S8_DOT2X2_FIELDS(F, S)                   \
    F(S, 0, const int8_t *, x, )                    \
    F(S, 4, const int8_t *, w, )                    \
    F(S, 8, uint32_t, D, )                          \
    F(S, 12, uint32_t, pairs, )  /* counted down */ \
    F(S, 16, int32_t *, acc, )   /* moved on */     \
    F(S, 20, int32_t, start0, )                     \
    F(S, 24, int32_t, start1, )
/* mt_s8_dot2x2_run and mt_s8_dot2x2_xs_run read mt_s8_dot2x2 */
MT_ASM_ARGS(mt_s8_dot2x2, MT_S8_DOT2X2_FIELDS, 28);

/* The pixel pairs' loop of both two-row kernels around their words: r0 x (or its halves), r1
 * W, r2 D from p; at each pair the sums r4-r7 from start0, start1 (label 1) ... */
#define MT_S8_2X2_BEGIN                                                                                           \
    "push {r0, r4-r11, lr}\n\t"                                                                                   \
    "ldr r1, [r0, #4]\n\t"                                                                                        \
    "ldr r2, [r0, #8]\n\t"                                                                                        \
    "ldr r0, [r0, #0]\n\t"                                                                                        \
    "1:\n\t"                                                                                                      \
    "ldr r12, [sp]\n\t"                                                                                           \
    "ldrd r4, r5, [r12, #20]\n\t"                                                                                 \
    "mov r6, r4\n\t"                                                                                              \
    "mov r7, r5\n\t"
/* ... and after its words, W back to the rows' first byte, the pair's four sums stored and acc
 * and the pairs left moved on in p */
#define MT_S8_2X2_END                                                                                             \
    "sub r1, r1, r2\n\t" /* W: back to the rows' first byte */                                                    \
    "ldr r12, [sp]\n\t"                                                                                           \
    "ldr lr, [r12, #16]\n\t"                                                                                      \
    "strd r4, r5, [lr]\n\t"                                                                                       \
    "strd r6, r7, [lr, #16]\n\t"                                                                                  \
    "add lr, lr, #32\n\t"                                                                                         \
    "str lr, [r12, #16]\n\t"                                                                                      \
    "ldr lr, [r12, #12]\n\t"                                                                                      \
    "subs lr, lr, #1\n\t"                                                                                         \
    "str lr, [r12, #12]\n\t"                                                                                      \
    "bne 1b\n\t"                                                                                                  \
    "pop {r0, r4-r11, pc}"

/* For each pixel pair j, j + 1 and k, p in {0, 1}:
 *   acc[4·(j + p) + r + k] = start_k + Σ_{i<D} W[r + k, i]·x[(j + p)·D + i]
 * Both pixels' x words are spread once for both rows and each weight word once for both
 * pixels: 22 instructions a turn of 16 MACs, where four rows against one pixel take 27 (there
 * a weight word serves one pixel, and rows 2 and 3 cost an address add each). The 14
 * registers of the turn (r0 x, r1 W, r2 D, r3 the words left, r4-r7 the sums of (row 0, pixel
 * 0), (1, 0), (0, 1), (1, 1), r8-r11 the pixels' halves, r12 and lr a weight word and half) are
 * more than GCC gives an asm statement: a naked function that saves the AAPCS callee registers,
 * with p on the stack. Unaligned LDRs as in mt_s8_dot4_pixels; SMLAD wraps as the sums do. */
__attribute__((naked, noinline, unused)) static void mt_s8_dot2x2_run(mt_s8_dot2x2 *p __attribute__((unused)))
{
    __asm volatile(MT_S8_2X2_BEGIN
                   "lsrs r3, r2, #2\n\t"
                   "2:\n\t"
                   "ldr r8, [r0, r2]\n\t"        /* pixel 1's word */
                   "ldr r9, [r0], #4\n\t"        /* pixel 0's */
                   "sxtb16 r10, r9\n\t"
                   "sxtb16 r9, r9, ror #8\n\t"
                   "sxtb16 r11, r8\n\t"
                   "sxtb16 r8, r8, ror #8\n\t"
                   "ldr r12, [r1, r2]\n\t"       /* row 1's word */
                   "sxtb16 lr, r12\n\t"
                   "smlad r5, r10, lr, r5\n\t"
                   "smlad r7, r11, lr, r7\n\t"
                   "sxtb16 r12, r12, ror #8\n\t"
                   "smlad r5, r9, r12, r5\n\t"
                   "smlad r7, r8, r12, r7\n\t"
                   "ldr r12, [r1], #4\n\t"       /* row 0's */
                   "sxtb16 lr, r12\n\t"
                   "smlad r4, r10, lr, r4\n\t"
                   "smlad r6, r11, lr, r6\n\t"
                   "sxtb16 r12, r12, ror #8\n\t"
                   "smlad r4, r9, r12, r4\n\t"
                   "smlad r6, r8, r12, r6\n\t"
                   "subs r3, r3, #1\n\t"
                   "bne 2b\n\t"
                   "add r0, r0, r2\n\t"          /* x: past pixel 0 (D), past pixel 1 */
                   MT_S8_2X2_END);
}

/* One x row against four weight rows with the zero point (mt_s8_dot4_zx_run): x at the row's
 * first byte, w at row 0's (the rows D bytes apart), words >= 1 words of four inputs, acc[0..3]
 * the sums (read, and written back), zz zx in both int16 halves (mt_s8_pair). mt_s8_dot4_xs_run
 * reads the same but zz, x then the row's halves less zx (mt_s8_spread_x's uint32 words: word
 * k's bytes 0, 2 at 2k, bytes 1, 3 at 2k + 1). */
#define MT_S8_DOT4_ZX_FIELDS(F, S) \
    F(S, 0, const int8_t *, x, )   \
    F(S, 4, const int8_t *, w, )   \
    F(S, 8, uint32_t, D, )         \
    F(S, 12, uint32_t, words, )    \
    F(S, 16, int32_t *, acc, )     \
    F(S, 20, uint32_t, zz, )
/* mt_s8_dot4_zx_run and mt_s8_dot4_xs_run read mt_s8_dot4_zx */
MT_ASM_ARGS(mt_s8_dot4_zx, MT_S8_DOT4_ZX_FIELDS, 24);

/* acc[r] += Σ_{i<4·words} W[r, i]·(x[i] - zx) for the four rows r: each word of x spread once
 * (SXTB16, then SSUB16 of zx from both halves: x - zx in [-255, 255]) for the four rows, each
 * row's word spread and two SMLAD: 28 instructions a turn of 16 MACs, where mt_s8_dot's C loop
 * took 40 (GCC spilled its row pointers). Its 14 registers: r0 x, r1 row 0's word, r2 D, r3 the
 * words left, r4-r7 the four sums, r8 and r9 x's halves less zx, r10 and r11 a weight word and
 * half, r12 zx's pair, lr the address of row 2's word (row 3's D further); p on the stack.
 * Unaligned LDRs as in mt_s8_dot4_pixels; SMLAD wraps as the sums do. */
__attribute__((naked, noinline, unused)) static void mt_s8_dot4_zx_run(mt_s8_dot4_zx *p __attribute__((unused)))
{
    __asm volatile("push {r0, r4-r11, lr}\n\t"
                   "ldr r1, [r0, #4]\n\t"
                   "ldr r2, [r0, #8]\n\t"
                   "ldr r3, [r0, #12]\n\t"
                   "ldr r12, [r0, #20]\n\t"
                   "ldr lr, [r0, #16]\n\t"
                   "ldrd r4, r5, [lr]\n\t"
                   "ldrd r6, r7, [lr, #8]\n\t"
                   "ldr r0, [r0, #0]\n\t"
                   "1:\n\t"
                   "ldr r9, [r0], #4\n\t"        /* x's word */
                   "sxtb16 r8, r9\n\t"
                   "sxtb16 r9, r9, ror #8\n\t"
                   "ssub16 r8, r8, r12\n\t"      /* bytes 0 and 2, less zx */
                   "ssub16 r9, r9, r12\n\t"      /* bytes 1 and 3 */
                   "ldr r10, [r1, r2]\n\t"       /* row 1's word */
                   "sxtb16 r11, r10\n\t"
                   "smlad r5, r8, r11, r5\n\t"
                   "sxtb16 r10, r10, ror #8\n\t"
                   "smlad r5, r9, r10, r5\n\t"
                   "add lr, r1, r2, lsl #1\n\t"
                   "ldr r10, [lr]\n\t"           /* row 2's */
                   "sxtb16 r11, r10\n\t"
                   "smlad r6, r8, r11, r6\n\t"
                   "sxtb16 r10, r10, ror #8\n\t"
                   "smlad r6, r9, r10, r6\n\t"
                   "ldr r10, [lr, r2]\n\t"       /* row 3's */
                   "sxtb16 r11, r10\n\t"
                   "smlad r7, r8, r11, r7\n\t"
                   "sxtb16 r10, r10, ror #8\n\t"
                   "smlad r7, r9, r10, r7\n\t"
                   "ldr r10, [r1], #4\n\t"       /* row 0's, and on */
                   "sxtb16 r11, r10\n\t"
                   "smlad r4, r8, r11, r4\n\t"
                   "sxtb16 r10, r10, ror #8\n\t"
                   "smlad r4, r9, r10, r4\n\t"
                   "subs r3, r3, #1\n\t"
                   "bne 1b\n\t"
                   "ldr r12, [sp]\n\t"
                   "ldr lr, [r12, #16]\n\t"
                   "strd r4, r5, [lr]\n\t"
                   "strd r6, r7, [lr, #8]\n\t"
                   "pop {r0, r4-r11, pc}");
}

/* One weight row's word of mt_s8_dot4_xs_run: r10 = the row's word (addressed by `load`), then
 * sum += x's halves r8 · W's bytes 0, 2 + r9 · W's bytes 1, 3 */
#define MT_S8_XS_ROW(sum, load)                                                                                   \
    load "\n\tsxtb16 r11, r10\n\tsmlad " sum ", r8, r11, " sum "\n\t"                                           \
         "sxtb16 r10, r10, ror #8\n\tsmlad " sum ", r9, r10, " sum "\n\t"
/* a word of x's halves (one LDRD) against the four rows, row 0 last (its address moves on) */
#define MT_S8_XS_WORD                                                                                             \
    "ldrd r8, r9, [r0], #8\n\t"                                                                                   \
    MT_S8_XS_ROW("r5", "ldr r10, [r1, r2]") MT_S8_XS_ROW("r6", "ldr r10, [r1, r2, lsl #1]")                     \
    MT_S8_XS_ROW("r7", "ldr r10, [r1, r12]") MT_S8_XS_ROW("r4", "ldr r10, [r1], #4")

/* acc[r] += Σ_{i<4·words} W[r, i]·(x[i] - zx) for the four rows r, x's halves less zx made once
 * for all the rows (a FullyConnected's batch below MT_S8_SUM_ROWS, where Σ W would cost more
 * than the products), so a word of x is one LDRD for the four rows, and a row's word its LDR
 * (rows 2 and 3 by register offsets: W + 2D is [W, D, LSL #1], W + 3D [W, 3D]), two SXTB16
 * and two SMLAD: 21 instructions for 16 MACs, four words a turn (86 for 64 MACs with the loop's
 * end: 1.34 a MAC, where mt_s8_dot4_zx_run's 28 for 16 spread x again for every four rows; two
 * words a turn measured 1.38 on MobileNetV2's classifier). The words past a multiple of 4
 * first, one a turn. Its 14 registers: r0 xs, r1 row 0's word, r2 D, r3 the turns of four
 * words left, r4-r7 the four sums, r8 and r9 x's halves, r10 and r11 a weight word and half,
 * r12 3D, lr the acc pointer at the ends and the single words left between; p on the stack.
 * Unaligned LDRs of W as in mt_s8_dot4_pixels; SMLAD wraps as the sums do. */
__attribute__((naked, noinline, unused)) static void mt_s8_dot4_xs_run(mt_s8_dot4_zx *p __attribute__((unused)))
{
    __asm volatile("push {r0, r4-r11, lr}\n\t"
                   "ldr r1, [r0, #4]\n\t"
                   "ldr r2, [r0, #8]\n\t"
                   "ldr r3, [r0, #12]\n\t"
                   "ldr lr, [r0, #16]\n\t"
                   "ldrd r4, r5, [lr]\n\t"
                   "ldrd r6, r7, [lr, #8]\n\t"
                   "add r12, r2, r2, lsl #1\n\t" /* 3D */
                   "ldr r0, [r0, #0]\n\t"
                   "ands lr, r3, #3\n\t"        /* words mod 4, one at a time */
                   "lsr r3, r3, #2\n\t"         /* then four a turn */
                   "beq 2f\n\t"
                   "4:\n\t"
                   MT_S8_XS_WORD
                   "subs lr, lr, #1\n\t"
                   "bne 4b\n\t"
                   "2:\n\t"
                   "cmp r3, #0\n\t"
                   "beq 3f\n\t"
                   "1:\n\t"
                   MT_S8_XS_WORD
                   MT_S8_XS_WORD
                   MT_S8_XS_WORD
                   MT_S8_XS_WORD
                   "subs r3, r3, #1\n\t"
                   "bne 1b\n\t"
                   "3:\n\t"
                   "ldr r12, [sp]\n\t"
                   "ldr lr, [r12, #16]\n\t"
                   "strd r4, r5, [lr]\n\t"
                   "strd r6, r7, [lr, #8]\n\t"
                   "pop {r0, r4-r11, pc}");
}
#undef MT_S8_XS_WORD
#undef MT_S8_XS_ROW

/* A word of the pair: the two pixels' halves (one LDM), then row 1's word and row 0's (which
 * moves on), each spread once for both pixels: 15 instructions for 16 MACs */
#define MT_S8_PAIR_WORD                                                                                           \
    "ldmia r0!, {r8-r11}\n\t"                                                                                     \
    "ldr r12, [r1, r2]\n\t"                                                                                       \
    "sxtb16 lr, r12\n\t"                                                                                          \
    "smlad r5, r8, lr, r5\n\t"                                                                                    \
    "smlad r7, r10, lr, r7\n\t"                                                                                   \
    "sxtb16 r12, r12, ror #8\n\t"                                                                                 \
    "smlad r5, r9, r12, r5\n\t"                                                                                   \
    "smlad r7, r11, r12, r7\n\t"                                                                                  \
    "ldr r12, [r1], #4\n\t"                                                                                       \
    "sxtb16 lr, r12\n\t"                                                                                          \
    "smlad r4, r8, lr, r4\n\t"                                                                                    \
    "smlad r6, r10, lr, r6\n\t"                                                                                   \
    "sxtb16 r12, r12, ror #8\n\t"                                                                                 \
    "smlad r4, r9, r12, r4\n\t"                                                                                   \
    "smlad r6, r11, r12, r6\n\t"

/* For each pixel pair j, j + 1 and k, p in {0, 1}:
 *   acc[4·(j + p) + r + k] = start_k + Σ_{i<D} W[r + k, i]·(x[(j + p)·D + i] - zx)
 * mt_s8_dot2x2_run's turn with x's halves spread once for all the weight rows (a Conv2D's
 * pixels against many output channels: mt_s8_dense_pairs), so a word of both pixels is one LDM
 * where it took two LDR and four SXTB16: two words a turn, 32 instructions for 32 MACs where
 * mt_s8_dot2x2_run takes 44; an odd word first, alone. The 14 registers: r0 xs, r1 W, r2 D, r3
 * the word pairs left, r4-r7 the sums of (row 0, pixel 0), (1, 0), (0, 1), (1, 1), r8-r11 the
 * pixels' halves, r12 and lr a weight word and half; p (mt_s8_dot2x2, its x the halves: pair
 * k's word i at words 4·(k·D/4 + i) to + 3, mt_s8_spread_pairs) on the stack. Unaligned LDRs of
 * W as in mt_s8_dot4_pixels; SMLAD wraps as the sums do. */
__attribute__((naked, noinline, unused)) static void mt_s8_dot2x2_xs_run(mt_s8_dot2x2 *p __attribute__((unused)))
{
    __asm volatile(MT_S8_2X2_BEGIN
                   "lsr r3, r2, #3\n\t"          /* the word pairs */
                   "tst r2, #4\n\t"              /* an odd word? */
                   "beq 2f\n\t"
                   MT_S8_PAIR_WORD
                   "2:\n\t"
                   "cmp r3, #0\n\t"
                   "beq 3f\n\t"
                   "4:\n\t"
                   MT_S8_PAIR_WORD
                   MT_S8_PAIR_WORD
                   "subs r3, r3, #1\n\t"
                   "bne 4b\n\t"
                   "3:\n\t"                     /* xs is at the next pair's halves */
                   MT_S8_2X2_END);
}
#undef MT_S8_PAIR_WORD
#undef MT_S8_2X2_BEGIN
#undef MT_S8_2X2_END

#endif /* MT_OPS_DSP_S8_DOT_DSP_H */
