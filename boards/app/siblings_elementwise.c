/*
 * The sibling cases of the elementwise rows: the SGD and Adam updates and their guards, the
 * exponentials and ReLU, each row's kernel in a column against the row's reference, bit for
 * bit (siblings.h), on data that makes Helium flush a subnormal or give the default NaN, and
 * where a vector guard's shortcut must not answer.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mt_math.h"
#include "optimizers.h"
#include "siblings.h"

/* The Adam update or its guard against optimizers.c's: the guard's answer, or every bit of w,
 * m and v after both updates ran. kind 0 ordinary values, 1 subnormal
 * gradients and moments (flushed by MVE), 2 a NaN and an infinity in g (∞/∞ makes a NaN w),
 * 3 weights past 2^126 (the shortcut fails: the guard computes those weights), 4 a gradient
 * whose square overflows v, 5 a NaN weight (which MVE's LE would let through the shortcut);
 * past the plain configuration's whole-tensor limits in the last, partial block: 6 such a
 * gradient, 7 a negative v (whose v' is negative: a NaN square root), 8 a NaN m; 9 one
 * subnormal g and m in the third block, ordinary blocks after it (the flags are cleared once a
 * loop and again after a block that set them); 10 a proximal term (FedProx: the vector kernels
 * leave it to the reference). */
#define ADAM_N 23 /* five blocks of four and a partial one */
static float aw0[ADAM_N], ag[ADAM_N], am0[ADAM_N], av0[ADAM_N], aw1[ADAM_N], am1[ADAM_N], av1[ADAM_N];
static float aref[ADAM_N];

static void adam_case(const mt_kernel_table *column, int guard, int kind, float beta1, float epsilon,
                      float weight_decay, int decoupled)
{
    mt_proximal none = {NULL, 0.0f};
    const float lr = 0.01f, beta2 = 0.999f, scale = 0.25f;
    const double b1p = 0.9 * 0.9, b2p = 0.999 * 0.999;
    mt_sib_fill(aw0, ADAM_N, 1.0f), mt_sib_fill(ag, ADAM_N, 2.0f);
    mt_sib_fill(am0, ADAM_N, 0.1f), mt_sib_fill(av0, ADAM_N, 0.01f);
    for (int i = 0; i < ADAM_N; ++i) av0[i] = fabsf(av0[i]);
    if (kind == 1)
        for (int i = 0; i < ADAM_N; i += 2)
            ag[i] = mt_sib_uniform(1e-39f), am0[i] = mt_sib_uniform(2e-39f), av0[i] = 1e-40f;
    if (kind == 2) ag[5] = __builtin_nanf(""), ag[17] = -__builtin_inff();
    if (kind == 3) aw0[2] = 3e38f, aw0[9] = -2e38f, aw0[21] = 1e38f;
    if (kind == 4) ag[13] = 3e38f;
    if (kind == 5) aw0[6] = -__builtin_nanf("");
    if (kind == 6) ag[22] = 1e30f;
    if (kind == 7) av0[21] = -1.0f;
    if (kind == 8) am0[22] = __builtin_nanf("");
    if (kind == 9) ag[9] = 1e-39f, am0[9] = -2e-39f;
    if (kind == 10) { /* a proximal term (FedProx): the reference's to compute */
        mt_sib_fill(aref, ADAM_N, 1.0f);
        none.ref = aref, none.mu = 0.125f;
    }
    memcpy(aw1, aw0, sizeof aw0), memcpy(am1, am0, sizeof am0), memcpy(av1, av0, sizeof av0);
    if (guard) {
        const int ok0 = mt_adam_update_is_finite_f32_ref(aw0, ag, am0, av0, ADAM_N, lr, beta1, beta2, epsilon,
                                                         weight_decay, decoupled, b1p, b2p, scale, none);
        const int ok1 = column->adam_update_is_finite_f32(aw1, ag, am1, av1, ADAM_N, lr, beta1, beta2, epsilon,
                                                          weight_decay, decoupled, b1p, b2p, scale, none);
        mt_sib_check(ok0 == ok1 && (kind <= 1 || kind >= 9 ? ok0 : kind == 3 || !ok0), "adam guard");
        return;
    }
    mt_adam_update_f32_ref(aw0, ag, am0, av0, ADAM_N, lr, beta1, beta2, epsilon, weight_decay, decoupled, b1p, b2p,
                           scale, none);
    column->adam_update_f32(aw1, ag, am1, av1, ADAM_N, lr, beta1, beta2, epsilon, weight_decay, decoupled, b1p, b2p,
                            scale, none);
    mt_sib_check(mt_sib_same(aw0, aw1, ADAM_N) && mt_sib_same(am0, am1, ADAM_N) && mt_sib_same(av0, av1, ADAM_N),
                 "adam update");
}

/* The SGD update or its guard against optimizers.c's, as adam_case: kind 0 ordinary, 1
 * subnormal gradients and weights, 2 a NaN and an infinity in g, 3 an update that overflows w,
 * 4 one subnormal gradient in the third block, ordinary blocks after it, 5 a proximal term */
