/*
 * A gradient's clear and += (select/kernels.def's grad_clear_f32 and add_f32_accumulate) on the
 * Cortex-M cores with a single-precision FPU (the dsp column): newlib-nano's memset stores a
 * word an instruction (7 instructions for 16 bytes) and GCC's dx += dy loop took about 7 an
 * element. The whole blocks in assembly, the rest in C; the same additions as the reference,
 * so the same bits. Always built on those cores (every op's backward may clear or add).
 */
#include <stddef.h>
#include <stdint.h>

#include "ops/dsp/dsp.h"
#include "select/kernels.h"

#if MT_DSP_KERNELS && MT_VFP_SCALAR
/* p[0 .. 16·⌊n/16⌋) = +0.0f: s0-s15 zeroed once by core-register moves, then one VSTMIA of 64
 * bytes a turn (3 instructions). Moves and stores only: no float operation, no flag. Returns
 * p past the blocks. */
static inline float *clear_blocks(float *p, size_t n)
{
    size_t blocks = n / 16u;
    if (!blocks) return p;
    const uint32_t z = 0u;
    __asm volatile("vmov s0, s1, %[z], %[z]\n\t"
                   "vmov s2, s3, %[z], %[z]\n\t"
                   "vmov s4, s5, %[z], %[z]\n\t"
                   "vmov s6, s7, %[z], %[z]\n\t"
                   "vmov s8, s9, %[z], %[z]\n\t"
                   "vmov s10, s11, %[z], %[z]\n\t"
                   "vmov s12, s13, %[z], %[z]\n\t"
                   "vmov s14, s15, %[z], %[z]\n"
                   "1:\n\t"
                   "vstmia %[p]!, {s0-s15}\n\t"
                   "subs %[k], #1\n\t"
                   "bne 1b"
                   : [p] "+r"(p), [k] "+r"(blocks)
                   : [z] "r"(z)
                   : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14",
                     "s15", "cc", "memory");
    return p;
}

/* dx[i] += dy[i] for i < 8·⌊N/8⌋: two VLDM, eight VADD (dx's operand first, as the compiled
 * reference adds: the same NaN when both are one) and a VSTM a turn (13 instructions) */
static inline size_t add_blocks(const float *dy, float *dx, size_t N)
{
    size_t blocks = N / 8u;
    if (!blocks) return 0;
    __asm volatile("1:\n\t"
                   "vldmia %[d], {s0-s7}\n\t"
                   "vldmia %[a]!, {s8-s15}\n\t"
                   "vadd.f32 s0, s0, s8\n\t"
                   "vadd.f32 s1, s1, s9\n\t"
                   "vadd.f32 s2, s2, s10\n\t"
                   "vadd.f32 s3, s3, s11\n\t"
                   "vadd.f32 s4, s4, s12\n\t"
                   "vadd.f32 s5, s5, s13\n\t"
                   "vadd.f32 s6, s6, s14\n\t"
                   "vadd.f32 s7, s7, s15\n\t"
                   "vstmia %[d]!, {s0-s7}\n\t"
                   "subs %[k], #1\n\t"
                   "bne 1b"
                   : [d] "+r"(dx), [a] "+r"(dy), [k] "+r"(blocks)
                   :
                   : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14",
                     "s15", "cc", "memory");
    return N & ~(size_t)7u;
}

/* dx[i] += dy[i] */
void mt_op_add_f32_accumulate_dsp(const float *dy, float *dx, size_t N)
{
    for (size_t i = add_blocks(dy, dx, N); i < N; ++i) dx[i] += dy[i];
}

/* p[0..n) = +0.0f */
void mt_grad_clear_f32_dsp(float *p, size_t n)
{
    p = clear_blocks(p, n);
    for (size_t i = 0; i < n % 16u; ++i) p[i] = 0.0f;
}
#else
typedef int mt_gradient_dsp_unused; /* ISO C: a translation unit is not empty */
#endif
