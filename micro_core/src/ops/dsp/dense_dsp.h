/*
 * The Dense forward's 4 x 4 blocks in assembly on Cortex-M cores with a single-precision FPU
 * (MT_VFP_DOT, dot_dsp.h), one call per four rows of y, the activation fused: for each block
 * of units u..u+3, y[r][j] = act(Σ_t x_r[t]·W_(u+j)[t] + bias[u + j]), the reference's bits:
 *   - each sum starts at 0 (s0-s15 loaded from 16 zeros kept on the stack) and adds its terms
 *     by ascending t, each one VFMA (x·W + sum rounded once, mt_fmaf); two terms per step,
 *     one VLDM of two floats per row (x row r in s16 + 2r, s17 + 2r; W row j in s24 + 2j,
 *     s25 + 2j); an odd count starts with one term, in the odd registers;
 *   - then + bias (VADD, the sum first); four VSTMs, one per row;
 *   - then, row by row (a row back in s0-s3: one copy of the code for all four),
 *     mt_fused_activation_forward's ReLU, y < 0 ? 0 : y (VCMP and MI, "less than": false for
 *     NaN and for -0), and for ReLU6 then v > 6 ? 6 : v (GT: false for NaN).
 * A naked function: the loop over the blocks keeps every pointer in a register (GCC spills
 * them around an inline block). Offsets into mt_vfp_rows are checked below.
 */
#ifndef MT_OPS_FAST_VFP_DENSE_H
#define MT_OPS_FAST_VFP_DENSE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/dsp/dot_dsp.h"

#if MT_VFP_DOT
#define MT_VFP_ROWS_FIELDS(F, S)                                                 \
    F(S, 0, const float *, x, [4])  /* the four x rows */                        \
    F(S, 16, const float *, w, )    /* W row u (the first block's) */            \
    F(S, 20, const float *, bias, ) /* bias + u, or NULL */                      \
    F(S, 24, float *, y, )          /* y row 0, unit u */                        \
    F(S, 28, uint32_t, I, )         /* terms */                                  \
    F(S, 32, uint32_t, act, )       /* MT_FUSED_NONE, _RELU, _RELU6 (0, 1, 2) */ \
    F(S, 36, uint32_t, ystride, )   /* bytes from one y row to the next */       \
    F(S, 40, uint32_t, blocks, )    /* >= 1 blocks of four units */
/* mt_vfp_dense_rows reads mt_vfp_rows */
MT_ASM_ARGS(mt_vfp_rows, MT_VFP_ROWS_FIELDS, 44);

#define MT_VFP_ADD(d, b) "vadd.f32 s" #d ", s" #d ", s" #b "\n\t"
/* s(d) = s(r) where VCMP s(d), s(v) gives cond */
#define MT_VFP_SET_IF(d, cond, v, r) \
    "vcmp.f32 s" #d ", s" #v "\n\tvmrs APSR_nzcv, fpscr\n\tit " cond "\n\tvmov" cond ".f32 s" #d ", s" #r "\n\t"

/* r0 = p; inside: r1 I, r2 the step count, r3 bias, r7 y, r9 blocks left, r4-r6 r8 the x
 * rows, r10-r12 lr the W rows (lr ends on the next block's first row); 16 zeros at sp */
