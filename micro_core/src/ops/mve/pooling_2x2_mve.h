/*
 * MaxPool2D's most common layer, 2 x 2 windows at stride 2 with every window inside the input
 * (VALID, or SAME on even sizes) and whole vectors of channels (C % 4 == 0), one output row
 * per call in a naked function (included by pooling_mve.c only). A window's four taps are
 * x rows 2·oh and 2·oh + 1, pixels 2·ow and 2·ow + 1: four pointers, each moving 16 bytes a
 * vector of channels and one pixel more after the last, so no tap offsets are looked up
 * (the general kernels' cost: 60 and 120 instructions a window of four channels, here about
 * 20 and 46).
 *
 * The reference (ops/pooling.c), tap by tap in order (kh, then kw): the forward's maximum
 * starts at the first tap and takes a next one that is greater or a NaN; the backward adds dy
 * to dx at the first tap equal to the maximum. Comparisons only, no arithmetic, in the
 * forward: its caller reads FPSCR.IDC after the op (a flushed subnormal sends the op to the
 * portable kernel). The backward's dx + dy is arithmetic: each window's four results are
 * tested before they are stored, and a NaN maximum (the reference then routes to the first
 * NaN tap), a NaN result or a flushed subnormal ends the call with that window unstored.
 */
#ifndef MT_OPS_ARM_POOLING_2X2_MVE_H
#define MT_OPS_ARM_POOLING_2X2_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#define MT_MVE_POOL_ROW_FIELDS(F, S)                                                                         \
    F(S, 0, const float *, x, )   /* x row 2·oh, pixel 0 */                                                  \
    F(S, 4, float *, dx, )        /* dx row 2·oh, pixel 0 (backward) */                                      \
    F(S, 8, const float *, y, )   /* y row oh: the forward's output (written there), the backward's input */ \
    F(S, 12, const float *, dy, ) /* dy row oh (backward) */                                                 \
    F(S, 16, uint32_t, row, )     /* bytes from one x row to the next (W·C·4) */                             \
    F(S, 20, uint32_t, pixel, )   /* bytes from one pixel to the next (C·4) */                               \
    F(S, 24, uint32_t, OW, )      /* output pixels, >= 1 */                                                  \
    F(S, 28, uint32_t, vecs, )    /* vectors of four channels a pixel (C / 4), >= 1 */
MT_ASM_ARGS(mt_mve_pool_row, MT_MVE_POOL_ROW_FIELDS, 32);

/* m stays where v is not a NaN and v <= m (VCMP LE holds for an unordered pair: the EQ of v
 * with itself first), else m = v */
#define MT_POOL_MAX(v) "vcmp.f32 eq, " v ", " v "\n\tvpst\n\tvcmpt.f32 le, " v ", q0\n\tvpsel q0, q0, " v "\n\t"

/* y row oh = the windows' maxima. r0-r3 the taps (x rows 2·oh and 2·oh + 1, pixels 2·ow and
 * 2·ow + 1), r4 y, r5 the pixel step, r6 the vectors a pixel, r7 the output pixels left, lr
 * the vectors; q0 the maximum, q1 a tap */
__attribute__((naked, noinline)) static void mt_mve_max_pool_row(const mt_mve_pool_row *p __attribute__((unused)))
{
    __asm volatile(
        "push {r4-r7, lr}\n\t"
        "ldr r4, [r0, #8]\n\t"
        "ldrd r1, r5, [r0, #16]\n\t" /* row, pixel */
        "ldrd r7, r6, [r0, #24]\n\t" /* OW, vecs */
        "ldr r0, [r0]\n\t"
        "add r2, r0, r1\n\t"
        "add r1, r0, r5\n\t"
        "add r3, r2, r5\n"
        "1:\n\t"
        "dls lr, r6\n"
        "2:\n\t"
        "vldrw.u32 q0, [r0], #16\n\t"
        "vldrw.u32 q1, [r1], #16\n\t"
        MT_POOL_MAX("q1")
        "vldrw.u32 q1, [r2], #16\n\t"
        MT_POOL_MAX("q1")
        "vldrw.u32 q1, [r3], #16\n\t"
        MT_POOL_MAX("q1")
        "vstrw.32 q0, [r4], #16\n\t"
        "le lr, 2b\n\t"
        "add r0, r5\n\t" /* past the window's second pixel */
        "add r1, r5\n\t"
        "add r2, r5\n\t"
        "add r3, r5\n\t"
        "subs r7, #1\n\t"
        "bne 1b\n\t"
        "pop {r4-r7, pc}\n");
}
#undef MT_POOL_MAX

