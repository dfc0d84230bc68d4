/*
 * The core's own transcendental functions (mt_math.h) against double-precision libm.
 *
 * Error unit: the ulp of the exact result y = f(x) in float, i.e. 2^(e-24) for y = m·2^e,
 * m in [0.5, 1), and never less than 2^-149 (the subnormal spacing), so results in the
 * subnormal range are judged in absolute terms. mt_math.h promises "within 2 ulp of the
 * correctly rounded result", i.e. |got - y| <= 2.5 ulp of y; sigmoid is allowed 4 ulp
 * (1/(1+e^-x) compounds expf's error with a division; see the report line it prints).
 *
 * Sweep: every STRIDE-th float bit pattern of both signs, from the smallest subnormal to
 * FLT_MAX, so every binade (tiny arguments, arguments near 1, overflow and underflow
 * thresholds) is sampled densely; plus explicit special values.
 *
 * Under an emulator (ARM Linux builds run by qemu-user, ~10x slower) tests/core/CMakeLists.txt
 * sets MT_TEST_MATH_STRIDE to the prime 1021: 8x fewer points, still every binade (~4.2M
 * points per function), the grids and special values unchanged.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "mt_math.h"
#include "mt_test.h"

#ifdef MT_TEST_MATH_STRIDE
#define STRIDE MT_TEST_MATH_STRIDE
#else
#define STRIDE 127u
#endif
#ifndef FLT_TRUE_MIN /* C11; gcc's -std=c99 headers lack it */
#define FLT_TRUE_MIN 1.40129846e-45f
#endif

static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Error of got in ulps of the exact y; inf when got is not finite but y rounds to finite. */
static double ulp_error(float got, double y)
{
    float yr = (float)y;
    if (isnan(y))
        return isnan(got) ? 0.0 : INFINITY;
    if (isinf(yr)) /* exact result overflows float: inf, or FLT_MAX from a truncating scheme */
        return (isinf(got) && (got > 0.f) == (y > 0.0)) || fabsf(got) == FLT_MAX ? 0.0 : INFINITY;
    if (!isfinite(got))
        return INFINITY;
    int e;
    frexp(y, &e);
    double ulp = ldexp(1.0, e - 24);
    if (ulp < ldexp(1.0, -149) || y == 0.0)
        ulp = ldexp(1.0, -149);
    return fabs((double)got - y) / ulp;
}

typedef float (*fn32)(float);
typedef double (*fn64)(double);

static double ref_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* Sweep both signs; count points over tol and report the worst one. */
static void sweep(const char *name, fn32 f, fn64 ref, double tol, int negative_domain)
{
    double worst = 0.0;
    float worst_x = 0.f;
    long bad = 0, n = 0;
    for (int sign = 0; sign < 2; sign++) {
        if (sign && !negative_domain)
            break;
        for (uint32_t b = 1; b <= 0x7F7FFFFFu; b += STRIDE) {
            float x = from_bits(b | (sign ? 0x80000000u : 0u));
            double err = ulp_error(f(x), ref((double)x));
            n++;
            if (err > tol)
                bad++;
            if (err > worst || isnan(err))
                worst = err, worst_x = x;
        }
    }
    printf("%s: %ld points, worst %.3g ulp at x = %.9g (f = %.9g, exact %.9g)\n", name, n,
           worst, (double)worst_x, (double)f(worst_x), ref((double)worst_x));
    if (!CHECK_EQ_INT(bad, 0))
        printf("    %s: %ld points over %.1f ulp\n", name, bad, tol);
}

/* Also sweep [-20, 20] on a uniform grid: the range activations actually see. */
static void sweep_grid(const char *name, fn32 f, fn64 ref, double tol, double lo, double hi)
{
    long bad = 0;
    for (int i = 0; i <= 400000; i++) {
        float x = (float)(lo + (hi - lo) * i / 400000.0);
        if (ulp_error(f(x), ref((double)x)) > tol) {
            if (bad++ < 5)
                printf("    %s(%.9g) = %.9g, exact %.9g\n", name, (double)x, (double)f(x),
                       ref((double)x));
        }
    }
    if (!CHECK_EQ_INT(bad, 0))
        printf("    %s grid: %ld points over %.1f ulp\n", name, bad, tol);
}

static int is_pos_zero(float x)
{
    return x == 0.f && !signbit(x);
}

