/*
 * The DSP cores' requantization loop in assembly (ops/portable/s8_requant.h includes it on the
 * M4F, M7 and M33): the common form of a Conv2D's and DepthwiseConv2D's outputs, a right
 * shift of e >= 2 (MT_Q_RIGHT_TWO, no left shift) into the whole int8 range (no activation, or
 * a ReLU/ReLU6 whose range is all of int8: one SSAT), two outputs a turn.
 *
 * Each output is mt_q_scale_known's MT_Q_RIGHT_TWO form, exactly (ops/quant.h): with
 * h = half >> 1 = 2^(e-2),
 *   P = sum·M + ((h + (sum >> 31)) << 32 | (sum & 2^31) | 2^30)      (64-bit, SMLAL)
 *   y = SSAT8((P >> 32) >> (e - 1) + zy)
 * gemmlowp's doubling high multiply and rounding shift folded into one multiply-add. 21
 * instructions a turn of two outputs, where GCC's C loop takes 13 for one (its pointer step
 * and loop end paid per output). The int8 siblings hold it to mt_q_requantize at and beside
 * every rounding tie (boards/app/siblings_s8.c, requant_cases); planted faults s8-rq2-* in
 * tests/boards/asm_faults.txt.
 */
#ifndef MT_OPS_DSP_S8_REQUANT_DSP_H
#define MT_OPS_DSP_S8_REQUANT_DSP_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */

/* pairs >= 1 pairs of sums at acc[0], acc[4], ... (s8_dot.h's layout: 16 bytes apart), their
 * outputs at y[0], y[ys], ...; one channel's constants: M, h = half >> 1, e - 1, zy */
#define MT_S8_REQUANT2_FIELDS(F, S)             \
    F(S, 0, const int32_t *, acc, )             \
    F(S, 4, int8_t *, y, )                      \
    F(S, 8, uint32_t, ys, )                     \
    F(S, 12, uint32_t, pairs, )                 \
    F(S, 16, int32_t, multiplier, )             \
    F(S, 20, uint32_t, h, )                     \
    F(S, 24, uint32_t, shift, )     /* e - 1 */ \
    F(S, 28, int32_t, zy, )
/* mt_s8_requant2_run reads mt_s8_requant2 */
MT_ASM_ARGS(mt_s8_requant2, MT_S8_REQUANT2_FIELDS, 32);

/* Registers: r0 acc, r1 y, r2 ys, r3 the turns left, r4 M, r5 h, r6 e - 1, r7 zy; r8, r9 the
 * two sums, (r11:r10) and (lr:r12) their 64-bit P: 14, a naked function saving the AAPCS
 * callee registers. */
__attribute__((naked, noinline, unused)) static void mt_s8_requant2_run(mt_s8_requant2 *p __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "ldrd r4, r5, [r0, #16]\n\t"
                   "ldrd r6, r7, [r0, #24]\n\t"
                   "ldrd r2, r3, [r0, #8]\n\t"
                   "ldrd r0, r1, [r0, #0]\n\t"
                   "1:\n\t"
                   "ldr r8, [r0], #16\n\t"            /* output j's sum */
                   "ldr r9, [r0], #16\n\t"            /* j + 1's */
                   "and r10, r8, #0x80000000\n\t"     /* P's low word: the sum's sign bit | 2^30 */
                   "add r11, r5, r8, asr #31\n\t"     /* its high word: h + (sum >> 31) */
                   "orr r10, r10, #0x40000000\n\t"
                   "smlal r10, r11, r8, r4\n\t"       /* P += sum·M */
                   "and r12, r9, #0x80000000\n\t"
                   "add lr, r5, r9, asr #31\n\t"
                   "orr r12, r12, #0x40000000\n\t"
                   "smlal r12, lr, r9, r4\n\t"
                   "asr r11, r11, r6\n\t"             /* (P >> 32) >> (e - 1) */
                   "asr lr, lr, r6\n\t"
                   "add r11, r11, r7\n\t"             /* + zy */
                   "add lr, lr, r7\n\t"
                   "ssat r11, #8, r11\n\t"
                   "ssat lr, #8, lr\n\t"
                   "strb lr, [r1, r2]\n\t"
                   "strb r11, [r1]\n\t"
                   "add r1, r1, r2, lsl #1\n\t"
                   "subs r3, r3, #1\n\t"
                   "bne 1b\n\t"
                   "pop {r4-r11, pc}\n\t");
}

#endif /* MT_OPS_DSP_S8_REQUANT_DSP_H */
