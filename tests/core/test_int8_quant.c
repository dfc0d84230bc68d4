/*
 * The integer arithmetic of the int8 ops (micro_core/src/ops/quant.h) on the values where
 * TFLite's reference kernels are easiest to get wrong: the saturating doubling high multiply,
 * rounding ties (gemmlowp rounds x.5 up in the high multiply and away from zero in the
 * rounding shift) and left shifts; QUANTIZE's rounding and saturation and MEAN's division are
 * their ops' tests (tests/ops/test_quantize.c, test_pooling_s8.c). The int8 siblings'
 * requantization of whole runs (each build's vector form) is held to mt_q_requantize by the
 * sibling cases (boards/app/siblings_s8.c), on the host and on every board. FullyConnected's
 * scaling in double (mt_q_fc_scale) is held to C's double arithmetic here on millions of scales
 * and sums (the board cases, boards/app/siblings_s8_fc.c, run fewer). The whole kernels are
 * compared with LiteRT's bit for bit in tests/convert/test_int8.py and, at ties, in each op's
 * tests/ops/test_<source>.py.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mt_test.h"
#include "ops/quant.h"
#include "siblings_s8_fc.h"

static void test_doubling_high_mul(void)
{
    CHECK_EQ_INT(mt_q_doubling_high_mul(INT32_MIN, INT32_MIN), INT32_MAX); /* the one overflow */
    CHECK_EQ_INT(mt_q_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
    CHECK_EQ_INT(mt_q_doubling_high_mul(1 << 15, 1 << 15), 1);     /* +0.5 rounds up */
    CHECK_EQ_INT(mt_q_doubling_high_mul(-(1 << 15), 1 << 15), 0);  /* -0.5 rounds up too */
    CHECK_EQ_INT(mt_q_doubling_high_mul(-(1 << 15) - 1, 1 << 15), -1);
    CHECK_EQ_INT(mt_q_doubling_high_mul(INT32_MAX, INT32_MAX), INT32_MAX - 1);
    CHECK_EQ_INT(mt_q_doubling_high_mul(INT32_MIN, INT32_MAX), -INT32_MAX);
}

/* gemmlowp's own form: (a·b + nudge) / 2^31 truncated toward zero */
static int32_t gemmlowp_doubling_high_mul(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) return INT32_MAX;
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? (int64_t)1 << 30 : 1 - ((int64_t)1 << 30);
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* mt_q_doubling_high_mul's floor form equals gemmlowp's on every sign, at the rounding ties,
 * their neighbours and the extremes, and on 2 million random pairs */
static void test_doubling_high_mul_form(void)
{
    static const int32_t edges[] = {0, 1, -1, 2, -2, 1 << 15, -(1 << 15), (1 << 15) + 1, -(1 << 15) - 1,
                                    1 << 30, -(1 << 30), INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1,
                                    46341, -46341, 3, -3};
    const size_t n = sizeof edges / sizeof edges[0];
    int same = 1;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            same &= mt_q_doubling_high_mul(edges[i], edges[j]) == gemmlowp_doubling_high_mul(edges[i], edges[j]);
    CHECK(same);
    uint32_t r = 7u;
    same = 1;
    for (int k = 0; k < 2000000; ++k) {
        r = r * 1664525u + 1013904223u;
        const int32_t a = (int32_t)r;
        r = r * 1664525u + 1013904223u;
        const int32_t b = k & 1 ? (int32_t)(r >> (r & 31u)) : (int32_t)r; /* small and large */
        same &= mt_q_doubling_high_mul(a, b) == gemmlowp_doubling_high_mul(a, b);
        /* products exactly at a tie: a·b = m·2^31 ± 2^30 */
        same &= mt_q_doubling_high_mul(a >> 16 | 1, 1 << 15) == gemmlowp_doubling_high_mul(a >> 16 | 1, 1 << 15);
    }
    CHECK(same);
}

/* mt_q_scale (the reference kernels' form) and the form the siblings' loops take
 * (mt_q_right_form: MT_Q_RIGHT_TWO for e >= 2) both give `expected` */
