/*
 * The DepthwiseConv2D forward on the M55 for 8 and 16 channels, a kernel 3 wide at stride 1
 * along W, as naked functions:
 * mt_mve_dw_blocks_run_8 and _16 compute an output row's blocks of four pixels for one vector
 * of four channels, in every image of the batch.
 *
 * Both depthwise_conv2d_mve.c (the forward) and depthwise_conv2d_backward_mve.c (the input
 * gradient, below) include it; each uses its functions only (the others, unused, are not
 * emitted).
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

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#include "ops/mve/mve_flags.h" /* MT_NAKED_*, MT_NAN_TEST_Q0_Q3, MT_Q0_Q3_WITH_Q4 */

typedef struct mt_mve_dx_fix mt_mve_dx_fix;

/* What mt_mve_dw_blocks_run_* and mt_mve_dx_blocks_run_* read (the same offsets: they share the
 * asm of the blocks, rows and images), copied as it is to the function's stack frame. "src" is x
 * (the forward) or dz (the input gradient), "dst" y or dx. */
#define MT_MVE_DW_BLOCKS_FIELDS(F, S)                                                                                         \
    F(S, 0, uint32_t, rows, )              /* kernel rows of this output row (the input gradient: dz rows), >= 1 */           \
    F(S, 4, uint32_t, act, )               /* the forward's MT_FUSED_NONE, _RELU, _RELU6 (0, 1, 2) */                         \
    F(S, 8, const void *, w, )             /* W packed for the vector of channels: row kh0's taps 0, 1, 2, then row kh0 + 1's \
                                              (the input gradient: the kernel turned round, rows and taps reversed) */        \
    F(S, 12, const float *, bias, )        /* the forward's bias of the vector's first channel, or NULL */                    \
    F(S, 16, uint32_t, blocks, )           /* blocks of four pixels in the row, >= 1 */                                       \
    F(S, 20, const mt_mve_dx_fix *, fix, ) /* the input gradient's, for mt_mve_dx_block_fix */                                \
    F(S, 24, uint32_t, edges, )            /* 1: the first block is L; 2: the last block is R */                              \
    F(S, 28, uint32_t, images, )           /* images, >= 1 (counts down in the copy) */                                       \
    F(S, 32, uintptr_t, src, )             /* the first image's first block: the address of src[pixel 0's tap 0, row kh0, the \
                                              vector's first channel] (for L an address never read: C·4 bytes before the      \
                                              first src it loads) */                                                          \
    F(S, 36, float *, dst, )               /* the first image's first block: dst of pixel 0, the vector's first channel */    \
    F(S, 40, uint32_t, src_image, )        /* bytes from an image's src to the next image's */                                \
    F(S, 44, uint32_t, dst_image, )        /* bytes from an image's dst to the next image's */                                \
    F(S, 48, uint32_t, src_step, )         /* the bytes from a src row to the next (x: W·C·4, dz: OW·C·4) */                  \
    F(S, 52, uint32_t, unused, [3])
/* the functions read mt_mve_dw_blocks */
MT_ASM_ARGS(mt_mve_dw_blocks, MT_MVE_DW_BLOCKS_FIELDS, 64);

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

/* the entry: the frame (the struct's 64 bytes, and 4 to keep sp 8-byte aligned), r2 src_step,
 * r0 and r5 the first image's src and dst */
#define MT_DWB_ENTER                                                                                                  \
    MT_NAKED_ENTER("68") MT_NAKED_COPY32 MT_NAKED_COPY32 "ldr r2, [sp, #48]\n\tldrd r0, r5, [sp, #32]\n\t"
/* a block's L and R into r7: the struct's edges (offset 24), L only on the first block (r8, the
 * blocks left, is r9, the row's blocks) and R only on the last (r8 = 1) */
#define MT_DWB_EDGES                                                                                                  \
    "ldr r7, [sp, #24]\n\tcmp r9, r8\n\tit ne\n\tbicne r7, r7, #1\n\tcmp r8, #1\n\tit ne\n\tbicne r7, r7, #2\n\t"
/* a block's kernel rows, its variant (r7: L, R) chosen by TBB, then on to label 5 */
#define MT_DWB_ROWS(CS)                                                                                               \
    "mov r4, r12\n\tmov r1, r0\n\tdls lr, r11\n\ttbb [pc, r7]\n"                                                      \
    "4:\n\t"                                                                                                          \
    ".byte (20f - 4b) / 2, (21f - 4b) / 2, (22f - 4b) / 2, (23f - 4b) / 2\n"                                          \
    "20:\n\t" MT_DWB_ROW_LOOP("30", CS, MT_DWB_X(0, CS), MT_DWB_TERM("q0", "q4"), MT_DWB_X(5, CS),                    \
                               MT_DWB_TERM("q3", "q6")) "b 5f\n"                                                      \
    "21:\n\t" MT_DWB_ROW_LOOP("31", CS, "", "", MT_DWB_X(5, CS), MT_DWB_TERM("q3", "q6")) "b 5f\n"                    \
    "22:\n\t" MT_DWB_ROW_LOOP("32", CS, MT_DWB_X(0, CS), MT_DWB_TERM("q0", "q4"), "", "") "b 5f\n"                    \
    "23:\n\t" MT_DWB_ROW_LOOP("33", CS, "", "", "", "")
