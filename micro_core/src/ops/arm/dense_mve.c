/*
 * Helium siblings of the Dense kernels (ops/dense.c); ops/arm/mve.h says how they keep the
 * reference's bits. Glossary as in ops/ops.h.
 */
#include "ops/arm/mve.h"

#if MT_MVE_KERNELS
/* these loops are the step's cost: optimise them for speed even in -Os firmware */
#pragma GCC optimize("O2")
#include "ops/arm/mve_flags.h"
#include "ops/fast/fast.h"
#include "ops/ops.h"

/*
 * y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u]: lanes across four units, whose W[u..u+3, i] one
 * gather load reads (offsets 0, I, 2I, 3I); four rows share it. Any flushed subnormal sends
 * the whole op to the portable kernel, which overwrites y.
 */
void mt_op_dense_f32_forward_mve(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                 uint32_t I, uint32_t U)
{
    const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0u, 1), I);
    mt_mve_flags_clear();
    for (uint32_t b = 0; b < B; b += 4) {
        const uint32_t nb = B - b < 4 ? B - b : 4;
        const float *x0 = x + (size_t)b * I;
        const float *x1 = nb > 1 ? x0 + I : x0, *x2 = nb > 2 ? x0 + 2 * (size_t)I : x0;
        const float *x3 = nb > 3 ? x0 + 3 * (size_t)I : x0;
        for (uint32_t u = 0; u < U; u += 4) {
            const mve_pred16_t p = vctp32q(U - u);
            const uint32x4_t offs = vpselq_u32(rows, vdupq_n_u32(0u), p); /* lanes past U reread row u */
            const float *wu = w + (size_t)u * I;
            float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
            mt_mve_dot4x4(x0, x1, x2, x3, wu, offs, I, &a0, &a1, &a2, &a3);
            if (bias) {
                const float32x4_t bv = vldrwq_z_f32(bias + u, p);
                a0 = vaddq_f32(a0, bv), a1 = vaddq_f32(a1, bv), a2 = vaddq_f32(a2, bv), a3 = vaddq_f32(a3, bv);
            }
            float *yb = y + (size_t)b * U + u;
            vstrwq_p_f32(yb, a0, p);
            if (nb > 1) vstrwq_p_f32(yb + U, a1, p);
            if (nb > 2) vstrwq_p_f32(yb + 2 * (size_t)U, a2, p);
            if (nb > 3) vstrwq_p_f32(yb + 3 * (size_t)U, a3, p);
        }
    }
    const float32x4_t none = vdupq_n_f32(0.0f); /* every result is stored: the clobber orders them */
    if (mt_mve_flushed(none, none, none, none)) mt_op_dense_f32_forward(x, w, bias, y, B, I, U); /* the reference */
}

/* The scalar reference sums of one block: out[r·os + c] += Σ_k g[r·gs + k·gk]·m[k·ms + c] */
static void block_scalar(const float *g, size_t gs, size_t gk, const float *m, size_t ms, uint32_t K, float *out,
                         size_t os, uint32_t R, uint32_t C)
{
    for (uint32_t r = 0; r < R; ++r)
        for (uint32_t c = 0; c < C; ++c) {
            float acc = 0.0f;
            for (uint32_t k = 0; k < K; ++k) acc += g[r * gs + k * gk] * m[k * ms + c];
            out[r * os + c] += acc;
        }
}

/*
 * out[R x C] += Σ_k g[r·gs + k·gk]·m[k·ms + c], each sum from 0 in ascending k: blocks of
 * 2 rows x 8 columns (lanes across columns, m rows contiguous), the final += in registers,
 * then FPSCR decides between the vector result and the block's scalar sums.
 *   dx: rows b, g = dy (gs = U, gk = 1), m = W (ms = I), K = U
 *   dW: rows u, g = dy (gs = 1, gk = U), m = x (ms = I), K = B
 */