/*
 * dx row 2·oh and 2·oh + 1 at each window's first tap equal to its maximum m += dy. The hit
 * of tap t is "taps before t differ from m, tap t equals it" (m is not a NaN, so nor is an
 * earlier tap: a NaN would be the maximum), one VPT block each whose last instruction is the
 * add, taps 3 to 0 so that the four sums take the registers of the taps done with. Returns
 * NULL when the row is stored, else dy's vector after the unstored window's.
 *
 * r0-r3 the x taps, r4-r7 the dx taps, r8 y, r9 dy, r10 the pixel step, r11 a flag word, r12
 * the vectors a pixel, lr the vectors; the output pixels left at sp. q0 m, q1 dy, q2-q5 the
 * taps, then the sums in q4 q5 q7 q6 (taps 0 to 3).
 */
__attribute__((naked, noinline)) static const float *mt_mve_max_pool_row_grad(const mt_mve_pool_row *p
                                                                              __attribute__((unused)))
{
    __asm volatile(
        "push {r4-r11, lr}\n\t"
        "vpush {d8-d15}\n\t"
        "sub sp, #8\n\t"
        "ldrd r8, r9, [r0, #8]\n\t"   /* y, dy */
        "ldrd r1, r10, [r0, #16]\n\t" /* row, pixel */
        "ldrd r11, r12, [r0, #24]\n\t" /* OW, vecs */
        "str r11, [sp]\n\t"
        "ldr r4, [r0, #4]\n\t"
        "ldr r0, [r0]\n\t"
        "add r2, r0, r1\n\t"
        "add r6, r4, r1\n\t"
        "add r1, r0, r10\n\t"
        "add r3, r2, r10\n\t"
        "add r5, r4, r10\n\t"
        "add r7, r6, r10\n"
        "1:\n\t"
        "dls lr, r12\n"
        "2:\n\t"
        "vldrw.u32 q0, [r8], #16\n\t"
        "vldrw.u32 q1, [r9], #16\n\t"
        "vldrw.u32 q2, [r0], #16\n\t"
        "vldrw.u32 q3, [r1], #16\n\t"
        "vldrw.u32 q4, [r2], #16\n\t"
        "vldrw.u32 q5, [r3], #16\n\t"
        "vldrw.u32 q6, [r7]\n\t" /* tap 3 */
        "vptttt.f32 ne, q2, q0\n\t"
        "vcmpt.f32 ne, q3, q0\n\t"
        "vcmpt.f32 ne, q4, q0\n\t"
        "vcmpt.f32 eq, q5, q0\n\t"
        "vaddt.f32 q6, q6, q1\n\t"
        "vldrw.u32 q7, [r6]\n\t" /* tap 2 */
        "vpttt.f32 ne, q2, q0\n\t"
        "vcmpt.f32 ne, q3, q0\n\t"
        "vcmpt.f32 eq, q4, q0\n\t"
        "vaddt.f32 q7, q7, q1\n\t"
        "vldrw.u32 q5, [r5]\n\t" /* tap 1 */
        "vptt.f32 ne, q2, q0\n\t"
        "vcmpt.f32 eq, q3, q0\n\t"
        "vaddt.f32 q5, q5, q1\n\t"
        "vldrw.u32 q4, [r4]\n\t" /* tap 0 */
        "vpt.f32 eq, q2, q0\n\t"
        "vaddt.f32 q4, q4, q1\n\t"
        "vcmp.f32 eq, q0, q0\n\t" /* P0: m and the four sums not NaN */
        "vpstttt\n\t"
        "vcmpt.f32 eq, q4, q4\n\t"
        "vcmpt.f32 eq, q5, q5\n\t"
        "vcmpt.f32 eq, q7, q7\n\t"
        "vcmpt.f32 eq, q6, q6\n\t"
        "vmrs r11, p0\n\t"
        "adds r11, #1\n\t" /* 0x10000 when every lane passed */
        "lsrs r11, r11, #16\n\t"
        "beq 9f\n\t"
        "vmrs r11, fpscr\n\t"
        "tst r11, #0x88\n\t" /* MT_FPSCR_IDC | MT_FPSCR_UFC */
        "bne 9f\n\t"
        "vstrw.32 q4, [r4], #16\n\t"
        "vstrw.32 q5, [r5], #16\n\t"
        "vstrw.32 q7, [r6], #16\n\t"
        "vstrw.32 q6, [r7], #16\n\t"
        "le lr, 2b\n\t"
        "add r0, r10\n\t" /* past the window's second pixel */
        "add r1, r10\n\t"
        "add r2, r10\n\t"
        "add r3, r10\n\t"
        "add r4, r10\n\t"
        "add r5, r10\n\t"
        "add r6, r10\n\t"
        "add r7, r10\n\t"
        "ldr r11, [sp]\n\t"
        "subs r11, #1\n\t"
        "str r11, [sp]\n\t"
        "bne 1b\n\t"
        "movs r9, #0\n"
        "9:\n\t"
        "mov r0, r9\n\t"
        "add sp, #8\n\t"
        "vpop {d8-d15}\n\t"
        "pop {r4-r11, pc}\n");
}
#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_POOLING_2X2_MVE_H */
