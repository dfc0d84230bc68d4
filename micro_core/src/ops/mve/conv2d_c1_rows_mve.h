/*
 * The one-channel, 3-wide, stride-1 Conv2D forward on the M55 as a naked function (included
 * by conv2d_mve.c only): mt_mve_c1_rows_run computes an output row's blocks of four pixels in
 * every image of the batch, every output channel of each block.
 *
 * Why naked: with the loops over blocks and channels in C, the block's asm held eight core
 * registers and GCC spilled every pointer around it: about 130 instructions of bookkeeping a
 * block of four pixels and four channels, where its arithmetic is 18 a kernel row (1.49
 * instructions a MAC on the benchmark CNN's first layer). Here a block's pointers stay in
 * registers and the rest waits on the stack, copied there from the struct below.
 *
 * Each sum is the reference's: y[p, oc] = act(Σ_{kh, kw} x[p + kw]·W[oc, kh, kw] + b[oc]),
 * from +0, the in-bounds taps in ascending (kh, kw), each a VFMA (a·b + sum rounded once, the
 * reference's mt_fmaf), then + bias. Lanes run across four output channels (one gather reads
 * W[oc..oc+3, kh, kw]), four accumulators across four pixels of a row, and each x tap is a
 * core register that VFMA broadcasts: a kernel row is one LDM of six x values, three gathers
 * and twelve VFMA (18 instructions with the loop, for 48 MACs). L (the first block of a row
 * whose pixel 0 lacks tap kw = 0, the left padding) and R (the last block, whose pixel 3 lacks
 * kw = 2) leave those terms out and never load their x.
 *
 * A NaN in a block's results (the activation would keep it; VMAXNM would not) ends the call
 * with 1, and the caller recomputes the op in scalar code; so do FPSCR's IDC and UFC, which
 * the caller cleared before and reads after (mve.h). The activation is VMAXNM with +0 (and
 * VMINNM with 6): the reference's v < 0 ? 0 : v for every v but -0, and a sum from +0, with
 * or without the bias, is -0 only after a term underflowed, which sets UFC.
 */
#ifndef MT_OPS_ARM_CONV2D_C1_ROWS_MVE_H
#define MT_OPS_ARM_CONV2D_C1_ROWS_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#include "ops/mve/mve_flags.h" /* MT_NAKED_*, MT_NAN_TEST_Q0_Q3, MT_Q0_Q3_WITH_Q4 */

/* What mt_mve_c1_rows_run reads; its first 96 bytes are copied to the function's stack frame
 * as they are, and the fields marked scratch are the copy's running state (any value here). */
#define MT_MVE_C1_ROWS_FIELDS(F, S)                                                                                    \
    F(S, 0, uint32_t, rows, )          /* kernel rows of this output row, kh1 - kh0 >= 1 */                            \
    F(S, 4, uint32_t, variant, )       /* scratch: the block's L (1) and R (2) */                                      \
    F(S, 8, uint32_t, act, )           /* MT_FUSED_NONE, _RELU, _RELU6 (0, 1, 2) */                                    \
    F(S, 12, uint32_t, ystep, )        /* OC·4, the bytes from a pixel's outputs to the next pixel's */                \
    F(S, 16, uint32_t, wstep, )        /* 16·K, the bytes from four output channels' W to the next four's */           \
    F(S, 20, const float *, w, )       /* W + kh0·3 (output channel 0, kernel row kh0) */                              \
    F(S, 24, const float *, bias, )    /* bias, or NULL */                                                             \
    F(S, 28, uint32_t, OC, )           /* output channels */                                                           \
    F(S, 32, uint32_t, blocks, )       /* blocks of four pixels a row, >= 1 */                                         \
    F(S, 36, uint32_t, left, )         /* scratch: blocks left in this image's row */                                  \
    F(S, 40, uint32_t, edges, )        /* 1: the first block is L; 2: the last block is R */                           \
    F(S, 44, uint32_t, images, )       /* images, >= 1 (counts down in the copy) */                                    \
    F(S, 48, uintptr_t, x, )           /* the first image's first block: the address of its pixel 0's tap kw = 0       \
                                          in kernel row kh0 (for L an address never read: 4 bytes before the first     \
                                          x it loads) */                                                               \
    F(S, 52, float *, y, )             /* the first image's first block: y of pixel 0, channel 0 */                    \
    F(S, 56, uint32_t, ximage, )       /* bytes from an image's x to the next image's */                               \
    F(S, 60, uint32_t, yimage, )       /* bytes from an image's y to the next image's */                               \
    F(S, 64, uint32_t, yblock, )       /* scratch: y of the block */                                                   \
    F(S, 68, uint32_t, xstep, )        /* W·4, the bytes from an x row to the next */                                  \
    F(S, 72, uint32_t, unused, [2])                                                                                    \
    F(S, 80, uint32_t, tail_offs, [4]) /* wofs for the last four output channels when OC % 4 != 0: lanes past OC read  \
                                          lane 0's W (their sums are never stored) */                                  \
    F(S, 96, uint32_t, wofs, [4])      /* lane i: i·K·4 - 4 bytes from W's output channel oc (the gathers' pre-offsets \
                                          +4, +8, +12 read taps kw = 0, 1, 2; the last one moves the lanes on a row) */