/* after a row's last block: the next image's row from the struct's x and y (offsets 32, 36,
 * stepped by 40, 44) and its blocks, or on to label 8 after the last image */
#define MT_DWB_NEXT_IMAGE                                                                                             \
    "ldr r3, [sp, #28]\n\tsubs r3, #1\n\tbeq 8f\n\tstr r3, [sp, #28]\n\t"                                             \
    "ldrd r0, r5, [sp, #32]\n\tldrd r3, r7, [sp, #40]\n\tadd r0, r3\n\tadd r5, r7\n\tstrd r0, r5, [sp, #32]\n\t"      \
    "mov r8, r9\n\tb 1b\n"

/*
 * Registers: r0 the block's x, r1 the kernel row's, r2 xstep, r3 scratch, r4 the packed W
 * (moving a row at a time from r12, kernel row kh0's), r5 the block's y, r6 act, r7 the block's
 * L and R, r8 the blocks left in the row, r9 the row's blocks, r10 bias, r11 the kernel rows,
 * lr the rows left; q0-q3 the four pixels' sums, q4-q6 the kernel row's three weights (then the
 * bias, 0 and 6), q7 an x vector. The stack frame is the struct (x, y and images move on in it
 * an image at a time). Returns 0 when every block is stored, 1 on a NaN (some unstored).
 */
#define MT_DEFINE_DW_BLOCKS_RUN(C, CS)                                                                                \
    __attribute__((naked, noinline, unused)) static int mt_mve_dw_blocks_run_##C(                                     \
        const mt_mve_dw_blocks *p __attribute__((unused)))                                                            \
    {                                                                                                                 \
        __asm volatile(MT_DWB_ENTER                                                                                   \
                       "ldrd r11, r6, [sp]\n\t"     /* rows, act */                                                   \
                       "ldrd r12, r10, [sp, #8]\n\t" /* W, bias */                                                    \
                       "ldr r9, [sp, #16]\n\t"                                                                        \
                       "mov r8, r9\n"                                                                                 \
                       "1:\n\t" /* a block: its L and R */                                                            \
                       MT_DWB_EDGES                                                                                   \
                       "vmov.i32 q0, #0\n\t"                                                                          \
                       "vmov.i32 q1, #0\n\t"                                                                          \
                       "vmov.i32 q2, #0\n\t"                                                                          \
                       "vmov.i32 q3, #0\n\t"                                                                          \
                       MT_DWB_ROWS(CS)                                                                                \
                       "5:\n\t" /* + bias (the sum first) */                                                          \
                       "cmp r10, #0\n\t"                                                                              \
                       "beq 6f\n\t"                                                                                   \
                       "vldrw.u32 q4, [r10]\n\t"                                                                      \
                       "vadd.f32 q0, q0, q4\n\t"                                                                      \
                       "vadd.f32 q1, q1, q4\n\t"                                                                      \
                       "vadd.f32 q2, q2, q4\n\t"                                                                      \
                       "vadd.f32 q3, q3, q4\n"                                                                        \
                       "6:\n\t"                                                                                       \
                       MT_NAN_TEST_Q0_Q3("9f")                                                                        \
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
                       MT_DWB_NEXT_IMAGE MT_NAKED_RETURN_0_OR_1("68", "d8-d15"));                                     \
    }

MT_DEFINE_DW_BLOCKS_RUN(8, 32)
MT_DEFINE_DW_BLOCKS_RUN(16, 64)
#undef MT_DEFINE_DW_BLOCKS_RUN

/*
 * The input gradient by the same blocks (mt_mve_dx_blocks_run_8 and _16), at stride 1 both ways:
 * the reference adds each term dz·W into dx visiting the outputs in ascending (oh, ow), so dx[ih,
 * iw] = dx + Σ dz[ih + a - PT', iw + bb - PL']·W[KH - 1 - a, 2 - bb] in ascending (a, bb), with
 * PT' = KH - 1 - PT and PL' = 2 - PL: the forward's correlation over dz with the kernel turned
 * round (the caller packs it so) and each sum starting from dx instead of +0. The sums are
 * stored in place, so a block is tested before it is: a NaN in its results or FPSCR's IDC or
 * UFC calls mt_mve_dx_block_fix, which recomputes the block's 16 elements in scalar code from
 * the dx the block left untouched and clears the flags, and the run goes on.
 */
