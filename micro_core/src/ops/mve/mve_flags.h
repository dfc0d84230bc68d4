/* Shared pieces of the Helium kernels (ops/mve/ *_mve.c only): FPSCR's cumulative flags around
 * a block of MVE arithmetic, the NaN tests of a block's results, the geometry the row-sliding
 * kernels take, and the four-by-four dot-product loop. */
#ifndef MT_OPS_ARM_MVE_FLAGS_H
#define MT_OPS_ARM_MVE_FLAGS_H

#include <arm_mve.h>
#include <stdint.h>

#include "microtrain.h"
#include "ops/spatial.h"

#define MT_FPSCR_IDC 0x80u /* an input subnormal was flushed to zero */
#define MT_FPSCR_UFC 0x08u /* a subnormal result was flushed to zero */

/* Clear the cumulative flags; the memory clobber keeps the block's loads after it. */
static inline void mt_mve_flags_clear(void)
{
    uint32_t r;
    __asm volatile("vmrs %0, fpscr" : "=r"(r)::"memory");
    r &= ~0x9Fu;
    __asm volatile("vmsr fpscr, %0" ::"r"(r) : "memory");
}

/* 1 when the arithmetic since the clear flushed a subnormal. a..d are the block's results
 * still in registers (the read cannot move before the arithmetic that makes them); results
 * already stored are ordered by the memory clobber. */
static inline int mt_mve_flushed(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    uint32_t r;
    __asm volatile("vmrs %0, fpscr" : "=r"(r) : "w"(a), "w"(b), "w"(c), "w"(d) : "memory");
    return (r & (MT_FPSCR_IDC | MT_FPSCR_UFC)) != 0;
}

/* 1 when a lane of a..d is a NaN: each compared with itself (false only for a NaN), the four
 * results ANDed in one VPT block, then VPR.P0 read (7 instructions and a compare). MVE makes
 * every NaN result the default NaN, where the scalar FPU carries an input NaN's sign and
 * payload through: such a block must be recomputed in scalar code. (VPR is "p0" to GCC.) */
static inline int mt_mve_nan(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    uint32_t r;
    __asm("vcmp.f32 eq, %q1, %q1\n\t"
          "vpsttt\n\t"
          "vcmpt.f32 eq, %q2, %q2\n\t"
          "vcmpt.f32 eq, %q3, %q3\n\t"
          "vcmpt.f32 eq, %q4, %q4\n\t"
          "vmrs %0, p0"
          : "=r"(r)
          : "w"(a), "w"(b), "w"(c), "w"(d)
          : "p0");
    return r != 0xffffu;
}

/* |x|'s bits (the sign cleared with an immediate: no constant register, no float operation);
 * for non-NaN floats they order as the magnitudes do, and a NaN's exceed +inf's */
static inline uint32x4_t mt_mve_magnitude(float32x4_t x)
{
    return vbicq_n_u32(vreinterpretq_u32_f32(x), 0x80000000u);
}

/* A NaN test for results already stored or many vectors, on integers (no flags, no
 * predicate): worst collects each lane's |bits|. (An AND with a constant the loops keep in a
 * register: mt_mve_magnitude's VBIC cost the DepthwiseConv2D forward 1K more instructions.) */
static inline uint32x4_t mt_mve_magnitudes(uint32x4_t worst, float32x4_t v)
{
    return vmaxq_u32(worst, vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(0x7fffffffu)));
}

static inline int mt_mve_magnitudes_nan(uint32x4_t worst)
{
    return vmaxvq_u32(0, worst) > 0x7f800000u;
}

/* The runs of blocks of the naked block kernels (conv2d_c1_rows_mve.h, depthwise_blocks_mve.h):
 * along a row at stride 1 with a 3-tap window and `pad` before, output o's taps read input
 * o - pad .. o - pad + 2. A block is four outputs from o whose taps lie in the input row but for
 * output 0's tap 0 (L: the left padding) and output 3's tap 2 (R: the right). Returns how many
 * blocks run from o back to back (0: none starts there), *edges = 1 if the first is L, | 2 if
 * the last is R. */
