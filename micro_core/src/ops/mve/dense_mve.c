/*
 * Helium siblings of the Dense kernels (ops/dense.c); ops/mve/mve.h says how they keep the
 * reference's bits. Glossary as in ops/ops.h.
 */
#include "ops/mve/mve.h"
#include "ops/mve/dense_blocks_mve.h"

#include <string.h>

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2", "no-tree-vectorize") /* ops/mve/mve.h: no auto-vectorized float code */
#include "mt_fma.h"
#include "ops/mve/mve_flags.h"
#include "ops/ops.h"
#include "ops/spatial.h"

/*
 * y[b + j, u..u+3] = act(Σ_i x[b + j, i]·W[u..u+3, i] + bias[u..u+3]) for four rows x0..x3 (the
 * y rows ys bytes apart from yb) and the lanes of VPR.P0 = ma's low half (act = ma >> 16): one
 * asm (the compiler spilled every pointer around a loop in C). mt_mve_dot4x4's loop, an odd
 * last term, the bias (a NULL bias adds nothing), the NaN test (as mt_mve_nan: returns VPR.P0,
 * 0xffff when no lane is a NaN, and then nothing is stored), the activation: VMAXNM with +0
 * (and VMINNM with 6), the same as the reference's v < 0 ? 0 : v (> 6 ? 6) for every v that is
 * not a NaN or -0, and a sum from +0 plus the bias is -0 only after a fused term underflowed,
 * which sets UFC and sends the block to the scalar redo; then the four predicated stores.
 */
static inline __attribute__((always_inline)) uint32_t fwd_block(const float *x0, const float *x1, const float *x2,
                                                                const float *x3, const float *pw, uint32x4_t offs,
                                                                uint32_t I, float *yb, size_t ys,
                                                                const float *bias, uint32_t ma)
{
    float32x4_t a0, a1, a2, a3;
    uint32_t t0, t1;
    /* the lanes' byte addresses of W[u + lane, i], less the 8 the first load adds (a vector
     * base with writeback: one instruction a load, where a scalar base took a load and an add) */
    uint32x4_t qa = vaddq_n_u32(vshlq_n_u32(offs, 2), (uint32_t)(uintptr_t)pw - 8u);
    __asm volatile("vmov.i32 %q[a0], #0\n\t"
                   "vmov.i32 %q[a1], #0\n\t"
                   "vmov.i32 %q[a2], #0\n\t"
                   "vmov.i32 %q[a3], #0\n\t"
                   "lsrs %[t0], %[I], #1\n\t"
                   "wls lr, %[t0], 2f\n"
                   "1:\n\t"
                   "vldrw.u32 q5, [%q[qa], #8]!\n\t" /* W[u..u+3, i], and the addresses one pair on */
                   "vldrw.u32 q7, [%q[qa], #4]\n\t"  /* W[u..u+3, i + 1] */
                   MT_NAMED_TWO_TERMS("q5", "q7")
                   "le lr, 1b\n"
                   "2:\n\t"
                   "lsls %[t0], %[I], #31\n\t"
                   "beq 3f\n\t"
                   "vldrw.u32 q5, [%q[qa], #8]\n\t"
                   MT_NAMED_ONE_TERM("q5")
                   "3:\n\t"
                   "vmsr p0, %[ma]\n\t"
                   "cmp %[bias], #0\n\t"
                   "beq 4f\n\t"
                   "vmov.i32 q5, #0\n\t"
                   "vpst\n\t"
                   "vldrwt.u32 q5, [%[bias]]\n\t"
                   "vadd.f32 %q[a0], %q[a0], q5\n\t"
                   "vadd.f32 %q[a1], %q[a1], q5\n\t"
                   "vadd.f32 %q[a2], %q[a2], q5\n\t"
                   "vadd.f32 %q[a3], %q[a3], q5\n"
                   "4:\n\t"
                   MT_NAN_TEST4
                   "movw %[t0], #65535\n\t"
                   "cmp %[t1], %[t0]\n\t"
                   "bne 6f\n\t"
                   "lsrs %[t0], %[ma], #16\n\t"
                   "beq 5f\n\t"
                   "vmov.i32 q5, #0\n\t"
                   "vmaxnm.f32 %q[a0], %q[a0], q5\n\t"
                   "vmaxnm.f32 %q[a1], %q[a1], q5\n\t"
                   "vmaxnm.f32 %q[a2], %q[a2], q5\n\t"
                   "vmaxnm.f32 %q[a3], %q[a3], q5\n\t"
                   "cmp %[t0], #1\n\t"
                   "beq 5f\n\t"
                   "vmov.f32 q5, #6.0\n\t"
                   "vminnm.f32 %q[a0], %q[a0], q5\n\t"
                   "vminnm.f32 %q[a1], %q[a1], q5\n\t"
                   "vminnm.f32 %q[a2], %q[a2], q5\n\t"
                   "vminnm.f32 %q[a3], %q[a3], q5\n"
                   "5:\n\t"
                   "vmsr p0, %[ma]\n\t"
                   "add %[x1], %[yb], %[ys]\n\t"
                   "add %[x2], %[x1], %[ys]\n\t"
                   "add %[x3], %[x2], %[ys]\n\t"
                   "vpstttt\n\t"
                   "vstrwt.32 %q[a0], [%[yb]]\n\t"
                   "vstrwt.32 %q[a1], [%[x1]]\n\t"
                   "vstrwt.32 %q[a2], [%[x2]]\n\t"
                   "vstrwt.32 %q[a3], [%[x3]]\n"
                   "6:\n"
                   : [a0] "=&w"(a0), [a1] "=&w"(a1), [a2] "=&w"(a2), [a3] "=&w"(a3), [x0] "+r"(x0), [x1] "+r"(x1),
                     [x2] "+r"(x2), [x3] "+r"(x3), [qa] "+w"(qa), [t0] "=&r"(t0), [t1] "=&r"(t1)
                   : [I] "r"(I), [yb] "r"(yb), [ys] "r"(ys), [bias] "r"(bias), [ma] "r"(ma)
                   : "q5", "q7", "lr", "cc", "p0", "memory");
    return t1;
}

