/*
 * The DSP cores' requantization loop in assembly (ops/portable/s8_requant.h includes it on the
 * M4F, M7 and M33): the common form of a Conv2D's and DepthwiseConv2D's outputs, a right
 * shift of 2 <= e <= 24 (MT_Q_RIGHT_TWO, no left shift) into the whole int8 range (no
 * activation, or a ReLU/ReLU6 whose range is all of int8: one SSAT). One call takes a whole run
 * of up to four channels (mt_s8_requant_block's): a channel at a time with its constants in
 * registers over the run's pixels, four outputs a turn (mt_s8_requant4_run), or, for short runs
 * of four channels, a pixel at a time with the four channels' constants in a table
 * (mt_s8_requant_pixels_run, below).
 *
 * Each output is mt_q_scale_known's MT_Q_RIGHT_TWO form, exactly (ops/quant.h): with
 * h = half >> 1 = 2^(e-2),
 *   P = sum·M + ((h + (sum >> 31)) << 32 | (sum & 2^31) | 2^30)      (64-bit, SMLAL)
 *   y = SSAT8((P >> 32) >> (e - 1) + zy)
 * gemmlowp's doubling high multiply and rounding shift folded into one multiply-add. Here zy
 * is folded into the high word too, H' = h + zy·2^(e-1): with H = P >> 32,
 * (H + zy·2^(e-1)) >> (e - 1) = (H >> (e - 1)) + zy exactly (a multiple of 2^(e-1) passes
 * through an arithmetic shift), so long as H + zy·2^(e-1) fits int32. With sum in int32 and
 * 0 <= M < 2^31, sum·M lies in [-2^62 + 2^31, 2^62 - 2^32 + 1] and the constant is
 * 2^(e-2)·2^32 ± 2^30, so H lies in [-2^30 + 2^(e-2) - 1, 2^30 + 2^(e-2) - 1]; with zy in
 * [-128, 127] the sum lies in [-2^30 + 2^(e-2) - 1 - 2^(e+6), 2^30 + 2^(e-2) - 1 + 127·2^(e-1)]:
 * inside int32 for e <= 24 (at 24: [-2^31 + 2^22 - 1, 2^31 - 2^22 - 1]), outside for e = 25.
 * So this kernel takes 2 <= e <= 24 (a larger e, a channel whose outputs are at most 2^-25 of
 * its sums, is left to the caller's C loop, as is e < 2).
 *
 * An output is eight instructions (the sum's load, three for the rounding constant, the SMLAL,
 * the shift, the SSAT, the store), a turn of four 34 with its pointer step and loop end: 8.5
 * an output, where the two-a-turn loop before (zy added apart, a call a channel) took 10.5 and
 * its call about 25 more a channel and run. The int8 siblings hold it to mt_q_requantize at
 * and beside every rounding tie, and at e = 23, 24 and 25 with the largest multipliers, sums at
 * both ends of int32 and zy = -128 and 127 (boards/app/siblings_s8.c, requant_cases); planted
 * faults s8-rq4-* in tests/boards/asm_faults.txt.
 */
#ifndef MT_OPS_DSP_S8_REQUANT_DSP_H
#define MT_OPS_DSP_S8_REQUANT_DSP_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/quant.h"    /* mt_q_requant */

/* n pixels' sums of R <= 4 channels, channel r's at acc[r], acc[r + 4], ... (s8_dot.h's layout:
 * a pixel's 16 bytes), its outputs at y[r], y[r + ys], ...; q[r] the channel's constants
 * (mt_q_requant: the multiplier, right = e and half = 2^(e-1) are read), zy the output's zero
 * point */
#define MT_S8_REQUANT4_FIELDS(F, S)       \
    F(S, 0, const int32_t *, acc, )       \
    F(S, 4, int8_t *, y, )                \
    F(S, 8, uint32_t, ys, )               \
    F(S, 12, uint32_t, n, )               \
    F(S, 16, uint32_t, R, )               \
    F(S, 20, const mt_q_requant *, q, )   \
    F(S, 24, int32_t, zy, )
/* mt_s8_requant4_run reads mt_s8_requant4 */
MT_ASM_ARGS(mt_s8_requant4, MT_S8_REQUANT4_FIELDS, 28);
/* and mt_q_requant's fields at the offsets the channel's setup loads (an entry 20 bytes) */
typedef char mt_s8_requant4_q_layout[offsetof(mt_q_requant, multiplier) == 4 && offsetof(mt_q_requant, right) == 12 &&
                                             offsetof(mt_q_requant, half) == 16 && sizeof(mt_q_requant) == 20
                                         ? 1
                                         : -1];

/* Channel r's constants, r3 at its mt_q_requant: e - 1 into e, M into m and 2^(e-1) into half; a
 * branch to skip where e is outside [2, 24] (zy's fold exact only up to 24: above) */
