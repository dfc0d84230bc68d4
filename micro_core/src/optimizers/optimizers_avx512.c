/*
 * optimizers.c's updates and guards in AVX-512's sixteen lanes, and over the shim
 * (optimizers_avx2.c) in AVX2's: each element's operations in the scalar code's order (no
 * FMA), so the same bits; the guards answer as the reference's. A proximal term (FedProx) is
 * the reference's to compute. Compiles to nothing off x86-64.
 */
#include "ops/x86/optimize.h" /* first: -O3 for everything below */
#include "ops/x86/x86.h"

#if MT_X86_KERNELS
#include <string.h>

#include "ops/x86/avx512.h"
#include "optimizers.h"

/* optimizers.c's updates, sixteen elements at a time, each element's operations in the
 * scalar code's order (no FMA), so the same bits; whole blocks first, then the tail under a
 * mask.
 *
 * 16 floats at p: all of them (m = MT_ALL16, a constant where inlined: plain loads and stores,
 * which the shim does not have to split into lane masks), else the lanes of m */
#define MT_ALL16 ((__mmask16)0xFFFF)
MT_AVX512_INLINE __m512 load16(const float *p, __mmask16 m)
{
    return m == MT_ALL16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}

MT_AVX512_INLINE void store16(float *p, __mmask16 m, __m512 v)
{
    if (m == MT_ALL16) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, m, v);
}

typedef struct {
    __m512 scale, wd, mom, rate;
    float weight_decay, momentum;
} sgd16_constants;

MT_AVX512_INLINE sgd16_constants sgd16_setup(float lr, float momentum, float weight_decay, float grad_scale)
{
    sgd16_constants k = {_mm512_set1_ps(grad_scale), _mm512_set1_ps(weight_decay), _mm512_set1_ps(momentum),
                         _mm512_set1_ps(lr), weight_decay, momentum};
    return k;
}

/* the lanes m of one SGD step from w, g and buf: the new w, and in *d the new buffer (with
 * momentum) or the step's direction */
MT_AVX512_INLINE __m512 sgd16_step(const sgd16_constants *k, const float *w, const float *g, const float *buf,
                                   __mmask16 m, __m512 *wv, __m512 *gv, __m512 *d)
{
    *wv = load16(w, m), *gv = load16(g, m);
    *d = _mm512_mul_ps(*gv, k->scale);
    if (k->weight_decay != 0.0f) *d = _mm512_add_ps(*d, _mm512_mul_ps(k->wd, *wv));
    if (k->momentum > 0.0f) *d = _mm512_add_ps(_mm512_mul_ps(k->mom, load16(buf, m)), *d);
    return _mm512_sub_ps(*wv, _mm512_mul_ps(k->rate, *d));
}

MT_AVX512_INLINE void sgd16_update(const sgd16_constants *k, float *w, const float *g, float *buf, __mmask16 m)
{
    __m512 wv, gv, d;
    const __m512 next = sgd16_step(k, w, g, buf, m, &wv, &gv, &d);
    if (k->momentum > 0.0f) store16(buf, m, d);
    store16(w, m, next);
}

MT_AVX512 void MT_X86_NAME(mt_sgd_update_f32)(float *w, const float *g, float *buf, size_t N, float lr,
                                              float momentum, float weight_decay, float grad_scale, mt_proximal prox)
{
    if (prox.mu != 0.0f) {
        mt_sgd_update_f32_ref(w, g, buf, N, lr, momentum, weight_decay, grad_scale, prox);
        return;
    }
    const sgd16_constants k = sgd16_setup(lr, momentum, weight_decay, grad_scale);
    size_t i = mt_stream_head(w, N); /* w's whole blocks on its lines (8.2 -> 7.3 us for 100K weights) */
    if (i) sgd16_update(&k, w, g, buf, mt_lanes((uint32_t)i));
    for (; i + 16 <= N; i += 16) sgd16_update(&k, w + i, g + i, buf ? buf + i : NULL, MT_ALL16);
    if (i < N) sgd16_update(&k, w + i, g + i, buf ? buf + i : NULL, mt_lanes((uint32_t)(N - i)));
}

/* Adam's constants, as mt_adam_update_f32_ref computes them, broadcast to 16 lanes */
typedef struct {
    __m512 scale, wd, shrink, omb1, b1, b2, omb2, bc2, eps, step;
    int near_m, decoupled, weight_decay;
    float m_bound; /* > 0: the guard's shortcut holds for |m| <= m_bound (mt_adam_params), 0: never */
    mt_adam_params params; /* for the whole-tensor limits */
} adam16_constants;