/* the units from u0 on through fwd_block (a last partial four, or all of them for fewer than
 * four rows); 1 when a block's results hold a NaN. Apart from the caller: inlined there, its
 * vectors live across mt_mve_fwd_rows_run left GCC no register for fwd_block's asm at -O2. */
static __attribute__((noinline)) int fwd_units_from(const float *x, const float *w, const float *bias, float *y,
                                                   uint32_t B, uint32_t I, uint32_t U, uint32_t act, uint32_t u0)
{
    const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0u, 1), I);
    const size_t xs = B < 4 ? 0 : I, ys = B < 4 ? 0 : (size_t)U * sizeof(float);
    const uint32_t full = 0xffffu | act << 16, tail = (uint32_t)vctp32q(U % 4u) | act << 16;
    const uint32x4_t toffs = vpselq_u32(rows, vdupq_n_u32(0u), vctp32q(U % 4u)); /* past U: row u */
    for (uint32_t b4 = 0; b4 < B; b4 += B < 4 ? 1 : 4) {
        const uint32_t b = B >= 4 && b4 + 4 > B ? B - 4 : b4;
        const float *x0 = x + (size_t)b * I, *pw = w + (size_t)u0 * I, *pb = bias ? bias + u0 : NULL;
        float *yb = y + (size_t)b * U + u0;
        for (uint32_t n = U - u0; n; n -= n < 4 ? n : 4, pw += 4 * (size_t)I, yb += 4, pb = pb ? pb + 4 : NULL)
            if (fwd_block(x0, x0 + xs, x0 + 2 * xs, x0 + 3 * xs, pw, n < 4 ? toffs : rows, I, yb, ys, pb,
                          n < 4 ? tail : full) != 0xffffu)
                return 1;
    }
    return 0;
}

