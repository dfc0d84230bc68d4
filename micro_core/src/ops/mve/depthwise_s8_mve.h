/*
 * Helium's 3-wide int8 depthwise interior (ops/portable/depthwise_s8_rows.h includes it on the
 * Cortex-M55, dw_interior_pixels calls it): four neighbouring outputs of one channel as a
 * vector's lanes, each tap a byte gather of their inputs straight from the NHWC rows and one
 * VMLA.S32 by the tap's weight, at any stride (mt_s8_dwg_run, in assembly).
 *
 * Integer sums: VMLA.S32 wraps as the C forms' uint32 sums do, so the bits are the
 * reference's (the int8 siblings, boards/app/siblings_s8.c; the planted faults dwg-* of
 * tests/boards/asm_faults.txt).
 *
 * Tried and replaced: the DSP cores' channel planes (ops/dsp/depthwise_s8_dsp.h) in Helium,
 * each input row copied by byte gathers into planes of one channel, then a contiguous
 * VLDRB.S32 a tap: 22 instructions for 36 MACs where the gathers take 24, but the copies and
 * the slots' bookkeeping cost more than the two saved (MobileNetV2 step 21.61M with the planes
 * from 17 outputs, 20.80M without), and they never paid at stride 2.
 */
#ifndef MT_OPS_MVE_DEPTHWISE_S8_MVE_H
#define MT_OPS_MVE_DEPTHWISE_S8_MVE_H

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */

/* The interior pixels' 3 x 3 form straight from the NHWC rows, at any stride: four
 * neighbouring outputs of one channel as a vector's lanes, each tap one byte gather of their
 * four inputs (lane i at i·SW·C past the first's, the tap's kw·C further) and one VMLA.S32 by
 * the tap's weight: two instructions for four MACs, where the four-channel form
 * (dw_interior_tap: two loads, VMUL, VADD) takes four, with no copy of the rows (the planes
 * at the top) and the same at stride 2. Gathers read a byte a beat where a contiguous VLDRB.S32
 * reads four: the count of instructions falls more than the cycles would. The sums start from
 * bias - zx·Σ W (dw_interior_weights), so a term is W·x. */
#define MT_S8_DWG_FIELDS(F, S)            \
    F(S, 0, const int8_t *, row, [3])     \
    F(S, 12, uint32_t, step, )            \
    F(S, 16, uint32_t, C, )               \
    F(S, 20, int32_t *, acc, )            \
    F(S, 24, uint32_t, n, )               \
    F(S, 28, const int32_t *, k, )
/* mt_s8_dwg_run reads mt_s8_dwg: kernel row k's input at row[k] (the run's first output's tap
 * 0, the first of the four channels' byte), step = SW·C bytes between outputs, C between taps,
 * n >= 1 outputs, their sums to acc[4·j + r] for channel r; k[10·r + t] channel r's weight of
 * tap t = 3·kh + kw, k[10·r + 9] its sums' start (dw_interior's k) */
MT_ASM_ARGS(mt_s8_dwg, MT_S8_DWG_FIELDS, 32);

/* One turn of four outputs of a channel: the sums start from its start (q3); tap (kh, kw) is
 * VLDRB.S32 from row kh at the offsets q4 + kw·C (q4, q5, q6: lane·step, + C, + 2·C) and
 * VMLA.S32 by its weight; the four sums go to acc + 16·lane + 4·r by one scatter whose
 * addresses (q2) move on 64 bytes; the rows move on 4·step (r3): 24 instructions for 36 MACs */
#define MT_S8_DWG_TURN                                 \
    "1:\n\t"                                           \
    "vmov q0, q3\n\t"                                  \
    "vldrb.s32 q1, [r0, q4]\n\t" /* row 0, tap 0 */    \
    "vmla.s32 q0, q1, r4\n\t"                          \
    "vldrb.s32 q1, [r0, q5]\n\t"                       \
    "vmla.s32 q0, q1, r5\n\t"                          \
    "vldrb.s32 q1, [r0, q6]\n\t"                       \
    "vmla.s32 q0, q1, r6\n\t"                          \
    "vldrb.s32 q1, [r1, q4]\n\t" /* row 1 */           \
    "vmla.s32 q0, q1, r7\n\t"                          \
    "vldrb.s32 q1, [r1, q5]\n\t"                       \
    "vmla.s32 q0, q1, r8\n\t"                          \
    "vldrb.s32 q1, [r1, q6]\n\t"                       \
    "vmla.s32 q0, q1, r9\n\t"                          \
    "vldrb.s32 q1, [r2, q4]\n\t" /* row 2 */           \
    "vmla.s32 q0, q1, r10\n\t"                         \
    "vldrb.s32 q1, [r2, q5]\n\t"                       \
    "vmla.s32 q0, q1, r11\n\t"                         \
    "vldrb.s32 q1, [r2, q6]\n\t"                       \
    "vmla.s32 q0, q1, r12\n\t"                         \
    "vstrw.32 q0, [q2, #64]!\n\t"                      \
    "add r0, r3\n\t" /* on four outputs */             \
    "add r1, r3\n\t"                                   \
    "add r2, r3\n\t" /* row 2's too */                 \
    "letp lr, 1b\n\t"