/* mt_adam_params_for's constants (optimizers.c, which also proves the guard's shortcut) */
MT_AVX512_INLINE adam16_constants adam16_setup(float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                               int decoupled, double beta1_power, double beta2_power,
                                               float grad_scale)
{
    const mt_adam_params p = mt_adam_params_for(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                                                beta2_power, grad_scale, 0.0f);
    adam16_constants k;
    k.scale = _mm512_set1_ps(p.grad_scale);
    k.wd = _mm512_set1_ps(p.weight_decay);
    k.shrink = _mm512_set1_ps(p.decay);
    k.omb1 = _mm512_set1_ps(p.one_minus_beta1);
    k.b1 = _mm512_set1_ps(p.beta1);
    k.b2 = _mm512_set1_ps(p.beta2);
    k.omb2 = _mm512_set1_ps(p.one_minus_beta2);
    k.bc2 = _mm512_set1_ps(p.bias_correction2_sqrt);
    k.eps = _mm512_set1_ps(p.epsilon);
    k.step = _mm512_set1_ps(p.step_size);
    k.near_m = p.near_m;
    k.decoupled = p.decoupled;
    k.weight_decay = p.has_decay;
    k.m_bound = p.m_bound;
    k.params = p;
    return k;
}

/* One Adam step of 16 weights, mt_adam_update_f32_ref's operations in its order, from the raw
 * gradient gv: first the new m and v (and w's decoupled decay), then the new w */
MT_AVX512_INLINE void adam16_moments(const adam16_constants *k, __m512 gv, __m512 *wv, __m512 *mv, __m512 *vv)
{
    __m512 gi = _mm512_mul_ps(gv, k->scale);
    if (k->decoupled) *wv = _mm512_mul_ps(*wv, k->shrink);
    else if (k->weight_decay) gi = _mm512_add_ps(gi, _mm512_mul_ps(k->wd, *wv));
    if (k->near_m) *mv = _mm512_add_ps(*mv, _mm512_mul_ps(k->omb1, _mm512_sub_ps(gi, *mv)));
    else *mv = _mm512_sub_ps(gi, _mm512_mul_ps(_mm512_sub_ps(gi, *mv), k->b1));
    *vv = _mm512_add_ps(_mm512_mul_ps(k->b2, *vv), _mm512_mul_ps(k->omb2, _mm512_mul_ps(gi, gi)));
}

MT_AVX512_INLINE __m512 adam16_weight(const adam16_constants *k, __m512 wv, __m512 mv, __m512 vv)
{
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), k->bc2), k->eps);
    return _mm512_sub_ps(wv, _mm512_mul_ps(k->step, _mm512_div_ps(mv, denom)));
}

/* the new w, m and v (the update writes them) */
MT_AVX512_INLINE void adam16_step(const adam16_constants *k, __m512 gv, __m512 *wv, __m512 *mv, __m512 *vv)
{
    adam16_moments(k, gv, wv, mv, vv);
    *wv = adam16_weight(k, *wv, *mv, *vv);
}

MT_AVX512_INLINE void adam16_update(const adam16_constants *k, float *w, const float *g, float *m, float *v,
                                     __mmask16 lanes)
{
    __m512 wv = load16(w, lanes), mv = load16(m, lanes), vv = load16(v, lanes);
    adam16_step(k, load16(g, lanes), &wv, &mv, &vv);
    store16(m, lanes, mv);
    store16(v, lanes, vv);
    store16(w, lanes, wv);
}

MT_AVX512 void MT_X86_NAME(mt_adam_update_f32)(float *w, const float *g, float *m, float *v, size_t N, float lr,
                                               float beta1, float beta2, float epsilon, float weight_decay,
                                               int decoupled, double beta1_power, double beta2_power,
                                               float grad_scale, mt_proximal prox)
{
    if (prox.mu != 0.0f) {
        mt_adam_update_f32_ref(w, g, m, v, N, lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power,
                               beta2_power, grad_scale, prox);
        return;
    }
    const adam16_constants k =
        adam16_setup(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power, beta2_power, grad_scale);
    size_t i = 0;
    for (; i + 16 <= N; i += 16) adam16_update(&k, w + i, g + i, m + i, v + i, MT_ALL16);
    if (i < N) adam16_update(&k, w + i, g + i, m + i, v + i, mt_lanes((uint32_t)(N - i)));
}

/* The guards' finiteness tests. In a tail block, the exponent test under the block's lanes.
 * In whole blocks, x·0 added to a sum: 0 for a finite x, NaN for an infinity or a NaN, and a
 * sum of zeros is never NaN, so the sum is NaN exactly when some x was not finite: two FPU
 * operations a vector, where the exponent test costs a comparison into a mask each (over the
 * shim, two of them and two VMOVMSKPS). */
