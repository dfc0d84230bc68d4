/*
 * AVX-512 siblings of the Dense kernels (ops/x86/x86.h says how they keep the reference's
 * bits; the AVX2 build takes the native 8-lane ones of dense_avx2_native.h). Glossary as in ops/ops.h.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include "ops/x86/avx512.h"

#ifdef MT_X86_SHIM_AVX2 /* the AVX2 build's Dense kernels are native 8-lane ones */
#include "ops/x86/dense_avx2_native.h"
#else

/*
 * y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u], each sum from 0 by ascending i, the bias last.
 * Sixteen units share a vector; a 16 x 16 tile of W (16 units, 16 inputs) is transposed in
 * registers so that t[k] holds W[u0..u0+15, i0+k], and every row b adds x[b,i0+k]·t[k] in
 * turn. Two such tiles side by side (32 units) share each broadcast of x[b,i0+k], and four
 * tiles deep (64 inputs) between visits to y: a sum's partial value waits in y between blocks
 * of inputs (a float stored and reloaded is the same float), and the deeper block cuts that
 * traffic. Eight rows at a time keep sixteen addition chains in flight, in the last, shorter
 * block of inputs too (it ran one row at a time, a latency-bound chain per sum). 64 deep
 * rather than 32: MLP 784-128-10's forward 67.5 -> 63.6 us (best of 2000 in C, runs
 * interleaved; 128 deep was no faster than 64).
 */
#define DENSE_ROWS 8
#define DENSE_TILES 2
#define DENSE_DEPTH 64 /* inputs a block of W holds */

/* rows (<= DENSE_ROWS) x tiles (1 or 2) sums of kn terms: acc[r][j] over units u0 + 16j..,
 * with t[DENSE_DEPTH·j + k] lanes u = W[u0 + 16j + u, i0 + k] */
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
            for (uint32_t j = 0; j < tiles; ++j) acc[r][j] = mt_mac(acc[r][j], t[DENSE_DEPTH * j + k], xv);
        }
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t j = 0; j < tiles; ++j)
            _mm512_mask_storeu_ps(y + (size_t)r * U + 16 * j, um[j], bias ? _mm512_add_ps(acc[r][j], bias[j]) : acc[r][j]);
}