#define MT_S8_RQ_CHANNEL(e, m, half, skip)                            \
    "ldr " e ", [r3, #12]\n\t"            /* e */                        \
    "sub " e ", " e ", #2\n\t"                                           \
    "cmp " e ", #22\n\t"                                                 \
    "bhi " skip "\n\t"                    /* outside [2, 24]: the caller's */ \
    "add " e ", " e ", #1\n\t"            /* e - 1 */                    \
    "ldr " m ", [r3, #4]\n\t"             /* M */                        \
    "ldr " half ", [r3, #16]\n\t"         /* 2^(e-1) */

/* Two outputs of a turn: j's and j + 1's sums, their P, shifts, saturations and stores, y on
 * two outputs */
#define MT_S8_RQ4_PAIR \
    "ldr r7, [r0], #16\n\t"            /* output j's sum */                          \
    "ldr r8, [r0], #16\n\t"            /* j + 1's */                                 \
    "and r9, r7, #0x80000000\n\t"      /* P's low word: the sum's sign bit | 2^30 */ \
    "add r10, r5, r7, asr #31\n\t"     /* its high word: H' + (sum >> 31) */         \
    "orr r9, r9, #0x40000000\n\t"                                                    \
    "smlal r9, r10, r7, r4\n\t"        /* P += sum·M */                              \
    "and r11, r8, #0x80000000\n\t"                                                   \
    "add r12, r5, r8, asr #31\n\t"                                                   \
    "orr r11, r11, #0x40000000\n\t"                                                  \
    "smlal r11, r12, r8, r4\n\t"                                                     \
    "asr r10, r10, r6\n\t"             /* (P >> 32) >> (e - 1), zy in it */          \
    "asr r12, r12, r6\n\t"                                                           \
    "ssat r10, #8, r10\n\t"                                                          \
    "ssat r12, #8, r12\n\t"                                                          \
    "strb r10, [r1]\n\t"                                                             \
    "strb r12, [r1, r2]\n\t"                                                         \
    "add r1, r1, r2, lsl #1\n\t"

/* Returns the channels it left (bit r: q[r].right outside [2, 24]), for the caller's C loop.
 * Registers in the loops: r0 acc, r1 y, r2 ys, r3 the turns left, r4 M, r5 H' = h + zy·2^(e-1),
 * r6 e - 1, r7 and r8 two sums, (r10:r9) and (r12:r11) their 64-bit P, lr the argument block;
 * the channel index and the mask of the channels left on the stack. 14, a naked function
 * saving the AAPCS callee registers. */
__attribute__((naked, noinline, unused)) static uint32_t mt_s8_requant4_run(const mt_s8_requant4 *p
                                                                            __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "sub sp, sp, #8\n\t"               /* [sp] channel r, [sp + 4] the mask */
                   "mov lr, r0\n\t"
                   "movs r0, #0\n\t"
                   "str r0, [sp]\n\t"
                   "str r0, [sp, #4]\n\t"
                   "2:\n\t"                           /* channel r */
                   "ldr r12, [sp]\n\t"
                   "ldr r3, [lr, #20]\n\t"
                   "add r3, r3, r12, lsl #4\n\t"
                   "add r3, r3, r12, lsl #2\n\t"      /* &q[r] */
                   MT_S8_RQ_CHANNEL("r6", "r4", "r5", "5f")
                   "ldr r7, [lr, #24]\n\t"            /* zy */
                   "lsr r5, r5, #1\n\t"               /* h */
                   "lsl r7, r7, r6\n\t"
                   "add r5, r5, r7\n\t"               /* H' = h + zy·2^(e-1) */
                   "ldr r0, [lr, #0]\n\t"
                   "add r0, r0, r12, lsl #2\n\t"      /* acc + r */
                   "ldr r1, [lr, #4]\n\t"
                   "add r1, r1, r12\n\t"              /* y + r */
                   "ldr r2, [lr, #8]\n\t"
                   "ldr r3, [lr, #12]\n\t"
                   "lsrs r3, r3, #2\n\t"              /* turns of four */
                   "beq 3f\n\t"
                   "1:\n\t"
                   MT_S8_RQ4_PAIR
                   MT_S8_RQ4_PAIR /* j + 2 and j + 3 */
                   "subs r3, r3, #1\n\t"
                   "bne 1b\n\t"
                   "3:\n\t"                           /* the last n mod 4, one a turn */
                   "ldr r3, [lr, #12]\n\t"
                   "ands r3, r3, #3\n\t"
                   "beq 4f\n\t"
                   "6:\n\t"
                   "ldr r7, [r0], #16\n\t"
                   "and r9, r7, #0x80000000\n\t"
                   "add r10, r5, r7, asr #31\n\t"
                   "orr r9, r9, #0x40000000\n\t"
                   "smlal r9, r10, r7, r4\n\t"
                   "asr r10, r10, r6\n\t"
                   "ssat r10, #8, r10\n\t"
                   "strb r10, [r1]\n\t"
                   "add r1, r1, r2\n\t"             /* y on an output */
                   "subs r3, r3, #1\n\t"
                   "bne 6b\n\t"
                   "4:\n\t"                           /* the next channel */
                   "ldr r12, [sp]\n\t"
                   "ldr r3, [lr, #16]\n\t"            /* R */
                   "add r12, r12, #1\n\t"
                   "str r12, [sp]\n\t"
                   "cmp r12, r3\n\t"
                   "blo 2b\n\t"
                   "ldr r0, [sp, #4]\n\t"             /* the channels left */
                   "add sp, sp, #8\n\t"
                   "pop {r4-r11, pc}\n\t"
                   "5:\n\t"                           /* channel r left: the mask's bit r */
                   "ldr r7, [sp, #4]\n\t"
                   "mov r8, #1\n\t"
                   "lsl r8, r8, r12\n\t"
                   "orr r7, r7, r8\n\t"
                   "str r7, [sp, #4]\n\t"
                   "b 4b\n\t");
}

