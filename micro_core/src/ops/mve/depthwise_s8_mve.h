/*
 * Helium's 3 x 3 stride-1 int8 depthwise over channel planes (ops/portable/depthwise_s8_rows.h
 * includes it on the Cortex-M55): the DSP cores' planes (ops/dsp/depthwise_s8_dsp.h, whose
 * comment has the layout and why the padding's zx terms cancel), with four outputs of one
 * channel as a vector's lanes and the channel's nine weights as scalars: a tap is a widening
 * byte load of four neighbouring outputs' inputs and one VMLA.S32 by the tap's weight, two
 * instructions for four MACs, where the four-channel form (dw_interior_tap) takes four (two
 * loads, VMUL, VADD): mt_s8_dw3_run, in assembly. The copies into the planes are byte gathers, eight pixels of one
 * channel each (offsets k·C as 16-bit lanes), stored narrowed.
 *
 * Integer sums: VMLA.S32 wraps as the C forms' uint32 sums do, so the bits are the
 * reference's (the int8 siblings, boards/app/siblings_s8.c; the planted faults dw3m-* of
 * tests/boards/asm_faults.txt).
 */
#ifndef MT_OPS_MVE_DEPTHWISE_S8_MVE_H
#define MT_OPS_MVE_DEPTHWISE_S8_MVE_H

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops/asm_args.h" /* MT_ASM_ARGS */

/* The planes' bytes (three slots of four channels' rows of Wp = OW + MT_DW3_PAD_COLS columns:
 * the last vector of a run reads up to three outputs past its end, and their taps two columns
 * further): rows of up to 79 outputs take this form, wider ones the four-channel one */
#define MT_DW3_PLANE_BYTES 1020u
#define MT_DW3_PAD_COLS 6u
/* The narrowest row the row-a-call form (the fused expansion's) takes the planes for: its
 * three copies a row and setup cost what the products gain up to 32 outputs (the MobileNetV2
 * step's 12 streamed stride-1 pairs: 10.02M instructions with the planes for the 32-wide
 * block, 10.02M without, 12.07M with them at every width) */
#define MT_DW3_ROW_MIN 33u

/* One channel's weights (w: W [3, 3, C] at the channel), w[kh][kw], and the sums' start,
 * bias - zx·Σ W over the nine taps (wrapping) */
typedef struct mt_s8_dw3_weights {
    int32_t w[3][3];
    int32_t start;
} mt_s8_dw3_weights;

static inline void mt_s8_dw3_weights_of(mt_s8_dw3_weights *k, const int8_t *w, size_t C, int32_t bias, int32_t zx)
{
    uint32_t sum = 0;
    for (uint32_t t = 0; t < 9; ++t) k->w[t / 3u][t % 3u] = w[t * C], sum += (uint32_t)(int32_t)w[t * C];
    k->start = (int32_t)((uint32_t)bias - (uint32_t)zx * sum);
}

/* Whether mt_s8_dw3_slot can make a slot: its padding one predicated store a side (at most
 * 16 bytes), a pixel's offsets 16-bit lanes (7·C < 2^16) */
static inline int mt_s8_dw3_fits(uint32_t W, size_t C, uint32_t PL, uint32_t Wp)
{
    return PL <= 16u && Wp - PL - W <= 16u && 7u * C <= 65535u;
}

/* One slot of the planes: d[r·Wp + u] = channel c + r of an input row at padded column u, for
 * r < 4; row at channel c of its pixel 0, or NULL for a row in the padding (all zx). Each
 * channel's W columns eight at a time: a byte gather at offsets 0, C, .., 7·C (predicated at
 * the row's end) and a narrowing store; the padding before and after them one predicated
 * store of zx each. */
static __attribute__((noinline)) void mt_s8_dw3_slot(const int8_t *row, uint32_t W, size_t C, uint32_t PL,
                                                     uint32_t Wp, int8_t zx, int8_t *d)
{
    if (!row) {
        memset(d, zx, 4u * Wp);
        return;
    }
    const int8x16_t z = vdupq_n_s8(zx);
    const uint16x8_t offsets = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)C);
    for (uint32_t r = 0; r < 4; ++r, d += Wp) {
        vstrbq_p_s8(d, z, vctp8q(PL));
        vstrbq_p_s8(d + PL + W, z, vctp8q(Wp - PL - W));
        const int8_t *s = row + r;
        for (uint32_t u = 0; u < W; u += 8u, s += 8u * C) {
            const mve_pred16_t lanes = vctp16q(W - u);
            vstrbq_p_s16(d + PL + u, vldrbq_gather_offset_z_s16(s, offsets, lanes), lanes);
        }
    }
}

/* One channel's run (mt_s8_dw3_run): x at its slot 0's row, column of the run's first output
 * (slots 1 and 2 stride and 2·stride bytes on), n >= 1 outputs, their sums to acc[0], acc[4],
 * ...; w[3·j + t] the weight of tap t of the kernel row slot j holds, start the sums' start. */