/*
 * y[b,u] = act(Σ_i x[b,i]·W[u,i] + bias[u]), act one of MT_FUSED_* (a pointwise Conv2D's):
 * lanes across four units, whose W[u..u+3, i] one gather load reads (offsets 0, I, 2I, 3I;
 * the lanes past U reread unit u and are not stored); four rows share it. The whole blocks
 * of four rows and four units go through mt_mve_fwd_rows_run; a last partial four rows
 * overlaps the block before (its rows' bits again); the last partial four units, and fewer
 * than four rows (one at a time, the four rows of a block the same), through fwd_block. Any
 * flushed subnormal, or a NaN in a block's results, sends the whole op to the reference
 * kernel and activation, which overwrite y.
 */
void mt_op_dense_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                 uint32_t I, uint32_t U, uint32_t act)
{
    mt_mve_flags_clear();
    const uint32_t whole = B >= 4 ? U & ~3u : 0; /* the units mt_mve_fwd_rows_run takes */
    int nan = 0;
    if (whole) {
        mt_mve_fwd_rows run = {x, w, bias, y, B / 4, whole / 4, I, U, act};
        nan = mt_mve_fwd_rows_run(&run);
        if (!nan && B % 4) { /* the last four rows */
            run.x = x + (size_t)(B - 4) * I, run.y = y + (size_t)(B - 4) * U, run.quads = 1;
            nan = mt_mve_fwd_rows_run(&run);
        }
    }
    if (!nan && whole < U) nan = fwd_units_from(x, w, bias, y, B, I, U, act, whole);
    const float32x4_t none = vdupq_n_f32(0.0f); /* every result is stored: the clobber orders them */
    if (nan || mt_mve_flushed(none, none, none, none)) { /* the reference */
        mt_op_dense_f32_forward_ref(x, w, bias, y, B, I, U, act);
    }
}

/* The scalar reference sums of one block: out[r·os + c] += Σ_k g[r·gs + k·gk]·m[k·ms + c], each
 * term a fused multiply-add (mt_fmaf, the scalar FPU's VFMA) from +0 in ascending k (one copy,
 * not one per block shape: it runs only where MVE flushed a subnormal or made a NaN) */
static __attribute__((noinline)) void block_scalar(const float *g, size_t gs, size_t gk, const float *m, size_t ms,
                                                   uint32_t K, float *out, size_t os, uint32_t R, uint32_t C)
{
    for (uint32_t r = 0; r < R; ++r)
        for (uint32_t c = 0; c < C; ++c) {
            float acc = 0.0f;
            for (uint32_t k = 0; k < K; ++k) acc = mt_fmaf(g[r * gs + k * gk], m[k * ms + c], acc);
            out[r * os + c] += acc;
        }
}

/* the block's final += of row a: a = out row + a, the next row of out one stride on */
#define MT_PLUS_OUT(a) "vldrw.u32 q5, [%[op]]\n\tadd %[op], %[os]\n\tvadd.f32 %q[" a "], q5, %q[" a "]\n\t"

/*
 * dW[u + j, c..c+3] += Σ_b dy[b, u + j]·x[b, c..c+3] for j < nr (6, 4, 2 or 1), each sum from
 * 0 in ascending b, the lanes from skip on stored. Per b one VLDRW of x, the nr values of dy
 * side by side (LDRD pairs) and a VFMA per row: 13 instructions for 24 MACs with six rows.
 * The whole block is one asm (the compiler spilled registers in C; .if keeps one text for
 * every nr), up to the read of FPSCR and of the rows' NaN test (as mt_mve_nan): a flushed
 * subnormal or a NaN result sends the block to the reference's scalar sums before anything is
 * stored.
 */