static float sbuf0[ADAM_N], sbuf1[ADAM_N];

static void sgd_case(const mt_kernel_table *column, int guard, int kind, float momentum, float weight_decay)
{
    mt_proximal none = {NULL, 0.0f};
    const float lr = 0.05f, scale = 0.25f;
    mt_sib_fill(aw0, ADAM_N, 1.0f), mt_sib_fill(ag, ADAM_N, 2.0f), mt_sib_fill(sbuf0, ADAM_N, 0.3f);
    if (kind == 1)
        for (int i = 0; i < ADAM_N; i += 2) ag[i] = mt_sib_uniform(1e-39f), aw0[i] = mt_sib_uniform(3e-39f);
    if (kind == 2) ag[6] = -__builtin_nanf(""), ag[11] = __builtin_inff();
    if (kind == 3) ag[14] = 3e38f, aw0[14] = -3.4e38f; /* w - lr·d < -FLT_MAX */
    if (kind == 4) ag[9] = 1e-39f;
    if (kind == 5) {
        mt_sib_fill(aref, ADAM_N, 1.0f);
        none.ref = aref, none.mu = 0.125f;
    }
    memcpy(aw1, aw0, sizeof aw0), memcpy(sbuf1, sbuf0, sizeof sbuf0);
    float *b0 = momentum > 0.0f ? sbuf0 : NULL, *b1 = momentum > 0.0f ? sbuf1 : NULL;
    if (guard) {
        const int ok0 = mt_sgd_update_is_finite_f32_ref(aw0, ag, b0, ADAM_N, lr, momentum, weight_decay, scale, none);
        const int ok1 = column->sgd_update_is_finite_f32(aw1, ag, b1, ADAM_N, lr, momentum, weight_decay, scale, none);
        mt_sib_check(ok0 == ok1 && (kind <= 1 || kind >= 4) == ok0, "sgd guard");
        return;
    }
    mt_sgd_update_f32_ref(aw0, ag, b0, ADAM_N, lr, momentum, weight_decay, scale, none);
    column->sgd_update_f32(aw1, ag, b1, ADAM_N, lr, momentum, weight_decay, scale, none);
    mt_sib_check(mt_sib_same(aw0, aw1, ADAM_N) && mt_sib_same(sbuf0, sbuf1, ADAM_N), "sgd update");
}

/* The exponentials against mt_expf on a sweep of arguments: every
 * range the scalar function treats apart (overflow, its subnormal results, zero), the ties
 * of n = (int)(v/ln2 ± 0.5), and NaN, infinities, signed zeros and subnormals. */
#define EXP_N 1031 /* not a multiple of four */
static float ex[EXP_N], e0[EXP_N], e1[EXP_N];

static void exp_case(const mt_kernel_table *column, float shift)
{
    static const float special[] = {__builtin_nanf(""), -__builtin_nanf(""), __builtin_inff(), -__builtin_inff(),
                                    0.0f, -0.0f, 1e-40f, -1e-40f, 88.72283935546875f, 88.7228394f, -103.972084f,
                                    -103.972092f, -87.3365479f, -87.336544f, 0.34657359f, -0.34657359f};
    for (int i = 0; i < EXP_N; ++i) ex[i] = -110.0f + 205.0f * (float)i / (float)(EXP_N - 1) + mt_sib_uniform(0.1f);
    /* whole blocks at the edges of the vector path: n = -127 (a subnormal result), 127 (the
     * largest), -126 (results at 2^-126, some subnormal) */
    static const float edges[] = {-88.0f, -88.1f, -87.9f, -88.2f, 87.8f, 87.9f, 88.0f, 88.05f,
                                  -87.3f, -87.2f, -87.1f, -87.0f};
    for (int i = 0; i < (int)(sizeof special / sizeof special[0]); ++i) ex[37 * i + 5] = special[i] + shift;
    for (int i = 0; i < (int)(sizeof edges / sizeof edges[0]); ++i) ex[800 + i] = edges[i] + shift;
    for (int i = 0; i < EXP_N; ++i) e0[i] = mt_expf(ex[i] - shift);
    column->expf_shifted_f32(ex, shift, e1, EXP_N);
    mt_sib_check(mt_sib_same(e0, e1, EXP_N), "expf shifted");
    /* a last partial block (a softmax over 10 classes ends with two lanes) from every start
     * around a special value and the edges, the lanes past it left alone */
    for (int start = 0; start < 12; ++start)
        for (uint32_t len = 1; len <= 7; ++len) {
            const int at = start < 8 ? 37 * (start + 1) + 5 - (int)len + 1 : 800 + 4 * (start - 8) - 1;
            for (uint32_t i = 0; i <= len; ++i) e1[at + (int)i] = -1234.5f;
            column->expf_shifted_f32(ex + at, shift, e1 + at, len);
            mt_sib_check(mt_sib_same(e0 + at, e1 + at, len) && e1[at + (int)len] == -1234.5f,
                         "expf shifted, partial block");
        }
}