static inline uint32_t mt_mve_block_run(uint32_t o, uint32_t pad, uint32_t in, uint32_t out, uint32_t *edges)
{
    const int32_t s = (int32_t)o - (int32_t)pad; /* output o's tap 0 */
    uint32_t n = 0;
    while (o + 4 * (n + 1) <= out && s + 4 * (int32_t)n >= -1 && s + 4 * (int32_t)n + 5 <= (int32_t)in) ++n;
    *edges = (uint32_t)(s < 0) | (uint32_t)(s + 4 * (int32_t)n + 1 == (int32_t)in) << 1;
    return n;
}

/* the address of output o's tap 0 in `row` (C floats a pixel), as the block kernels take it: for
 * an L block (tap 0 in the padding) C·4 bytes before the first value they load, never read */
static inline uintptr_t mt_mve_block_tap0(const float *row, uint32_t o, uint32_t pad, uint32_t C)
{
    const int32_t s = (int32_t)o - (int32_t)pad;
    const uint32_t L = s < 0;
    return (uintptr_t)(row + (size_t)(s + (int32_t)L) * C) - L * C * 4u;
}

/* The geometry of the kernels that slide along rows (DepthwiseConv2D, the one-channel Conv2D
 * backward): stride 1 along W, a 3-wide window, SAME (OW = W) or VALID (OW = W - 2), at least
 * min_w input columns */
static inline int mt_mve_row_slides(const mt_spatial *g, uint32_t min_w)
{
    return g->SW == 1 && g->KW == 3 && g->W >= min_w &&
           ((g->PL == 1 && g->OW == g->W) || (g->PL == 0 && g->OW + 2 == g->W));
}

/* the same for one vector */
static inline int mt_mve_nan1(float32x4_t a)
{
    uint32_t r;
    __asm("vcmp.f32 eq, %q1, %q1\n\tvmrs %0, p0" : "=r"(r) : "w"(a) : "p0");
    return r != 0xffffu;
}

/* Inline-asm pieces the Helium kernels share (no scratch register):
 * MT_MULADD_TEXT: a = fma(w, t, a) as the reference rounds it (mt_fma.h: w·t + a rounded
 * once), one VFMA by the scalar t, its operands asm text: registers ("q0", "r8", in the naked
 * functions) or operand names;
 * MT_MULADD: the same with operands named a0.., t0..;
 * MT_FOUR_ROWS_TWO_TERMS: a turn of the four-row dot products (Dense, mt_mve_dot4x4): W's two
 * terms in wa and wb, each row's two values one LDRD (the row pointer moves 8 bytes) into t0,
 * t1, then that row's two terms; MT_FOUR_ROWS_ONE_TERM: an odd last term (LDR, the rows
 * stay);
 * MT_NAN_TEST4: P0 = the lanes of a0..a3 that are all not NaN (VCMP EQ of each with itself),
 * read into t1. */
#define MT_MULADD_TEXT(w, a, t) "vfma.f32 " a ", " w ", " t "\n\t"
#define MT_MULADD(q, a, t) MT_MULADD_TEXT(q, "%q[" a "]", "%[" t "]")
#define MT_FOUR_ROWS_TWO_TERMS(wa, wb, x0, x1, x2, x3, t0, t1, a0, a1, a2, a3)                                        \
    "ldrd " t0 ", " t1 ", [" x0 "], #8\n\t" MT_MULADD_TEXT(wa, a0, t0) MT_MULADD_TEXT(wb, a0, t1)                     \
    "ldrd " t0 ", " t1 ", [" x1 "], #8\n\t" MT_MULADD_TEXT(wa, a1, t0) MT_MULADD_TEXT(wb, a1, t1)                     \
    "ldrd " t0 ", " t1 ", [" x2 "], #8\n\t" MT_MULADD_TEXT(wa, a2, t0) MT_MULADD_TEXT(wb, a2, t1)                     \
    "ldrd " t0 ", " t1 ", [" x3 "], #8\n\t" MT_MULADD_TEXT(wa, a3, t0) MT_MULADD_TEXT(wb, a3, t1)
