/*
 * The one-channel, 3-wide, stride-1 Conv2D weight gradient on the M55 as a naked function
 * (included by conv2d_backward_mve.c only): mt_mve_cws_rows_run adds to eight output channels'
 * sums every term of the batch, (b, oh) ascending, each output row's kernel rows in bounds.
 *
 * Why naked: with the loops over images, rows and kernel rows in C (cws_row), the slide's asm
 * held eleven registers and GCC spilled the rest: 75 instructions a kernel row and 60 an
 * output row of bookkeeping around 28 instructions a turn of three pixels (the benchmark
 * CNN's first layer, 8 pixels a row: 1.25 instructions a MAC for its backward). Here the
 * pointers stay in registers, the geometry waits on the stack (copied from the struct below),
 * and an output row's kernel rows in bounds are found in ten instructions.
 *
 * The sums are conv2d_backward_mve.c's: for kernel row kh and kw = 0, 1, 2,
 *   S[kh, kw, oc..oc+3] += dz[b, oh, ow, oc..oc+3]·x[b, oh·SH + kh - PT, ow - PL + kw]
 * over the in-bounds (b, oh, ow) in ascending order, each term a VFMA (a·b + sum rounded once,
 * the reference's mt_fmaf); a window of three x values slides along the row in core registers,
 * and a pixel inside the row costs an LDR of x, two VLDRW of dz, six VFMA and an ADD. A kernel
 * row's six sums (three taps, two vectors of channels) wait on the stack between rows. The
 * caller clears FPSCR's flags before and tests them and the sums' NaNs after (mve.h).
 */
#ifndef MT_OPS_ARM_CONV2D_C1_DW_ROWS_MVE_H
#define MT_OPS_ARM_CONV2D_C1_DW_ROWS_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#include "ops/mve/mve_flags.h" /* MT_NAKED_COPY32 */

/* What mt_mve_cws_rows_run reads; its first 80 bytes are copied to the function's stack frame,
 * where ih0, oh_left and images count down (scratch: set them as marked). */
#define MT_MVE_CWS_ROWS_FIELDS(F, S)                                                                                 \
    F(S, 0, const float *, dz, )    /* dz[0, 0, 0, oc] */                                                            \
    F(S, 4, const float *, x, )     /* x of image 0 (moves an image at a time in the copy) */                        \
    F(S, 8, uint32_t, xstep, )      /* W·4, the bytes from an x row to the next */                                   \
    F(S, 12, void *, sums, )        /* kernel row 0's six sums (float32x4_t: taps 0..2 of oc.., then of oc + 4..) */ \
    F(S, 16, uint32_t, KH, )        /* kernel rows (the sums hold KH·6 vectors) */                                   \
    F(S, 20, uint32_t, H, )         /* input rows */                                                                 \
    F(S, 24, uint32_t, rowstep, )   /* OW·OC·4, the bytes from a dz row to the next */                               \
    F(S, 28, uint32_t, SH, )        /* stride along H */                                                             \
    F(S, 32, uint32_t, OH, )        /* output rows */                                                                \
    F(S, 36, int32_t, neg_pt, )     /* -PT */                                                                        \
    F(S, 40, int32_t, ih0, )        /* -PT: the input row of kernel row 0 of the output row */                       \
    F(S, 44, uint32_t, oh_left, )   /* OH */                                                                         \
    F(S, 48, uint32_t, images, )    /* B >= 1 */                                                                     \
    F(S, 52, uint32_t, ximage, )    /* H·W·4, the bytes from an image's x to the next image's */                     \
    F(S, 56, uint32_t, ds, )        /* OC·4, the bytes from a pixel's dz to the next pixel's */                      \
    F(S, 60, uint32_t, triples, )   /* (W - 2) / 3: loop turns of three inside pixels */                             \
    F(S, 64, uint32_t, rem, )       /* (W - 2) % 3: inside pixels before the turns */                                \
    F(S, 68, uint32_t, PL, )        /* 1 (SAME: output 0 and W - 1 take two taps) or 0 (VALID) */                    \
    F(S, 72, uint32_t, unused, [2])