static inline __attribute__((always_inline)) void dw_block(const float *g, const float *m, float *o, uint32_t B,
                                                           uint32_t U, uint32_t I, const uint32_t nr, uint32_t skip,
                                                           int zero)
{
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    const float *gp = g, *xp = m;
    float *op = o;
    uint32_t t0, t1;
    __asm volatile("wls lr, %[n], 2f\n"
                   "1:\n\t"
                   "vldrw.u32 q5, [%[xp]]\n\t"
                   "add %[xp], %[os]\n\t"
                   ".if %c[nr] == 1\n\t"
                   "ldr %[t0], [%[gp]]\n\t"
                   ".else\n\t"
                   "ldrd %[t0], %[t1], [%[gp]]\n\t"
                   ".endif\n\t"
                   MT_MULADD("q5", "a0", "t0")
                   ".if %c[nr] >= 2\n\t"
                   MT_MULADD("q5", "a1", "t1")
                   ".endif\n\t"
                   ".if %c[nr] >= 4\n\t"
                   "ldrd %[t0], %[t1], [%[gp], #8]\n\t"
                   MT_MULADD("q5", "a2", "t0")
                   MT_MULADD("q5", "a3", "t1")
                   ".endif\n\t"
                   ".if %c[nr] >= 6\n\t"
                   "ldrd %[t0], %[t1], [%[gp], #16]\n\t"
                   MT_MULADD("q5", "a4", "t0")
                   MT_MULADD("q5", "a5", "t1")
                   ".endif\n\t"
                   "add %[gp], %[gs]\n\t"
                   "le lr, 1b\n"
                   "2:\n\t"
                   "cmp %[zero], #0\n\t" /* zero: dW as if zeroed, 0 + Σ = Σ (a sum from +0 is never -0) */
                   "bne 3f\n\t"
                   MT_PLUS_OUT("a0")
                   ".if %c[nr] >= 2\n\t"
                   MT_PLUS_OUT("a1")
                   ".endif\n\t"
                   ".if %c[nr] >= 4\n\t"
                   MT_PLUS_OUT("a2")
                   MT_PLUS_OUT("a3")
                   ".endif\n\t"
                   ".if %c[nr] >= 6\n\t"
                   MT_PLUS_OUT("a4")
                   MT_PLUS_OUT("a5")
                   ".endif\n"
                   "3:\n\t"
                   "vcmp.f32 eq, %q[a0], %q[a0]\n\t" /* P0: the lanes of every row that are not NaN */
                   ".if %c[nr] == 2\n\t"
                   "vpst\n\t"
                   "vcmpt.f32 eq, %q[a1], %q[a1]\n\t"
                   ".endif\n\t"
                   ".if %c[nr] >= 4\n\t"
                   "vpsttt\n\t"
                   "vcmpt.f32 eq, %q[a1], %q[a1]\n\t"
                   "vcmpt.f32 eq, %q[a2], %q[a2]\n\t"
                   "vcmpt.f32 eq, %q[a3], %q[a3]\n\t"
                   ".endif\n\t"
                   ".if %c[nr] >= 6\n\t"
                   "vpstt\n\t"
                   "vcmpt.f32 eq, %q[a4], %q[a4]\n\t"
                   "vcmpt.f32 eq, %q[a5], %q[a5]\n\t"
                   ".endif\n\t"
                   "vmrs %[t1], p0\n\t"
                   "vmrs %[t0], fpscr\n"
                   : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [a3] "+w"(a3), [a4] "+w"(a4), [a5] "+w"(a5),
                     [gp] "+r"(gp), [xp] "+r"(xp), [op] "+r"(op), [t0] "=&r"(t0), [t1] "=&r"(t1)
                   : [n] "r"(B), [gs] "r"(U * sizeof(float)), [os] "r"(I * sizeof(float)), [nr] "n"(nr),
                     [zero] "r"(zero)
                   : "q5", "lr", "p0", "memory");
    if ((t0 & (MT_FPSCR_IDC | MT_FPSCR_UFC)) || t1 != 0xffffu) {
        for (uint32_t r = 0; zero && r < nr; ++r) /* the reference's zeroed dW, then its sums */
            for (uint32_t c = skip; c < 4; ++c) o[(size_t)r * I + c] = 0.0f;
        block_scalar(g, 1, U, m + skip, I, B, o + skip, I, nr, 4 - skip);
        mt_mve_flags_clear();
        return;
    }
    if (skip) { /* only the lanes from skip on */
        const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip);
        vstrwq_p_f32(o, a0, p);
        if (nr >= 2) vstrwq_p_f32(o + I, a1, p);
        if (nr >= 4) vstrwq_p_f32(o + 2 * (size_t)I, a2, p), vstrwq_p_f32(o + 3 * (size_t)I, a3, p);
        if (nr >= 6) vstrwq_p_f32(o + 4 * (size_t)I, a4, p), vstrwq_p_f32(o + 5 * (size_t)I, a5, p);
        return;
    }
    vst1q_f32(o, a0);
    if (nr >= 2) vst1q_f32(o + I, a1);
    if (nr >= 4) vst1q_f32(o + 2 * (size_t)I, a2), vst1q_f32(o + 3 * (size_t)I, a3);
    if (nr >= 6) vst1q_f32(o + 4 * (size_t)I, a4), vst1q_f32(o + 5 * (size_t)I, a5);
}