#define MT_FOUR_ROWS_ONE_TERM(w, x0, x1, x2, x3, t0, t1, a0, a1, a2, a3)                                              \
    "ldr " t0 ", [" x0 "]\n\tldr " t1 ", [" x1 "]\n\t" MT_MULADD_TEXT(w, a0, t0) MT_MULADD_TEXT(w, a1, t1)            \
    "ldr " t0 ", [" x2 "]\n\tldr " t1 ", [" x3 "]\n\t" MT_MULADD_TEXT(w, a2, t0) MT_MULADD_TEXT(w, a3, t1)
/* the same with operands named x0..x3, t0, t1, a0..a3 */
#define MT_NAMED_TWO_TERMS(wa, wb)                                                                                    \
    MT_FOUR_ROWS_TWO_TERMS(wa, wb, "%[x0]", "%[x1]", "%[x2]", "%[x3]", "%[t0]", "%[t1]", "%q[a0]", "%q[a1]", "%q[a2]", \
                           "%q[a3]")
#define MT_NAMED_ONE_TERM(w)                                                                                          \
    MT_FOUR_ROWS_ONE_TERM(w, "%[x0]", "%[x1]", "%[x2]", "%[x3]", "%[t0]", "%[t1]", "%q[a0]", "%q[a1]", "%q[a2]",      \
                          "%q[a3]")
#define MT_NAN_TEST4                                                                                                  \
    "vcmp.f32 eq, %q[a0], %q[a0]\n\t"                                                                                 \
    "vpsttt\n\t"                                                                                                      \
    "vcmpt.f32 eq, %q[a1], %q[a1]\n\t"                                                                                \
    "vcmpt.f32 eq, %q[a2], %q[a2]\n\t"                                                                                \
    "vcmpt.f32 eq, %q[a3], %q[a3]\n\t"                                                                                \
    "vmrs %[t1], p0\n\t"

/* op (VMAXNM, VMINNM) of q0..q3 each with q4, in place: an activation's clamp of four sums */
#define MT_Q0_Q3_WITH_Q4(op)                                                                                          \
    op ".f32 q0, q0, q4\n\t" op ".f32 q1, q1, q4\n\t" op ".f32 q2, q2, q4\n\t" op ".f32 q3, q3, q4\n\t"

/* q0..q3 tested for NaNs (each compared with itself, the four ANDed in one VPT block), then a
 * branch to `fail` unless P0 is 0xffff (r3 scratch: P0 << 16 plus 0x10000 is 0 only then) */
#define MT_NAN_TEST_Q0_Q3(fail)                                                                                       \
    "vcmp.f32 eq, q0, q0\n\tvpsttt\n\tvcmpt.f32 eq, q1, q1\n\tvcmpt.f32 eq, q2, q2\n\tvcmpt.f32 eq, q3, q3\n\t"       \
    "vmrs r3, p0\n\tlsls r3, r3, #16\n\tcmn r3, #65536\n\tbne " fail "\n\t"

/* The naked kernels' frames: MT_NAKED_ENTER(frame) pushes r4-r11, lr and d8-d15 (the AAPCS's
 * callee-saved registers) and takes `frame` bytes of stack, r12 at its start; MT_NAKED_COPY32
 * copies 32 bytes of the parameter struct at r0 to r12 (both move on; r1-r8 scratch), how a
 * naked kernel puts its struct on its stack frame;
 * MT_NAKED_RETURN_0_OR_1(frame, dregs): labels 8 (return 0) and 9 (return 1), then the frame's
 * `frame` bytes freed and the callee-saved registers restored (dregs: the D registers pushed). */
