/*
 * Dense kernels of the AVX2 build alone, in native 8-lane AVX2 (included by dense_avx512.c when
 * MT_X86_SHIM_AVX2 is defined). Over the shim a 16-lane sum takes two ymm registers, and the
 * blocks that fit 16 of them kept 8 sums in flight. Written natively, every block keeps 12
 * sums in registers (rows x vectors = 12), beside one broadcast and one product:
 *   - forward and weight gradient: 3 rows of 32 lanes, the other operand read straight from
 *     memory by each multiply (L1: the forward's W tile, the batch's x rows), which leaves the
 *     registers to the sums and costs 15 loads a term, below the 3 a cycle the core issues;
 *   - input gradient: 6 rows of 16 lanes, W's two vectors in registers, as W is the large
 *     operand, read once a block: fewer rows a block would read it more often.
 * The loads then stay below the fused multiply-adds the FPU issues (2 a cycle).
 *
 * The arithmetic is the reference's, lane by lane (ops/x86/x86.h): each sum from 0 in
 * ascending order of its terms, one fused multiply-add per term; a sum's partial value waits
 * in memory between blocks of terms (a float stored and reloaded is the same float).
 *
 *   y[b,u]   = Σ_i x[b,i]·W[u,i] + bias[u]   lanes: 8 units; W tiles transposed on the stack
 *   dx[b,i] += Σ_u dy[b,u]·W[u,i]            lanes: 8 inputs i
 *   dW[u,i] += Σ_b dy[b,u]·x[b,i]            lanes: 8 inputs i
 * Behind a ReLU the gradients skip the terms whose dy is ±0 (below: the same bits).
 */
#ifndef MT_OPS_X86_DENSE_AVX2_H
#define MT_OPS_X86_DENSE_AVX2_H

#if MT_X86_KERNELS && defined(MT_X86_SHIM_AVX2)
#define D8_ROWS 6   /* rows a block at most (16 lanes: 12 sums, 2 operand vectors, a broadcast and a product) */
#define D8_VECS 4   /* 8-lane vectors a block at most: 32 units (forward) or inputs (weight gradient) */
#define D8_DEPTH 64 /* inputs a forward tile: 32 units x 64 inputs, 8 KiB on the stack */

/* -1 in the first n (<= 8) lanes */
MT_AVX512_INLINE __m256i d8_lanes(uint32_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* the first n (>= 1) floats at p, 0 in the lanes past them (never read) */
MT_AVX512_INLINE __m256 d8_load(const float *p, uint32_t n)
{
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, d8_lanes(n));
}

MT_AVX512_INLINE void d8_store(float *p, __m256 v, uint32_t n)
{
    if (n >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, d8_lanes(n), v);
}

/* r[j] lane k -> r[k] lane j (an 8 x 8 transpose: pairs, quads, then halves) */
MT_AVX512_INLINE void d8_transpose(__m256 r[8])
{
    __m256 t[8], s[8];
    for (uint32_t j = 0; j < 8; j += 2) t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]), t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
    for (uint32_t q = 0; q < 8; q += 4) {
        s[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44), s[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xEE);
        s[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44), s[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
    }
    for (uint32_t j = 0; j < 4; ++j)
        r[j] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x20), r[j + 4] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x31);
}

/* t[4k + h] lane j = W[u0 + 8h + j, i0 + k] for units below un (else 0), k < kn */
MT_AVX512_INLINE void d8_tile(const float *w, uint32_t I, uint32_t u0, uint32_t un, uint32_t i0, uint32_t kn, __m256 *t)
{
    for (uint32_t h = 0; 8 * h < un; ++h)
        for (uint32_t c = 0; c < kn; c += 8) {
            const uint32_t cn = mt_min_u32(8, kn - c);
            __m256 r[8];
            for (uint32_t j = 0; j < 8; ++j)
                r[j] = 8 * h + j < un ? d8_load(w + (size_t)(u0 + 8 * h + j) * I + i0 + c, cn) : _mm256_setzero_ps();
            d8_transpose(r);
            for (uint32_t k = 0; k < cn; ++k) t[D8_VECS * (c + k) + h] = r[k];
        }
}

