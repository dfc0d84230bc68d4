/*
 * The QAS update of an int8 layer trained in place (ops/qas.c): round half to even with
 * saturation at crafted ties, a step on int8 weights and int32 biases against the formula
 * written out here in its own terms (per-channel scales, momentum over two steps), and the
 * guard's refusals; a sparse part's runs against the whole update. The whole step through a
 * session against NumPy, bit for bit:
 * tests/convert/test_int8_train.py.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mt_test.h"
#include "ops/ops.h"
#include "ops/quant_grad.h"

static void check_round(void)
{
    const double v[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999, 0.50000001, -3.25, 126.5, 127.4, -127.6, 1e300, -1e300};
    const int64_t want[] = {0, 2, 2, 0, -2, -2, 0, 1, -3, 126, 127, -127, 127, -127};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) CHECK_EQ_INT(mt_qas_round(v[i], -127, 127), want[i]);
    CHECK_EQ_INT(mt_qas_round(2147483647.5, INT32_MIN, INT32_MAX), INT32_MAX);
    CHECK_EQ_INT(mt_qas_round(-2147483648.5, INT32_MIN, INT32_MAX), INT32_MIN); /* a tie to even, then saturated */
    CHECK_EQ_INT(mt_qas_round(2147483646.5, INT32_MIN, INT32_MAX), 2147483646);
}

