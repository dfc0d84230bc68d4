/*
 * The DepthwiseConv2D forward on the M55 for 8 and 16 channels, a kernel 3 wide at stride 1
 * along W, as naked functions (included by depthwise_conv2d_mve.c only):
 * mt_mve_dw_blocks_run_8 and _16 compute an output row's blocks of four pixels for one vector
 * of four channels, in every image of the batch.
 *
 * Why blocks and not the kernel-row slides: a slide stores each output's partial sum after a
 * kernel row and loads it for the next, and pays the row's ends and setup per kernel row; on
 * 8-pixel rows that came to 1.96 instructions a MAC. Here a block's four sums stay in q0-q3
 * over all its kernel rows: per kernel row the three weights (three VLDRW of W packed by the
 * caller, taps 16 bytes apart), six x vectors and twelve VFMA, 23 instructions for 48 MACs.
 * The x vectors sit C·4 bytes apart, an immediate offset only when C is known to the
 * assembler: hence a function per channel count, and the slides for the others.
 *
 * Each sum is the reference's: y[p, c] = act(Σ_{kh, kw} x[p + kw - PL, c]·W[kh, kw, c] + b[c]),
 * from +0, the in-bounds taps in ascending (kh, kw), each a VFMA (a·b + sum rounded once, the
 * reference's mt_fmaf), then + bias. Within a kernel row, x_j (pixel j of the six the block's
 * windows cover) adds W0 to sum j, W1 to sum j - 1 and W2 to sum j - 2, so every sum takes its
 * taps kw = 0, 1, 2 in order. L (a block whose pixel 0 lacks tap kw = 0, the left padding) and
 * R (pixel 3 lacks kw = 2) leave those terms out and never load their x.
 *
 * A NaN in a block's results (the activation would keep it; VMAXNM would not) ends the call
 * with 1, and the caller recomputes the op in scalar code; so do FPSCR's IDC and UFC, which the
 * caller cleared before and reads after (mve.h). The activation is VMAXNM with +0 (and VMINNM
 * with 6): the reference's v < 0 ? 0 : v for every v but -0, and a sum from +0, with or without
 * the bias, is -0 only after a term underflowed, which sets UFC.
 */
#ifndef MT_OPS_ARM_DEPTHWISE_BLOCKS_MVE_H
#define MT_OPS_ARM_DEPTHWISE_BLOCKS_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/arm/mve.h"

#if MT_MVE_KERNELS
#include "ops/arm/mve_flags.h" /* MT_NAKED_*, MT_Q0_Q3_WITH_Q4 */

/* What mt_mve_dw_blocks_run_* read, copied as it is to the function's stack frame, where the
 * fields marked scratch are the copy's running state (any value here). */
typedef struct mt_mve_dw_blocks {
    uint32_t rows;      /*  0: kernel rows of this output row, kh1 - kh0 >= 1 */
    uint32_t act;       /*  4: MT_FUSED_NONE, _RELU, _RELU6 (0, 1, 2) */
    const void *w;      /*  8: the vector of channels' W, packed: row kh0's taps 0, 1, 2, then row kh0 + 1's */
    const float *bias;  /* 12: bias of the vector's first channel, or NULL */
    uint32_t blocks;    /* 16: blocks of four pixels in the row, >= 1 */
    uint32_t unused0;   /* 20 */
    uint32_t edges;     /* 24: 1: the first block is L; 2: the last block is R */
    uint32_t images;    /* 28: images, >= 1 (counts down in the copy) */
    uintptr_t x;        /* 32: the first image's first block: the address of x[pixel 0's tap kw = 0, kernel row kh0,
                         *     the vector's first channel] (for L an address never read: C·4 bytes before the first
                         *     x it loads) */
    float *y;           /* 36: the first image's first block: y of pixel 0, the vector's first channel */
    uint32_t ximage;    /* 40: bytes from an image's x to the next image's */
    uint32_t yimage;    /* 44: bytes from an image's y to the next image's */
    uint32_t xstep;     /* 48: W·C·4, the bytes from an x row to the next */
    uint32_t unused[3]; /* 52 */
} mt_mve_dw_blocks;
/* mt_mve_dw_blocks_run_* read mt_mve_dw_blocks at these offsets (a negative size otherwise) */
typedef char mt_mve_dw_blocks_offsets[offsetof(mt_mve_dw_blocks, w) == 8 && offsetof(mt_mve_dw_blocks, blocks) == 16 &&
                                              offsetof(mt_mve_dw_blocks, images) == 28 &&
                                              offsetof(mt_mve_dw_blocks, x) == 32 &&
                                              offsetof(mt_mve_dw_blocks, ximage) == 40 &&
                                              offsetof(mt_mve_dw_blocks, xstep) == 48 &&
                                              sizeof(mt_mve_dw_blocks) == 64
                                          ? 1
                                          : -1];