/* Channel r's run: its start ("start": 40·r + 36, bytes into k), its nine weights by one LDM
 * from its row of k ("row": 40·r), its sums' addresses (q7 + "sums": 4·r), its count and its
 * rows ("byte": r bytes on), then the tail-predicated loop (DLSTP/LETP: a last turn's lanes
 * past n neither load nor store); about 16 instructions a channel */
#define MT_S8_DWG_CHANNEL(start, row, sums, byte)       \
    "ldr r0, [sp]\n\t"                                 \
    "ldr r12, [r0, #28]\n\t"                           \
    "ldr r3, [r12, #" start "]\n\t"                    \
    "vdup.32 q3, r3\n\t"                               \
    "add r12, #" row "\n\t"                            \
    "ldm r12, {r4-r12}\n\t"                            \
    "movs r3, #" sums "\n\t"                           \
    "vadd.i32 q2, q7, r3\n\t"                          \
    "ldr lr, [r0, #24]\n\t"                            \
    "ldm r0, {r0-r2}\n\t"                              \
    "add r0, #" byte "\n\t"                            \
    "add r1, #" byte "\n\t"                            \
    "add r2, #" byte "\n\t"                            \
    "ldr r3, [sp, #4]\n\t"                             \
    "dlstp.32 lr, lr\n" MT_S8_DWG_TURN

/* The four channels one after another (MT_S8_DWG_CHANNEL, unrolled). Registers in the loop:
 * r0-r2 the rows, r3 4·step, r4-r12 the nine weights, lr the outputs left; q0 the sums, q1 a
 * tap's inputs, q2 the sums' addresses, q3 the start, q4-q6 the taps' offsets, q7 channel 0's
 * sums' addresses. The argument block and 4·step wait on the stack. A naked function saving
 * r4-r11 and d8-d15 (q4-q7), as the AAPCS asks. */
__attribute__((naked, noinline, unused)) static void mt_s8_dwg_run(const mt_s8_dwg *p __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "vpush {d8-d15}\n\t"
                   "sub sp, #8\n\t"                   /* [sp] p, [sp, #4] 4·step */
                   "ldrd r1, r2, [r0, #12]\n\t"       /* step, C */
                   "movs r4, #0\n\t"
                   "vidup.u32 q4, r4, #1\n\t"         /* 0, 1, 2, 3 (VIDUP's count: an even register) */
                   "vmul.i32 q4, q4, r1\n\t"          /* lane·step: tap kw = 0 */
                   "vadd.i32 q5, q4, r2\n\t"          /* kw = 1 */
                   "vadd.i32 q6, q5, r2\n\t"          /* kw = 2 */
                   "movs r4, #0\n\t"
                   "vidup.u32 q7, r4, #4\n\t"         /* 0, 4, 8, 12 */
                   "vshl.i32 q7, q7, #2\n\t"          /* 0, 16, 32, 48 */
                   "ldr r3, [r0, #20]\n\t"
                   "subs r3, #64\n\t"                 /* the scatter adds 64 before it stores */
                   "vadd.i32 q7, q7, r3\n\t"          /* channel 0's sums */
                   "lsls r1, r1, #2\n\t"              /* a turn's move: four outputs */
                   "strd r0, r1, [sp]\n\t"
                   MT_S8_DWG_CHANNEL("36", "0", "0", "0")
                   MT_S8_DWG_CHANNEL("76", "40", "4", "1")
                   MT_S8_DWG_CHANNEL("116", "80", "8", "2")
                   MT_S8_DWG_CHANNEL("156", "120", "12", "3")
                   "add sp, #8\n\t"
                   "vpop {d8-d15}\n\t"
                   "pop {r4-r11, pc}\n\t");
}

/* acc[4·j + r] for n outputs of four channels, r < 4: row[k] kernel row k's input at the
 * first output's tap 0 and channel 0 of the four, k their weights and starts (ten words a
 * channel) */
static inline void mt_s8_dwg_pixels(const int8_t *const row[3], size_t C, size_t step, const int32_t *k, uint32_t n,
                                    int32_t *acc)
{
    const mt_s8_dwg run = {{row[0], row[1], row[2]}, (uint32_t)step, (uint32_t)C, acc, n, k};
    mt_s8_dwg_run(&run);
}

#endif /* MT_OPS_MVE_DEPTHWISE_S8_MVE_H */