static int scales_agree(int32_t sum, mt_q_requant q, int32_t expected)
{
    return mt_q_scale(sum, q) == expected && mt_q_scale_known(sum, q, mt_q_right_form(q)) == expected;
}

/* mt_q_requantize (the per-channel constants made once, no saturation test: multipliers are
 * >= 0) equals mt_q_multiply + zy + clamp on random sums, biases, multipliers and every shift */
static void test_requantize(void)
{
    uint32_t r = 11u;
    int same = 1;
    for (int k = 0; k < 1000000; ++k) {
        int32_t v[6];
        for (int j = 0; j < 6; ++j) r = r * 1664525u + 1013904223u, v[j] = (int32_t)r;
        const int32_t rq[2] = {(int32_t)((uint32_t)v[0] >> 1) | (k & 3 ? 1 << 30 : 0), -31 + (int32_t)((uint32_t)v[1] % 62u)};
        const int32_t acc = k & 1 ? v[2] >> ((uint32_t)v[3] & 31u) : v[2], bias = v[4] >> 8;
        const int32_t zy = (int32_t)(int8_t)v[5], lo = k & 4 ? zy : -128, hi = 127;
        const int32_t sum = (int32_t)((uint32_t)acc + (uint32_t)bias), scaled = mt_q_multiply(sum, rq[0], rq[1]);
        same &= scales_agree(sum, mt_q_requant_of(NULL, rq, 0), scaled); /* before the clamp hides it */
        same &= mt_q_requantize(acc, mt_q_requant_of(&bias, rq, 0), zy, lo, hi) == mt_q_clamp(scaled + zy, lo, hi);
    }
    CHECK(same);
}

/* mt_q_scale's one-step rounding at gemmlowp's ties: with the multiplier 2^30 (0.5) the high
 * multiply of 2h is h, so h = t·2^e ± 2^(e-1) (+ -1, 0, 1) puts the rounding shift by e on a
 * tie and beside it, for both signs and every e */
static void test_scale_ties(void)
{
    int same = 1, cases = 0;
    for (int32_t e = 1; e <= 31; ++e) {
        const int32_t rq[2] = {1 << 30, -e};
        for (int64_t t = -3; t <= 3; ++t)
            for (int64_t side = -1; side <= 1; side += 2)
                for (int64_t off = -1; off <= 1; ++off) {
                    const int64_t h = t * ((int64_t)1 << e) + side * ((int64_t)1 << (e - 1)) + off;
                    if (h >= (1 << 30) || h < -(1 << 30)) continue;
                    const int32_t sum = (int32_t)(2 * h);
                    same &= scales_agree(sum, mt_q_requant_of(NULL, rq, 0), mt_q_multiply(sum, rq[0], rq[1]));
                    cases += 1;
                }
    }
    CHECK(same);
    CHECK(cases > 1000);
    const int32_t half_rq[2] = {1 << 30, -1}; /* 10·0.5 = 5, 5 / 2 = 2.5 -> 3; -10: -5, -2.5 -> -3 */
    CHECK_EQ_INT(mt_q_scale(10, mt_q_requant_of(NULL, half_rq, 0)), 3);
    CHECK_EQ_INT(mt_q_scale(-10, mt_q_requant_of(NULL, half_rq, 0)), -3);
    CHECK_EQ_INT(mt_q_scale(-6, mt_q_requant_of(NULL, half_rq, 0)), -2); /* -1.5 -> -2 */
}

/* mt_q_scale reads [P < 0] from the sum's sign (ops/quant.h): the two differ only for
 * sum < 0 with sum·M >= -2^30, where both rounding forms give 0. Held to mt_q_multiply on
 * those sums for small and large multipliers (M = 0, 1, 1000, 2^29 - 1, 2^30, 2^30 + 1,
 * 2^31 - 1: -2^30 / M and its neighbours), on random sums and multipliers, and on sums walked
 * to a rounding tie of a small e (2^(e-1) in the low e bits of floor(P / 2^31)) and beside it */