MT_AVX512_INLINE __mmask16 non_finite16(__m512 v, __mmask16 lanes)
{
    const __m512i exponent = _mm512_set1_epi32(0x7f800000);
    return _mm512_mask_cmpeq_epi32_mask(lanes, _mm512_and_si512(_mm512_castps_si512(v), exponent), exponent);
}

typedef struct {
    __m512 zeros;   /* Σ x·0 over the whole blocks' values */
    __mmask16 bad; /* the tail block's lanes that failed */
} finite16;

MT_AVX512_INLINE void finite16_add(finite16 *f, __m512 v, __mmask16 lanes)
{
    if (lanes == MT_ALL16) f->zeros = _mm512_add_ps(f->zeros, _mm512_mul_ps(v, _mm512_setzero_ps()));
    else f->bad |= non_finite16(v, lanes);
}

MT_AVX512_INLINE int finite16_all(const finite16 *f)
{
    return f->bad == 0 && _mm512_cmp_ps_mask(f->zeros, f->zeros, _CMP_UNORD_Q) == 0;
}

/* optimizers.c's update guards: 1 when g and every value the update would write are finite;
 * the same operations as the updates above, nothing written */
MT_AVX512_INLINE void sgd16_guard(const sgd16_constants *k, const float *w, const float *g, const float *buf,
                                  __mmask16 lanes, finite16 *f)
{
    __m512 wv, gv, d;
    const __m512 next = sgd16_step(k, w, g, buf, lanes, &wv, &gv, &d);
    if (k->momentum > 0.0f) finite16_add(f, d, lanes);
    finite16_add(f, gv, lanes);
    finite16_add(f, next, lanes);
}

MT_AVX512 int MT_X86_NAME(mt_sgd_update_is_finite_f32)(const float *w, const float *g, const float *buf, size_t N,
                                                       float lr, float momentum, float weight_decay,
                                                       float grad_scale, mt_proximal prox)
{
    if (prox.mu != 0.0f)
        return mt_sgd_update_is_finite_f32_ref(w, g, buf, N, lr, momentum, weight_decay, grad_scale, prox);
    const sgd16_constants k = sgd16_setup(lr, momentum, weight_decay, grad_scale);
    /* four sums of x·0 side by side: with one, its additions (a chain, 4 cycles each, two a
     * block) set the pace, not the loads; whether a NaN came up is the same in any order */
    finite16 f[4] = {{_mm512_setzero_ps(), 0}, {_mm512_setzero_ps(), 0}, {_mm512_setzero_ps(), 0},
                     {_mm512_setzero_ps(), 0}};
    size_t i = mt_stream_head(w, N); /* w's whole blocks on its lines (mt_stream_head) */
    if (i) sgd16_guard(&k, w, g, buf, mt_lanes((uint32_t)i), &f[0]);
    for (; i + 64 <= N; i += 64)
        for (size_t q = 0; q < 4; ++q)
            sgd16_guard(&k, w + i + 16 * q, g + i + 16 * q, buf ? buf + i + 16 * q : NULL, MT_ALL16, &f[q]);
    for (; i + 16 <= N; i += 16) sgd16_guard(&k, w + i, g + i, buf ? buf + i : NULL, MT_ALL16, &f[0]);
    if (i < N) sgd16_guard(&k, w + i, g + i, buf ? buf + i : NULL, mt_lanes((uint32_t)(N - i)), &f[0]);
    return finite16_all(&f[0]) && finite16_all(&f[1]) && finite16_all(&f[2]) && finite16_all(&f[3]);
}

MT_AVX512_INLINE void adam16_guard(const adam16_constants *k, const float *w, const float *g, const float *m,
                                   const float *v, __mmask16 lanes, finite16 *f)
{
    const __m512 m_bound = _mm512_set1_ps(k->m_bound), w_bound = _mm512_set1_ps(0x1p126f);
    __m512 wv = load16(w, lanes), mv = load16(m, lanes), vv = load16(v, lanes);
    const __m512 gv = load16(g, lanes);
    adam16_moments(k, gv, &wv, &mv, &vv);
    finite16_add(f, gv, lanes), finite16_add(f, mv, lanes), finite16_add(f, vv, lanes);
    /* the new w is finite without computing it where the shortcut holds (mt_adam_params;
     * NaN fails these comparisons), else computed as the update will */
    const __mmask16 sure = k->m_bound > 0.0f ? _mm512_cmp_ps_mask(_mm512_abs_ps(mv), m_bound, _CMP_LE_OQ) &
                                                   _mm512_cmp_ps_mask(_mm512_abs_ps(wv), w_bound, _CMP_LE_OQ) &
                                                   _mm512_cmp_ps_mask(vv, _mm512_setzero_ps(), _CMP_GE_OQ)
                                             : 0;
    if ((sure & lanes) != lanes) finite16_add(f, adam16_weight(k, wv, mv, vv), lanes);
}