struct mt_mve_dx_fix { /* what mt_mve_dx_block_fix needs */
    const float *w, *dz;
    float *dx;
    const struct mt_spatial *g;
    uint32_t c; /* the vector's first channel */
};
/* dx of four pixels from dxb (the address of pixel 0's channel c) and channels c..c+3, the
 * reference's terms in its order, then FPSCR's flags cleared (depthwise_conv2d_backward_mve.c) */
void mt_mve_dx_block_fix(const mt_mve_dx_fix *f, float *dxb);

/*
 * Registers as the forward's (r0 the block's dz, r5 its dx; r6 and r10 unused); a block that
 * fails its test calls mt_mve_dx_block_fix with r0, r2, r3 and r12 saved around the call (the
 * AAPCS keeps r4-r11 and d8-d15). Returns 0.
 */
#define MT_DEFINE_DX_BLOCKS_RUN(C, CS)                                                                                \
    __attribute__((naked, noinline, unused)) static int mt_mve_dx_blocks_run_##C(                                     \
        const mt_mve_dw_blocks *p __attribute__((unused)))                                                            \
    {                                                                                                                 \
        __asm volatile(MT_DWB_ENTER                                                                                   \
                       "ldr r11, [sp]\n\t"          /* rows */                                                        \
                       "ldr r12, [sp, #8]\n\t"      /* W */                                                           \
                       "ldr r9, [sp, #16]\n\t"                                                                        \
                       "mov r8, r9\n"                                                                                 \
                       "1:\n\t" /* a block: its L and R */                                                            \
                       MT_DWB_EDGES                                                                                   \
                       "vldrw.u32 q0, [r5]\n\t" /* the sums start from dx */                                          \
                       "vldrw.u32 q1, [r5, #(" #CS ")]\n\t"                                                           \
                       "vldrw.u32 q2, [r5, #(2 * " #CS ")]\n\t"                                                       \
                       "vldrw.u32 q3, [r5, #(3 * " #CS ")]\n\t"                                                       \
                       MT_DWB_ROWS(CS)                                                                                \
                       "5:\n\t" /* the block's test: FPSCR's IDC and UFC, then NaNs */                                \
                       "vmrs r3, fpscr\n\t"                                                                           \
                       "tst r3, #0x88\n\t" /* MT_FPSCR_IDC | MT_FPSCR_UFC */                                          \
                       "bne 9f\n\t"                                                                                   \
                       MT_NAN_TEST_Q0_Q3("9f")                                                                        \
                       "vstrw.32 q0, [r5]\n\t"                                                                        \
                       "vstrw.32 q1, [r5, #(" #CS ")]\n\t"                                                            \
                       "vstrw.32 q2, [r5, #(2 * " #CS ")]\n\t"                                                        \
                       "vstrw.32 q3, [r5, #(3 * " #CS ")]\n"                                                          \
                       "6:\n\t"                                                                                       \
                       "add r5, r5, #(4 * " #CS ")\n\t" /* the next block */                                          \
                       "add r0, r0, #(4 * " #CS ")\n\t"                                                               \
                       "subs r8, #1\n\t"                                                                              \
                       "bne 1b\n\t"                                                                                   \
                       MT_DWB_NEXT_IMAGE                                                                              \
                       "9:\n\t" /* a block to recompute in scalar code */                                             \
                       "push {r0, r2, r3, r12}\n\t"                                                                   \
                       "ldr r0, [sp, #36]\n\t" /* fix (the frame's offset 20, 16 bytes further now) */                \
                       "mov r1, r5\n\t"                                                                               \
                       "bl mt_mve_dx_block_fix\n\t"                                                                   \
                       "pop {r0, r2, r3, r12}\n\t"                                                                    \
                       "b 6b\n"                                                                                       \
                       "8:\n\t"                                                                                       \
                       "movs r0, #0\n\t"                                                                              \
                       "add sp, #68\n\t"                                                                              \
                       "vpop {d8-d15}\n\t"                                                                            \
                       "pop {r4-r11, pc}\n");                                                                         \
    }

MT_DEFINE_DX_BLOCKS_RUN(8, 32)
MT_DEFINE_DX_BLOCKS_RUN(16, 64)
#undef MT_DEFINE_DX_BLOCKS_RUN
#undef MT_DWB_NEXT_IMAGE
#undef MT_DWB_ENTER
#undef MT_DWB_ROWS
#undef MT_DWB_EDGES
#undef MT_DWB_ROW_LOOP
#undef MT_DWB_X
#undef MT_DWB_TERM

#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_DEPTHWISE_BLOCKS_MVE_H */