static void test_scale_sign_from_sum(void)
{
    static const int32_t ms[] = {0, 1, 1000, (1 << 29) - 1, 1 << 30, (1 << 30) + 1, INT32_MAX};
    int same = 1, ties = 0;
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
        for (int32_t e = 1; e <= 31; ++e) {
            const int32_t m = ms[i], rq[2] = {m, -e};
            const mt_q_requant q = mt_q_requant_of(NULL, rq, 0);
            const int64_t edge = m ? -(((int64_t)1 << 30) / m) : INT32_MIN; /* the last sum with sum·M >= -2^30 */
            for (int64_t d = -2; d <= 2; ++d) {
                const int64_t sum = edge + d < INT32_MIN ? INT32_MIN : edge + d;
                same &= scales_agree((int32_t)sum, q, mt_q_multiply((int32_t)sum, m, -e));
            }
            for (int32_t sum = -3; sum <= 0; ++sum) same &= scales_agree(sum, q, mt_q_multiply(sum, m, -e));
        }
    uint32_t r = 5u;
    for (int k = 0; k < 300000; ++k) {
        r = r * 1664525u + 1013904223u;
        const int32_t m = k % 4 == 0 ? (int32_t)(r >> 12) : (int32_t)(r >> 1);
        r = r * 1664525u + 1013904223u;
        const int32_t e = 1 + (int32_t)(r % 31u), rq[2] = {m, -e};
        r = r * 1664525u + 1013904223u;
        int32_t sum = k & 1 ? (int32_t)r : (int32_t)r >> (r & 31u);
        if (sum > INT32_MAX - 100 || sum < INT32_MIN + 100) sum /= 2; /* the walk and -sum stay in range */
        const mt_q_requant q = mt_q_requant_of(NULL, rq, 0);
        for (int step = 0; step < 64 && e <= 8; ++step, ++sum) { /* walk to a tie of a small e */
            const int64_t h = ((int64_t)sum * m + ((int64_t)1 << 30)) >> 31;
            if ((h & ((1 << e) - 1)) == (1 << (e - 1))) {
                ++ties;
                for (int32_t d = -1; d <= 1; ++d) same &= scales_agree(sum + d, q, mt_q_multiply(sum + d, m, -e));
                break;
            }
        }
        same &= scales_agree(sum, q, mt_q_multiply(sum, m, -e));
        same &= scales_agree(-sum, q, mt_q_multiply(-sum, m, -e));
    }
    CHECK(same);
    CHECK(ties > 10000);
}

static void test_rounding_divide_by_pot(void)
{
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(5, 1), 3);   /* 2.5 -> 3 */
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(-5, 1), -3); /* -2.5 -> -3 */
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(-3, 1), -2);
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(7, 2), 2);   /* 1.75 */
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(-7, 2), -2);
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(12345, 0), 12345);
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(INT32_MIN, 31), -1);
    CHECK_EQ_INT(mt_q_rounding_divide_by_pot(INT32_MAX, 31), 1);
}

static void test_multiply(void)
{
    /* multiplier 2^30 with shift 0 is 0.5 */
    CHECK_EQ_INT(mt_q_multiply(100, 1 << 30, 0), 50);
    CHECK_EQ_INT(mt_q_multiply(101, 1 << 30, 0), 51);   /* 50.5 away from zero */
    CHECK_EQ_INT(mt_q_multiply(-101, 1 << 30, 0), -50); /* the high multiply rounds -50.5 up */
    CHECK_EQ_INT(mt_q_multiply(-101, 1 << 30, -1), -25); /* -25.25 */
    CHECK_EQ_INT(mt_q_multiply(-103, 1 << 30, -1), -26); /* -25.75 */
    CHECK_EQ_INT(mt_q_multiply(3, 1 << 30, 2), 6);       /* left shift, then 0.5 */
    CHECK_EQ_INT(mt_q_multiply(1000, 0, 0), 0);
    /* a left shift wraps like TFLite's int32 multiply instead of being undefined */
    CHECK_EQ_INT(mt_q_multiply(1 << 30, 1 << 30, 2), 0);
    CHECK_EQ_INT(mt_q_clamp(300, -128, 127), 127);
    CHECK_EQ_INT(mt_q_clamp(-300, -128, 127), -128);
    CHECK_EQ_INT(mt_q_clamp(5, 10, 20), 10);
    CHECK_EQ_INT(mt_q_param_byte(0x80FF7F01u, 0), 1);
    CHECK_EQ_INT(mt_q_param_byte(0x80FF7F01u, 1), 127);
    CHECK_EQ_INT(mt_q_param_byte(0x80FF7F01u, 2), -1);
    CHECK_EQ_INT(mt_q_param_byte(0x80FF7F01u, 3), -128);
}