/* mt_mve_c1_rows_run reads mt_mve_c1_rows */
MT_ASM_ARGS(mt_mve_c1_rows, MT_MVE_C1_ROWS_FIELDS, 112);

/* a kernel row of a block: x values r3..r8 (x[s..s+5], pixel p's tap kw is x[s + p + kw]), q5
 * the gather's addresses; T00 is pixel 0's tap kw = 0 (left out for L), T33 pixel 3's kw = 2
 * (left out for R); r1 moves to the next x row, lr counts the rows */
#define MT_C1_ROW_LOOP(label, ldm, T00, T33)                                                                     \
    label ":\n\t" ldm "\n\t"                                                                                     \
    "vldrw.u32 q4, [q5, #4]\n\t" T00 "vfma.f32 q1, q4, r4\n\t"                                                   \
    "vfma.f32 q2, q4, r5\n\t"                                                                                    \
    "vfma.f32 q3, q4, r6\n\t"                                                                                    \
    "vldrw.u32 q4, [q5, #8]\n\t"                                                                                 \
    "vfma.f32 q0, q4, r4\n\t"                                                                                    \
    "vfma.f32 q1, q4, r5\n\t"                                                                                    \
    "vfma.f32 q2, q4, r6\n\t"                                                                                    \
    "vfma.f32 q3, q4, r7\n\t"                                                                                    \
    "vldrw.u32 q4, [q5, #12]!\n\t"                                                                               \
    "vfma.f32 q0, q4, r5\n\t"                                                                                    \
    "vfma.f32 q1, q4, r6\n\t"                                                                                    \
    "vfma.f32 q2, q4, r7\n\t" T33 "add r1, r2\n\t"                                                               \
    "le lr, " label "b\n\t"
#define MT_C1_T00 "vfma.f32 q0, q4, r3\n\t"
#define MT_C1_T33 "vfma.f32 q3, q4, r8\n\t"

/*
 * Registers: r0 the block's x (pixel 0's tap kw = 0), r1 the kernel row's, r2 xstep, r3-r8 x
 * values (outside the rows, scratch and the store pointers), r9 bias (moving 16 bytes a group
 * of four output channels; NULL stays NULL), r10 the group's y, r11 the output channels left,
 * r12 the group's W, lr the kernel rows; q0-q3 the four pixels' sums, q4 W's four lanes (then
 * 0 or 6), q5 the gather's addresses, q6 the bias, q7 wofs. The stack frame is the struct's
 * first 96 bytes. Returns 0 when every block is stored, 1 on a NaN (some blocks unstored).
 */