/*
 * dx[b + j, c..c+3] += Σ_u dy[b + j, u]·W[u, c..c+3] for j < nr (up to four; the rows past
 * nr repeat the last one), each sum from 0 in ascending u, the lanes from skip on stored. Two
 * terms a turn: two VLDRW of W, each row's pair of dy one LDRD, per row and term a VFMA: 17
 * instructions for 32 MACs; an odd last term after the loop; the final += and the
 * FPSCR and NaN tests in C. (The whole blocks of four rows go through mt_mve_dx_rows_run; this
 * takes the last partial four columns and rows.)
 */
static inline __attribute__((always_inline)) void dx_block(const float *dy, const float *w, float *o, uint32_t nr,
                                                           uint32_t U, uint32_t I, uint32_t skip)
{
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    const float *g0 = dy, *g1 = nr > 1 ? g0 + U : g0, *g2 = nr > 2 ? g1 + U : g1, *g3 = nr > 3 ? g2 + U : g2;
    const float *wp = w;
    float *op = o;
    uint32_t t0, t1;
    __asm volatile("lsrs %[t0], %[U], #1\n\t"
                   "wls lr, %[t0], 2f\n"
                   "1:\n\t"
                   "vldrw.u32 q5, [%[wp]]\n\t"
                   "add %[wp], %[os]\n\t"
                   "vldrw.u32 q7, [%[wp]]\n\t"
                   "add %[wp], %[os]\n\t"
                   MT_NAMED_TWO_TERMS("q5", "q7")
                   "le lr, 1b\n"
                   "2:\n\t"
                   "lsls %[t0], %[U], #31\n\t"
                   "beq 3f\n\t"
                   "vldrw.u32 q5, [%[wp]]\n\t"
                   MT_NAMED_ONE_TERM("q5")
                   "3:\n"
                   : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [a3] "+w"(a3), [x0] "+r"(g0), [x1] "+r"(g1),
                     [x2] "+r"(g2), [x3] "+r"(g3), [wp] "+r"(wp), [op] "+r"(op), [t0] "=&r"(t0), [t1] "=&r"(t1)
                   : [U] "r"(U), [os] "r"(I * sizeof(float))
                   : "q5", "q7", "lr", "cc", "p0", "memory");
    /* the final += in C: the rows past nr have no out row to read */
    a0 = vaddq_f32(vld1q_f32(o), a0);
    if (nr > 1) a1 = vaddq_f32(vld1q_f32(o + I), a1);
    if (nr > 2) a2 = vaddq_f32(vld1q_f32(o + 2 * (size_t)I), a2);
    if (nr > 3) a3 = vaddq_f32(vld1q_f32(o + 3 * (size_t)I), a3);
    if (mt_mve_flushed(a0, a1, a2, a3) || mt_mve_nan(a0, a1, a2, a3)) {
        block_scalar(dy, U, 1, w + skip, I, U, o + skip, I, nr, 4 - skip);
        mt_mve_flags_clear();
        return;
    }
    const mve_pred16_t p = (mve_pred16_t)~vctp32q(skip); /* the lanes from skip on */
    vstrwq_p_f32(o, a0, p); /* rows past nr: their out row is another's or past dx, not stored */
    if (nr > 1) vstrwq_p_f32(o + I, a1, p);
    if (nr > 2) vstrwq_p_f32(o + 2 * (size_t)I, a2, p);
    if (nr > 3) vstrwq_p_f32(o + 3 * (size_t)I, a3, p);
}