static void grad_mve(const float *g, size_t gs, size_t gk, const float *m, size_t ms, uint32_t K, float *out,
                     size_t os, uint32_t R, uint32_t C)
{
    mt_mve_flags_clear(); /* and again after a block that took the scalar path */
    for (uint32_t r = 0; r < R; r += 2) {
        const uint32_t nr = R - r < 2 ? R - r : 2;
        const float *g0 = g + r * gs, *g1 = nr > 1 ? g0 + gs : g0;
        for (uint32_t c = 0; c < C; c += 8) {
            const uint32_t nc = C - c < 8 ? C - c : 8;
            const mve_pred16_t p0 = vctp32q(nc), p1 = vctp32q(nc > 4 ? nc - 4 : 0);
            float32x4_t a00 = vdupq_n_f32(0.0f), a01 = a00, a10 = a00, a11 = a00;
            const float *mc = m + c;
            if (nc == 8 && nr == 2 && K > 0) {
                /* the whole block in a low-overhead loop (the compiler spilled registers here):
                 * per term two VLDRW of m, the two g values (dx: two rows, post-incremented;
                 * dW: side by side, one LDRD), four VMUL into a temporary and VADD */
                const uint32_t mstep = (uint32_t)(ms * sizeof(float)), gstep = (uint32_t)(gk * sizeof(float));
                const float *ga = g0, *gb = g1;
                uint32_t t0, t1;
                if (gs == 1)
                    __asm volatile(
                        "dls lr, %[n]\n"
                        "1:\n\t"
                        "vldrw.u32 q5, [%[mc]]\n\t"
                        "vldrw.u32 q7, [%[mc], #16]\n\t"
                        "add %[mc], %[mstep]\n\t"
                        "ldrd %[t0], %[t1], [%[ga]]\n\t"
                        "add %[ga], %[gstep]\n\t"
                        "vmul.f32 q6, q5, %[t0]\n\t"
                        "vadd.f32 %q[a00], %q[a00], q6\n\t"
                        "vmul.f32 q6, q7, %[t0]\n\t"
                        "vadd.f32 %q[a01], %q[a01], q6\n\t"
                        "vmul.f32 q6, q5, %[t1]\n\t"
                        "vadd.f32 %q[a10], %q[a10], q6\n\t"
                        "vmul.f32 q6, q7, %[t1]\n\t"
                        "vadd.f32 %q[a11], %q[a11], q6\n\t"
                        "le lr, 1b\n"
                        : [a00] "+w"(a00), [a01] "+w"(a01), [a10] "+w"(a10), [a11] "+w"(a11), [mc] "+r"(mc),
                          [ga] "+r"(ga), [t0] "=&r"(t0), [t1] "=&r"(t1)
                        : [n] "r"(K), [mstep] "r"(mstep), [gstep] "r"(gstep)
                        : "q5", "q6", "q7", "lr", "memory");
                else
                    __asm volatile(
                        "dls lr, %[n]\n"
                        "1:\n\t"
                        "vldrw.u32 q5, [%[mc]]\n\t"
                        "vldrw.u32 q7, [%[mc], #16]\n\t"
                        "add %[mc], %[mstep]\n\t"
                        "ldr %[t0], [%[ga]], #4\n\t"
                        "ldr %[t1], [%[gb]], #4\n\t"
                        "vmul.f32 q6, q5, %[t0]\n\t"
                        "vadd.f32 %q[a00], %q[a00], q6\n\t"
                        "vmul.f32 q6, q7, %[t0]\n\t"
                        "vadd.f32 %q[a01], %q[a01], q6\n\t"
                        "vmul.f32 q6, q5, %[t1]\n\t"
                        "vadd.f32 %q[a10], %q[a10], q6\n\t"
                        "vmul.f32 q6, q7, %[t1]\n\t"
                        "vadd.f32 %q[a11], %q[a11], q6\n\t"
                        "le lr, 1b\n"
                        : [a00] "+w"(a00), [a01] "+w"(a01), [a10] "+w"(a10), [a11] "+w"(a11), [mc] "+r"(mc),
                          [ga] "+r"(ga), [gb] "+r"(gb), [t0] "=&r"(t0), [t1] "=&r"(t1)
                        : [n] "r"(K), [mstep] "r"(mstep)
                        : "q5", "q6", "q7", "lr", "memory");
            } else {
                for (uint32_t k = 0; k < K; ++k, mc += ms) {
                    const float32x4_t v0 = vldrwq_z_f32(mc, p0), v1 = vldrwq_z_f32(mc + 4, p1);
                    const float d0 = g0[k * gk], d1 = g1[k * gk];
                    a00 = vaddq_f32(a00, vmulq_n_f32(v0, d0));
                    a01 = vaddq_f32(a01, vmulq_n_f32(v1, d0));
                    a10 = vaddq_f32(a10, vmulq_n_f32(v0, d1));
                    a11 = vaddq_f32(a11, vmulq_n_f32(v1, d1));
                }
            }
            float *o0 = out + r * os + c, *o1 = o0 + os;
            if (nc == 8 && nr == 2) { /* a whole block: plain loads and stores */
                a00 = vaddq_f32(vld1q_f32(o0), a00);
                a01 = vaddq_f32(vld1q_f32(o0 + 4), a01);
                a10 = vaddq_f32(vld1q_f32(o1), a10);
                a11 = vaddq_f32(vld1q_f32(o1 + 4), a11);
                if (mt_mve_flushed(a00, a01, a10, a11)) {
                    block_scalar(g0, gs, gk, m + c, ms, K, o0, os, nr, nc);
                    mt_mve_flags_clear();
                    continue;
                }
                vst1q_f32(o0, a00);
                vst1q_f32(o0 + 4, a01);
                vst1q_f32(o1, a10);
                vst1q_f32(o1 + 4, a11);
                continue;
            }
            a00 = vaddq_f32(vldrwq_z_f32(o0, p0), a00);
            a01 = vaddq_f32(vldrwq_z_f32(o0 + 4, p1), a01);
            if (nr > 1) {
                a10 = vaddq_f32(vldrwq_z_f32(o1, p0), a10);
                a11 = vaddq_f32(vldrwq_z_f32(o1 + 4, p1), a11);
            }
            if (mt_mve_flushed(a00, a01, a10, a11)) {
                block_scalar(g0, gs, gk, m + c, ms, K, o0, os, nr, nc);
                mt_mve_flags_clear();
                continue;
            }
            vstrwq_p_f32(o0, a00, p0);
            vstrwq_p_f32(o0 + 4, a01, p1);
            if (nr > 1) {
                vstrwq_p_f32(o1, a10, p0);
                vstrwq_p_f32(o1 + 4, a11, p1);
            }
        }
    }
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
        if (mt_mve_flushed(acc, acc, acc, acc)) {
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
                                  float *dbias, uint32_t B, uint32_t I, uint32_t U)
{
    if (dx) grad_mve(dy, U, 1, w, I, U, dx, I, B, I);
    if (dw) grad_mve(dy, 1, U, x, I, B, dw, I, U, I);
    if (dbias) bias_mve(dy, dbias, B, U);
}
#else
typedef int mt_dense_mve_unused; /* ISO C: a translation unit is not empty */
#endif