/* ReLU against activations.c's, every length from 1 to 40:
 * the tests on bits around 0 (±0, the smallest subnormals, NaN of either sign, infinities),
 * sums dx + dy that are subnormal (MVE flushes them), overflow or make a NaN, and -0 + 0 */
#define RELU_N 40
static void relu_case(const mt_kernel_table *column, int backward)
{
    static const float special[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-39f, -1e-39f, __builtin_nanf("0x7"),
                                    -__builtin_nanf("0x9"), __builtin_inff(), -__builtin_inff(), 3.0f, -2.5f,
                                    __builtin_nansf("0x1"), -__builtin_nansf("0x1")}; /* bits 0x7f800001, 0xff800001 */
    static float rx[RELU_N], ry0[RELU_N + 1], ry1[RELU_N + 1], rdy[RELU_N], rdx0[RELU_N + 1], rdx1[RELU_N + 1];
    const int ns = (int)(sizeof special / sizeof special[0]);
    for (uint32_t n = 1; n <= RELU_N; ++n)
        for (int turn = 0; turn < 3; ++turn) {
            for (uint32_t i = 0; i < n; ++i) {
                rx[i] = turn == 0 ? mt_sib_uniform(2.0f) : special[(i + (uint32_t)turn * 5u) % (uint32_t)ns];
                rdy[i] = turn == 2 ? special[(i * 7u + 3u) % (uint32_t)ns] : mt_sib_uniform(1.0f);
                rdx0[i] = turn == 1 ? -rdy[i] * 0.999f : (turn == 2 ? special[(i * 5u + 1u) % (uint32_t)ns] : 0.5f);
            }
            if (turn == 1 && n > 2) /* y > 0 at both: a subnormal sum, and -0 + 0 */
                rx[1] = 2.0f, rdy[1] = 1e-39f, rdx0[1] = 2e-39f, rx[2] = 3.0f, rdy[2] = 0.0f, rdx0[2] = -0.0f;
            rdx0[n] = ry0[n] = ry1[n] = -1234.5f, rdx1[n] = -1234.5f;
            if (!backward) {
                mt_op_relu_f32_forward_ref(rx, ry0, n);
                column->relu_f32_forward(rx, ry1, n);
                mt_sib_check(mt_sib_same(ry0, ry1, n + 1), "relu forward");
                continue;
            }
            memcpy(rdx1, rdx0, sizeof(float) * n);
            mt_op_relu_f32_backward_ref(rx, rdy, rdx0, n); /* y: x's specials, as a layer's output */
            column->relu_f32_backward(rx, rdy, rdx1, n);
            mt_sib_check(mt_sib_same(rdx0, rdx1, n + 1), "relu backward");
        }
}

static void adam_cases(const mt_kernel_table *column, int guard)
{
    for (int kind = 0; kind < 11; ++kind) {
        adam_case(column, guard, kind, 0.9f, 1e-8f, 0.0f, 0);  /* Adam; m from the nearer end, 1 - β1 < 0.5 */
        adam_case(column, guard, kind, 0.2f, 1e-6f, 0.01f, 0); /* Adam with L2 decay; the other lerp end */
        adam_case(column, guard, kind, 0.9f, 1e-8f, 0.05f, 1); /* AdamW's decoupled decay */
        adam_case(column, guard, kind, 0.9f, 0.0f, 0.0f, 0);   /* ε = 0: no shortcut, every weight computed */
        adam_case(column, guard, kind, 0.3f, 1e-8f, 0.0f, 0);  /* Adam from the other lerp end, no decay */
    }
}

void mt_sib_case_adam_update_f32(const mt_kernel_table *column)
{
    adam_cases(column, 0);
}

void mt_sib_case_adam_update_is_finite_f32(const mt_kernel_table *column)
{
    adam_cases(column, 1);
}

static void sgd_cases(const mt_kernel_table *column, int guard)
{
    for (int kind = 0; kind < 6; ++kind) {
        sgd_case(column, guard, kind, 0.0f, 0.0f);  /* plain SGD */
        sgd_case(column, guard, kind, 0.9f, 0.01f); /* momentum and decay */
    }
}

void mt_sib_case_sgd_update_f32(const mt_kernel_table *column)
{
    sgd_cases(column, 0);
}

void mt_sib_case_sgd_update_is_finite_f32(const mt_kernel_table *column)
{
    sgd_cases(column, 1);
}

void mt_sib_case_expf_shifted_f32(const mt_kernel_table *column)
{
    exp_case(column, 0.0f);
    exp_case(column, 2.5f);
}

void mt_sib_case_relu_f32_forward(const mt_kernel_table *column)
{
    relu_case(column, 0);
}

void mt_sib_case_relu_f32_backward(const mt_kernel_table *column)
{
    relu_case(column, 1);
}