/* Asks for the next tile's rows of W while this tile's sums run (a few thousand cycles): W
 * is read a tile at a time, 32 rows of 256 bytes apart, which the hardware prefetchers do not
 * follow. A W out of cache (a first layer's, after the later layers' passes) otherwise comes
 * at memory speed: 784 x 128 at batch 32, 119 -> 90 us; a W in cache pays 3 us */
MT_AVX512_INLINE void d8_prefetch_next_tile(const float *w, uint32_t I, uint32_t U, uint32_t u0, uint32_t i0)
{
    if (i0 + D8_DEPTH < I) i0 += D8_DEPTH;
    else if (u0 + 8 * D8_VECS < U) u0 += 8 * D8_VECS, i0 = 0;
    else return;
    const uint32_t un = mt_min_u32(8 * D8_VECS, U - u0), kn = mt_min_u32(D8_DEPTH, I - i0);
    for (uint32_t u = u0; u < u0 + un; ++u) {
        const char *row = (const char *)(w + (size_t)u * I + i0);
        for (uint32_t c = 0; c < kn * sizeof(float); c += 64) _mm_prefetch(row + c, _MM_HINT_T0);
        _mm_prefetch(row + kn * sizeof(float) - 1, _MM_HINT_T0); /* a row not aligned to 64 bytes */
    }
}

/* rows x vecs (constants where inlined) sums of kn terms: y[r, u0 + 8v + lane] for lanes
 * below n[v]; first: the sums start from 0, else from y; bias: added after the last term */
MT_AVX512_INLINE void d8_forward_rows(const float *x, uint32_t I, const __m256 *t, uint32_t kn, float *y, uint32_t U,
                                      uint32_t rows, uint32_t vecs, const uint32_t *n, int first, const __m256 *bias)
{
    __m256 acc[D8_ROWS][D8_VECS];
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t v = 0; v < vecs; ++v) acc[r][v] = first ? _mm256_setzero_ps() : d8_load(y + (size_t)r * U + 8 * v, n[v]);
    for (uint32_t k = 0; k < kn; ++k) {
        const __m256 *tk = t + D8_VECS * k;
        for (uint32_t r = 0; r < rows; ++r) {
            const __m256 xv = _mm256_broadcast_ss(x + (size_t)r * I + k);
            for (uint32_t v = 0; v < vecs; ++v) acc[r][v] = _mm256_fmadd_ps(tk[v], xv, acc[r][v]);
        }
    }
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t v = 0; v < vecs; ++v)
            d8_store(y + (size_t)r * U + 8 * v, bias ? _mm256_add_ps(acc[r][v], bias[v]) : acc[r][v], n[v]);
}

/* the B rows for one tile, 12 / vecs at a time (at most D8_ROWS), then the rest in one block
 * (every row count a constant, so each block's sums stay in registers) */