/* mt_mve_cws_rows_run reads mt_mve_cws_rows */
MT_ASM_ARGS(mt_mve_cws_rows, MT_MVE_CWS_ROWS_FIELDS, 80);

/* one pixel inside the row: x[ow - PL + kw] in xa, xb, xc (xc loaded here, into the register
 * x[ow - PL - 1] left), times dz[ow, oc..oc+3] into q0..q2 and dz[ow, oc+4..oc+7] into q3..q5 */
#define MT_CWS_STEP(xa, xb, xc)                                                                                    \
    "ldr " xc ", [r2], #4\n\t"                                                                                     \
    "vldrw.u32 q6, [r1]\n\t"                                                                                       \
    "vfma.f32 q0, q6, " xa "\n\t"                                                                                  \
    "vfma.f32 q1, q6, " xb "\n\t"                                                                                  \
    "vfma.f32 q2, q6, " xc "\n\t"                                                                                  \
    "vldrw.u32 q6, [r1, #16]\n\t"                                                                                  \
    "vfma.f32 q3, q6, " xa "\n\t"                                                                                  \
    "vfma.f32 q4, q6, " xb "\n\t"                                                                                  \
    "vfma.f32 q5, q6, " xc "\n\t"                                                                                  \
    "add r1, r3\n\t"

/*
 * Registers: r1 dz of the pixel, r2 the next x to load, r3 ds, r4-r6 the x window (and
 * scratch between rows), r7 the kernel row's sums, r8 kernel rows left, r9 the kernel row's x
 * row, r10 dz's output row, r11 triples, r12 scratch, lr the turns; q0-q2 taps 0..2 of
 * channels oc.., q3-q5 of oc + 4.., q6 dz. The stack frame is the struct's first 80 bytes.
 */