static int32_t fc_scale(int32_t acc, double e)
{
    int32_t rq[2];
    s8_fc_words(e, rq);
    return mt_q_fc_scale(acc, mt_q_fc_of(NULL, rq, 0));
}

/* The rule LiteRT's reference FullyConnected computes, on the cases that tell it from the
 * others (each value measured against LiteRT 2.3.0's BUILTIN_REF: tests/ops/
 * test_dense_s8.py): ties away from zero, where gemmlowp's high multiply rounds -1.5 up
 * to -1; the product's rounding to double; the overflow of E > 1 (x86-64's INT32_MIN) and
 * the wrap of + zy */
static void test_fc_scale(void)
{
    CHECK_EQ_INT(fc_scale(-3, 0.5), -2);
    CHECK_EQ_INT(fc_scale(3, 0.5), 2);
    CHECK_EQ_INT(fc_scale(-127, 0.5), -64);
    CHECK_EQ_INT(fc_scale(1, 0.25), 0); /* one rounding: gemmlowp's two give 1 */
    CHECK_EQ_INT(fc_scale(-5, 0.25), -1);
    CHECK_EQ_INT(fc_scale(-6, 0.25), -2);
    CHECK_EQ_INT(fc_scale(0, 0.75), 0);
    CHECK_EQ_INT(fc_scale(INT32_MIN, 1.0), INT32_MIN);
    CHECK_EQ_INT(fc_scale(INT32_MAX, 0.99999999999999989), INT32_MAX); /* 2^31 - 1 - 2.4e-7 */
    CHECK_EQ_INT(fc_scale(INT32_MIN, 0.99999999999999989), INT32_MIN);
    /* sx = 0.0008894163183867931, sw = 9.238199709216133e-05, sy = 0.5641224980354309 (float
     * scales): acc·E = 125.4999999999999999996..., the double product 125.5 exactly: 126 */
    const double e = (double)0.0008894163183867931f * (double)9.238199709216133e-05f / (double)0.5641224980354309f;
    CHECK_EQ_INT(fc_scale(861637727, e), 126);
    CHECK_EQ_INT(fc_scale(-861637727, e), -126);
    CHECK_EQ_INT(fc_scale(861637726, e), 125);
    /* E = 4: 4·(2^29 - 1) fits, 4·2^29 does not (INT32_MIN, as LiteRT on x86-64), -4·2^29 does */
    CHECK_EQ_INT(fc_scale(536870911, 4.0), 2147483644);
    CHECK_EQ_INT(fc_scale(536870912, 4.0), INT32_MIN);
    CHECK_EQ_INT(fc_scale(-536870912, 4.0), INT32_MIN);
    CHECK_EQ_INT(fc_scale(-536870913, 4.0), INT32_MIN);
    int32_t rq[2];
    s8_fc_words(4.0, rq);
    const mt_q_fc four = mt_q_fc_of(NULL, rq, 0);
    CHECK_EQ_INT(mt_q_fc_requantize(536870911, four, 5, -128, 127), -128); /* 2^31 - 4 + 5 wraps */
    CHECK_EQ_INT(mt_q_fc_requantize(536870912, four, -5, -128, 127), 127); /* INT32_MIN - 5 wraps */
    CHECK_EQ_INT(mt_q_fc_requantize(536870912, four, 0, -128, 127), -128);
    CHECK_EQ_INT(mt_q_fc_requantize(100, four, 0, -128, 127), 127);
    /* a scale below 2^-53 rounds every sum to 0 (its significand dropped) */
    s8_fc_words(1.0 / 9007199254740992.0 / 8.0, rq);
    CHECK_EQ_INT(fc_scale(INT32_MIN, 1.0 / 9007199254740992.0 / 8.0), 0);
    CHECK_EQ_INT((int)mt_q_fc_of(NULL, rq, 0).m_hi, 0);
}