MT_AVX512_INLINE void d8_forward_tile(const float *x, uint32_t I, const __m256 *t, uint32_t kn, float *y, uint32_t U,
                                      uint32_t B, uint32_t vecs, const uint32_t *n, int first, const __m256 *bias)
{
    const uint32_t R = mt_min_u32(D8_ROWS, 12 / vecs);
    uint32_t b = 0;
    for (; b + R <= B; b += R)
        d8_forward_rows(x + (size_t)b * I, I, t, kn, y + (size_t)b * U, U, R, vecs, n, first, bias);
    x += (size_t)b * I, y += (size_t)b * U;
    switch (B - b) {
    case 5: d8_forward_rows(x, I, t, kn, y, U, 5, vecs, n, first, bias); break;
    case 4: d8_forward_rows(x, I, t, kn, y, U, 4, vecs, n, first, bias); break;
    case 3: d8_forward_rows(x, I, t, kn, y, U, 3, vecs, n, first, bias); break;
    case 2: d8_forward_rows(x, I, t, kn, y, U, 2, vecs, n, first, bias); break;
    case 1: d8_forward_rows(x, I, t, kn, y, U, 1, vecs, n, first, bias); break;
    default: break;
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_dense_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                                    uint32_t B, uint32_t I, uint32_t U, uint32_t act)
{
    __m256 t[D8_VECS * D8_DEPTH]; /* t[4k + h] lanes j: W[u0 + 8h + j, i0 + k] */
    for (uint32_t u0 = 0; u0 < U; u0 += 8 * D8_VECS) {
        const uint32_t un = mt_min_u32(8 * D8_VECS, U - u0), vecs = (un + 7) / 8;
        uint32_t n[D8_VECS];
        __m256 bv[D8_VECS];
        for (uint32_t v = 0; v < D8_VECS; ++v) {
            n[v] = un > 8 * v ? mt_min_u32(8, un - 8 * v) : 0;
            bv[v] = bias && n[v] ? d8_load(bias + u0 + 8 * v, n[v]) : _mm256_setzero_ps();
        }
        for (uint32_t i0 = 0; i0 < I || i0 == 0; i0 += D8_DEPTH) { /* I = 0: once, the reference's 0 + bias */
            const uint32_t kn = mt_min_u32(D8_DEPTH, I - i0);
            d8_tile(w, I, u0, un, i0, kn, t);
            d8_prefetch_next_tile(w, I, U, u0, i0);
            const __m256 *last_bias = i0 + kn == I && bias ? bv : NULL;
            float *yu = y + u0;
            const int first = i0 == 0;
            if (vecs == 4) d8_forward_tile(x + i0, I, t, kn, yu, U, B, 4, n, first, last_bias);
            else if (vecs == 3) d8_forward_tile(x + i0, I, t, kn, yu, U, B, 3, n, first, last_bias);
            else if (vecs == 2) d8_forward_tile(x + i0, I, t, kn, yu, U, B, 2, n, first, last_bias);
            else d8_forward_tile(x + i0, I, t, kn, yu, U, B, 1, n, first, last_bias);
            if (I == 0) break;
        }
    }
    MT_X86_NAME(mt_fused_activation_forward)(act, y, (size_t)B * U); /* then the fused activation */
}

/* out[r, i0 + 8v + lane] += Σ_j g[r·gs + j·gj]·m[j·I + i0 + 8v + lane], j ascending, for
 * lanes below n[v]; rows and vecs constants where inlined; zero: as if out held 0 */
MT_AVX512_INLINE void d8_gemm_block(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                    uint32_t I, uint32_t rows, uint32_t vecs, const uint32_t *n, int zero)
{
    __m256 acc[D8_ROWS][D8_VECS];
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t v = 0; v < vecs; ++v) acc[r][v] = _mm256_setzero_ps();
    if (vecs == D8_VECS && n[D8_VECS - 1] == 8) /* whole vectors: m's operands straight from memory, 15 loads a term */
        for (uint32_t j = 0; j < J; ++j) {
            const float *mj = m + (size_t)j * I;
            for (uint32_t r = 0; r < rows; ++r) {
                const __m256 gv = _mm256_broadcast_ss(g + r * gs + j * gj);
                for (uint32_t v = 0; v < vecs; ++v)
                    acc[r][v] = _mm256_fmadd_ps(gv, _mm256_loadu_ps(mj + 8 * v), acc[r][v]);
            }
        }
    else
        for (uint32_t j = 0; j < J; ++j) {
            __m256 mv[D8_VECS];
            for (uint32_t v = 0; v < vecs; ++v) mv[v] = d8_load(m + (size_t)j * I + 8 * v, n[v]);
            for (uint32_t r = 0; r < rows; ++r) {
                const __m256 gv = _mm256_broadcast_ss(g + r * gs + j * gj);
                for (uint32_t v = 0; v < vecs; ++v) acc[r][v] = _mm256_fmadd_ps(gv, mv[v], acc[r][v]);
            }
        }
    for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t v = 0; v < vecs; ++v) {
            float *o = out + (size_t)r * I + 8 * v;
            const __m256 before = zero ? _mm256_setzero_ps() : d8_load(o, n[v]);
            d8_store(o, _mm256_add_ps(before, acc[r][v]), n[v]); /* zero: 0 + Σ, a zeroed dW's bits */
        }
}

