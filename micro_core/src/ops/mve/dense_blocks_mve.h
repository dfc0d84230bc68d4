/*
 * Dense's block loops on the M55 as naked functions (included by dense_mve.c only): the input
 * gradient (mt_mve_dx_rows_run), the forward (mt_mve_fwd_rows_run) and the weight gradient
 * (mt_mve_dw_rows_run), each over the whole blocks of a layer; dense_mve.c's inline blocks
 * take the partial ones, and the scalar code what these leave unstored.
 *
 * Why naked: with the loop over blocks in C, each block's asm held 13 registers and GCC
 * spilled every pointer around it: 60 to 90 instructions a block of bookkeeping, and a call
 * per block of rows cost 80 more where the rows are short (a pointwise Conv2D's 8 channels: 2
 * blocks a row). Here a block's pointers stay in registers: the pointers that move through the
 * terms are wound back by the same count after each block (an odd last term reads without
 * writeback), the others move 16 bytes a block, and the steps between rows wait on the stack.
 * Each function takes a struct whose field offsets a typedef checks, and saves the registers
 * the AAPCS asks a callee to keep.
 *
 * Each sum is the reference's: from +0, its terms in ascending order, each a VFMA (a·b + sum
 * rounded once, the reference's mt_fmaf). A block's results are tested before anything of it
 * is stored (mve.h): a NaN in any lane, or FPSCR's IDC or UFC (a flushed subnormal; the caller
 * cleared the flags), ends the call with that block unstored.
 */
#ifndef MT_OPS_ARM_DENSE_BLOCKS_MVE_H
#define MT_OPS_ARM_DENSE_BLOCKS_MVE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */
#include "ops/mve/mve.h"

#if MT_MVE_KERNELS
#include "ops/mve/mve_flags.h" /* MT_MULADD_TEXT, MT_FOUR_ROWS_TWO_TERMS, MT_FOUR_ROWS_ONE_TERM */

#define MT_MVE_DX_ROWS_FIELDS(F, S)                                                              \
    F(S, 0, const float *, dy, ) /* dy row b, the first block's four rows (U floats each) */     \
    F(S, 4, const float *, w, )  /* W */                                                         \
    F(S, 8, float *, dx, )       /* dx row b */                                                  \
    F(S, 12, uint32_t, c0, )     /* the first block's column (a multiple of 4, at most whole) */ \
    F(S, 16, uint32_t, whole, )  /* the columns in whole blocks of four (I rounded down to 4) */ \
    F(S, 20, uint32_t, quads, )  /* blocks of four rows from row b, >= 1 */                      \
    F(S, 24, uint32_t, U, )      /* terms */                                                     \
    F(S, 28, uint32_t, I, )      /* the columns of W and of dx */
/* mt_mve_dx_rows_run reads mt_mve_dx_rows */
MT_ASM_ARGS(mt_mve_dx_rows, MT_MVE_DX_ROWS_FIELDS, 32);

/*
 * The input gradient: for each block of four rows and, in turn, each whole block of four
 * columns c..c+3,
 *   dx[r, c..c+3] = dx[r, c..c+3] + Σ_u dy[r, u]·W[u, c..c+3]      r = the four rows
 * the old dx added last (out + Σ, the reference's operand order). Two terms a turn: two VLDRW
 * of W, each row's pair of dy one LDRD, a VFMA a row and term: 17 instructions for 32 MACs, as
 * dx_block's loop. The caller recomputes a block left unstored in scalar code and calls again
 * from the next.
 *
 * r0-r3 the four dy rows, r4 the turn count·8 with the odd term in bit 0, r5 W's column, r6
 * dx's, r7 the row stride (I·4), r8 r9 dy values (r10 at the start), r12 W row by row, lr
 * the turns; on the stack: sp+0 the end of this row's whole blocks, +4 the row blocks left,
 * +8 W, +12 and +16 a row block's step in dy and in dx (16·U and 16·I bytes), +20 dx's row of
 * this block.
 * q0-q3 the sums, q4 q5 W's two rows of a turn (q4 then the old dx). Returns NULL when every
 * block is stored, else the unstored block's dx.
 */