/* Short runs of four channels, a pixel at a time: returns 0, or 1 (nothing written) where some
 * channel's e is outside [2, 24]. mt_s8_requant4_run pays about 30 instructions of setup a
 * channel and run, which the step's narrow rows (4 to 16 pixels) spread over few outputs; here
 * the four channels' constants (M, H', e - 1) are made once a call into a table on the stack,
 * 12 bytes a channel, and each output reloads its channel's with one LDM: a pixel is one LDM of
 * its four sums, and a channel's LDM and the seven instructions of its output, 37 with the
 * pixel's step and loop end (9.25 an output), for about 60 a call. The caller takes this form
 * below MT_S8_REQUANT_PIXELS_MAX pixels.
 * Registers in the loop: r0 acc, r1 y, r2 ys, r3 the pixels left, r4 the table, r5-r8 the
 * pixel's four sums, r9 M, r10 H', r11 e - 1 (the channel's), (lr:r12) its 64-bit P: 14. */
#define MT_S8_REQUANT_PIXELS_MAX 48u

#define MT_S8_RQPX_ONE(sum, at)                                                    \
    "ldm r4!, {r9, r10, r11}\n\t"             /* the channel's M, H', e - 1 */      \
    "and r12, " sum ", #0x80000000\n\t"       /* P's low word */                    \
    "add lr, r10, " sum ", asr #31\n\t"       /* its high word: H' + (sum >> 31) */ \
    "orr r12, r12, #0x40000000\n\t"                                                 \
    "smlal r12, lr, " sum ", r9\n\t"                                                \
    "asr lr, lr, r11\n\t"                                                           \
    "ssat lr, #8, lr\n\t"                                                           \
    "strb lr, [r1, #" at "]\n\t"

__attribute__((naked, noinline, unused)) static uint32_t mt_s8_requant_pixels_run(const mt_s8_requant4 *p
                                                                                  __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "sub sp, sp, #48\n\t"              /* the table: channel r's at sp + 12·r */
                   "ldr r3, [r0, #20]\n\t"            /* q */
                   "ldr r2, [r0, #24]\n\t"            /* zy */
                   "mov r4, sp\n\t"
                   "mov r12, #4\n\t"
                   "7:\n\t"
                   MT_S8_RQ_CHANNEL("r7", "r5", "r6", "8f")
                   "lsl r8, r2, r7\n\t"
                   "add r6, r8, r6, lsr #1\n\t"       /* H' = 2^(e-2) + zy·2^(e-1) */
                   "stm r4!, {r5, r6, r7}\n\t"
                   "add r3, r3, #20\n\t"              /* q[r + 1] */
                   "subs r12, r12, #1\n\t"
                   "bne 7b\n\t"
                   "ldr r1, [r0, #4]\n\t"
                   "ldr r2, [r0, #8]\n\t"
                   "ldr r3, [r0, #12]\n\t"
                   "ldr r0, [r0, #0]\n\t"
                   "cmp r3, #0\n\t"
                   "beq 9f\n\t"
                   "1:\n\t"
                   "mov r4, sp\n\t"                 /* channel 0's constants */
                   "ldm r0!, {r5, r6, r7, r8}\n\t"    /* pixel j's four sums */
                   MT_S8_RQPX_ONE("r5", "0")
                   MT_S8_RQPX_ONE("r6", "1")
                   MT_S8_RQPX_ONE("r7", "2")
                   MT_S8_RQPX_ONE("r8", "3")
                   "add r1, r1, r2\n\t"             /* y on a pixel */
                   "subs r3, r3, #1\n\t"
                   "bne 1b\n\t"
                   "9:\n\t"
                   "movs r0, #0\n\t"
                   "add sp, sp, #48\n\t"
                   "pop {r4-r11, pc}\n\t"
                   "8:\n\t"
                   "movs r0, #1\n\t"
                   "add sp, sp, #48\n\t"
                   "pop {r4-r11, pc}\n\t");
}

#endif /* MT_OPS_DSP_S8_REQUANT_DSP_H */
