/*
 * AVX-512 siblings of the Dense kernels (ops/x86/x86.h says how they keep the reference's
 * bits; the AVX2 build takes the native 8-lane ones of dense_avx2.h). Glossary as in ops/ops.h.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/x86/avx512.h"

#ifdef MT_X86_SHIM_AVX2 /* the AVX2 build's Dense kernels are native 8-lane ones */
#include "ops/x86/dense_avx2.h"
#else

/*
 * y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u], each sum from 0 by ascending i, the bias last.
 * Sixteen units share a vector; a 16 x 16 tile of W (16 units, 16 inputs) is transposed in
 * registers so that t[k] holds W[u0..u0+15, i0+k], and every row b adds x[b,i0+k]·t[k] in
 * turn. Two such tiles side by side (32 units) share each broadcast of x[b,i0+k], and two
 * tiles deep (32 inputs) between visits to y: a sum's partial value waits in y between blocks
 * of inputs (a float stored and reloaded is the same float), and the deeper block halves
 * that traffic. Eight rows at a time keep sixteen addition chains in flight.
 */
#define DENSE_ROWS 8
#define DENSE_TILES 2

/* rows (<= DENSE_ROWS) x tiles (1 or 2) sums of kn terms: acc[r][j] over units u0 + 16j..,
 * with t[32·j + k] lanes u = W[u0 + 16j + u, i0 + k] */
MT_AVX512_INLINE void dense_rows(const float *x, const __m512 *t, uint32_t kn, float *y, uint32_t rows,
                                 uint32_t tiles, uint32_t I, uint32_t U, const __mmask16 *um, int first,
                                 const __m512 *bias)
{
    __m512 acc[DENSE_ROWS][2];
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t j = 0; j < tiles; ++j)
            acc[r][j] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(um[j], y + (size_t)r * U + 16 * j);
    for (uint32_t k = 0; k < kn; ++k)
        for (uint32_t r = 0; r < rows; ++r) {
            const __m512 xv = _mm512_set1_ps(x[(size_t)r * I + k]);
            for (uint32_t j = 0; j < tiles; ++j) acc[r][j] = mt_mac(acc[r][j], t[32 * j + k], xv);
        }
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t j = 0; j < tiles; ++j)
            _mm512_mask_storeu_ps(y + (size_t)r * U + 16 * j, um[j], bias ? _mm512_add_ps(acc[r][j], bias[j]) : acc[r][j]);
}

MT_AVX512 void MT_X86_NAME(mt_op_dense_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                              uint32_t B, uint32_t I, uint32_t U)
{
    for (uint32_t u0 = 0; u0 < U; u0 += 16 * DENSE_TILES) {
        const uint32_t un = mt_min_u32(16 * DENSE_TILES, U - u0), tiles = un > 16 ? 2 : 1;
        const __mmask16 um[2] = {mt_lanes(mt_min_u32(16, un)), mt_lanes(un > 16 ? un - 16 : 0)};
        __m512 bv[2];
        for (uint32_t j = 0; j < 2; ++j)
            bv[j] = bias ? _mm512_maskz_loadu_ps(um[j], bias + u0 + 16 * j) : _mm512_setzero_ps();
        for (uint32_t i0 = 0; i0 < I; i0 += 32) {
            const uint32_t kn = mt_min_u32(32, I - i0);
            __m512 t[64]; /* t[32·j + k] lanes u: W[u0 + 16j + u, i0 + k] */
            for (uint32_t h = 0; h < 2; ++h) {
                const uint32_t hn = kn > 16 * h ? mt_min_u32(16, kn - 16 * h) : 0;
                const __mmask16 im = mt_lanes(hn);
                for (uint32_t j = 0; j < tiles; ++j) {
                    __m512 *tt = t + 32 * j + 16 * h;
                    for (uint32_t r = 0; r < 16; ++r)
                        tt[r] = 16 * j + r < un && hn ? _mm512_maskz_loadu_ps(im, w + (size_t)(u0 + 16 * j + r) * I + i0 + 16 * h)
                                                  : _mm512_setzero_ps();
                    if (hn) mt_transpose16(tt);
                }
            }
            const int first = i0 == 0;
            const __m512 *last_bias = (i0 + kn == I && bias) ? bv : NULL;
            float *yu = y + u0;
            uint32_t b = 0;
            if (kn == 32 && tiles == 2) {
                for (; b + DENSE_ROWS <= B; b += DENSE_ROWS)
                    dense_rows(x + (size_t)b * I + i0, t, 32, yu + (size_t)b * U, DENSE_ROWS, 2, I, U, um, first,
                               last_bias);
            } else if (kn == 32) {
                for (; b + DENSE_ROWS <= B; b += DENSE_ROWS)
                    dense_rows(x + (size_t)b * I + i0, t, 32, yu + (size_t)b * U, DENSE_ROWS, 1, I, U, um, first,
                               last_bias);
            }
            for (; b < B; ++b)
                dense_rows(x + (size_t)b * I + i0, t, kn, yu + (size_t)b * U, 1, tiles, I, U, um, first, last_bias);
        }
    }
}