/* a kernel row of a block: r1 its x row (pixel 0's tap kw = 0), r4 the packed W (48 bytes a row,
 * read here and moved on), CS the bytes between pixels; X0 and T00 pixel 0's tap kw = 0 (left out
 * for L), X5 and T33 pixel 3's kw = 2 (left out for R); lr counts the rows */
#define MT_DWB_TERM(s, w) "vfma.f32 " s ", q7, " w "\n\t"
#define MT_DWB_X(j, CS) "vldrw.u32 q7, [r1, #(" #j " * " #CS ")]\n\t"
#define MT_DWB_ROW_LOOP(label, CS, X0, T00, X5, T33)                                                                  \
    label ":\n\t"                                                                                                     \
    "vldrw.u32 q5, [r4, #16]\n\t"                                                                                     \
    "vldrw.u32 q6, [r4, #32]\n\t"                                                                                     \
    "vldrw.u32 q4, [r4], #48\n\t" X0 T00 MT_DWB_X(1, CS) MT_DWB_TERM("q0", "q5") MT_DWB_TERM("q1", "q4")              \
        MT_DWB_X(2, CS) MT_DWB_TERM("q0", "q6") MT_DWB_TERM("q1", "q5") MT_DWB_TERM("q2", "q4")                       \
            MT_DWB_X(3, CS) MT_DWB_TERM("q1", "q6") MT_DWB_TERM("q2", "q5") MT_DWB_TERM("q3", "q4")                   \
                MT_DWB_X(4, CS) MT_DWB_TERM("q2", "q6") MT_DWB_TERM("q3", "q5") X5 T33 "add r1, r2\n\t"               \
                                                                                  "le lr, " label "b\n\t"

/*
 * Registers: r0 the block's x, r1 the kernel row's, r2 xstep, r3 scratch, r4 the packed W
 * (moving a row at a time from r12, kernel row kh0's), r5 the block's y, r6 act, r7 the block's
 * L and R, r8 the blocks left in the row, r9 the row's blocks, r10 bias, r11 the kernel rows,
 * lr the rows left; q0-q3 the four pixels' sums, q4-q6 the kernel row's three weights (then the
 * bias, 0 and 6), q7 an x vector. The stack frame is the struct (x, y and images move on in it
 * an image at a time). Returns 0 when every block is stored, 1 on a NaN (some unstored).
 */