/* dx[b, i] += Σ_u dy[b, u]·W[u, i]: four rows by four inputs, the whole blocks in
 * mt_mve_dx_rows_run (a block it leaves unstored: the reference's sums here, then on from the
 * next), the last partial four columns of each row overlapping the block before (columns as
 * in dw_rows), then a last partial four rows */
static __attribute__((noinline)) void dx_mve(const float *w, const float *dy, float *dx, uint32_t B, uint32_t I,
                                              uint32_t U)
{
    const uint32_t whole = I & ~3u, quads = B / 4; /* I >= 4 */
    if (quads) {
        mt_mve_dx_rows run = {dy, w, dx, 0, whole, quads, U, I};
        for (float *at; (at = mt_mve_dx_rows_run(&run)) != NULL;) {
            const size_t k = (size_t)(at - dx), b = k / I, c = k % I; /* b: a multiple of 4 */
            block_scalar(dy + b * U, U, 1, w + c, I, U, at, I, 4, 4);
            mt_mve_flags_clear();
            run.dy = dy + b * U, run.dx = dx + b * I, run.c0 = (uint32_t)c + 4, run.quads = quads - (uint32_t)b / 4;
        }
    }
    if (whole < I)
        for (uint32_t b = 0; b + 4 <= B; b += 4)
            dx_block(dy + (size_t)b * U, w + I - 4, dx + (size_t)b * I + I - 4, 4, U, I, whole + 4 - I);
    const uint32_t b = quads * 4;
    if (b < B)
        for (uint32_t c4 = 0; c4 < I; c4 += 4) {
            const uint32_t c = c4 + 4 > I ? I - 4 : c4;
            dx_block(dy + (size_t)b * U, w + c, dx + (size_t)b * I + c, B - b, U, I, c4 - c);
        }
}

/* dW rows u..u + nr - 1, four inputs at a time (I >= 4; a last partial four overlaps the one
 * before and stores only its new columns) */
static inline __attribute__((always_inline)) void dw_rows(const float *x, const float *dy, float *dw, uint32_t B,
                                                          uint32_t I, uint32_t U, const uint32_t nr, int zero)
{
    for (uint32_t c4 = 0; c4 < I; c4 += 4) {
        const uint32_t c = c4 + 4 > I ? I - 4 : c4;
        dw_block(dy, x + c, dw + c, B, U, I, nr, c4 - c, zero);
    }
}

/* dW[u, i] += Σ_b dy[b, u]·x[b, i]: groups of six units, their whole blocks of four columns
 * in mt_mve_dw_rows_run (a block it leaves unstored: the reference's sums here, then on from
 * the next), their last partial four columns in dw_block; then 4, 2, 1 units (zero: as if dW
 * were zeroed first, without reading it) */
