/*
 * DepthwiseConv2D's weight gradient on the M55 for 8 and 16 channels, a kernel 3 wide at stride
 * 1 along W, as naked functions (included by depthwise_conv2d_backward_mve.c only):
 * mt_mve_dws_rows_run_8 and _16 add one kernel row's terms, for one vector of four channels, over
 * every output row of the batch that the kernel row reaches.
 *
 * The sums are depthwise_conv2d_backward_mve.c's slides (dws_row): for kw = 0, 1, 2,
 *   S[kw, c..c+3] += dz[b, oh, ow, c..c+3]·x[b, oh·SH + kh - PT, ow - PL + kw, c..c+3]
 * over the in-bounds (b, oh, ow) in ascending order, each term a VFMA (a·b + sum rounded once,
 * the reference's mt_fmaf); a window of three x vectors slides one pixel a step. Why naked: in
 * C a pixel also paid two pointer additions (the pixels sit C·4 bytes apart, an immediate here
 * only when C is known to the assembler: hence a function per channel count) and a row its
 * ends in C and its setup around the asm: 0.98 instructions a MAC on the benchmark CNN's
 * 8-pixel rows. Here a pixel inside a row is two VLDRW with post-increment and three VFMA (5
 * instructions for 12 MACs), and the row's ends and steps are in the same function. The caller
 * clears FPSCR's flags before and tests them and the sums' NaNs after (mve.h).
 */
#ifndef MT_OPS_ARM_DEPTHWISE_DW_ROWS_MVE_H
#define MT_OPS_ARM_DEPTHWISE_DW_ROWS_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#include "ops/mve/mve_flags.h" /* MT_NAKED_ENTER, MT_NAKED_COPY32 */

/* What mt_mve_dws_rows_run_* read, copied as it is to the function's stack frame */
#define MT_MVE_DWS_ROWS_FIELDS(F, S)                                                                           \
    F(S, 0, const float *, dz, )  /* dz[b = 0, oh0, 0, c] (oh0: the first output row kernel row kh reaches) */ \
    F(S, 4, const float *, x, )   /* x[b = 0, oh0·SH + kh - PT, 0, c] */                                       \
    F(S, 8, void *, sums, )       /* the kernel row's three sums (float32x4_t, taps 0, 1, 2), added to */      \
    F(S, 12, uint32_t, rows, )    /* output rows the kernel row reaches in each image, >= 1 */                 \
    F(S, 16, uint32_t, images, )  /* B >= 1 */                                                                 \
    F(S, 20, uint32_t, dzrow, )   /* OW·C·4, the bytes from a dz row to the next */                            \
    F(S, 24, uint32_t, xrow, )    /* SH·W·C·4, the bytes from the x row of one output row to the next's */     \
    F(S, 28, uint32_t, dzskip, )  /* from the dz row after an image's last to the next image's first */        \
    F(S, 32, uint32_t, xskip, )   /* the same in x */                                                          \
    F(S, 36, uint32_t, triples, ) /* (W - 2) / 3: loop turns of three inside pixels */                         \
    F(S, 40, uint32_t, rem, )     /* (W - 2) % 3: inside pixels before the turns */                            \
    F(S, 44, uint32_t, PL, )      /* 1 (SAME: outputs 0 and W - 1 take two taps) or 0 (VALID) */
/* mt_mve_dws_rows_run_* read mt_mve_dws_rows */
MT_ASM_ARGS(mt_mve_dws_rows, MT_MVE_DWS_ROWS_FIELDS, 48);

/* one pixel inside the row: the window xa, xb, xc = x[ow - PL .. ow - PL + 2] (xc loaded here,
 * into the register x[ow - PL - 1] left), dz[ow] into q6 */
#define MT_DWS_STEP(CS, xa, xb, xc)                                                                                   \
    "vldrw.u32 " xc ", [r3], #" #CS "\n\t"                                                                            \
    "vldrw.u32 q6, [r2], #" #CS "\n\t"                                                                                \
    "vfma.f32 q0, q6, " xa "\n\t"                                                                                     \
    "vfma.f32 q1, q6, " xb "\n\t"                                                                                     \
    "vfma.f32 q2, q6, " xc "\n\t"
/* output 0 of a SAME row (r7 = PL = 1): its taps kw = 1, 2 on x[0], x[1], in xa, xb */
#define MT_DWS_LEFT(CS, label, xa, xb)                                                                                \
    "cbz r7, " label "f\n\t"                                                                                          \
    "vldrw.u32 q6, [r2], #" #CS "\n\t"                                                                                \
    "vfma.f32 q1, q6, " xa "\n\t"                                                                                     \
    "vfma.f32 q2, q6, " xb "\n" label ":\n\t"

/*
 * Registers: r0 dz's row, r1 x's, r2 dz of the pixel, r3 the next x to load, r4 rows left in
 * the image, r5 images left, r6 triples, r7 PL, r8 rem, r9 r10 steps, lr the turns; q0-q2 the
 * sums of taps 0, 1, 2, q3-q5 the x window (x[0], x[1] loaded where one, two or no pixel
 * before the turns brings them to q3, q4), q6 dz. The stack frame is the struct.
 */