#define MT_DEFINE_DW_BLOCKS_RUN(C, CS)                                                                                \
    __attribute__((naked, noinline)) static int mt_mve_dw_blocks_run_##C(                                             \
        const mt_mve_dw_blocks *p __attribute__((unused)))                                                            \
    {                                                                                                                 \
        __asm volatile(MT_NAKED_ENTER("68") /* 64 bytes of frame, 4 to keep sp 8-byte aligned */                      \
                       MT_NAKED_COPY32 MT_NAKED_COPY32                                                                \
                       "ldr r2, [sp, #48]\n\t"                                                                        \
                       "ldrd r0, r5, [sp, #32]\n\t" /* the first image's x and y */                                   \
                       "ldrd r11, r6, [sp]\n\t"     /* rows, act */                                                   \
                       "ldrd r12, r10, [sp, #8]\n\t" /* W, bias */                                                    \
                       "ldr r9, [sp, #16]\n\t"                                                                        \
                       "mov r8, r9\n"                                                                                 \
                       "1:\n\t" /* a block: its L and R */                                                            \
                       "ldr r7, [sp, #24]\n\t"                                                                        \
                       "cmp r9, r8\n\t"                                                                               \
                       "it ne\n\t"                                                                                    \
                       "bicne r7, r7, #1\n\t" /* L only on the first block */                                         \
                       "cmp r8, #1\n\t"                                                                               \
                       "it ne\n\t"                                                                                    \
                       "bicne r7, r7, #2\n\t" /* R only on the last */                                                \
                       "vmov.i32 q0, #0\n\t"                                                                          \
                       "vmov.i32 q1, #0\n\t"                                                                          \
                       "vmov.i32 q2, #0\n\t"                                                                          \
                       "vmov.i32 q3, #0\n\t"                                                                          \
                       "mov r4, r12\n\t"                                                                              \
                       "mov r1, r0\n\t"                                                                               \
                       "dls lr, r11\n\t"                                                                              \
                       "tbb [pc, r7]\n"                                                                               \
                       "4:\n\t"                                                                                       \
                       ".byte (20f - 4b) / 2, (21f - 4b) / 2, (22f - 4b) / 2, (23f - 4b) / 2\n"                       \
                       "20:\n\t" MT_DWB_ROW_LOOP("30", CS, MT_DWB_X(0, CS), MT_DWB_TERM("q0", "q4"),                  \
                                                 MT_DWB_X(5, CS), MT_DWB_TERM("q3", "q6")) "b 5f\n"                   \
                       "21:\n\t" MT_DWB_ROW_LOOP("31", CS, "", "", MT_DWB_X(5, CS), MT_DWB_TERM("q3", "q6"))          \
                       "b 5f\n"                                                                                       \
                       "22:\n\t" MT_DWB_ROW_LOOP("32", CS, MT_DWB_X(0, CS), MT_DWB_TERM("q0", "q4"), "", "")          \
                       "b 5f\n"                                                                                       \
                       "23:\n\t" MT_DWB_ROW_LOOP("33", CS, "", "", "", "")                                            \
                       "5:\n\t" /* + bias (the sum first) */                                                          \
                       "cmp r10, #0\n\t"                                                                              \
                       "beq 6f\n\t"                                                                                   \
                       "vldrw.u32 q4, [r10]\n\t"                                                                      \
                       "vadd.f32 q0, q0, q4\n\t"                                                                      \
                       "vadd.f32 q1, q1, q4\n\t"                                                                      \
                       "vadd.f32 q2, q2, q4\n\t"                                                                      \
                       "vadd.f32 q3, q3, q4\n"                                                                        \
                       "6:\n\t"                                                                                       \
                       "vcmp.f32 eq, q0, q0\n\t" /* P0: the lanes of every pixel that are not NaN */                  \
                       "vpsttt\n\t"                                                                                   \
                       "vcmpt.f32 eq, q1, q1\n\t"                                                                     \
                       "vcmpt.f32 eq, q2, q2\n\t"                                                                     \
                       "vcmpt.f32 eq, q3, q3\n\t"                                                                     \
                       "vmrs r3, p0\n\t"                                                                              \
                       "lsls r3, r3, #16\n\t"                                                                         \
                       "cmn r3, #65536\n\t" /* P0 = 0xffff: 0xffff0000 + 0x10000 is 0 */                              \
                       "bne 9f\n\t"                                                                                   \
                       "cbz r6, 7f\n\t"                                                                               \
                       "vmov.i32 q4, #0\n\t" MT_Q0_Q3_WITH_Q4("vmaxnm") "cmp r6, #2\n\t"                              \
                       "bne 7f\n\t"                                                                                   \
                       "vmov.f32 q4, #6.0\n\t" MT_Q0_Q3_WITH_Q4("vminnm")                                             \
                       "7:\n\t"                                                                                       \
                       "vstrw.32 q0, [r5]\n\t"                                                                        \
                       "vstrw.32 q1, [r5, #(" #CS ")]\n\t"                                                            \
                       "vstrw.32 q2, [r5, #(2 * " #CS ")]\n\t"                                                        \
                       "vstrw.32 q3, [r5, #(3 * " #CS ")]\n\t"                                                        \
                       "add r5, r5, #(4 * " #CS ")\n\t" /* the next block */                                          \
                       "add r0, r0, #(4 * " #CS ")\n\t"                                                               \
                       "subs r8, #1\n\t"                                                                              \
                       "bne 1b\n\t"                                                                                   \
                       "ldr r3, [sp, #28]\n\t" /* the next image */                                                   \
                       "subs r3, #1\n\t"                                                                              \
                       "beq 8f\n\t"                                                                                   \
                       "str r3, [sp, #28]\n\t"                                                                        \
                       "ldrd r0, r5, [sp, #32]\n\t"                                                                   \
                       "ldrd r3, r7, [sp, #40]\n\t"                                                                   \
                       "add r0, r3\n\t"                                                                               \
                       "add r5, r7\n\t"                                                                               \
                       "strd r0, r5, [sp, #32]\n\t"                                                                   \
                       "mov r8, r9\n\t"                                                                               \
                       "b 1b\n" MT_NAKED_RETURN_0_OR_1("68", "d8-d15"));                                              \
    }

MT_DEFINE_DW_BLOCKS_RUN(8, 32)
MT_DEFINE_DW_BLOCKS_RUN(16, 64)
#undef MT_DEFINE_DW_BLOCKS_RUN
#undef MT_DWB_ROW_LOOP
#undef MT_DWB_X
#undef MT_DWB_TERM

#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_DEPTHWISE_BLOCKS_MVE_H */