__attribute__((naked, noinline)) static void mt_vfp_dense_rows(const mt_vfp_rows *p __attribute__((unused)))
{
    __asm volatile(
        "push {r4-r11, lr}\n\t"
        "vpush {s16-s31}\n\t"
        "movs r2, #0\n\t"
        "vmov s0, s1, r2, r2\n\tvmov s2, s3, r2, r2\n\tvmov s4, s5, r2, r2\n\tvmov s6, s7, r2, r2\n\t"
        "vmov s8, s9, r2, r2\n\tvmov s10, s11, r2, r2\n\tvmov s12, s13, r2, r2\n\tvmov s14, s15, r2, r2\n\t"
        "vpush {s0-s15}\n\t"
        "ldrd r10, r3, [r0, #16]\n\t" /* w, bias */
        "ldrd r7, r1, [r0, #24]\n\t"  /* y, I */
        "ldr r9, [r0, #40]\n"
        "0:\n\t"
        "vldmia sp, {s0-s15}\n\t"
        "add r11, r10, r1, lsl #2\n\t"
        "add r12, r11, r1, lsl #2\n\t"
        "add lr, r12, r1, lsl #2\n\t"
        "cmp r1, #0\n\t"
        "beq 3f\n\t"
        "ldm r0, {r4, r5, r6, r8}\n\t"
        "lsrs r2, r1, #1\n\t" /* steps of two; the carry: an odd I */
        "bcc 1f\n\t"
        "adds r2, #1\n\t"
        "vldmia r4!, {s17}\n\tvldmia r5!, {s19}\n\tvldmia r6!, {s21}\n\tvldmia r8!, {s23}\n\t"
        "vldmia r10!, {s25}\n\tvldmia r11!, {s27}\n\tvldmia r12!, {s29}\n\tvldmia lr!, {s31}\n\t"
        "b 2f\n"
        "1:\n\t"
        "vldmia r4!, {s16-s17}\n\tvldmia r5!, {s18-s19}\n\tvldmia r6!, {s20-s21}\n\tvldmia r8!, {s22-s23}\n\t"
        "vldmia r10!, {s24-s25}\n\tvldmia r11!, {s26-s27}\n\tvldmia r12!, {s28-s29}\n\tvldmia lr!, {s30-s31}\n\t"
        MT_VFP_FMA_AT(16, 18, 20, 22, 24, 26, 28, 30)
        "2:\n\t"
        MT_VFP_FMA_AT(17, 19, 21, 23, 25, 27, 29, 31)
        "subs r2, #1\n\t"
        "bne 1b\n"
        "3:\n\t"
        "mov r10, lr\n\t"
        "cbz r3, 4f\n\t"
        "vldmia r3!, {s16-s19}\n\t"
        MT_VFP_ADD(0, 16) MT_VFP_ADD(1, 17) MT_VFP_ADD(2, 18) MT_VFP_ADD(3, 19)
        MT_VFP_ADD(4, 16) MT_VFP_ADD(5, 17) MT_VFP_ADD(6, 18) MT_VFP_ADD(7, 19)
        MT_VFP_ADD(8, 16) MT_VFP_ADD(9, 17) MT_VFP_ADD(10, 18) MT_VFP_ADD(11, 19)
        MT_VFP_ADD(12, 16) MT_VFP_ADD(13, 17) MT_VFP_ADD(14, 18) MT_VFP_ADD(15, 19)
        "4:\n\t"
        "ldrd r4, r5, [r0, #32]\n\t" /* act, ystride */
        "mov r6, r7\n\t"
        "vstmia r6, {s0-s3}\n\t"
        "add r6, r5\n\t"
        "vstmia r6, {s4-s7}\n\t"
        "add r6, r5\n\t"
        "vstmia r6, {s8-s11}\n\t"
        "add r6, r5\n\t"
        "vstmia r6, {s12-s15}\n\t"
        "cmp r4, #0\n\t" /* the activation, row by row: s0-s3 again */
        "beq 6f\n\t"
        "mov r6, r7\n\t"
        "movs r2, #4\n\t"
        "vldr s30, [sp]\n\t"
        "vmov.f32 s31, #6.0\n"
        "5:\n\t"
        "vldmia r6, {s0-s3}\n\t"
        MT_VFP_SET_IF(0, "mi", 30, 30) MT_VFP_SET_IF(1, "mi", 30, 30)
        MT_VFP_SET_IF(2, "mi", 30, 30) MT_VFP_SET_IF(3, "mi", 30, 30)
        "cmp r4, #1\n\t"
        "beq 7f\n\t"
        MT_VFP_SET_IF(0, "gt", 31, 31) MT_VFP_SET_IF(1, "gt", 31, 31)
        MT_VFP_SET_IF(2, "gt", 31, 31) MT_VFP_SET_IF(3, "gt", 31, 31)
        "7:\n\t"
        "vstmia r6, {s0-s3}\n\t"
        "add r6, r5\n\t"
        "subs r2, #1\n\t"
        "bne 5b\n"
        "6:\n\t"
        "adds r7, #16\n\t"
        "subs r9, #1\n\t"
        "bne 0b\n\t"
        "add sp, #64\n\t"
        "vpop {s16-s31}\n\t"
        "pop {r4-r11, pc}\n");
}
#endif /* MT_VFP_DOT */

#endif /* MT_OPS_FAST_VFP_DENSE_H */