#define MT_DEFINE_DWS_ROWS_RUN(C, CS)                                                                                 \
    __attribute__((naked, noinline)) static void mt_mve_dws_rows_run_##C(                                             \
        const mt_mve_dws_rows *p __attribute__((unused)))                                                             \
    {                                                                                                                 \
        __asm volatile(MT_NAKED_ENTER("52") /* 48 bytes of frame, 4 to keep sp 8-byte aligned */                      \
                       MT_NAKED_COPY32                                                                                \
                       "ldm r0!, {r1-r4}\n\t"                                                                         \
                       "stm r12!, {r1-r4}\n\t"                                                                        \
                       "ldrd r0, r1, [sp]\n\t" /* dz, x */                                                            \
                       "ldr r3, [sp, #8]\n\t"                                                                         \
                       "vldrw.u32 q0, [r3]\n\t"                                                                       \
                       "vldrw.u32 q1, [r3, #16]\n\t"                                                                  \
                       "vldrw.u32 q2, [r3, #32]\n\t"                                                                  \
                       "ldrd r4, r5, [sp, #12]\n\t" /* rows, images */                                                \
                       "ldrd r6, r8, [sp, #36]\n\t" /* triples, rem */                                                \
                       "ldr r7, [sp, #44]\n"                                                                          \
                       "1:\n\t" /* an output row */                                                                   \
                       "mov r2, r0\n\t"                                                                               \
                       "mov r3, r1\n\t"                                                                               \
                       "tbb [pc, r8]\n"                                                                               \
                       "3:\n\t"                                                                                       \
                       ".byte (10f - 3b) / 2, (11f - 3b) / 2, (12f - 3b) / 2, 0\n"                                    \
                       "10:\n\t" /* no pixel before the turns: the window in q3, q4 */                                \
                       "vldrw.u32 q3, [r3], #" #CS "\n\t"                                                             \
                       "vldrw.u32 q4, [r3], #" #CS "\n\t" MT_DWS_LEFT(CS, "20", "q3", "q4") "b 14f\n"                 \
                       "11:\n\t" /* one: q5, q3, then q3, q4 */                                                       \
                       "vldrw.u32 q5, [r3], #" #CS "\n\t"                                                             \
                       "vldrw.u32 q3, [r3], #" #CS "\n\t" MT_DWS_LEFT(CS, "21", "q5", "q3")                           \
                           MT_DWS_STEP(CS, "q5", "q3", "q4") "b 14f\n"                                                \
                       "12:\n\t" /* two: q4, q5, then q5, q3, then q3, q4 */                                          \
                       "vldrw.u32 q4, [r3], #" #CS "\n\t"                                                             \
                       "vldrw.u32 q5, [r3], #" #CS "\n\t" MT_DWS_LEFT(CS, "22", "q4", "q5")                           \
                           MT_DWS_STEP(CS, "q4", "q5", "q3") MT_DWS_STEP(CS, "q5", "q3", "q4")                        \
                       "14:\n\t"                                                                                      \
                       "wls lr, r6, 16f\n"                                                                            \
                       "15:\n\t" MT_DWS_STEP(CS, "q3", "q4", "q5") MT_DWS_STEP(CS, "q4", "q5", "q3")                  \
                           MT_DWS_STEP(CS, "q5", "q3", "q4") "le lr, 15b\n"                                           \
                       "16:\n\t"                                                                                      \
                       "cbz r7, 17f\n\t" /* output W - 1 (SAME): taps kw = 0, 1 on x[W - 2], x[W - 1] */              \
                       "vldrw.u32 q6, [r2]\n\t"                                                                       \
                       "vfma.f32 q0, q6, q3\n\t"                                                                      \
                       "vfma.f32 q1, q6, q4\n"                                                                        \
                       "17:\n\t"                                                                                      \
                       "ldrd r9, r10, [sp, #20]\n\t" /* the next output row */                                        \
                       "add r0, r9\n\t"                                                                               \
                       "add r1, r10\n\t"                                                                              \
                       "subs r4, #1\n\t"                                                                              \
                       "bne 1b\n\t"                                                                                   \
                       "subs r5, #1\n\t" /* the next image */                                                         \
                       "beq 18f\n\t"                                                                                  \
                       "ldrd r9, r10, [sp, #28]\n\t"                                                                  \
                       "add r0, r9\n\t"                                                                               \
                       "add r1, r10\n\t"                                                                              \
                       "ldr r4, [sp, #12]\n\t"                                                                        \
                       "b 1b\n"                                                                                       \
                       "18:\n\t"                                                                                      \
                       "ldr r3, [sp, #8]\n\t"                                                                         \
                       "vstrw.32 q0, [r3]\n\t"                                                                        \
                       "vstrw.32 q1, [r3, #16]\n\t"                                                                   \
                       "vstrw.32 q2, [r3, #32]\n\t"                                                                   \
                       "add sp, #52\n\t"                                                                              \
                       "vpop {d8-d15}\n\t"                                                                            \
                       "pop {r4-r11, pc}\n");                                                                         \
    }

MT_DEFINE_DWS_ROWS_RUN(8, 32)
MT_DEFINE_DWS_ROWS_RUN(16, 64)
#undef MT_DEFINE_DWS_ROWS_RUN
#undef MT_DWS_LEFT
#undef MT_DWS_STEP

#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_DEPTHWISE_DW_ROWS_MVE_H */