__attribute__((naked, noinline)) static int mt_mve_c1_rows_run(const mt_mve_c1_rows *p __attribute__((unused)))
{
    __asm volatile(
        MT_NAKED_ENTER("100") /* 96 bytes of frame, 4 to keep sp 8-byte aligned */
        MT_NAKED_COPY32 MT_NAKED_COPY32 MT_NAKED_COPY32
        "vldrw.u32 q7, [r0]\n\t" /* wofs */
        "ldr r2, [sp, #68]\n\t"
        "ldrd r0, r10, [sp, #48]\n\t" /* the first image's x and y */
        "str r10, [sp, #64]\n\t"
        "ldr r3, [sp, #32]\n\t"
        "str r3, [sp, #36]\n"
        "1:\n\t" /* a block: its L and R, then its groups of four output channels */
        "ldrd r3, r4, [sp, #32]\n\t" /* blocks, left */
        "ldr r5, [sp, #40]\n\t"
        "cmp r3, r4\n\t"
        "it ne\n\t"
        "bicne r5, r5, #1\n\t" /* L only on the first block */
        "cmp r4, #1\n\t"
        "it ne\n\t"
        "bicne r5, r5, #2\n\t" /* R only on the last */
        "str r5, [sp, #4]\n\t"
        "ldr r10, [sp, #64]\n\t"
        "ldrd r12, r9, [sp, #20]\n\t" /* W, bias */
        "ldr r11, [sp, #28]\n"
        "2:\n\t" /* a group of four output channels */
        "vadd.i32 q5, q7, r12\n\t"
        "cmp r11, #4\n\t"
        "bge 3f\n\t"
        "vldrw.u32 q5, [sp, #80]\n\t"
        "vadd.i32 q5, q5, r12\n"
        "3:\n\t"
        "vmov.i32 q0, #0\n\t"
        "vmov.i32 q1, #0\n\t"
        "vmov.i32 q2, #0\n\t"
        "vmov.i32 q3, #0\n\t"
        "ldrd r3, r4, [sp]\n\t" /* rows, variant */
        "dls lr, r3\n\t"
        "tbb [pc, r4]\n"
        "4:\n\t"
        ".byte (20f - 4b) / 2, (21f - 4b) / 2, (22f - 4b) / 2, (23f - 4b) / 2\n"
        "20:\n\t"
        "mov r1, r0\n" MT_C1_ROW_LOOP("30", "ldm r1, {r3-r8}", MT_C1_T00, MT_C1_T33) "b 5f\n"
        "21:\n\t"
        "add r1, r0, #4\n" MT_C1_ROW_LOOP("31", "ldm r1, {r4-r8}", "", MT_C1_T33) "b 5f\n"
        "22:\n\t"
        "mov r1, r0\n" MT_C1_ROW_LOOP("32", "ldm r1, {r3-r7}", MT_C1_T00, "") "b 5f\n"
        "23:\n\t"
        "add r1, r0, #4\n" MT_C1_ROW_LOOP("33", "ldm r1, {r4-r7}", "", "")
        "5:\n\t" /* + bias (the sum first) */
        "cmp r9, #0\n\t"
        "beq 6f\n\t"
        "vctp.32 r11\n\t"
        "vpst\n\t"
        "vldrwt.u32 q6, [r9], #16\n\t" /* lanes past OC read as 0 */
        "vadd.f32 q0, q0, q6\n\t"
        "vadd.f32 q1, q1, q6\n\t"
        "vadd.f32 q2, q2, q6\n\t"
        "vadd.f32 q3, q3, q6\n"
        "6:\n\t"
        MT_NAN_TEST_Q0_Q3("9f")
        "ldrd r3, r8, [sp, #8]\n\t" /* act, ystep */
        "cbz r3, 7f\n\t"
        "vmov.i32 q4, #0\n\t"
        MT_Q0_Q3_WITH_Q4("vmaxnm")
        "cmp r3, #2\n\t"
        "bne 7f\n\t"
        "vmov.f32 q4, #6.0\n\t"
        MT_Q0_Q3_WITH_Q4("vminnm")
        "7:\n\t"
        "add r4, r10, r8\n\t"
        "add r5, r4, r8\n\t"
        "add r6, r5, r8\n\t"
        "vctp.32 r11\n\t"
        "vpstttt\n\t"
        "vstrwt.32 q0, [r10], #16\n\t"
        "vstrwt.32 q1, [r4]\n\t"
        "vstrwt.32 q2, [r5]\n\t"
        "vstrwt.32 q3, [r6]\n\t"
        "ldr r3, [sp, #16]\n\t"
        "add r12, r3\n\t"
        "subs r11, #4\n\t"
        "bgt 2b\n\t"
        "adds r0, #16\n\t" /* the next block */
        "ldr r3, [sp, #12]\n\t"
        "ldr r10, [sp, #64]\n\t"
        "add r10, r10, r3, lsl #2\n\t"
        "str r10, [sp, #64]\n\t"
        "ldr r3, [sp, #36]\n\t"
        "subs r3, #1\n\t"
        "str r3, [sp, #36]\n\t"
        "bne 1b\n\t"
        "ldr r3, [sp, #44]\n\t" /* the next image */
        "subs r3, #1\n\t"
        "beq 8f\n\t"
        "str r3, [sp, #44]\n\t"
        "ldrd r0, r10, [sp, #48]\n\t"
        "ldrd r3, r4, [sp, #56]\n\t"
        "add r0, r3\n\t"
        "add r10, r4\n\t"
        "strd r0, r10, [sp, #48]\n\t"
        "str r10, [sp, #64]\n\t"
        "ldr r3, [sp, #32]\n\t"
        "str r3, [sp, #36]\n\t"
        "b 1b\n" MT_NAKED_RETURN_0_OR_1("100", "d8-d15"));
}
#undef MT_C1_ROW_LOOP
#undef MT_C1_T00
#undef MT_C1_T33

#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_CONV2D_C1_ROWS_MVE_H */
