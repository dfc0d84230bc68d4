/*
 * mt_test.h: the smallest test harness that does the job.
 *
 * Every CHECK counts one pass or one failure; a failure prints file:line and the
 * condition (and the values, for the typed forms) but does not stop the test, so
 * one run shows every broken property. MT_TEST_END() prints the greppable final
 * line "N passed, N failed" (the same line QEMU runs of the firmware tests grep for)
 * and evaluates to the process exit status: 0 only when nothing failed.
 *
 * Header-only on purpose: each test program is one .c file plus this header.
 */
#ifndef MT_TEST_H
#define MT_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int mt_test_passed_;
static int mt_test_failed_;

/* Record one outcome; returns ok so callers can chain "if (!CHECK(...)) ...". */
static inline int mt_test_record_(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        mt_test_passed_++;
    } else {
        mt_test_failed_++;
        printf("%s:%d: FAILED: %s\n", file, line, what);
    }
    return ok;
}

/* A plain condition. */
#define CHECK(cond) mt_test_record_((cond) ? 1 : 0, __FILE__, __LINE__, #cond)

/* Two integers (statuses, counts) must be equal; prints both. */
#define CHECK_EQ_INT(a, b)                                                                   \
    mt_test_check_int_((long long)(a), (long long)(b), __FILE__, __LINE__, #a " == " #b)

static inline int mt_test_check_int_(long long a, long long b, const char *file, int line,
                              const char *what)
{
    int ok = a == b;
    if (!mt_test_record_(ok, file, line, what))
        printf("    got %lld, expected %lld\n", a, b);
    return ok;
}

/* A status must be the expected one; prints both values. */
#define CHECK_STATUS(a, b) mt_test_check_int_((long long)(a), (long long)(b), __FILE__, __LINE__, \
                                              #a " returns " #b)

/* |got - want| <= tol; NaN never passes. */
#define CHECK_NEAR(got, want, tol)                                                           \
    mt_test_check_near_((double)(got), (double)(want), (double)(tol), __FILE__, __LINE__,    \
                        #got " ~= " #want)

static inline int mt_test_check_near_(double got, double want, double tol, const char *file, int line,
                               const char *what)
{
    int ok = fabs(got - want) <= tol; /* false for NaN */
    if (!mt_test_record_(ok, file, line, what))
        printf("    got %.9g, expected %.9g (tolerance %.3g, diff %.3g)\n", got, want, tol,
               fabs(got - want));
    return ok;
}

/* Relative closeness for gradients: |a - b| <= rtol * max(1, |b|). */
#define CHECK_CLOSE(got, want, rtol)                                                         \
    mt_test_check_near_((double)(got), (double)(want),                                       \
                        (double)(rtol) * (fabs((double)(want)) > 1.0 ? fabs((double)(want)) : 1.0), \
                        __FILE__, __LINE__, #got " ~= " #want)

/* Bitwise float equality (NaN payloads and signed zeros included). */
#define CHECK_BITS_EQ(a, b)                                                                  \
    mt_test_check_bits_((float)(a), (float)(b), __FILE__, __LINE__, #a " bitwise== " #b)

static inline int mt_test_check_bits_(float a, float b, const char *file, int line, const char *what)
{
    int ok = memcmp(&a, &b, sizeof a) == 0;
    if (!mt_test_record_(ok, file, line, what))
        printf("    got %.9g, expected %.9g\n", (double)a, (double)b);
    return ok;
}

/* Final line and exit status: return MT_TEST_END(); from main. */
#define MT_TEST_END()                                                                        \
    (printf("%d passed, %d failed\n", mt_test_passed_, mt_test_failed_),                     \
     mt_test_failed_ == 0 ? 0 : 1)

/* Deterministic xorshift32 so every run and every target draws the same numbers. */
static unsigned mt_test_rng_state_ = 2463534242u;

static inline void mt_test_seed(unsigned seed)
{
    mt_test_rng_state_ = seed ? seed : 2463534242u;
}

static inline unsigned mt_test_rand_u32(void)
{
    unsigned x = mt_test_rng_state_;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    mt_test_rng_state_ = x;
    return x;
}

/* Uniform in [lo, hi). */
static inline float mt_test_uniform(float lo, float hi)
{
    double u = (double)(mt_test_rand_u32() >> 8) / 16777216.0;
    return (float)((double)lo + u * ((double)hi - (double)lo));
}

#endif /* MT_TEST_H */