/* the R rows of one gradient for one column block, 12 / vecs at a time (at most D8_ROWS),
 * then the rest in one block */
MT_AVX512_INLINE void d8_gemm_rows_of(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                      uint32_t R, uint32_t I, uint32_t vecs, const uint32_t *n, int zero)
{
    const uint32_t rows = mt_min_u32(D8_ROWS, 12 / vecs);
    uint32_t r = 0;
    for (; r + rows <= R; r += rows)
        d8_gemm_block(g + r * gs, gs, gj, m, J, out + (size_t)r * I, I, rows, vecs, n, zero);
    g += r * gs, out += (size_t)r * I;
    switch (R - r) {
    case 5: d8_gemm_block(g, gs, gj, m, J, out, I, 5, vecs, n, zero); break;
    case 4: d8_gemm_block(g, gs, gj, m, J, out, I, 4, vecs, n, zero); break;
    case 3: d8_gemm_block(g, gs, gj, m, J, out, I, 3, vecs, n, zero); break;
    case 2: d8_gemm_block(g, gs, gj, m, J, out, I, 2, vecs, n, zero); break;
    case 1: d8_gemm_block(g, gs, gj, m, J, out, I, 1, vecs, n, zero); break;
    default: break;
    }
}

/* the R rows of one gradient, columns i_begin.. of I, in column blocks of `cols` (32: 3 rows a
 * block, each term's m read from memory; 16: 6 rows, m in registers), the last one 1 to cols wide */
MT_AVX512_INLINE void d8_gemm_rows(const float *g, size_t gs, size_t gj, const float *m, uint32_t J, float *out,
                                   uint32_t R, uint32_t I, int zero, uint32_t cols, uint32_t i_begin)
{
    for (uint32_t i0 = i_begin; i0 < I; i0 += cols) {
        const uint32_t in = mt_min_u32(cols, I - i0), vecs = (in + 7) / 8;
        uint32_t n[D8_VECS];
        for (uint32_t v = 0; v < D8_VECS; ++v) n[v] = in > 8 * v ? mt_min_u32(8, in - 8 * v) : 0;
        if (vecs == 4) d8_gemm_rows_of(g, gs, gj, m + i0, J, out + i0, R, I, 4, n, zero); /* 25 to 32 columns */
        else if (vecs == 3) d8_gemm_rows_of(g, gs, gj, m + i0, J, out + i0, R, I, 3, n, zero);
        else if (vecs == 2) d8_gemm_rows_of(g, gs, gj, m + i0, J, out + i0, R, I, 2, n, zero);
        else d8_gemm_rows_of(g, gs, gj, m + i0, J, out + i0, R, I, 1, n, zero);
    }
}

/* ---- Gradients behind a ReLU: the terms whose g is ±0 skipped ----
 * Behind a ReLU about half of dy is ±0. A term g·m with g = ±0 and m finite is ±0, and adding
 * it leaves a sum's bits as they were unless the sum is -0 (avx512.h's mt_resum_negative_zeros,
 * which redoes those): the sum over the terms whose g is not ±0 (NaN included) is the
 * reference's sum over all of them, in the same ascending order.
 * With at most 64 terms, each output row's terms that count are the bits of a 64-bit mask,
 * and a block is one row's 96 sums (12 vectors in flight), its terms the mask's set bits in
 * ascending order: 13 loads and 24 operations a term that counts, where the dense blocks
 * spend 6 loads and 24 operations on 3 rows' terms, counting or not. Skipping needs every m
 * row a skipped term reads to be finite (0·inf is NaN), else the dense blocks run. */