__attribute__((naked, noinline)) static float *mt_mve_dx_rows_run(const mt_mve_dx_rows *p __attribute__((unused)))
{
    __asm volatile(
        "push {r4-r10, lr}\n\t"
        "vpush {d8-d11}\n\t"
        "sub sp, #24\n\t"
        "ldrd r4, r7, [r0, #24]\n\t" /* U, I */
        "ldrd r5, r6, [r0, #4]\n\t"  /* W, dx row */
        "ldrd r8, r9, [r0, #12]\n\t" /* c0, whole */
        "str r5, [sp, #8]\n\t"
        "str r6, [sp, #20]\n\t"
        "add r10, r6, r9, lsl #2\n\t"
        "str r10, [sp]\n\t"
        "add r5, r5, r8, lsl #2\n\t"
        "add r6, r6, r8, lsl #2\n\t"
        "ldr r9, [r0, #20]\n\t"
        "str r9, [sp, #4]\n\t"
        "lsls r9, r4, #4\n\t"
        "str r9, [sp, #12]\n\t"
        "lsls r9, r7, #4\n\t"
        "str r9, [sp, #16]\n\t"
        "lsls r7, r7, #2\n\t"
        "ldr r0, [r0]\n\t"
        "add r1, r0, r4, lsl #2\n\t"
        "add r2, r1, r4, lsl #2\n\t"
        "add r3, r2, r4, lsl #2\n\t"
        "and r10, r4, #1\n\t"
        "lsrs r9, r4, #1\n\t"
        "orr r4, r10, r9, lsl #3\n\t"
        "b 5f\n"
        "1:\n\t"
        "vmov.i32 q0, #0\n\t"
        "vmov.i32 q1, #0\n\t"
        "vmov.i32 q2, #0\n\t"
        "vmov.i32 q3, #0\n\t"
        "mov r12, r5\n\t"
        "lsrs r8, r4, #3\n\t"
        "wls lr, r8, 3f\n"
        "2:\n\t"
        "vldrw.u32 q4, [r12]\n\t"
        "add r12, r7\n\t"
        "vldrw.u32 q5, [r12]\n\t"
        "add r12, r7\n\t"
        MT_FOUR_ROWS_TWO_TERMS("q4", "q5", "r0", "r1", "r2", "r3", "r8", "r9", "q0", "q1", "q2", "q3")
        "le lr, 2b\n"
        "3:\n\t"
        "lsls r8, r4, #31\n\t" /* an odd last term */
        "beq 4f\n\t"
        "vldrw.u32 q4, [r12]\n\t"
        MT_FOUR_ROWS_ONE_TERM("q4", "r0", "r1", "r2", "r3", "r8", "r9", "q0", "q1", "q2", "q3")
        "4:\n\t"
        "bic r8, r4, #1\n\t" /* the dy rows back to their first term */
        "sub r0, r0, r8\n\t"
        "sub r1, r1, r8\n\t"
        "sub r2, r2, r8\n\t"
        "sub r3, r3, r8\n\t"
        "vldrw.u32 q4, [r6]\n\t" /* out + Σ */
        "vadd.f32 q0, q4, q0\n\t"
        "add r9, r6, r7\n\t"
        "vldrw.u32 q4, [r9]\n\t"
        "vadd.f32 q1, q4, q1\n\t"
        "add r9, r7\n\t"
        "vldrw.u32 q4, [r9]\n\t"
        "vadd.f32 q2, q4, q2\n\t"
        "add r9, r7\n\t"
        "vldrw.u32 q4, [r9]\n\t"
        "vadd.f32 q3, q4, q3\n\t"
        "vcmp.f32 eq, q0, q0\n\t" /* P0: the lanes of every row that are not NaN */
        "vpsttt\n\t"
        "vcmpt.f32 eq, q1, q1\n\t"
        "vcmpt.f32 eq, q2, q2\n\t"
        "vcmpt.f32 eq, q3, q3\n\t"
        "vmrs r8, p0\n\t"
        "vmrs r9, fpscr\n\t"
        "tst r9, #0x88\n\t" /* MT_FPSCR_IDC | MT_FPSCR_UFC */
        "bne 9f\n\t"
        "movw r9, #65535\n\t"
        "cmp r8, r9\n\t"
        "bne 9f\n\t"
        "vstrw.32 q0, [r6]\n\t"
        "add r9, r6, r7\n\t"
        "vstrw.32 q1, [r9]\n\t"
        "add r9, r7\n\t"
        "vstrw.32 q2, [r9]\n\t"
        "add r9, r7\n\t"
        "vstrw.32 q3, [r9]\n\t"
        "adds r5, #16\n\t"
        "adds r6, #16\n"
        "5:\n\t" /* another block in this row? */
        "ldr r8, [sp]\n\t"
        "cmp r6, r8\n\t"
        "blo 1b\n\t"
        "ldr r8, [sp, #4]\n\t" /* another block of rows? */
        "subs r8, #1\n\t"
        "beq 8f\n\t"
        "str r8, [sp, #4]\n\t"
        "ldrd r8, r9, [sp, #16]\n\t" /* 16·I, dx's row */
        "add r6, r9, r8\n\t"
        "str r6, [sp, #20]\n\t"
        "ldr r9, [sp]\n\t"
        "add r9, r8\n\t"
        "str r9, [sp]\n\t"
        "ldrd r5, r8, [sp, #8]\n\t" /* W, 16·U */
        "add r0, r8\n\t"
        "add r1, r8\n\t"
        "add r2, r8\n\t"
        "add r3, r8\n\t"
        "b 5b\n"
        "8:\n\t"
        "movs r6, #0\n"
        "9:\n\t"
        "mov r0, r6\n\t"
        "add sp, #24\n\t"
        "vpop {d8-d11}\n\t"
        "pop {r4-r10, pc}\n");
}
#define MT_MVE_FWD_ROWS_FIELDS(F, S)                                                          \
    F(S, 0, const float *, x, )    /* x row b, the first block's four rows (I floats each) */ \
    F(S, 4, const float *, w, )    /* W */                                                    \
    F(S, 8, const float *, bias, ) /* bias, or NULL */                                        \
    F(S, 12, float *, y, )         /* y row b */                                              \
    F(S, 16, uint32_t, quads, )    /* blocks of four rows from row b, >= 1 */                 \
    F(S, 20, uint32_t, blocks, )   /* whole blocks of four units a row, >= 1 (U / 4) */       \
    F(S, 24, uint32_t, I, )        /* terms */                                                \
    F(S, 28, uint32_t, U, )        /* units, the row length of y */                           \
    F(S, 32, uint32_t, act, )      /* MT_FUSED_NONE, _RELU, _RELU6 (0, 1, 2) */
