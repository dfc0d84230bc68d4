/*
 * exp, log, tanh and sigmoid in plain float arithmetic.
 *
 * Why not libm: glibc and newlib round the last bit of expf/logf/tanhf
 * differently, and host simulation must match the device bit for bit. These
 * routines use only +, -, *, / and bit manipulation, evaluated in a fixed
 * order (the core is compiled with -ffp-contract=off), so every IEEE-754
 * target — x86-64 SSE, ARM VFP, soft-float Cortex-M3 — gives identical bits.
 */
#include "mt_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "float_bits.h"
#include "select/kernels.h"

/* 2^n for -126 <= n <= 127, exactly. */
static float pow2i(int n)
{
    return mt_f32_from_bits((uint32_t)(n + 127) << 23);
}

int mt_isfinitef(float x)
{
    return (mt_f32_bits(x) & 0x7f800000u) != 0x7f800000u;
}

int mt_all_finitef(const float *x, size_t n)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        bad |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
    }
    return bad == 0;
}

/* MT_EXPF_SERIES's operations on one float */
#define MT_EXPF_ADD(a, b) ((a) + (b))
#define MT_EXPF_MUL(a, b) ((a) * (b))
#define MT_EXPF_K(c) (c)

/*
 * e^x = 2^n · e^r with n = round(x / ln2) and r = x - n·ln2, |r| <= ln2/2.
 * n·ln2 is subtracted in two parts (Cody–Waite): LN2_HI has few enough
 * significant bits that n·LN2_HI is exact for every n reachable here.
 * e^r is its Taylor series to r^7 (MT_EXPF_SERIES, mt_math.h): the remainder r^8/8! < 6e-9
 * relative.
 */
float mt_expf(float x)
{
    static const float LN2_HI = 0.693359375f;
    static const float LN2_LO = -2.12194440e-4f;
    static const float INV_LN2 = 1.44269504088896341f;
    if (x != x) return x;
    if (x > 88.72283935546875f) return INFINITY;
    if (x < -103.972084f) return 0.0f;

    float fn = x * INV_LN2;
    int n = (int)(fn >= 0.0f ? fn + 0.5f : fn - 0.5f);
    float r = x - (float)n * LN2_HI;
    r = r - (float)n * LN2_LO;

    float p;
    MT_EXPF_SERIES(p, r, MT_EXPF_ADD, MT_EXPF_MUL, MT_EXPF_K);

    if (n > 127) return (p * pow2i(127)) * pow2i(n - 127);
    if (n < -126) return (p * pow2i(n + 100)) * pow2i(-100); /* subnormal result */
    return p * pow2i(n);
}

/* out[j] = mt_expf(x[j] - m): the reference of select/kernels.def's expf_shifted_f32, whose x86
 * and Helium kernels take sixteen and four lanes at a time (the same bits) */
void mt_expf_shifted_ref(const float *x, float m, float *out, uint32_t n)
{
    for (uint32_t j = 0; j < n; ++j) out[j] = mt_expf(x[j] - m);
}

float mt_softmax_row(const float *x, float *y, uint32_t n, float *max)
{
    float m = x[0];
    for (uint32_t j = 1; j < n; ++j)
        if (x[j] > m) m = x[j];
    mt_kernel_expf_shifted_f32(x, m, y, n);
    float sum = 0.0f;
    for (uint32_t j = 0; j < n; ++j) sum += y[j];
    const float inv = 1.0f / sum;
    for (uint32_t j = 0; j < n; ++j) y[j] *= inv;
    *max = m;
    return sum;
}

/*
 * log x = k·ln2 + log(1+f) with x = 2^k·(1+f), 1+f in [√½, √2).
 * With s = f/(2+f), log(1+f) = 2s + 2s³/3 + 2s⁵/5 + … = 2s + s·R(s²), |s| < 0.172;
 * it is evaluated as f - (f²/2 - s·(f²/2 + R)) to keep the rounding error below
 * one ulp (the same arrangement as fdlibm's). ln2 is split as for exp.
 */
float mt_logf(float x)
{
    static const float LN2_HI = 6.9313812256e-01f; /* 0x3f317180: low bits zero */
    static const float LN2_LO = 9.0580006145e-06f;
    if (x != x) return x;
    if (x < 0.0f) return NAN;
    if (x == 0.0f) return -INFINITY;
    if (x == INFINITY) return x;

    uint32_t u = mt_f32_bits(x);
    int k = 0;
    if (u < 0x00800000u) { /* subnormal: scale into the normal range */
        x *= 8388608.0f;   /* 2^23 */
        u = mt_f32_bits(x);
        k = -23;
    }
    k += (int)(u >> 23) - 127;
    float m = mt_f32_from_bits((u & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
    if (m > 1.41421356f) {
        m *= 0.5f;
        k += 1;
    }
    float f = m - 1.0f; /* exact */
    float s = f / (2.0f + f);
    float z = s * s;
    float R = 2.0f / 9.0f;
    R = 2.0f / 7.0f + z * R;
    R = 2.0f / 5.0f + z * R;
    R = 2.0f / 3.0f + z * R;
    R = z * R;
    float hfsq = 0.5f * f * f;
    float dk = (float)k;
    return dk * LN2_HI - ((hfsq - (s * (hfsq + R) + dk * LN2_LO)) - f);
}

/*
 * tanh: for |x| < 0.5 the odd Taylor series to x^17 (remainder < 1e-8 relative);
 * otherwise 1 - 2/(e^{2|x|} + 1), which has no cancellation there; 1 past 9.1
 * where tanh rounds to 1 in float.
 */
float mt_tanhf(float x)
{
    if (x != x) return x;
    float a = fabsf(x);
    float t;
    if (a < 0.5f) {
        float z = a * a;
        /* tanh x = x - x·z·P(z), z = x², P = 1/3 - 2/15 z + 17/315 z² - 62/2835 z³
         *        + 1382/155925 z⁴ - 21844/6081075 z⁵ + 929569/638512875 z⁶
         *        - 6404582/10854718875 z⁷ */
        float p = -5.9002744e-4f;
        p = 1.4558344e-3f + z * p;
        p = -3.5921280e-3f + z * p;
        p = 8.8632355e-3f + z * p;
        p = -2.1869489e-2f + z * p;
        p = 5.3968254e-2f + z * p;
        p = -1.3333333e-1f + z * p;
        p = 3.3333333e-1f + z * p;
        t = a - a * (z * p);
    } else if (a < 9.1f) {
        t = 1.0f - 2.0f / (mt_expf(2.0f * a) + 1.0f);
    } else {
        t = 1.0f;
    }
    return x < 0.0f ? -t : t;
}

/* σ(x) = 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) for x < 0: neither overflows. */
float mt_sigmoidf(float x)
{
    if (x >= 0.0f) return 1.0f / (1.0f + mt_expf(-x));
    float e = mt_expf(x);
    return e / (1.0f + e);
}