#define D8_SPARSE_VECS 12  /* a sparse block's vectors: one row's 96 sums */
#define D8_SPARSE_ROWS 64  /* rows whose masks one pass keeps on the stack */
#define D8_SPARSE_TERMS 64 /* terms a mask holds */

/* masks[r] bit j: g[r·gs + j·gj] is not ±0, for rn rows and J (<= 64) terms; gj == 1 or gs == 1 */
MT_AVX512_INLINE void d8_term_masks(const float *g, size_t gs, size_t gj, uint32_t J, uint32_t rn, uint64_t *masks)
{
    if (gj == 1) { /* a row's terms side by side (the input gradient's dy rows): 8 at a time */
        for (uint32_t r = 0; r < rn; ++r) {
            uint64_t mask = 0;
            for (uint32_t j = 0; j < J; j += 8) {
                const __m256 v = d8_load(g + r * gs + j, mt_min_u32(8, J - j)); /* 0 past J: not set */
                mask |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NEQ_UQ)) << j;
            }
            masks[r] = mask;
        }
        return;
    }
    /* gs == 1, rows side by side (the weight gradient's dy columns): 4 rows' masks in the
     * 64-bit lanes of a vector, each term's compare widened to them */
    for (uint32_t r = 0; r < rn; r += 4) {
        const uint32_t n = mt_min_u32(4, rn - r);
        const __m128i lanes = _mm_cmpgt_epi32(_mm_set1_epi32((int)n), _mm_setr_epi32(0, 1, 2, 3));
        __m256i mask = _mm256_setzero_si256();
        for (uint32_t j = 0; j < J; ++j) {
            const __m128 v = _mm_maskload_ps(g + r + (size_t)j * gj, lanes);
            const __m128i hit = _mm_castps_si128(_mm_cmp_ps(v, _mm_setzero_ps(), _CMP_NEQ_UQ));
            mask = _mm256_or_si256(mask, _mm256_and_si256(_mm256_cvtepi32_epi64(hit),
                                                          _mm256_set1_epi64x((long long)(1ull << j))));
        }
        uint64_t four[4];
        _mm256_storeu_si256((__m256i *)four, mask);
        for (uint32_t k = 0; k < n; ++k) masks[r + k] = four[k];
    }
}

/* out[i0 + 8v + lane] = (zero ? 0 : out[..]) + Σ_{j in mask, ascending} g[j·gj]·m[j·I + i0 + 8v + lane]
 * for the 96 columns from i0 */
static MT_AVX512 __attribute__((noinline)) void d8_sparse_block(const float *g, size_t gj, uint64_t mask,
                                                                const float *m, uint32_t I, uint32_t J, float *out,
                                                                int zero)
{ /* not inlined, and twelve named sums: in an array GCC stored each back to the stack every term,
   * and inlined into the loops over blocks it indexed each load apart from spilled registers */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0;
    for (; mask; mask &= mask - 1) {
        const uint32_t j = (uint32_t)__builtin_ctzll(mask);
        const __m256 gv = _mm256_broadcast_ss(g + (size_t)j * gj);
        const float *mj = m + (size_t)j * I;
#define D8_TERM(a, v) a = _mm256_fmadd_ps(gv, _mm256_loadu_ps(mj + 8 * (v)), a)
        D8_TERM(a0, 0), D8_TERM(a1, 1), D8_TERM(a2, 2), D8_TERM(a3, 3), D8_TERM(a4, 4), D8_TERM(a5, 5);
        D8_TERM(a6, 6), D8_TERM(a7, 7), D8_TERM(a8, 8), D8_TERM(a9, 9), D8_TERM(a10, 10), D8_TERM(a11, 11);
#undef D8_TERM
    }
    __m256 sums[D8_SPARSE_VECS] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
    for (uint32_t v = 0; v < D8_SPARSE_VECS; ++v) {
        const unsigned negative_zeros = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
            _mm256_cmpeq_epi32(_mm256_castps_si256(sums[v]), _mm256_set1_epi32((int)0x80000000u))));
        if (__builtin_expect(negative_zeros != 0, 0)) { /* mt_resum_negative_zeros says why */
            float t[8];
            _mm256_storeu_ps(t, sums[v]);
            mt_resum_negative_zeros(t, negative_zeros, g, gj, m + 8 * v, I, J);
            sums[v] = _mm256_loadu_ps(t);
        }
        const __m256 before = zero ? _mm256_setzero_ps() : _mm256_loadu_ps(out + 8 * v);
        _mm256_storeu_ps(out + 8 * v, _mm256_add_ps(before, sums[v]));
    }
}