static __attribute__((noinline)) void dw_mve(const float *x, const float *dy, float *dw, uint32_t B, uint32_t I,
                                              uint32_t U, int zero)
{
    const uint32_t whole = I & ~3u, groups = U / 6; /* I >= 4 */
    if (groups) {
        mt_mve_dw_rows run = {dy, x, dw, 0, whole, groups, B, U, I, (uint32_t)(zero != 0)};
        for (float *at; (at = mt_mve_dw_rows_run(&run)) != NULL;) {
            const size_t k = (size_t)(at - dw), u = k / I, c = k % I; /* u: a multiple of 6 */
            for (uint32_t r = 0; zero && r < 6; ++r) /* the reference's zeroed dW, then its sums */
                for (uint32_t j = 0; j < 4; ++j) at[(size_t)r * I + j] = 0.0f;
            block_scalar(dy + u, 1, U, x + c, I, B, at, I, 6, 4);
            mt_mve_flags_clear();
            run.dy = dy + u, run.dw = dw + u * I, run.c0 = (uint32_t)c + 4, run.groups = groups - (uint32_t)u / 6;
        }
        if (whole < I)
            for (uint32_t u = 0; u + 6 <= U; u += 6)
                for (uint32_t j = 0; j < 6; j += 2) /* two units a block: no six-unit copy of dw_block */
                    dw_block(dy + u + j, x + I - 4, dw + (u + j) * (size_t)I + I - 4, B, U, I, 2, whole + 4 - I, zero);
    }
    uint32_t u = groups * 6;
    if (u + 4 <= U) dw_rows(x, dy + u, dw + (size_t)u * I, B, I, U, 4, zero), u += 4;
    if (u + 2 <= U) dw_rows(x, dy + u, dw + (size_t)u * I, B, I, U, 2, zero), u += 2;
    if (u < U) dw_rows(x, dy + u, dw + (size_t)u * I, B, I, U, 1, zero);
}

/* dbias[u] += Σ_b dy[b, u], each sum from 0 in ascending b: lanes across four units */
static void bias_mve(const float *dy, float *dbias, uint32_t B, uint32_t U)
{
    for (uint32_t u = 0; u < U; u += 4) {
        const mve_pred16_t p = vctp32q(U - u);
        float32x4_t acc = vdupq_n_f32(0.0f);
        mt_mve_flags_clear();
        for (uint32_t b = 0; b < B; ++b) acc = vaddq_f32(acc, vldrwq_z_f32(dy + (size_t)b * U + u, p));
        acc = vaddq_f32(vldrwq_z_f32(dbias + u, p), acc);
        if (mt_mve_flushed(acc, acc, acc, acc) || mt_mve_nan1(acc)) {
            for (uint32_t j = u; j < U && j < u + 4; ++j) {
                float a = 0.0f;
                for (uint32_t b = 0; b < B; ++b) a += dy[(size_t)b * U + j];
                dbias[j] += a;
            }
            continue;
        }
        vstrwq_p_f32(dbias + u, acc, p);
    }
}

void mt_op_dense_f32_backward_mve(const float *x, const float *w, const float *dy, float *dx, float *dw,
                                  float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero)
{
    if (I < 4) { /* too narrow for a vector of four inputs: the reference's sums */
        if (dw && dw_zero) memset(dw, 0, (size_t)U * I * sizeof(float));
        if (dx) block_scalar(dy, U, 1, w, I, U, dx, I, B, I);
        if (dw) block_scalar(dy, 1, U, x, I, B, dw, I, U, I);
    } else {
        mt_mve_flags_clear(); /* and again after a block that took the scalar path */
        if (dx) dx_mve(w, dy, dx, B, I, U);
        if (dw) dw_mve(x, dy, dw, B, I, U, dw_zero);
    }
    if (dbias) bias_mve(dy, dbias, B, U);
}
#else
typedef int mt_dense_mve_unused; /* ISO C: a translation unit is not empty */
#endif