MT_AVX512 void MT_X86_NAME(mt_op_dense_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                                    uint32_t B, uint32_t I, uint32_t U, uint32_t act)
{
    for (uint32_t b = 0; I == 0 && b < B; ++b) /* no term: the reference's +0 + bias (the blocks below store none) */
        for (uint32_t u = 0; u < U; ++u) y[(size_t)b * U + u] = bias ? 0.0f + bias[u] : 0.0f;
    for (uint32_t u0 = 0; u0 < U; u0 += 16 * DENSE_TILES) {
        const uint32_t un = mt_min_u32(16 * DENSE_TILES, U - u0), tiles = un > 16 ? 2 : 1;
        const __mmask16 um[2] = {mt_lanes(mt_min_u32(16, un)), mt_lanes(un > 16 ? un - 16 : 0)};
        __m512 bv[2];
        for (uint32_t j = 0; j < 2; ++j)
            bv[j] = bias ? _mm512_maskz_loadu_ps(um[j], bias + u0 + 16 * j) : _mm512_setzero_ps();
        for (uint32_t i0 = 0; i0 < I; i0 += DENSE_DEPTH) {
            const uint32_t kn = mt_min_u32(DENSE_DEPTH, I - i0);
            __m512 t[2 * DENSE_DEPTH]; /* t[DENSE_DEPTH·j + k] lanes u: W[u0 + 16j + u, i0 + k] */
            for (uint32_t h = 0; 16 * h < kn; ++h) { /* the tiles of the kn inputs (dense_rows reads no further) */
                const uint32_t hn = mt_min_u32(16, kn - 16 * h);
                const __mmask16 im = mt_lanes(hn);
                for (uint32_t j = 0; j < tiles; ++j) {
                    __m512 *tt = t + DENSE_DEPTH * j + 16 * h;
                    for (uint32_t r = 0; r < 16; ++r)
                        tt[r] = 16 * j + r < un ? _mm512_maskz_loadu_ps(im, w + (size_t)(u0 + 16 * j + r) * I + i0 + 16 * h)
                                                : _mm512_setzero_ps();
                    mt_transpose16(tt);
                }
            }
            const int first = i0 == 0;
            const __m512 *last_bias = (i0 + kn == I && bias) ? bv : NULL;
            float *yu = y + u0;
            uint32_t b = 0;
            if (tiles == 2) {
                for (; b + DENSE_ROWS <= B; b += DENSE_ROWS)
                    dense_rows(x + (size_t)b * I + i0, t, kn, yu + (size_t)b * U, DENSE_ROWS, 2, I, U, um, first,
                               last_bias);
            } else {
                for (; b + DENSE_ROWS <= B; b += DENSE_ROWS)
                    dense_rows(x + (size_t)b * I + i0, t, kn, yu + (size_t)b * U, DENSE_ROWS, 1, I, U, um, first,
                               last_bias);
            }
            for (; b < B; ++b)
                dense_rows(x + (size_t)b * I + i0, t, kn, yu + (size_t)b * U, 1, tiles, I, U, um, first, last_bias);
        }
    }
    MT_X86_NAME(mt_fused_activation_forward)(act, y, (size_t)B * U); /* then the fused activation */
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

/* out[r, i0..i0+16·nv) += Σ_j g[r·gs + j·gj] · m[j·I + i0..], for j < J, r < rows, the columns
 * below W (<= I, the row length of m and out); rows and nv are constants where it is inlined,
 * so the accumulators stay in registers */
MT_AVX512_INLINE void gemm_block(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                 uint32_t rows, uint32_t I, uint32_t W, uint32_t i0, uint32_t nv, int zero)
{
    __m512 acc[BLOCK_ROWS][BLOCK_VECS];
    __mmask16 mask[BLOCK_VECS];
    for (uint32_t v = 0; v < nv; ++v) {
        mask[v] = mt_lanes(W - i0 - 16 * v);
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
                                      uint32_t R, uint32_t I, uint32_t W, uint32_t i0, uint32_t rows, uint32_t nv,
                                      int zero)
{
    uint32_t r = 0;
    for (; r + rows <= R; r += rows)
        gemm_block(g + r * gs, gs, gj, m, J, out + (size_t)r * I, rows, I, W, i0, nv, zero);
    for (; r < R; ++r) gemm_block(g + r * gs, gs, gj, m, J, out + (size_t)r * I, 1, I, W, i0, nv, zero);
}

/* the rows of one gradient, columns below W of rows of I, in column blocks of 64 (then 48,
 * 32, 16): 16 sums in flight, or 12 (each sum's additions are a chain, and a short J leaves
 * only the chains to hide) */
MT_AVX512_INLINE void gemm_columns(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                   uint32_t R, uint32_t I, uint32_t W, int zero)
{
    for (uint32_t i0 = 0; i0 < W; i0 += 16 * BLOCK_VECS) {
        const uint32_t nv = mt_min_u32(BLOCK_VECS, (W - i0 + 15) / 16);
        if (nv == 4) gemm_row_blocks(g, gs, gj, m, J, out, R, I, W, i0, 4, 4, zero);
        else if (nv == 3) gemm_row_blocks(g, gs, gj, m, J, out, R, I, W, i0, 4, 3, zero);
        else if (nv == 2) gemm_row_blocks(g, gs, gj, m, J, out, R, I, W, i0, ROWS_OF_2, 2, zero);
        else gemm_row_blocks(g, gs, gj, m, J, out, R, I, W, i0, ROWS_OF_1, 1, zero);
    }
}

MT_AVX512_INLINE void gemm_rows(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                uint32_t R, uint32_t I, int zero)
{
    gemm_columns(g, gs, gj, m, J, out, R, I, I, zero);
}

/* ---- Gradients behind a ReLU: the terms whose g is ±0 skipped ----
 * The AVX2 build's argument (dense_avx2_native.h) on 16 lanes: a term g·m with g = ±0 and m finite is
 * ±0, and adding it leaves a sum's bits unless the sum is -0 (mt_resum_negative_zeros, which
 * redoes those), so the sum over the terms whose g is not ±0 (NaN included), in ascending
 * order, is the reference's. With at most 64 terms a row's
 * terms that count are the set bits of a 64-bit mask, and a block is one row's 256 sums (16
 * vectors in flight): a broadcast, 16 loads and 32 operations a term that counts, where the
 * dense blocks spend the same 32 operations on every term, counting or not. Skipping needs
 * every m row a skipped term reads to be finite (0·inf is NaN), else the dense blocks run. */
#define SPARSE_VECS 16  /* a sparse block's vectors: one row's 256 sums */
#define SPARSE_ROWS 64  /* rows whose masks one pass keeps on the stack */
#define SPARSE_TERMS 64 /* terms a mask holds */

/* masks[r] bit j: g[r·gs + j·gj] is not ±0 (NaN counts), for rn rows and J (<= 64) terms;
 * gj == 1 (a row's terms side by side: the input gradient's dy rows) or gs == 1 (rows side
 * by side: the weight gradient's dy columns, 16 rows' bits of term j at a time, spread to the
 * 64-bit lanes of two vectors) */
MT_AVX512_INLINE void term_masks(const float *g, size_t gs, size_t gj, uint32_t J, uint32_t rn, uint64_t *masks)
{
    const __m512 zero = _mm512_setzero_ps();
    if (gj == 1) {
        for (uint32_t r = 0; r < rn; ++r) {
            uint64_t mask = 0;
            for (uint32_t j = 0; j < J; j += 16) {
                const __mmask16 lanes = mt_lanes(J - j);
                const __m512 v = _mm512_maskz_loadu_ps(lanes, g + r * gs + j);
                mask |= (uint64_t)(_mm512_cmp_ps_mask(v, zero, _CMP_NEQ_UQ) & lanes) << j;
            }
            masks[r] = mask;
        }
        return;
    }
    for (uint32_t r = 0; r < rn; r += 16) {
        const __mmask16 lanes = mt_lanes(rn - r);
        __m512i low = _mm512_setzero_si512(), high = low; /* rows r..r+7, r+8..r+15 */
        for (uint32_t j = 0; j < J; ++j) {
            const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(lanes, g + r + (size_t)j * gj), zero,
                                                     _CMP_NEQ_UQ) & lanes;
            const __m512i bit = _mm512_set1_epi64((long long)(1ull << j));
            low = _mm512_mask_or_epi64(low, (__mmask8)(hit & 0xFFu), low, bit);
            high = _mm512_mask_or_epi64(high, (__mmask8)(hit >> 8), high, bit);
        }
        uint64_t sixteen[16];
        _mm512_storeu_si512(sixteen, low), _mm512_storeu_si512(sixteen + 8, high);
        for (uint32_t k = 0; k < 16 && r + k < rn; ++k) masks[r + k] = sixteen[k];
    }
}

/* out[i0 + 16v + lane] = (zero ? 0 : out[..]) + Σ_{j in mask, ascending} g[j·gj]·m[j·I + 16v + lane]
 * for the 256 columns at m and out */
static MT_AVX512 __attribute__((noinline)) void sparse_block(const float *g, size_t gj, uint64_t mask, const float *m,
                                                             uint32_t I, uint32_t J, float *out, int zero)
{ /* not inlined, and sixteen named sums (dense_avx2_native.h's d8_sparse_block says why) */
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0;
    for (; mask; mask &= mask - 1) {
        const uint32_t j = (uint32_t)__builtin_ctzll(mask);
        const __m512 gv = _mm512_set1_ps(g[(size_t)j * gj]);
        const float *mj = m + (size_t)j * I;
#define SPARSE_TERM(a, v) a = _mm512_fmadd_ps(gv, _mm512_loadu_ps(mj + 16 * (v)), a)
        SPARSE_TERM(a0, 0), SPARSE_TERM(a1, 1), SPARSE_TERM(a2, 2), SPARSE_TERM(a3, 3), SPARSE_TERM(a4, 4);
        SPARSE_TERM(a5, 5), SPARSE_TERM(a6, 6), SPARSE_TERM(a7, 7), SPARSE_TERM(a8, 8), SPARSE_TERM(a9, 9);
        SPARSE_TERM(a10, 10), SPARSE_TERM(a11, 11), SPARSE_TERM(a12, 12), SPARSE_TERM(a13, 13);
        SPARSE_TERM(a14, 14), SPARSE_TERM(a15, 15);
#undef SPARSE_TERM
    }
    __m512 sums[SPARSE_VECS] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
    for (uint32_t v = 0; v < SPARSE_VECS; ++v) {
        const __mmask16 negative_zeros = mt_negative_zero_lanes(sums[v]);
        if (__builtin_expect(negative_zeros != 0, 0)) { /* mt_resum_negative_zeros says why */
            float t[16];
            _mm512_storeu_ps(t, sums[v]);
            mt_resum_negative_zeros(t, negative_zeros, g, gj, m + 16 * v, I, J);
            sums[v] = _mm512_loadu_ps(t);
        }
        const __m512 before = zero ? _mm512_setzero_ps() : _mm512_loadu_ps(out + 16 * v);
        _mm512_storeu_ps(out + 16 * v, _mm512_add_ps(before, sums[v]));
    }
}

/* sparse_block's sums for nv (<= 4, a constant where inlined) vectors of columns at m and
 * out, the lanes of the last below `last` */
MT_AVX512_INLINE void sparse_columns(const float *g, size_t gj, uint64_t mask, const float *m, uint32_t I, uint32_t J,
                                     float *out, uint32_t nv, __mmask16 last, int zero)
{
    __m512 acc[4];
    __mmask16 lanes[4];
    for (uint32_t v = 0; v < nv; ++v) acc[v] = _mm512_setzero_ps(), lanes[v] = v + 1 == nv ? last : mt_lanes(16);
    for (; mask; mask &= mask - 1) {
        const uint32_t j = (uint32_t)__builtin_ctzll(mask);
        const __m512 gv = _mm512_set1_ps(g[(size_t)j * gj]);
        for (uint32_t v = 0; v < nv; ++v)
            acc[v] = mt_mac(acc[v], gv, _mm512_maskz_loadu_ps(lanes[v], m + (size_t)j * I + 16 * v));
    }
    for (uint32_t v = 0; v < nv; ++v) {
        const __mmask16 negative_zeros = mt_negative_zero_lanes(acc[v]) & lanes[v];
        if (__builtin_expect(negative_zeros != 0, 0)) { /* mt_resum_negative_zeros says why */
            float t[16];
            _mm512_storeu_ps(t, acc[v]);
            mt_resum_negative_zeros(t, negative_zeros, g, gj, m + 16 * v, I, J);
            acc[v] = _mm512_loadu_ps(t);
        }
        const __m512 before = zero ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(lanes[v], out + 16 * v);
        _mm512_mask_storeu_ps(out + 16 * v, lanes[v], _mm512_add_ps(before, acc[v]));
    }
}

/* the same for cols columns (those around the full blocks): four whole vectors at a time,
 * then the 1-4 left (the last one partial) */
static MT_AVX512 __attribute__((noinline)) void sparse_tail(const float *g, size_t gj, uint64_t mask, const float *m,
                                                            uint32_t I, uint32_t J, float *out, uint32_t cols, int zero)
{
    uint32_t c = 0;
    for (; c + 64 <= cols; c += 64) sparse_columns(g, gj, mask, m + c, I, J, out + c, 4, mt_lanes(16), zero);
    const uint32_t left = cols - c, nv = (left + 15) / 16;
    const __mmask16 last = mt_lanes(left - 16 * (nv ? nv - 1 : 0));
    if (nv == 4) sparse_columns(g, gj, mask, m + c, I, J, out + c, 4, last, zero);
    else if (nv == 3) sparse_columns(g, gj, mask, m + c, I, J, out + c, 3, last, zero);
    else if (nv == 2) sparse_columns(g, gj, mask, m + c, I, J, out + c, 2, last, zero);
    else if (nv == 1) sparse_columns(g, gj, mask, m + c, I, J, out + c, 1, last, zero);
}

/* The W columns from c0 of rows around the full blocks. Up to two vectors wide they go
 * through the dense blocks, 8 rows at a time: one row's sparse terms over one or two vectors
 * are one or two chains of additions, 4 cycles a term, where 8 rows keep 8 or 16 chains
 * busy and a term costs 1 or 2 cycles a row counting or not (the sums are the reference's
 * either way: the skipped terms are ±0). MLP 784-128-10's weight gradient (half of dy zero;
 * best of 3000 in C, runs interleaved), x and dW 16 bytes past a line (a 12-column head and
 * a 4-column tail each row): 38.8 -> 36.7 us; on a line (a 16-column tail): 35.8 -> 35.0.
 * Wider edges keep the sparse columns, four chains a row. */
MT_AVX512_INLINE void sparse_edge(const float *g, size_t gs, size_t gj, const uint64_t *masks, const float *m,
                                  uint32_t J, float *out, uint32_t R, uint32_t I, uint32_t c0, uint32_t W, int zero)
{
    if (W == 0) return;
    if (W <= 32) {
        gemm_columns(g, gs, gj, m + c0, J, out + c0, R, I, W, zero);
        return;
    }
    for (uint32_t r = 0; r < R; ++r)
        sparse_tail(g + r * gs, gj, masks[r], m + c0, I, J, out + (size_t)r * I + c0, W, zero);
}

/* gemm_rows's sums; where J <= 64, m is finite and a row holds a full block (below, the masks
 * and the tail's cost per term made the tiny MLP's step 10% slower), groups of rows whose
 * terms that count are at most 7/8 of them take the sparse blocks (a term costs them what it
 * costs the dense blocks; the AVX2 build's measured break-even for the weight gradient) */
MT_AVX512_INLINE void gemm_skipping_zeros(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                          uint32_t R, uint32_t I, int zero)
{
    /* The full blocks start where m's rows meet a 64-byte line (mt_to_line), when every row
     * does (I a multiple of 16): MLP 784-128-10's weight gradient took 50 us with x 16 bytes
     * past a line, 40 now, 37 with x on a line. The columns before and after: sparse_edge. */
    const uint32_t head = I % 16 == 0 ? mt_to_line(m, I) : 0u;
    const uint32_t full = I > head ? (I - head) / (16 * SPARSE_VECS) * (16 * SPARSE_VECS) : 0u;
    const uint32_t end = head + full; /* the full blocks' columns: [head, end) */
    int m_finite = -1;                /* not looked at yet */
    if (J > SPARSE_TERMS || !full) {
        gemm_rows(g, gs, gj, m, J, out, R, I, zero);
        return;
    }
    for (uint32_t r0 = 0; r0 < R; r0 += SPARSE_ROWS) {
        const uint32_t rn = mt_min_u32(SPARSE_ROWS, R - r0);
        const float *gr = g + r0 * gs;
        float *outr = out + (size_t)r0 * I;
        uint64_t masks[SPARSE_ROWS];
        term_masks(gr, gs, gj, J, rn, masks);
        if (!mt_sparse_pays(masks, rn, J, 7, m, I, &m_finite)) {
            gemm_rows(gr, gs, gj, m, J, outr, rn, I, zero);
            continue;
        }
        /* a block of columns for every row in turn: its J x 256 floats of m stay in L1 */
        for (uint32_t i0 = head; i0 < end; i0 += 16 * SPARSE_VECS)
            for (uint32_t r = 0; r < rn; ++r)
                sparse_block(gr + r * gs, gj, masks[r], m + i0, I, J, outr + (size_t)r * I + i0, zero);
        sparse_edge(gr, gs, gj, masks, m, J, outr, rn, I, 0, head, zero);
        sparse_edge(gr, gs, gj, masks, m, J, outr, rn, I, end, I - end, zero);
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_dense_f32_backward)(const float *x, const float *w, const float *dy, float *dx,
                                               float *dw, float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero)
{
    if (dx) gemm_skipping_zeros(dy, U, 1, w, U, dx, B, I, 0);
    if (dw) gemm_skipping_zeros(dy, 1, U, x, B, dw, U, I, dw_zero); /* dw_zero: as if dW were zeroed first */
    if (dbias) MT_X86_NAME(mt_op_bias_f32_backward)(dy, dbias, B, U);
}
#endif /* !MT_X86_SHIM_AVX2 */

#else
typedef int mt_dense_x86_unused; /* ISO C: a translation unit is not empty */
#endif
