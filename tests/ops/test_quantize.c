/*
 * QUANTIZE and DEQUANTIZE (ops/quantize.c): TFLite's AffineQuantize (round half away from zero,
 * saturation, NaN as an x86 conversion gives it) on chosen values and against its long form on
 * every tie and its neighbours; DEQUANTIZE's scale · (q - zero_point); QUANTIZE's backward, the
 * straight-through mask. LiteRT's own kernels: tests/ops/test_quantize.py.
 */
#include <math.h>
#include <stdint.h>

#include "mt_test.h"
#include "ops/quant.h"
#include "ops/quant_grad.h"

static void test_quantize_dequantize(void)
{
    const float x[8] = {0.25f, -0.25f, 0.75f, -0.75f, 1000.0f, -1000.0f, NAN, 0.0f};
    int8_t q[8];
    mt_op_quantize_f32_s8(x, q, 8, 0.5f, 3);
    CHECK_EQ_INT(q[0], 4);    /* 0.5 rounds away from zero: 1 + 3 */
    CHECK_EQ_INT(q[1], 2);    /* -1 + 3 */
    CHECK_EQ_INT(q[2], 5);    /* 1.5 -> 2 */
    CHECK_EQ_INT(q[3], 1);    /* -1.5 -> -2 */
    CHECK_EQ_INT(q[4], 127);  /* saturates */
    CHECK_EQ_INT(q[5], -128);
    CHECK_EQ_INT(q[6], -128); /* NaN: what an x86 conversion gives TFLite */
    CHECK_EQ_INT(q[7], 3);
    float y[8];
    mt_op_dequantize_s8_f32(q, y, 8, 0.5f, 3);
    CHECK(y[0] == 0.5f && y[1] == -0.5f && y[4] == 62.0f && y[5] == -65.5f && y[7] == 0.0f);
}

/* TFLite's AffineQuantize step by step: std::round (half away from zero) of x / scale, then
 * the conversion to int32 (saturating; NaN: INT32_MIN, an x86 conversion's), + zp in 64 bits,
 * the int8 clamp */
static int8_t quantize_long_form(float x, float scale, int32_t zp)
{
    const float v = x / scale;
    int64_t r;
    if (v != v) r = INT32_MIN;
    else if (v >= 2147483648.0f) r = INT32_MAX;
    else if (v <= -2147483648.0f) r = INT32_MIN;
    else {
        const double d = (double)v; /* d ± 0.5 is exact in double */
        r = (int64_t)(d >= 0.0 ? floor(d + 0.5) : ceil(d - 0.5)); /* ties away from zero */
    }
    r += zp;
    return (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
}

/* mt_op_quantize_f32_s8 against the long form: every tie and its neighbours up to ±1100, the
 * int8 clamp's edges at every zero point, huge values, infinities and NaN, at several scales
 * and zero points including the ends of int8 */
static void test_quantize_against_long_form(void)
{
    static const float scales[] = {1.0f, 0.5f, 0.1f, 3.0f, 1e-8f};
    static const int32_t zps[] = {-128, -5, 0, 3, 127};
    enum { N = 14000 };
    static float xs[N];
    static int8_t got[N];
    int bad = 0, n = 0;
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; ++si) {
        const float sc = scales[si];
        n = 0;
        for (int k = -2200; k <= 2200; ++k) { /* k / 2: every half, then its neighbours */
            const float v = (float)k * 0.5f;
            xs[n++] = v * sc, xs[n++] = nextafterf(v, -INFINITY) * sc, xs[n++] = nextafterf(v, INFINITY) * sc;
        }
        const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 2147483648.0f * sc,
                                 -2147483648.0f * sc, 1023.5f * sc, -1023.5f * sc, 1024.5f * sc, -1024.5f * sc};
        for (size_t j = 0; j < sizeof special / sizeof special[0]; ++j) xs[n++] = special[j];
        for (size_t zi = 0; zi < sizeof zps / sizeof zps[0]; ++zi) {
            mt_op_quantize_f32_s8(xs, got, (size_t)n, sc, zps[zi]);
            for (int i = 0; i < n; ++i) bad += got[i] != quantize_long_form(xs[i], sc, zps[zi]);
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n == 3 * 4401 + 12); /* every value above was tried */
}

/* QUANTIZE's backward (ops/quant_grad.h, the straight-through estimator): dx = dy where
 * round(x / s) + zp lies in [-128, 127], 0 where the clamp cut it, on a value drawn inside
 * each integer's rounding interval (no tie) from k = -135 to 134; the forward agrees on k */
static void check_quantize_backward(void)
{
    enum { N = 270 };
    static float x[N], dy[N], dx[N];
    static int8_t q[N];
    const float s = 0.037f;
    const int32_t zp = -11;
    for (int i = 0; i < N; ++i) {
        const int k = -135 + i; /* round(x / s) + zp = k: -135 .. 134 */
        x[i] = s * ((float)(k - zp) + mt_test_uniform(-0.3f, 0.3f));
        dy[i] = mt_test_uniform(-1.0f, 1.0f);
        dx[i] = 0.0f;
    }
    mt_op_quantize_f32_s8(x, q, N, s, zp);
    mt_op_quantize_f32_s8_backward(x, dy, dx, N, s, zp);
    int wrong = 0;
    for (int i = 0; i < N; ++i) {
        const int k = -135 + i, passes = k >= -128 && k <= 127;
        wrong += dx[i] != (passes ? dy[i] : 0.0f);
        if (passes) wrong += q[i] != k; /* the forward agrees on the value */
    }
    CHECK_EQ_INT(wrong, 0);
}

int main(void)
{
    test_quantize_dequantize();
    test_quantize_against_long_form();
    /* where the generator stood when one program ran every int8 op's backward: the case draws
     * the numbers it always did */
    mt_test_seed(155517941u);
    check_quantize_backward();
    return MT_TEST_END();
}
