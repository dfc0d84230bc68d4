/*
 * FullyConnected's requantization (DENSE_S8) against the arithmetic it stands for. LiteRT's
 * reference FullyConnected multiplies each int32 sum by E = double(sx)·double(sw)/double(sy)
 * in double and rounds half away from zero; the core does it in integers (ops/quant.h's
 * mt_q_fc_scale, the same on every target: no double arithmetic in the kernels). Here C's own
 * double arithmetic is the reference, on the host and on every board (soft-float on the
 * Cortex-M3, M4F and M33, the FPU's double on the M7): at every kind of tie, in the windows
 * where the rounding of the double product itself decides the result, at every exponent, and
 * through the siblings' run requantization (s8_dot.h's mt_s8_fc_requant_block).
 */
#include "siblings_s8_fc.h"

#include <string.h>

#include "ops/portable/s8_dot.h"
#include "ops/quant.h"

int32_t s8_fc_by_double(int32_t acc, double e)
{
    const double v = (double)acc * e; /* one rounding (-ffp-contract=off everywhere) */
    if (!(v < 4611686018427387904.0 && v > -4611686018427387904.0)) return INT32_MIN; /* |v| >= 2^62 */
    int64_t r = (int64_t)v;                                   /* truncated: exact below 2^62 */
    const double fraction = v - (double)r;                    /* exact: |v| and r share their bits */
    if (fraction >= 0.5) ++r;
    else if (fraction <= -0.5) --r;                           /* ties away from zero */
    return r < INT32_MIN || r > INT32_MAX ? INT32_MIN : (int32_t)r;
}

void s8_fc_words(double e, int32_t rq[2])
{
    uint64_t bits;
    memcpy(&bits, &e, sizeof bits);
    rq[0] = (int32_t)(uint32_t)bits, rq[1] = (int32_t)(uint32_t)(bits >> 32);
}

/* m·2^-k for m in [2^52, 2^53) */
static double scale_of(uint64_t m, uint32_t k)
{
    const uint64_t bits = (uint64_t)(1075u - k) << 52 | (m & (((uint64_t)1 << 52) - 1u));
    double e;
    memcpy(&e, &bits, sizeof e);
    return e;
}

/* x^-1 mod 2^64 for odd x (Newton: each step doubles the bits that are right) */
static uint64_t inverse(uint64_t x)
{
    uint64_t y = x; /* right to 3 bits */
    for (int i = 0; i < 5; ++i) y *= 2u - x * y;
    return y;
}

/* With a = odd·2^j of b bits (b = min(31, k - 22), so that |a·E| < 2^31; j = max(0, k - 53))
 * and a target residue P ≡ 2^(k-1) - δ (mod 2^k), δ in [2^j, 2^(b-3)] a multiple of 2^j: the
 * double's ulp of P = a·m is 2^s with s >= b - 1, so fl(P) is the tie P + δ. Solving
 * odd·m ≡ (2^(k-1) - δ)/2^j modulo 2^(k-j) gives m's low k - j bits (all 53 when k >= 53); the
 * rest are chosen to put m in [2^52, 2^53). */
int s8_fc_window(uint32_t k, uint32_t r1, uint32_t r2, double *e, int32_t *acc)
{
    if (k < 33u || k > 81u) return 0;
    const uint32_t b = k - 22u < 31u ? k - 22u : 31u, j = k > 53u ? k - 53u : 0u;
    const uint32_t odd = ((r1 >> (j + 1u)) & ((1u << (b - 1u - j)) - 1u)) | 1u << (b - 1u - j) | 1u;
    const uint64_t delta = (uint64_t)(r2 % (1u << (b - 3u - j))) + 1u; /* δ / 2^j */
    const uint32_t bits = k - j;                                            /* m's bits fixed by the residue */
    const uint64_t low_mask = ((uint64_t)1 << bits) - 1u;
    const uint64_t target = ((uint64_t)1 << (bits - 1u)) - delta; /* (2^(k-1) - δ) / 2^j */
    uint64_t m = (inverse(odd) * target) & low_mask;
    if (bits < 53u) m |= (uint64_t)1 << 52 | ((uint64_t)r1 << bits & (((uint64_t)1 << 52) - 1u));
    if (m >> 52 != 1u) return 0;
    *e = scale_of(m, k);
    *acc = (int32_t)(r2 & 0x80000000u ? 0u - (odd << j) : odd << j);
    return 1;
}

static uint32_t fc_state = 20261215u;

static uint32_t fc_next(void)
{
    fc_state = fc_state * 1664525u + 1013904223u;
    return fc_state >> 8 ^ fc_state << 20;
}

static int scales_agree(int32_t acc, double e)
{
    int32_t rq[2];
    s8_fc_words(e, rq);
    return mt_q_fc_scale(acc, mt_q_fc_of(NULL, rq, 0)) == s8_fc_by_double(acc, e);
}

/* e = 2^-j and 3·2^-j (j = 0..40), 2^10 and 2^19 (left of the point: overflow) and the
 * largest below 1: sums at t·2^j ± 2^(j-1) and beside them, and the int32 extremes */