MT_ASM_ARGS(mt_mve_fwd_rows, MT_MVE_FWD_ROWS_FIELDS, 36);

/*
 * Dense's forward over blocks of four rows and, in each, the whole blocks of four units:
 *   y[r, u..u+3] = act(Σ_i x[r, i]·W[u..u+3, i] + bias[u..u+3])
 * each sum from +0 in ascending i (a VFMA a term), then + bias (the sum first), the activation
 * as fwd_block applies it (VMAXNM with +0, VMINNM with 6). W[u..u+3, i] is one
 * gather (offsets 0, I, 2I, 3I floats) whose base vector moves 8 bytes a turn, and 16·I bytes
 * a block less what the turns moved; each x row's pair of terms one LDRD: 15 instructions for
 * 32 MACs, as fwd_block's loop. A block whose results hold a NaN ends the call with it
 * unstored and returns 1 (the caller recomputes the whole op); FPSCR's flags are the caller's
 * to read after the last block. Returns 0 when every block is stored.
 *
 * r0-r3 the x rows, r4 the turn count·8 with the odd term in bit 0, r5 y's block, r6 the y
 * row stride (U·4), r7 the bias's block or 0, r8 r9 x values, r10 act, r11 the end of this
 * row's whole blocks in y, r12 the gather base's step from one block to the next, lr the
 * turns; on the stack: sp+0 the gather base of a row's first block, +16 the row blocks left,
 * +20 y's row, +24 bias, +28 and +32 a row block's step in x and in y (16·I, 16·U bytes).
 * q0-q3 the sums, q4 q5 W's two terms of a turn, q6 the gather base.
 */