/* A Conv2D-like int8 weight [2 channels, 3 elements] and its int32 bias [2] */
static void check_step(void)
{
    int8_t w[6] = {3, -3, 127, -127, 0, 10};
    const float sw[2] = {0.5f, 0.25f};
    /* channel 0: g/s = 2g; channel 1: 4g. lr = 1, grad_scale 1:
     *   3 - 2·0.25 = 2.5 -> 2 (tie to even);  -3 - 2·(-0.25) = -2.5 -> -2;  127 - 2·(-1) = 129 -> 127;
     *   -127 - 4·0.125 = -127.5 -> -127 (saturated);  0 - 4·0.125 = -0.5 -> 0 (tie to even: vanishes);
     *   10 - 4·0.375 = 8.5 -> 8 */
    const float g[6] = {0.25f, -0.25f, -1.0f, 0.125f, 0.125f, 0.375f};
    mt_qas_tensor t = {w, MT_DTYPE_I8, g, NULL, NULL, sw, 6, 3, 2};
    CHECK(mt_qas_sgd_update_is_finite(&t, 1.0f, 0.0f, 1.0f));
    mt_qas_sgd_update(&t, 1.0f, 0.0f, 1.0f);
    const int8_t want[6] = {2, -2, 127, -127, 0, 8};
    for (int i = 0; i < 6; ++i) CHECK_EQ_INT(w[i], want[i]);

    /* the depthwise layout: element i scales with channel i % C (inner 1) */
    int8_t d[4] = {0, 0, 0, 0};
    const float gd[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    mt_qas_tensor td = {d, MT_DTYPE_I8, gd, NULL, NULL, sw, 4, 1, 2};
    mt_qas_sgd_update(&td, 1.0f, 0.0f, 1.0f);
    CHECK(d[0] == -2 && d[1] == -4 && d[2] == -2 && d[3] == -4);

    /* int32 bias, scale sx·sw: 1e6 - 0.5/1e-3 = 999500; a step past int32 saturates */
    int32_t b[2] = {1000000, INT32_MAX - 5};
    const float sb[2] = {1e-3f, 1e-3f};
    const float gb[2] = {0.5f, -1.0f};
    mt_qas_tensor tb = {b, MT_DTYPE_I32, gb, NULL, NULL, sb, 2, 1, 2};
    mt_qas_sgd_update(&tb, 1.0f, 0.0f, 1.0f);
    const double step0 = (double)(1.0f * (0.5f / 1e-3f));
    CHECK_EQ_INT(b[0], (int64_t)llround(1000000.0 - step0));
    CHECK_EQ_INT(b[1], INT32_MAX);

    /* momentum 0.5 over two steps, grad_scale 0.5: d = g/2; buf1 = d, buf2 = 0.5·buf1 + d */
    int8_t m[1] = {0};
    float buf[1] = {0.0f};
    const float gm[1] = {1.0f}, sm[1] = {0.125f};
    mt_qas_tensor tm = {m, MT_DTYPE_I8, gm, buf, NULL, sm, 1, 1, 1};
    mt_qas_sgd_update(&tm, 0.1f, 0.5f, 0.5f);
    const float d1 = 1.0f * 0.5f, buf1 = 0.5f * 0.0f + d1;
    CHECK_BITS_EQ(buf[0], buf1);
    CHECK_EQ_INT(m[0], mt_qas_round(0.0 - (double)(0.1f * (buf1 / 0.125f)), -127, 127)); /* -0.4 -> 0 */
    mt_qas_sgd_update(&tm, 0.1f, 0.5f, 0.5f);
    const float buf2 = 0.5f * buf1 + d1;
    CHECK_BITS_EQ(buf[0], buf2);
    CHECK_EQ_INT(m[0], -1); /* 0 - 0.1·(0.75 / 0.125) = -0.6 -> -1 */
}

/* Steps of 0.3 of a quantization step: without a master copy they vanish (0 - 0.3 rounds to
 * 0 every time), with one they accumulate: m = -0.3, -0.6, -0.9, ... and W_q = round(m);
 * the master copy saturates at -127 as the weight does */
static void check_master(void)
{
    int8_t plain[1] = {0}, kept[2] = {0, -126};
    float master[2] = {0.0f, -126.0f};
    const float g[2] = {0.3f, 2.0f}, s[1] = {1.0f};
    mt_qas_tensor tp = {plain, MT_DTYPE_I8, g, NULL, NULL, s, 1, 1, 1};
    mt_qas_tensor tk = {kept, MT_DTYPE_I8, g, NULL, master, s, 2, 2, 1};
    const int8_t want[4] = {0, -1, -1, -1}; /* round(-0.3), round(-0.6), round(-0.9), round(-1.2) */
    for (int step = 0; step < 4; ++step) {
        mt_qas_sgd_update(&tp, 1.0f, 0.0f, 1.0f);
        mt_qas_sgd_update(&tk, 1.0f, 0.0f, 1.0f);
        CHECK_EQ_INT(plain[0], 0);
        CHECK_EQ_INT(kept[0], want[step]);
    }
    float m = 0.0f;
    for (int step = 0; step < 4; ++step) m = m - 0.3f;
    CHECK_BITS_EQ(master[0], m);
    CHECK_BITS_EQ(master[1], -127.0f); /* clamped: -126 - 8 */
    CHECK_EQ_INT(kept[1], -127);
}

static void check_guard(void)
{
    int8_t w[2] = {1, 2};
    const float s[1] = {1e-30f};
    float g[2] = {1.0f, NAN};
    mt_qas_tensor t = {w, MT_DTYPE_I8, g, NULL, NULL, s, 2, 2, 1};
    CHECK(!mt_qas_sgd_update_is_finite(&t, 1.0f, 0.0f, 1.0f)); /* a NaN gradient */
    g[1] = 1.0f;
    CHECK(!mt_qas_sgd_update_is_finite(&t, 1e10f, 0.0f, 1.0f)); /* lr·(g / s) overflows */
    const float s1[1] = {1.0f};
    t.scale = s1;
    CHECK(mt_qas_sgd_update_is_finite(&t, 1.0f, 0.0f, 1.0f));
    CHECK(w[0] == 1 && w[1] == 2); /* the guard writes nothing */
}

/* A sparse update's part (mt_qas_sgd_update_runs): the runs of a Conv2D's first k rows (one
 * run from element 0) or of a depthwise weight's first k channels (KH·KW runs of k, stride C,
 * the momentum back to back) give the trained elements the whole update's bits, momentum over
 * two steps, and leave the frozen ones as they were; the guard writes nothing. The session's
 * path: tests/test_sparse_update.py. */
static void check_runs(void)
{
    enum { C = 3, TAPS = 4, N = C * TAPS, K = 2 };
    const float s[C] = {0.01f, 0.02f, 0.005f};
    float g[N];
    for (int i = 0; i < N; ++i) g[i] = 0.013f * (float)(i + 1) * (i % 2 ? -1.0f : 1.0f);
    for (int depthwise = 0; depthwise < 2; ++depthwise) {
        int8_t whole[N], part[N], first[N];
        float buf_whole[N] = {0}, buf_part[N] = {0};
        for (int i = 0; i < N; ++i) whole[i] = part[i] = first[i] = (int8_t)(7 * i - 40);
        /* a [C, TAPS] Conv2D-like weight (channel i / TAPS) or a [TAPS, C] depthwise one (i % C) */
        const uint32_t inner = depthwise ? 1u : TAPS;
        mt_qas_tensor w = {whole, MT_DTYPE_I8, g, buf_whole, NULL, s, N, inner, C};
        const uint32_t runs = depthwise ? TAPS : 1u, len = depthwise ? K : K * TAPS, stride = depthwise ? C : N;
        mt_qas_tensor p = {part, MT_DTYPE_I8, g, buf_part, NULL, s, N, inner, C};
        for (int step = 0; step < 2; ++step) {
            mt_qas_sgd_update(&w, 0.5f, 0.9f, 1.0f);
            int8_t q_before[N];
            float buf_before[N];
            memcpy(q_before, part, sizeof part);
            memcpy(buf_before, buf_part, sizeof buf_part);
            CHECK(mt_qas_sgd_update_runs(&p, runs, len, stride, 0.5f, 0.9f, 1.0f, 1)); /* the guard */
            CHECK(memcmp(q_before, part, sizeof part) == 0 && memcmp(buf_before, buf_part, sizeof buf_part) == 0);
            CHECK(mt_qas_sgd_update_runs(&p, runs, len, stride, 0.5f, 0.9f, 1.0f, 0));
        }
        int moved = 0;
        for (uint32_t i = 0; i < N; ++i) {
            const uint32_t channel = depthwise ? i % C : i / TAPS;
            const int8_t want = channel < K ? whole[i] : first[i];
            CHECK_EQ_INT(part[i], want);
            moved += channel < K && whole[i] != first[i];
        }
        for (uint32_t j = 0; j < runs; ++j) /* the part's momentum: the trained elements' own */
            for (uint32_t e = 0; e < len; ++e) CHECK_BITS_EQ(buf_part[j * len + e], buf_whole[j * stride + e]);
        CHECK(moved > 3);
    }
}

int main(void)
{
    check_round();
    check_step();
    check_master();
    check_guard();
    check_runs();
    return MT_TEST_END();
}