/* mt_q_fc_scale against double arithmetic: every exponent from 2^20 down to 2^-70 with random
 * fractions (and few fraction bits, where ties are common) on 3 million sums of every size,
 * 300 thousand sums at the ties of dyadic scales, and 50 thousand products built to round to
 * a tie in double (s8_fc_window, every k from 33 to 81) */
static void test_fc_scale_against_double(void)
{
    uint32_t r = 3u;
#define NEXT() (r = r * 1664525u + 1013904223u, r ^ r >> 15)
    int same = 1;
    for (int i = 0; i < 3000000; ++i) {
        const uint32_t exponent = 1042u - NEXT() % 112u, hi = NEXT(), lo = NEXT(), pick = NEXT();
        const uint64_t bits52 = (uint64_t)(hi & 0xFFFFFu) << 32 | lo;
        const uint64_t fraction = bits52 & (pick & 1u ? ~(uint64_t)0 : 0xFF00000000000u); /* or 8 bits: ties */
        const uint64_t bits = (uint64_t)exponent << 52 | fraction;
        double e;
        memcpy(&e, &bits, sizeof e);
        const uint32_t v = NEXT();
        const int32_t acc = pick & 2u ? (int32_t)v : (int32_t)v >> (pick >> 8 & 31u);
        same &= fc_scale(acc, e) == s8_fc_by_double(acc, e);
    }
    CHECK(same);
    same = 1;
    int ties = 0;
    for (int i = 0; i < 100000; ++i) {
        /* e = o·2^-(j+16) (o odd, 16 bits) and acc = q·2^(j+15) (q odd): acc·e = q·o / 2, a tie;
         * and the sums beside it */
        const uint32_t j = NEXT() % 16u, o = (NEXT() & 0xFFFFu) | 1u, q = (NEXT() >> (j + 16u)) | 1u;
        const double e = (double)o / (double)((uint64_t)1 << (j + 16u));
        const int32_t acc = (int32_t)(q << (j + 15u)) * (NEXT() & 1u ? -1 : 1);
        for (int32_t d = -1; d <= 1; ++d) {
            const double v = (double)(acc + d) * e;
            ties += v - (double)(int64_t)v == (acc < 0 ? -0.5 : 0.5);
            same &= fc_scale(acc + d, e) == s8_fc_by_double(acc + d, e);
        }
    }
    CHECK(same);
    CHECK(ties == 100000);
    same = 1;
    unsigned made = 0;
    for (uint32_t k = 33; k <= 81; ++k)
        for (int tries = 0; tries < 2000; ++tries) {
            double e;
            int32_t acc;
            const uint32_t r1 = NEXT(), r2 = NEXT();
            if (!s8_fc_window(k, r1, r2, &e, &acc)) continue;
            ++made;
            same &= fc_scale(acc, e) == s8_fc_by_double(acc, e);
        }
#undef NEXT
    CHECK(same);
    CHECK(made > 40000u);
}

static void count_check(int ok, const char *what)
{
    mt_test_record_(ok, "siblings_s8_fc.c", 0, what);
}

int main(void)
{
    test_fc_scale();
    test_fc_scale_against_double();
    CHECK_EQ_INT(s8_fc_rounding_cases(count_check), 4); /* the board's cases too */
    test_doubling_high_mul();
    test_doubling_high_mul_form();
    test_requantize();
    test_scale_ties();
    test_scale_sign_from_sum();
    test_rounding_divide_by_pot();
    test_multiply();
    return MT_TEST_END();
}