__attribute__((naked, noinline)) static uint32_t mt_mve_fwd_rows_run(const mt_mve_fwd_rows *p __attribute__((unused)))
{
    __asm volatile(
        "push {r4-r11, lr}\n\t"
        "vpush {d8-d13}\n\t"
        "sub sp, #40\n\t"
        "ldrd r8, r9, [r0, #24]\n\t" /* I, U */
        "lsls r6, r9, #2\n\t"
        "ldr r10, [r0, #32]\n\t"
        "ldrd r7, r5, [r0, #8]\n\t" /* bias, y */
        "str r7, [sp, #24]\n\t"
        "str r5, [sp, #20]\n\t"
        "ldrd r11, r12, [r0, #16]\n\t" /* quads, blocks */
        "str r11, [sp, #16]\n\t"
        "add r11, r5, r12, lsl #4\n\t"
        "lsls r12, r8, #4\n\t"
        "str r12, [sp, #28]\n\t"
        "lsls r12, r9, #4\n\t"
        "str r12, [sp, #32]\n\t"
        "movs r12, #0\n\t" /* the gather base: W - 8 + (0, I, 2I, 3I)·4 (the first load adds 8) */
        "vidup.u32 q6, r12, #1\n\t"
        "lsls r12, r8, #2\n\t"
        "vmul.i32 q6, q6, r12\n\t"
        "ldr r12, [r0, #4]\n\t"
        "subs r12, #8\n\t"
        "vadd.i32 q6, q6, r12\n\t"
        "vstrw.32 q6, [sp]\n\t"
        "and r9, r8, #1\n\t"
        "lsrs r12, r8, #1\n\t"
        "orr r4, r9, r12, lsl #3\n\t"
        "ldr r12, [sp, #28]\n\t" /* 16·I less the turns' 8 bytes each */
        "bic r9, r4, #1\n\t"
        "sub r12, r12, r9\n\t"
        "ldr r0, [r0]\n\t"
        "add r1, r0, r8, lsl #2\n\t"
        "add r2, r1, r8, lsl #2\n\t"
        "add r3, r2, r8, lsl #2\n"
        "1:\n\t"
        "vmov.i32 q0, #0\n\t"
        "vmov.i32 q1, #0\n\t"
        "vmov.i32 q2, #0\n\t"
        "vmov.i32 q3, #0\n\t"
        "lsrs r8, r4, #3\n\t"
        "wls lr, r8, 3f\n"
        "2:\n\t"
        "vldrw.u32 q4, [q6, #8]!\n\t" /* W[u..u+3, i], and the base one pair on */
        "vldrw.u32 q5, [q6, #4]\n\t"  /* W[u..u+3, i + 1] */
        MT_FOUR_ROWS_TWO_TERMS("q4", "q5", "r0", "r1", "r2", "r3", "r8", "r9", "q0", "q1", "q2", "q3")
        "le lr, 2b\n"
        "3:\n\t"
        "lsls r8, r4, #31\n\t" /* an odd last term */
        "beq 4f\n\t"
        "vldrw.u32 q4, [q6, #8]\n\t"
        MT_FOUR_ROWS_ONE_TERM("q4", "r0", "r1", "r2", "r3", "r8", "r9", "q0", "q1", "q2", "q3")
        "4:\n\t"
        "bic r8, r4, #1\n\t" /* the x rows back to their first term */
        "sub r0, r0, r8\n\t"
        "sub r1, r1, r8\n\t"
        "sub r2, r2, r8\n\t"
        "sub r3, r3, r8\n\t"
        "vadd.i32 q6, q6, r12\n\t" /* the next block's gather base */
        "cbz r7, 5f\n\t"
        "vldrw.u32 q4, [r7]\n\t" /* + bias */
        "adds r7, #16\n\t"
        "vadd.f32 q0, q0, q4\n\t"
        "vadd.f32 q1, q1, q4\n\t"
        "vadd.f32 q2, q2, q4\n\t"
        "vadd.f32 q3, q3, q4\n"
        "5:\n\t"
        "vcmp.f32 eq, q0, q0\n\t" /* P0: the lanes of every row that are not NaN */
        "vpsttt\n\t"
        "vcmpt.f32 eq, q1, q1\n\t"
        "vcmpt.f32 eq, q2, q2\n\t"
        "vcmpt.f32 eq, q3, q3\n\t"
        "vmrs r8, p0\n\t"
        "movw r9, #65535\n\t"
        "cmp r8, r9\n\t"
        "bne 9f\n\t"
        "cmp r10, #0\n\t" /* the activation */
        "beq 7f\n\t"
        "vmov.i32 q4, #0\n\t"
        MT_Q0_Q3_WITH_Q4("vmaxnm")
        "cmp r10, #1\n\t"
        "beq 7f\n\t"
        "vmov.f32 q4, #6.0\n\t"
        MT_Q0_Q3_WITH_Q4("vminnm")
        "7:\n\t"
        "vstrw.32 q0, [r5]\n\t"
        "add r8, r5, r6\n\t"
        "vstrw.32 q1, [r8]\n\t"
        "add r8, r6\n\t"
        "vstrw.32 q2, [r8]\n\t"
        "add r8, r6\n\t"
        "vstrw.32 q3, [r8]\n\t"
        "adds r5, #16\n\t"
        "cmp r5, r11\n\t"
        "blo 1b\n\t"
        "ldr r8, [sp, #16]\n\t" /* another block of rows? */
        "subs r8, #1\n\t"
        "beq 8f\n\t"
        "str r8, [sp, #16]\n\t"
        "ldr r8, [sp, #28]\n\t" /* x: 16·I on */
        "add r0, r8\n\t"
        "add r1, r8\n\t"
        "add r2, r8\n\t"
        "add r3, r8\n\t"
        "ldrd r5, r7, [sp, #20]\n\t" /* y's row, bias */
        "ldr r8, [sp, #32]\n\t"
        "add r5, r8\n\t"
        "str r5, [sp, #20]\n\t"
        "add r11, r8\n\t"
        "vldrw.u32 q6, [sp]\n\t"
        "b 1b\n" MT_NAKED_RETURN_0_OR_1("40", "d8-d13"));
}
#define MT_MVE_DW_ROWS_FIELDS(F, S)                                                                \
    F(S, 0, const float *, dy, ) /* dy + u, the first block's six units (column u of dy [B, U]) */ \
    F(S, 4, const float *, x, )  /* x */                                                           \
    F(S, 8, float *, dw, )       /* dW row u */                                                    \
    F(S, 12, uint32_t, c0, )     /* the first block's column (a multiple of 4, at most whole) */   \
    F(S, 16, uint32_t, whole, )  /* the columns in whole blocks of four (I rounded down to 4) */   \
    F(S, 20, uint32_t, groups, ) /* groups of six units from u, >= 1 */                            \
    F(S, 24, uint32_t, B, )      /* terms */                                                       \
    F(S, 28, uint32_t, U, )      /* units, dy's row length */                                      \
    F(S, 32, uint32_t, I, )      /* the columns of x and of dW */                                  \
    F(S, 36, uint32_t, zero, )   /* 1: dW as if zeroed first (Σ stored, dW not read), 0: dW + Σ */