static int ties_agree(void)
{
    int same = 1;
    for (int32_t j = 0; j <= 40; ++j)
        for (int three = 0; three < 2; ++three) {
            const double e = (three ? 3.0 : 1.0) / (double)((uint64_t)1 << j);
            for (int64_t t = -5; t <= 5; ++t)
                for (int64_t off = -1; off <= 1; ++off) {
                    const int64_t half = j > 0 ? (int64_t)1 << (j - 1) : 0, sum = t * ((int64_t)1 << j) + half + off;
                    if (sum < INT32_MIN || sum > INT32_MAX) continue;
                    same &= scales_agree((int32_t)sum, e) && scales_agree((int32_t)-sum, e);
                }
        }
    static const double big[] = {1024.0, 524287.0, 0.99999999999999989, 1.0, 1.5};
    static const int32_t sums[] = {INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 2097151, 2097152, -2097152,
                                   -2097153, 1431655765, -1431655765, 0, 1, -1};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; ++i)
        for (size_t s = 0; s < sizeof sums / sizeof sums[0]; ++s) same &= scales_agree(sums[s], big[i]);
    return same;
}

/* every k of the windows, several cases each; each constructed product is a tie in double */
static int windows_agree(unsigned *made)
{
    int same = 1;
    for (uint32_t k = 33; k <= 81; ++k)
        for (int tries = 0; tries < 12; ++tries) {
            double e;
            int32_t acc;
            if (!s8_fc_window(k, fc_next(), fc_next(), &e, &acc)) continue;
            const double v = (double)acc * e;
            same &= v - (double)(int64_t)v == (acc < 0 ? -0.5 : 0.5); /* the double product is x.5 */
            same &= scales_agree(acc, e);
            ++*made;
        }
    return same;
}

/* a random positive normal double below 2^20, exponents down to 2^-70 (all rounding to 0 below
 * 2^-53), with a random 52-bit fraction, or few fraction bits (an exact tie more likely) */
static double random_scale(void)
{
    const uint64_t exponent = 1042u - fc_next() % 112u, fraction = (uint64_t)fc_next() << 28 ^ fc_next();
    const uint64_t bits = exponent << 52 | (fraction & (fc_next() & 1u ? ((uint64_t)1 << 52) - 1u : 0xF000000000000u));
    double e;
    memcpy(&e, &bits, sizeof e);
    return e;
}

static int32_t random_sum(void)
{
    const uint32_t v = fc_next() << 8 ^ fc_next();
    return fc_next() & 1u ? (int32_t)v >> (v & 31u) : (int32_t)v; /* small and large */
}

static int random_agree(int n)
{
    int same = 1;
    for (int i = 0; i < n; ++i) {
        const double e = random_scale();
        for (int s = 0; s < 8; ++s) same &= scales_agree(random_sum(), e);
    }
    return same;
}

/* mt_s8_fc_requant_block (the siblings' FullyConnected requantization: pixels' sums, bias
 * included, four units a pixel) equals clamp(by_double(acc) + zy) output by output, with
 * 1..16 pixels 5 bytes apart in y, 1..4 units, both clamps, and nothing written between; the
 * scales random, dyadic (ties) or, every eighth run, s8_fc_window's with their sums and the
 * sums beside them */
static int runs_agree(int n)
{
    int same = 1;
    for (int i = 0; i < n; ++i) {
        double e[4];
        int32_t rq[8], acc[4 * MT_S8_RUN], window[4] = {0, 0, 0, 0};
        mt_q_fc q[4];
        for (uint32_t u = 0; u < 4; ++u) {
            e[u] = i & 1 ? random_scale() : 1.0 / (double)(1u << (fc_next() % 12u)); /* dyadic: ties */
            while (i % 8 == 7 && !s8_fc_window(53u + fc_next() % 29u, fc_next(), fc_next(), e + u, window + u)) {
            }
            s8_fc_words(e[u], rq + 2 * u);
            q[u] = mt_q_fc_of(NULL, rq, u);
        }
        const uint32_t r = fc_next(), pixels = 1u + r % MT_S8_RUN, R = 1u + (r >> 4) % 4u;
        const int32_t zy = (int32_t)((r >> 8) % 229u) - 128; /* <= 100: the narrow clamp is [zy, 100] */
        for (uint32_t k = 0; k < 4 * MT_S8_RUN; ++k)
            acc[k] = i % 8 == 7 ? (int32_t)((uint32_t)window[k % 4] + k / 4 % 3 - 1u) /* the window's sum, beside it */
                     : i & 2    ? (int32_t)(fc_next() % 8192u) - 4096
                                : random_sum();
        const mt_q_params p = {0, zy, i & 4 ? zy : -128, i & 4 ? 100 : 127};
        int8_t out[MT_S8_RUN * 5];
        memset(out, 0x5a, sizeof out);
        mt_s8_fc_requant_block(acc, pixels, R, q, p, out, 5);
        for (uint32_t j = 0; j < pixels; ++j) {
            for (uint32_t u = 0; u < R; ++u) {
                const int32_t v = (int32_t)((uint32_t)s8_fc_by_double(acc[4 * j + u], e[u]) + (uint32_t)zy);
                same &= out[5 * j + u] == mt_q_clamp(v, p.act_min, p.act_max);
            }
            for (uint32_t u = R; u < 5; ++u) same &= out[5 * j + u] == 0x5a;
        }
    }
    return same;
}

unsigned s8_fc_rounding_cases(s8_check_fn check)
{
    unsigned made = 0;
    check(ties_agree(), "int8 FullyConnected scaling at ties (double arithmetic)");
    check(windows_agree(&made) && made >= 200u, "int8 FullyConnected scaling where the double product rounds");
    check(random_agree(400), "int8 FullyConnected scaling of random scales and sums");
    check(runs_agree(300), "int8 FullyConnected requantization of runs");
    return 4;
}