__attribute__((naked, noinline)) static void mt_mve_cws_rows_run(const mt_mve_cws_rows *p __attribute__((unused)))
{
    __asm volatile(
        MT_NAKED_ENTER("84") /* 80 bytes of frame, 4 to keep sp 8-byte aligned */
        MT_NAKED_COPY32 MT_NAKED_COPY32
        "ldm r0!, {r1-r4}\n\t"
        "stm r12!, {r1-r4}\n\t"
        "ldr r10, [sp]\n\t"
        "ldrd r3, r11, [sp, #56]\n" /* ds, triples */
        "2:\n\t" /* output row (b, oh): its kernel rows in bounds [kh0, kh1) */
        "ldr r12, [sp, #40]\n\t" /* ih0 */
        "negs r4, r12\n\t"
        "it mi\n\t"
        "movmi r4, #0\n\t" /* kh0 = max(0, -ih0) */
        "ldrd r5, r6, [sp, #16]\n\t" /* KH, H */
        "subs r6, r6, r12\n\t"
        "cmp r6, r5\n\t"
        "it gt\n\t"
        "movgt r6, r5\n\t" /* kh1 = min(KH, H - ih0) */
        "subs r8, r6, r4\n\t"
        "ble 13f\n\t" /* every kernel row in the padding */
        "add r5, r12, r4\n\t"
        "ldrd r6, r12, [sp, #4]\n\t" /* x of the image, xstep */
        "mla r9, r5, r12, r6\n\t"     /* x row ih0 + kh0 */
        "ldr r6, [sp, #12]\n\t"
        "movs r5, #96\n\t"
        "mla r7, r4, r5, r6\n" /* kernel row kh0's sums */
        "3:\n\t"               /* a kernel row along the output row */
        "vldrw.u32 q0, [r7]\n\t"
        "vldrw.u32 q1, [r7, #16]\n\t"
        "vldrw.u32 q2, [r7, #32]\n\t"
        "vldrw.u32 q3, [r7, #48]\n\t"
        "vldrw.u32 q4, [r7, #64]\n\t"
        "vldrw.u32 q5, [r7, #80]\n\t"
        "mov r1, r10\n\t"
        "mov r2, r9\n\t"
        "ldr r4, [sp, #68]\n\t"
        "cbz r4, 4f\n\t"
        "ldrd r4, r5, [r2]\n\t" /* output 0 (SAME): taps kw = 1, 2 are x[0], x[1] */
        "vldrw.u32 q6, [r1]\n\t"
        "vfma.f32 q1, q6, r4\n\t"
        "vfma.f32 q2, q6, r5\n\t"
        "vldrw.u32 q6, [r1, #16]\n\t"
        "vfma.f32 q4, q6, r4\n\t"
        "vfma.f32 q5, q6, r5\n\t"
        "add r1, r3\n"
        "4:\n\t" /* the inside pixels: the window starts at x[0], x[1] */
        "ldr r12, [sp, #64]\n\t"
        "tbb [pc, r12]\n"
        "5:\n\t"
        ".byte (6f - 5b) / 2, (7f - 5b) / 2, (8f - 5b) / 2, 0\n"
        "6:\n\t" /* no pixel before the turns: the window in r4, r5 */
        "ldrd r4, r5, [r2], #8\n\t"
        "b 9f\n"
        "7:\n\t" /* one: the window in r6, r4, one step brings it to r4, r5 */
        "ldrd r6, r4, [r2], #8\n\t" MT_CWS_STEP("r6", "r4", "r5") "b 9f\n"
        "8:\n\t" /* two: r5, r6, then r6, r4, then r4, r5 */
        "ldrd r5, r6, [r2], #8\n\t" MT_CWS_STEP("r5", "r6", "r4") MT_CWS_STEP("r6", "r4", "r5")
        "9:\n\t"
        "wls lr, r11, 11f\n"
        "10:\n\t" MT_CWS_STEP("r4", "r5", "r6") MT_CWS_STEP("r5", "r6", "r4") MT_CWS_STEP("r6", "r4", "r5")
        "le lr, 10b\n"
        "11:\n\t"
        "ldr r4, [sp, #68]\n\t"
        "cbz r4, 12f\n\t"
        "ldrd r4, r5, [r2, #-8]\n\t" /* output W - 1 (SAME): taps kw = 0, 1 are x[W - 2], x[W - 1] */
        "vldrw.u32 q6, [r1]\n\t"
        "vfma.f32 q0, q6, r4\n\t"
        "vfma.f32 q1, q6, r5\n\t"
        "vldrw.u32 q6, [r1, #16]\n\t"
        "vfma.f32 q3, q6, r4\n\t"
        "vfma.f32 q4, q6, r5\n"
        "12:\n\t"
        "vstrw.32 q0, [r7]\n\t"
        "vstrw.32 q1, [r7, #16]\n\t"
        "vstrw.32 q2, [r7, #32]\n\t"
        "vstrw.32 q3, [r7, #48]\n\t"
        "vstrw.32 q4, [r7, #64]\n\t"
        "vstrw.32 q5, [r7, #80]\n\t"
        "adds r7, #96\n\t"
        "ldr r12, [sp, #8]\n\t"
        "add r9, r12\n\t"
        "subs r8, #1\n\t"
        "bne 3b\n"
        "13:\n\t" /* the next output row */
        "ldrd r4, r5, [sp, #24]\n\t" /* rowstep, SH */
        "add r10, r4\n\t"
        "ldrd r6, r4, [sp, #40]\n\t" /* ih0, oh_left */
        "add r6, r5\n\t"
        "subs r4, #1\n\t"
        "strd r6, r4, [sp, #40]\n\t"
        "bne 2b\n\t"
        "ldr r4, [sp, #48]\n\t" /* the next image */
        "subs r4, #1\n\t"
        "beq 14f\n\t"
        "str r4, [sp, #48]\n\t"
        "ldrd r4, r5, [sp, #32]\n\t" /* OH, -PT */
        "strd r5, r4, [sp, #40]\n\t"
        "ldr r4, [sp, #4]\n\t"
        "ldr r5, [sp, #52]\n\t"
        "add r4, r5\n\t"
        "str r4, [sp, #4]\n\t"
        "b 2b\n"
        "14:\n\t"
        "add sp, #84\n\t"
        "vpop {d8-d15}\n\t"
        "pop {r4-r11, pc}\n");
}
#undef MT_CWS_STEP

#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_CONV2D_C1_DW_ROWS_MVE_H */