MT_ASM_ARGS(mt_mve_dw_rows, MT_MVE_DW_ROWS_FIELDS, 40);

/*
 * Dense's weight gradient over groups of six units and, in each, the whole blocks of four
 * columns:
 *   dW[u + j, c..c+3] = dW[u + j, c..c+3] + Σ_b dy[b, u + j]·x[b, c..c+3]     j < 6
 * each sum from +0 in ascending b, a VFMA a term; zero: Σ alone, as the reference adds it to a
 * zeroed dW (a sum from +0 is never -0, so 0 + Σ = Σ). Per b one VLDRW of x, the six dy values
 * three LDRDs, six VFMA: 13 instructions for 24 MACs, as dw_block's loop. A block whose
 * results hold a NaN, or after which FPSCR's IDC or UFC is set, ends the call with it
 * unstored (the caller recomputes it and calls again from the next block). Returns NULL when
 * every block is stored, else the unstored block's dW.
 *
 * r0 dy row by row, r1 the group's dy (dy + u), r2 x row by row, r3 x's column, r4 r5 dy
 * values, r6 dy's row stride (U·4), r7 x's and dW's (I·4), r8 dW's block, r9 the end of the
 * group's whole blocks in dW row u, r10 B, r11 zero, r12 dW row by row, lr the terms; on the
 * stack: sp+0 the groups left, +4 x, +8 dW's row u, +12 a group's step in dW (6·I·4 bytes).
 * q0-q5 the sums, q6 x's four columns (q7 unused).
 */