/* the largest of bits & mask over 16 floats at p (the lanes past m count 0) into *max */
MT_AVX512_INLINE void max16_bits(__m512i *max, const float *p, __mmask16 m, __m512i mask)
{
    *max = _mm512_max_epu32(*max, _mm512_and_si512(_mm512_castps_si512(load16(p, m)), mask));
}

MT_AVX512_INLINE uint32_t max16_lane(__m512i max)
{
    float f[16];
    uint32_t u[16], r = 0u;
    _mm512_storeu_ps(f, _mm512_castsi512_ps(max));
    memcpy(u, f, sizeof u);
    for (int j = 0; j < 16; ++j) r = u[j] > r ? u[j] : r;
    return r;
}

/* mt_adam_within_limits on vectors: the largest magnitude bits of g, m and w, and the largest
 * bits of v (a set sign bit exceeds every limit), against the limits; integer operations, a
 * pass at the speed of the loads, where the guard's blocks compute every element's moments */
MT_AVX512_INLINE int adam16_within_limits(const mt_adam_params *p, const float *w, const float *g, const float *m,
                                          const float *v, size_t N)
{
    const __m512i mag = _mm512_set1_epi32(0x7fffffff), all = _mm512_set1_epi32(-1);
    __m512i gm = _mm512_set1_epi32(0), mm = gm, vm = gm, wm = gm;
    size_t i = mt_stream_head(w, N); /* w's whole blocks on its lines (12.0 us for 100K elements on
                                    the line, 17.9 with the four arrays 16 bytes past one) */
    if (i) {
        const __mmask16 lanes = mt_lanes((uint32_t)i);
        max16_bits(&gm, g, lanes, mag), max16_bits(&mm, m, lanes, mag);
        max16_bits(&vm, v, lanes, all), max16_bits(&wm, w, lanes, mag);
    }
    for (; i + 16 <= N; i += 16) {
        max16_bits(&gm, g + i, MT_ALL16, mag), max16_bits(&mm, m + i, MT_ALL16, mag);
        max16_bits(&vm, v + i, MT_ALL16, all), max16_bits(&wm, w + i, MT_ALL16, mag);
    }
    if (i < N) {
        const __mmask16 lanes = mt_lanes((uint32_t)(N - i));
        max16_bits(&gm, g + i, lanes, mag), max16_bits(&mm, m + i, lanes, mag);
        max16_bits(&vm, v + i, lanes, all), max16_bits(&wm, w + i, lanes, mag);
    }
    return max16_lane(gm) <= p->g_limit && max16_lane(mm) <= p->m_limit && max16_lane(vm) <= p->v_limit &&
           max16_lane(wm) <= MT_ADAM_W_LIMIT;
}

MT_AVX512 int MT_X86_NAME(mt_adam_update_is_finite_f32)(const float *w, const float *g, const float *m,
                                                        const float *v, size_t N, float lr, float beta1, float beta2,
                                                        float epsilon, float weight_decay, int decoupled,
                                                        double beta1_power, double beta2_power, float grad_scale,
                                                        mt_proximal prox)
{
    if (prox.mu != 0.0f)
        return mt_adam_update_is_finite_f32_ref(w, g, m, v, N, lr, beta1, beta2, epsilon, weight_decay, decoupled,
                                                beta1_power, beta2_power, grad_scale, prox);
    const adam16_constants k =
        adam16_setup(lr, beta1, beta2, epsilon, weight_decay, decoupled, beta1_power, beta2_power, grad_scale);
    mt_adam_params p = k.params;
    mt_adam_set_limits(&p);
    if (p.limits && adam16_within_limits(&p, w, g, m, v, N)) return 1; /* the usual plain case */
    finite16 f = {_mm512_setzero_ps(), 0};
    size_t i = 0;
    for (; i + 16 <= N; i += 16) adam16_guard(&k, w + i, g + i, m + i, v + i, MT_ALL16, &f);
    if (i < N) adam16_guard(&k, w + i, g + i, m + i, v + i, mt_lanes((uint32_t)(N - i)), &f);
    return finite16_all(&f);
}
#else
typedef int mt_optimizers_x86_unused; /* ISO C: a translation unit is not empty */
#endif