#define MT_S8_DW3_FIELDS(F, S)   \
    F(S, 0, const int8_t *, x, ) \
    F(S, 4, uint32_t, stride, )  \
    F(S, 8, int32_t *, acc, )    \
    F(S, 12, uint32_t, n, )      \
    F(S, 16, int32_t, start, )   \
    F(S, 20, int32_t, w, [9])
/* mt_s8_dw3_run reads mt_s8_dw3 */
MT_ASM_ARGS(mt_s8_dw3, MT_S8_DW3_FIELDS, 56);

/* Four outputs a turn in a tail-predicated loop (DLSTP/LETP: the last turn's lanes past n
 * neither load nor store): the sums start from start (q3), each tap a VLDRB.S32 of the four
 * outputs' inputs and a VMLA.S32 by its weight, then one scatter to acc[4·i] (q2 the lanes'
 * word offsets 0, 4, 8, 12): 22 instructions for 36 MACs, where GCC's C of it spilled six of
 * the nine weights and took 46. Registers: r0-r2 the three slots' rows, r3 acc, r4-r12 the
 * weights, lr the outputs left: 14, a naked function saving the AAPCS callee registers (no
 * callee-saved vector register is touched). */
__attribute__((naked, noinline, unused)) static void mt_s8_dw3_run(mt_s8_dw3 *p __attribute__((unused)))
{
    __asm volatile("push {r4-r11, lr}\n\t"
                   "ldr r4, [r0, #16]\n\t"
                   "vdup.32 q3, r4\n\t"               /* the start */
                   "movs r4, #0\n\t"
                   "vidup.u32 q2, r4, #4\n\t"         /* 0, 4, 8, 12 */
                   "ldrd r1, r3, [r0, #4]\n\t"        /* stride, acc */
                   "ldr lr, [r0, #12]\n\t"
                   "add r2, r0, #20\n\t"
                   "ldm r2, {r4-r12}\n\t"
                   "ldr r0, [r0]\n\t"
                   "add r2, r0, r1, lsl #1\n\t"       /* slot 2's row */
                   "add r1, r0, r1\n\t"               /* slot 1's */
                   "dlstp.32 lr, lr\n"
                   "1:\n\t"
                   "vmov q0, q3\n\t"
                   "vldrb.s32 q1, [r0, #1]\n\t"       /* slot 0, tap 1 */
                   "vmla.s32 q0, q1, r5\n\t"
                   "vldrb.s32 q1, [r0, #2]\n\t"
                   "vmla.s32 q0, q1, r6\n\t"
                   "vldrb.s32 q1, [r0], #4\n\t"       /* tap 0; on four outputs */
                   "vmla.s32 q0, q1, r4\n\t"
                   "vldrb.s32 q1, [r1, #1]\n\t"
                   "vmla.s32 q0, q1, r8\n\t"
                   "vldrb.s32 q1, [r1, #2]\n\t"
                   "vmla.s32 q0, q1, r9\n\t"
                   "vldrb.s32 q1, [r1], #4\n\t"
                   "vmla.s32 q0, q1, r7\n\t"
                   "vldrb.s32 q1, [r2, #1]\n\t"
                   "vmla.s32 q0, q1, r11\n\t"
                   "vldrb.s32 q1, [r2, #2]\n\t"
                   "vmla.s32 q0, q1, r12\n\t"
                   "vldrb.s32 q1, [r2], #4\n\t"
                   "vmla.s32 q0, q1, r10\n\t"
                   "vstrw.32 q0, [r3, q2, uxtw #2]\n\t"
                   "adds r3, #64\n\t"
                   "letp lr, 1b\n\t"
                   "pop {r4-r11, pc}\n\t");
}

/* The run's weights where slot j of the planes holds kernel row kernel_row[j] (the sum is
 * the same in any order of its terms), made once an output row */
static inline void mt_s8_dw3_slots(mt_s8_dw3 *run, const mt_s8_dw3_weights *k, const uint32_t kernel_row[3])
{
    for (uint32_t j = 0; j < 3; ++j) memcpy(run->w + 3 * j, k->w[kernel_row[j]], sizeof k->w[0]);
    run->start = k->start;
}

/* acc[4·j] for n outputs of one channel from its plane's slot 0 at x (slots stride bytes
 * apart), with the run's weights (mt_s8_dw3_slots) */
static inline void mt_s8_dw3_channel(mt_s8_dw3 *run, const int8_t *x, size_t stride, uint32_t n, int32_t *acc)
{
    run->x = x, run->stride = (uint32_t)stride, run->acc = acc, run->n = n;
    mt_s8_dw3_run(run);
}

#endif /* MT_OPS_MVE_DEPTHWISE_S8_MVE_H */