/*
 * dx[b,i] += Σ_u dy[b,u]·W[u,i]   (lanes: 16 consecutive i; 4 rows x 4 vectors of i)
 * dW[u,i] += Σ_b dy[b,u]·x[b,i]   (lanes: 16 consecutive i; 4 units x 4 vectors of i)
 * Each sum from 0 in ascending u (b), then added to the gradient, as the reference does.
 */
#define BLOCK_ROWS 8 /* at most; 4 rows of 4 or 3 vectors, 8 rows of 2 or 1 */
#define BLOCK_VECS 4
#define ROWS_OF_2 8
#define ROWS_OF_1 8

/* out[r, i0..i0+16·nv) += Σ_j g[r·gs + j·gj] · m[j·I + i0..], for j < J, r < rows; rows and nv
 * are constants where it is inlined, so the accumulators stay in registers */
MT_AVX512_INLINE void gemm_block(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                 uint32_t rows, uint32_t I, uint32_t i0, uint32_t nv, int zero)
{
    __m512 acc[BLOCK_ROWS][BLOCK_VECS];
    __mmask16 mask[BLOCK_VECS];
    for (uint32_t v = 0; v < nv; ++v) {
        mask[v] = mt_lanes(I - i0 - 16 * v);
        for (uint32_t r = 0; r < rows; ++r) acc[r][v] = _mm512_setzero_ps();
    }
    for (uint32_t j = 0; j < J; ++j) {
        __m512 mv[BLOCK_VECS];
        for (uint32_t v = 0; v < nv; ++v) mv[v] = _mm512_maskz_loadu_ps(mask[v], m + (size_t)j * I + i0 + 16 * v);
        for (uint32_t r = 0; r < rows; ++r) {
            const __m512 gv = _mm512_set1_ps(g[r * gs + j * gj]);
            for (uint32_t v = 0; v < nv; ++v) acc[r][v] = mt_mac(acc[r][v], gv, mv[v]);
        }
    }
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t v = 0; v < nv; ++v) {
            float *o = out + (size_t)r * I + i0 + 16 * v;
            const __m512 before = zero ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[v], o);
            _mm512_mask_storeu_ps(o, mask[v], _mm512_add_ps(before, acc[r][v])); /* zero: 0 + Σ, a zeroed dW's bits */
        }
}

/* rows r.. of one gradient, `rows` at a time (then one by one), for a column block of nv
 * vectors; rows and nv constants where it is inlined */
MT_AVX512_INLINE void gemm_row_blocks(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                      uint32_t R, uint32_t I, uint32_t i0, uint32_t rows, uint32_t nv, int zero)
{
    uint32_t r = 0;
    for (; r + rows <= R; r += rows) gemm_block(g + r * gs, gs, gj, m, J, out + (size_t)r * I, rows, I, i0, nv, zero);
    for (; r < R; ++r) gemm_block(g + r * gs, gs, gj, m, J, out + (size_t)r * I, 1, I, i0, nv, zero);
}

/* the rows of one gradient in column blocks of 64 (then 48, 32, 16): 16 sums in flight,
 * or 12 (each sum's additions are a chain, and a short J leaves only the chains to hide) */
MT_AVX512_INLINE void gemm_rows(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                uint32_t R, uint32_t I, int zero)
{
    for (uint32_t i0 = 0; i0 < I; i0 += 16 * BLOCK_VECS) {
        const uint32_t nv = mt_min_u32(BLOCK_VECS, (I - i0 + 15) / 16);
        if (nv == 4) gemm_row_blocks(g, gs, gj, m, J, out, R, I, i0, 4, 4, zero);
        else if (nv == 3) gemm_row_blocks(g, gs, gj, m, J, out, R, I, i0, 4, 3, zero);
        else if (nv == 2) gemm_row_blocks(g, gs, gj, m, J, out, R, I, i0, ROWS_OF_2, 2, zero);
        else gemm_row_blocks(g, gs, gj, m, J, out, R, I, i0, ROWS_OF_1, 1, zero);
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_dense_f32_backward)(const float *x, const float *w, const float *dy, float *dx,
                                               float *dw, float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero)
{
    if (dx) gemm_rows(dy, U, 1, w, U, dx, B, I, 0);
    if (dw) gemm_rows(dy, 1, U, x, B, dw, U, I, dw_zero); /* dw_zero: as if dW were zeroed first */
    if (dbias) MT_X86_NAME(mt_op_bias_f32_backward)(dy, dbias, B, U);
}
#endif /* !MT_X86_SHIM_AVX2 */

#else
typedef int mt_dense_x86_unused; /* ISO C: a translation unit is not empty */
#endif