/* d8_gemm_rows's sums (from column 0); where J <= 64 and m is finite, groups of rows whose terms
 * that count are at most `eighths` / 8 of them take the sparse blocks (their first columns in
 * 96-wide blocks, the rest dense). Measured break-even (784 columns, 32 terms): the weight
 * gradient's dense blocks at 7/8 of the terms counting, the input gradient's (W in registers,
 * shared by 6 rows) near 5/8 */
MT_AVX512_INLINE void d8_gemm_skipping_zeros(const float *g, size_t gs, size_t gj, const float *m, uint32_t J,
                                             float *out, uint32_t R, uint32_t I, int zero, uint32_t cols,
                                             uint32_t eighths)
{
    const uint32_t wide = I / (8 * D8_SPARSE_VECS) * (8 * D8_SPARSE_VECS); /* columns the sparse blocks take */
    int m_finite = -1;                                                    /* not looked at yet */
    if (wide == 0 || J > D8_SPARSE_TERMS) {
        d8_gemm_rows(g, gs, gj, m, J, out, R, I, zero, cols, 0);
        return;
    }
    for (uint32_t r0 = 0; r0 < R; r0 += D8_SPARSE_ROWS) {
        const uint32_t rn = mt_min_u32(D8_SPARSE_ROWS, R - r0);
        const float *gr = g + r0 * gs;
        float *outr = out + (size_t)r0 * I;
        uint64_t masks[D8_SPARSE_ROWS];
        d8_term_masks(gr, gs, gj, J, rn, masks);
        if (!mt_sparse_pays(masks, rn, J, eighths, m, I, &m_finite)) {
            d8_gemm_rows(gr, gs, gj, m, J, outr, rn, I, zero, cols, 0);
            continue;
        }
        for (uint32_t i0 = 0; i0 < wide; i0 += 8 * D8_SPARSE_VECS)
            for (uint32_t r = 0; r < rn; ++r)
                d8_sparse_block(gr + r * gs, gj, masks[r], m + i0, I, J, outr + (size_t)r * I + i0, zero);
        if (wide < I) d8_gemm_rows(gr, gs, gj, m, J, outr, rn, I, zero, cols, wide);
    }
}

MT_AVX512 void MT_X86_NAME(mt_op_dense_f32_backward)(const float *x, const float *w, const float *dy, float *dx,
                                                     float *dw, float *dbias, uint32_t B, uint32_t I, uint32_t U,
                                                     int dw_zero)
{
    /* dx: 6 rows a block, so W (the larger operand, read once a block) is read fewer times;
     * dW: 3 rows (units) of 32 inputs, x being the batch's rows (small, read once a block) */
    if (dx) d8_gemm_skipping_zeros(dy, U, 1, w, U, dx, B, I, 0, 16, 5);
    if (dw) d8_gemm_skipping_zeros(dy, 1, U, x, B, dw, U, I, dw_zero, 32, 7); /* dw_zero: as if dW were zeroed first */
    if (dbias) MT_X86_NAME(mt_op_bias_f32_backward)(dy, dbias, B, U);
}

#endif /* MT_X86_KERNELS && MT_X86_SHIM_AVX2 */
#endif /* MT_OPS_X86_DENSE_AVX2_H */