__attribute__((naked, noinline)) static float *mt_mve_dw_rows_run(const mt_mve_dw_rows *p __attribute__((unused)))
{
    __asm volatile(
        "push {r4-r11, lr}\n\t"
        "vpush {d8-d13}\n\t"
        "sub sp, #16\n\t"
        "ldrd r10, r6, [r0, #24]\n\t" /* B, U */
        "lsls r6, r6, #2\n\t"
        "ldrd r7, r11, [r0, #32]\n\t" /* I, zero */
        "lsls r7, r7, #2\n\t"
        "ldr r3, [r0, #4]\n\t"
        "str r3, [sp, #4]\n\t"
        "ldr r8, [r0, #8]\n\t"
        "str r8, [sp, #8]\n\t"
        "ldrd r4, r5, [r0, #12]\n\t" /* c0, whole */
        "add r9, r8, r5, lsl #2\n\t"
        "add r3, r3, r4, lsl #2\n\t"
        "add r8, r8, r4, lsl #2\n\t"
        "ldr r4, [r0, #20]\n\t"
        "str r4, [sp]\n\t"
        "add r4, r7, r7, lsl #1\n\t"
        "lsls r4, r4, #1\n\t"
        "str r4, [sp, #12]\n\t"
        "ldr r1, [r0]\n\t"
        "b 5f\n"
        "1:\n\t"
        "vmov.i32 q0, #0\n\t"
        "vmov.i32 q1, #0\n\t"
        "vmov.i32 q2, #0\n\t"
        "vmov.i32 q3, #0\n\t"
        "vmov.i32 q4, #0\n\t"
        "vmov.i32 q5, #0\n\t"
        "mov r0, r1\n\t"
        "mov r2, r3\n\t"
        "wls lr, r10, 3f\n"
        "2:\n\t"
        "vldrw.u32 q6, [r2]\n\t"
        "add r2, r7\n\t"
        "ldrd r4, r5, [r0]\n\t"
        MT_MULADD_TEXT("q6", "q0", "r4")
        MT_MULADD_TEXT("q6", "q1", "r5")
        "ldrd r4, r5, [r0, #8]\n\t"
        MT_MULADD_TEXT("q6", "q2", "r4")
        MT_MULADD_TEXT("q6", "q3", "r5")
        "ldrd r4, r5, [r0, #16]\n\t"
        MT_MULADD_TEXT("q6", "q4", "r4")
        MT_MULADD_TEXT("q6", "q5", "r5")
        "add r0, r6\n\t"
        "le lr, 2b\n"
        "3:\n\t"
        "cmp r11, #0\n\t" /* zero: Σ alone */
        "bne 4f\n\t"
        "mov r12, r8\n\t" /* else out + Σ */
        "vldrw.u32 q6, [r12]\n\t"
        "add r12, r7\n\t"
        "vadd.f32 q0, q6, q0\n\t"
        "vldrw.u32 q6, [r12]\n\t"
        "add r12, r7\n\t"
        "vadd.f32 q1, q6, q1\n\t"
        "vldrw.u32 q6, [r12]\n\t"
        "add r12, r7\n\t"
        "vadd.f32 q2, q6, q2\n\t"
        "vldrw.u32 q6, [r12]\n\t"
        "add r12, r7\n\t"
        "vadd.f32 q3, q6, q3\n\t"
        "vldrw.u32 q6, [r12]\n\t"
        "add r12, r7\n\t"
        "vadd.f32 q4, q6, q4\n\t"
        "vldrw.u32 q6, [r12]\n\t"
        "vadd.f32 q5, q6, q5\n"
        "4:\n\t"
        "vcmp.f32 eq, q0, q0\n\t" /* P0: the lanes of every row that are not NaN */
        "vpsttt\n\t"
        "vcmpt.f32 eq, q1, q1\n\t"
        "vcmpt.f32 eq, q2, q2\n\t"
        "vcmpt.f32 eq, q3, q3\n\t"
        "vpstt\n\t"
        "vcmpt.f32 eq, q4, q4\n\t"
        "vcmpt.f32 eq, q5, q5\n\t"
        "vmrs r4, p0\n\t"
        "vmrs r5, fpscr\n\t"
        "tst r5, #0x88\n\t" /* MT_FPSCR_IDC | MT_FPSCR_UFC */
        "bne 9f\n\t"
        "movw r5, #65535\n\t"
        "cmp r4, r5\n\t"
        "bne 9f\n\t"
        "vstrw.32 q0, [r8]\n\t"
        "add r12, r8, r7\n\t"
        "vstrw.32 q1, [r12]\n\t"
        "add r12, r7\n\t"
        "vstrw.32 q2, [r12]\n\t"
        "add r12, r7\n\t"
        "vstrw.32 q3, [r12]\n\t"
        "add r12, r7\n\t"
        "vstrw.32 q4, [r12]\n\t"
        "add r12, r7\n\t"
        "vstrw.32 q5, [r12]\n\t"
        "adds r3, #16\n\t"
        "adds r8, #16\n"
        "5:\n\t" /* another block in this group? */
        "cmp r8, r9\n\t"
        "blo 1b\n\t"
        "ldr r4, [sp]\n\t" /* another group? */
        "subs r4, #1\n\t"
        "beq 8f\n\t"
        "str r4, [sp]\n\t"
        "adds r1, #24\n\t"
        "ldrd r4, r5, [sp, #8]\n\t" /* dW's row u, 6·I·4 */
        "add r4, r5\n\t"
        "str r4, [sp, #8]\n\t"
        "mov r8, r4\n\t"
        "add r9, r5\n\t"
        "ldr r3, [sp, #4]\n\t"
        "b 5b\n"
        "8:\n\t"
        "movs r8, #0\n"
        "9:\n\t"
        "mov r0, r8\n\t"
        "add sp, #16\n\t"
        "vpop {d8-d13}\n\t"
        "pop {r4-r11, pc}\n");
}
#endif /* MT_MVE_KERNELS */

#endif /* MT_OPS_ARM_DENSE_BLOCKS_MVE_H */