#define MT_NAKED_ENTER(frame) "push {r4-r11, lr}\n\tvpush {d8-d15}\n\tsub sp, #" frame "\n\tmov r12, sp\n\t"
#define MT_NAKED_COPY32 "ldm r0!, {r1-r8}\n\tstm r12!, {r1-r8}\n\t"
#define MT_NAKED_RETURN_0_OR_1(frame, dregs)                                                                          \
    "8:\n\tmovs r0, #0\n\tb 10f\n9:\n\tmovs r0, #1\n10:\n\tadd sp, #" frame "\n\tvpop {" dregs "}\n\t"                \
    "pop {r4-r11, pc}\n"

/* bias, then the fused activation as the reference applies it (MT_FUSED_*, microtrain.h):
 * v < 0 ? 0 : v, then > 6 ? 6. The test is 0 > v: VCMP's LT condition (N != V) also holds
 * for an unordered pair, so VCMP LT would make a NaN 0, where the reference keeps it; GT is
 * false for a NaN. */
static inline float32x4_t mt_mve_finish(float32x4_t v, float32x4_t bv, uint32_t activation)
{
    v = vaddq_f32(v, bv);
    if (activation != MT_FUSED_NONE) {
        const float32x4_t zero = vdupq_n_f32(0.0f);
        v = vpselq_f32(zero, v, vcmpgtq_f32(zero, v));
        if (activation == MT_FUSED_RELU6) v = vpselq_f32(vdupq_n_f32(6.0f), v, vcmpgtq_n_f32(v, 6.0f));
    }
    return v;
}

/*
 * a_j += Σ_t W[lanes, t]·p_j[t] for t < n, in ascending t, four rows p0..p3 (j = 0..3) and
 * four lanes whose W values one gather reads at pw + t + offs[lane], each term a fused
 * multiply-add (mt_fma.h). Two terms a turn in a low-overhead loop (the compiler kept spilling
 * registers here): two gathers, each row's pair one LDRD, every term one VFMA by the scalar:
 * 17 instructions for 32 MACs. Rows may repeat (a row of fewer).
 */
static inline void mt_mve_dot4x4(const float *p0, const float *p1, const float *p2, const float *p3, const float *pw,
                                 uint32x4_t offs, uint32_t n, float32x4_t *r0, float32x4_t *r1, float32x4_t *r2,
                                 float32x4_t *r3)
{
    float32x4_t a0 = *r0, a1 = *r1, a2 = *r2, a3 = *r3;
    const uint32_t pairs = n / 2;
    if (pairs) {
        uint32_t t0, t1;
        __asm volatile(
            "dls lr, %[n]\n"
            "1:\n\t"
            "vldrw.u32 q5, [%[pw], %q[offs], uxtw #2]\n\t"
            "adds %[pw], #4\n\t"
            "vldrw.u32 q7, [%[pw], %q[offs], uxtw #2]\n\t"
            "adds %[pw], #4\n\t"
            MT_NAMED_TWO_TERMS("q5", "q7")
            "le lr, 1b\n"
            : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [a3] "+w"(a3), [x0] "+r"(p0), [x1] "+r"(p1),
              [x2] "+r"(p2), [x3] "+r"(p3), [pw] "+r"(pw), [t0] "=&r"(t0), [t1] "=&r"(t1)
            : [n] "r"(pairs), [offs] "w"(offs)
            : "q5", "q7", "lr", "memory");
    }
    if (n & 1u) {
        const float32x4_t wv = vldrwq_gather_shifted_offset_f32(pw, offs);
        a0 = vfmaq_n_f32(a0, wv, *p0);
        a1 = vfmaq_n_f32(a1, wv, *p1);
        a2 = vfmaq_n_f32(a2, wv, *p2);
        a3 = vfmaq_n_f32(a3, wv, *p3);
    }
    *r0 = a0, *r1 = a1, *r2 = a2, *r3 = a3;
}

#endif /* MT_OPS_ARM_MVE_FLAGS_H */
