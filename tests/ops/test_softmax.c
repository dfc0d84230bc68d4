/*
 * Softmax (ops/softmax.c) against a double reference and central finite differences
 * (gradcheck_util.h, check_unary_op): each row sums to 1, backward adds; and huge logits give
 * exact, finite probabilities (the row maximum is subtracted first).
 */
#include "gradcheck_util.h"

static void softmax_forward(const float *x, float *y, int R, int C) { mt_op_softmax_f32_forward(x, y, (uint32_t)R, (uint32_t)C); }
static void softmax_backward(const float *x, const float *y, const float *dy, float *dx, int R, int C)
{
    (void)x; /* reads y = forward(x) */
    mt_op_softmax_f32_backward(y, dy, dx, (uint32_t)R, (uint32_t)C);
}

/* y_k = e^(x_k - m) / Σ_j e^(x_j - m) over k's row, m its maximum */
static double softmax_reference(const float *x, int k, int C)
{
    const float *row = x + k / C * C;
    double m = -INFINITY, s = 0.0;
    for (int j = 0; j < C; j++)
        m = fmax(m, (double)row[j]);
    for (int j = 0; j < C; j++)
        s += exp((double)row[j] - m);
    return exp((double)x[k] - m) / s;
}

static const unary_op softmax_op = { "softmax", softmax_forward, softmax_backward, softmax_reference, 0 };

static void test_softmax(int R, int C, float lo, float hi)
{
    static unary_case c;
    check_unary_op(&c, &softmax_op, R, C, lo, hi);
    for (int row = 0; row < R; row++) {
        double s = 0.0;
        for (int j = 0; j < C; j++)
            s += (double)c.y[row * C + j];
        CHECK_NEAR(s, 1.0, 1e-6 * C);
    }
}

/* Softmax subtracts the row maximum: huge logits give exact, finite probabilities. */
static void test_softmax_stability(void)
{
    const float x[6] = { 1000.f, 999.f, -1000.f, -1e30f, -1e30f, -1e30f };
    float y[6], dx[6] = { 0 };
    const float dy[6] = { 1, 0, 0, 1, 2, 3 };
    double e = exp(-1.0);
    mt_op_softmax_f32_forward(x, y, 2, 3);
    CHECK_NEAR(y[0], 1.0 / (1.0 + e), 1e-6);
    CHECK_NEAR(y[1], e / (1.0 + e), 1e-6);
    CHECK_BITS_EQ(y[2], 0.0f);
    for (int j = 3; j < 6; j++) /* equal logits: uniform */
        CHECK_NEAR(y[j], 1.0 / 3.0, 1e-7);
    mt_op_softmax_f32_backward(y, dy, dx, 2, 3);
    for (int j = 0; j < 6; j++)
        CHECK(isfinite(dx[j]));
    /* dx_j = y_j (dy_j - Σ_k dy_k y_k); second row: (1/3)(dy_j - 2) = -1/3, 0, 1/3 */
    CHECK_NEAR(dx[3], -1.0 / 3.0, 1e-6);
    CHECK_NEAR(dx[4], 0.0, 1e-6);
    CHECK_NEAR(dx[5], 1.0 / 3.0, 1e-6);
}

int main(void)
{
    /* where the generator stood when one program (test_ops_gradcheck.c) ran every elementwise
     * check: each case draws the numbers it always did */
    mt_test_seed(16988138u);
    test_softmax(3, 5, -3.f, 3.f);
    test_softmax(4, 1, -3.f, 3.f);
    test_softmax(2, 17, -4.f, 4.f);
    test_softmax_stability();
    return MT_TEST_END();
}