static void special_values(void)
{
    const float inf = INFINITY, nan = NAN;

    /* exp: exact at 0, limits at ±inf, overflow past ln(FLT_MAX) = 88.7228,
     * subnormal results between -87.34 and -103.97, zero below */
    CHECK_BITS_EQ(mt_expf(0.f), 1.f);
    CHECK_BITS_EQ(mt_expf(-0.f), 1.f);
    CHECK(isinf(mt_expf(inf)) && mt_expf(inf) > 0.f);
    CHECK(is_pos_zero(mt_expf(-inf)));
    CHECK(isnan(mt_expf(nan)));
    CHECK(isinf(mt_expf(88.8f)));
    CHECK(isinf(mt_expf(1000.f)));
    CHECK(isfinite(mt_expf(88.7f)));
    CHECK(ulp_error(mt_expf(88.7f), exp(88.7f)) <= 2.5);
    CHECK(ulp_error(mt_expf(-100.f), exp(-100.0)) <= 2.5); /* 3.7e-44, subnormal */
    CHECK(ulp_error(mt_expf(-103.f), exp(-103.0)) <= 2.5);
    CHECK(ulp_error(mt_expf(-87.5f), exp(-87.5)) <= 2.5); /* just below FLT_MIN */
    CHECK(mt_expf(-104.f) >= 0.f && mt_expf(-104.f) <= 2.f * FLT_TRUE_MIN);
    CHECK(is_pos_zero(mt_expf(-1000.f)));
    CHECK_NEAR(mt_expf(1.f), exp(1.0), 2.5 * ldexp(1.0, -22));

    /* log: exact at 1, -inf at ±0, NaN below 0, subnormal arguments accurate */
    CHECK_BITS_EQ(mt_logf(1.f), 0.f);
    CHECK(isinf(mt_logf(0.f)) && mt_logf(0.f) < 0.f);
    CHECK(isinf(mt_logf(-0.f)) && mt_logf(-0.f) < 0.f);
    CHECK(isnan(mt_logf(-1.f)));
    CHECK(isnan(mt_logf(-FLT_TRUE_MIN)));
    CHECK(isnan(mt_logf(-inf)));
    CHECK(isinf(mt_logf(inf)) && mt_logf(inf) > 0.f);
    CHECK(isnan(mt_logf(nan)));
    CHECK(ulp_error(mt_logf(FLT_TRUE_MIN), log((double)FLT_TRUE_MIN)) <= 2.5);
    CHECK(ulp_error(mt_logf(FLT_MIN), log((double)FLT_MIN)) <= 2.5);
    CHECK(ulp_error(mt_logf(FLT_MAX), log((double)FLT_MAX)) <= 2.5);
    CHECK(ulp_error(mt_logf(1.f + FLT_EPSILON), log1p((double)FLT_EPSILON)) <= 2.5);
    CHECK(ulp_error(mt_logf(1.f - FLT_EPSILON / 2), log1p(-(double)FLT_EPSILON / 2)) <= 2.5);

    /* tanh: ±1 at ±inf and for large |x|, x itself for tiny x */
    CHECK(mt_tanhf(0.f) == 0.f);
    CHECK(mt_tanhf(-0.f) == 0.f);
    CHECK_BITS_EQ(mt_tanhf(inf), 1.f);
    CHECK_BITS_EQ(mt_tanhf(-inf), -1.f);
    CHECK_BITS_EQ(mt_tanhf(20.f), 1.f);
    CHECK_BITS_EQ(mt_tanhf(-1e30f), -1.f);
    CHECK(isnan(mt_tanhf(nan)));
    CHECK(ulp_error(mt_tanhf(1e-30f), tanh(1e-30)) <= 2.5);
    CHECK(ulp_error(mt_tanhf(-FLT_TRUE_MIN), -(double)FLT_TRUE_MIN) <= 2.5);

    /* sigmoid: 1/2 at 0, limits, no overflow of e^-x for very negative x */
    CHECK_BITS_EQ(mt_sigmoidf(0.f), 0.5f);
    CHECK_BITS_EQ(mt_sigmoidf(inf), 1.f);
    CHECK(is_pos_zero(mt_sigmoidf(-inf)));
    CHECK(isnan(mt_sigmoidf(nan)));
    CHECK_BITS_EQ(mt_sigmoidf(100.f), 1.f);
    CHECK(ulp_error(mt_sigmoidf(-50.f), ref_sigmoid(-50.0)) <= 4.0);
    CHECK(ulp_error(mt_sigmoidf(-100.f), ref_sigmoid(-100.0)) <= 4.0); /* subnormal result */
    CHECK(mt_sigmoidf(-200.f) >= 0.f && mt_sigmoidf(-200.f) <= 2.f * FLT_TRUE_MIN);
    for (int i = 0; i < 1000; i++) { /* range [0, 1] and monotone */
        float x = -30.f + 0.06f * (float)i;
        float s = mt_sigmoidf(x), s2 = mt_sigmoidf(x + 0.06f);
        CHECK(s >= 0.f && s <= 1.f && s <= s2);
    }

    CHECK(mt_isfinitef(0.f));
    CHECK(mt_isfinitef(-FLT_MAX));
    CHECK(mt_isfinitef(FLT_TRUE_MIN));
    CHECK(!mt_isfinitef(inf));
    CHECK(!mt_isfinitef(-inf));
    CHECK(!mt_isfinitef(nan));
    CHECK(!mt_isfinitef(-nan));
}

int main(void)
{
    special_values();
    sweep("mt_expf", mt_expf, exp, 2.5, 1);
    sweep("mt_logf", mt_logf, log, 2.5, 0);
    sweep("mt_tanhf", mt_tanhf, tanh, 2.5, 1);
    sweep("mt_sigmoidf", mt_sigmoidf, ref_sigmoid, 4.0, 1);
    sweep_grid("mt_expf", mt_expf, exp, 2.5, -20.0, 20.0);
    sweep_grid("mt_logf", mt_logf, log, 2.5, 1e-3, 4.0);
    sweep_grid("mt_tanhf", mt_tanhf, tanh, 2.5, -20.0, 20.0);
    sweep_grid("mt_sigmoidf", mt_sigmoidf, ref_sigmoid, 4.0, -20.0, 20.0);
    return MT_TEST_END();
}
