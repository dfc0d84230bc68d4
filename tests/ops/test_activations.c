/*
 * The activations of ops/activations.c against double references and central finite
 * differences (gradcheck_util.h): ReLU, Sigmoid and Tanh through check_unary_op, ReLU's
 * step-function gradient exactly; ReLU6 and LeakyReLU against their definitions, inputs drawn
 * at least 0.1 > h from the kinks 0 and 6 so no difference crosses one, and at the kinks
 * themselves the subgradient. ReLU's siblings: the kernel table's cases
 * (boards/app/siblings_elementwise.c, run by tests/core/test_kernel_siblings.c).
 */
#include "gradcheck_util.h"

/* ---- ReLU, Sigmoid, Tanh ------------------------------------------------------------------------ */

static void relu_forward(const float *x, float *y, int R, int C) { mt_op_relu_f32_forward_ref(x, y, (size_t)(R * C)); }
static void relu_backward(const float *x, const float *y, const float *dy, float *dx, int R, int C)
{
    (void)y; /* ReLU's backward reads x, the others y = forward(x) */
    mt_op_relu_f32_backward_ref(x, dy, dx, (size_t)(R * C));
}
static double relu_reference(const float *x, int k, int C) { (void)C; return x[k] > 0.0f ? (double)x[k] : 0.0; }

static void sigmoid_forward(const float *x, float *y, int R, int C) { mt_op_sigmoid_f32_forward(x, y, (size_t)(R * C)); }
static void sigmoid_backward(const float *x, const float *y, const float *dy, float *dx, int R, int C)
{
    (void)x;
    mt_op_sigmoid_f32_backward(y, dy, dx, (size_t)(R * C));
}
static double sigmoid_reference(const float *x, int k, int C) { (void)C; return 1.0 / (1.0 + exp(-(double)x[k])); }

static void tanh_forward(const float *x, float *y, int R, int C) { mt_op_tanh_f32_forward(x, y, (size_t)(R * C)); }
static void tanh_backward(const float *x, const float *y, const float *dy, float *dx, int R, int C)
{
    (void)x;
    mt_op_tanh_f32_backward(y, dy, dx, (size_t)(R * C));
}
static double tanh_reference(const float *x, int k, int C) { (void)C; return tanh((double)x[k]); }

static const unary_op relu_op = { "relu", relu_forward, relu_backward, relu_reference, 1 };
static const unary_op sigmoid_op = { "sigmoid", sigmoid_forward, sigmoid_backward, sigmoid_reference, 0 };
static const unary_op tanh_op = { "tanh", tanh_forward, tanh_backward, tanh_reference, 0 };

/* ReLU's gradient is the step function [x > 0]: exactly dy or exactly 0. */
static void test_relu_exact(void)
{
    const float x[4] = { -2.f, -1e-30f, 1e-30f, 3.f };
    const float dy[4] = { 5.f, 5.f, 5.f, 5.f };
    float y[4], dx[4] = { 0 };
    mt_op_relu_f32_forward_ref(x, y, 4);
    mt_op_relu_f32_backward_ref(x, dy, dx, 4);
    CHECK_BITS_EQ(y[0], 0.f);
    CHECK_BITS_EQ(y[2], 1e-30f);
    CHECK_BITS_EQ(y[3], 3.f);
    CHECK_BITS_EQ(dx[0], 0.f);
    CHECK_BITS_EQ(dx[1], 0.f);
    CHECK_BITS_EQ(dx[2], 5.f);
    CHECK_BITS_EQ(dx[3], 5.f);
}


/* ---- ReLU6 and LeakyReLU -------------------------------------------------------------------- */

enum { RELU6, LEAKY };
typedef struct clip_ctx {
    int op, n;
    float alpha, x[64], r[64];
} clip_ctx;

static void clip_fwd(const clip_ctx *c, float *y)
{
    if (c->op == RELU6) mt_op_relu6_f32_forward(c->x, y, (size_t)c->n);
    else mt_op_leaky_relu_f32_forward(c->x, y, (size_t)c->n, c->alpha);
}

static double clip_objective(void *p)
{
    clip_ctx *c = (clip_ctx *)p;
    float y[64];
    clip_fwd(c, y);
    return dot_r(y, c->r, c->n);
}

static void test_clipped(int op, float alpha)
{
    clip_ctx c;
    float y[64], dx[64], g1[64];
    c.op = op, c.n = 48, c.alpha = alpha;
    for (int i = 0; i < c.n; i++) { /* [-3, 9), at least 0.1 away from the kinks 0 and 6 */
        float v;
        do
            v = mt_test_uniform(-3.f, 9.f);
        while (fabsf(v) < 0.1f || fabsf(v - 6.f) < 0.1f);
        c.x[i] = v;
    }
    fill(c.r, c.n, -1.f, 1.f);
    clip_fwd(&c, y);
    for (int i = 0; i < c.n; i++) {
        double x = c.x[i];
        double want = op == RELU6 ? (x < 0 ? 0 : x > 6 ? 6 : x) : (x > 0 ? x : (double)alpha * x);
        CHECK_NEAR(y[i], want, 1e-6 * (1 + fabs(want)));
    }
    fill(dx, c.n, -1.f, 1.f); /* from non-zero: the gradient is added */
    memcpy(g1, dx, sizeof dx);
    if (op == RELU6) mt_op_relu6_f32_backward(y, c.r, dx, (size_t)c.n);
    else mt_op_leaky_relu_f32_backward(y, c.r, dx, (size_t)c.n, alpha);
    for (int i = 0; i < c.n; i++) dx[i] -= g1[i];
    gradcheck(op == RELU6 ? "relu6 x" : "leaky x", c.x, c.n, dx, 1e-2f, clip_objective, &c);

    /* at the kinks the subgradient is 0 (ReLU6 at 0 and 6; LeakyReLU at 0 gives α) */
    float kx[3] = { 0.0f, 6.0f, -0.0f }, ky[3], ones[3] = { 1, 1, 1 }, kd[3] = { 0, 0, 0 };
    if (op == RELU6) {
        mt_op_relu6_f32_forward(kx, ky, 3);
        mt_op_relu6_f32_backward(ky, ones, kd, 3);
        CHECK_NEAR(ky[1], 6.0, 0);
        for (int i = 0; i < 3; i++)
            CHECK_BITS_EQ(kd[i] + 0.0f, 0.0f);
    } else {
        mt_op_leaky_relu_f32_forward(kx, ky, 1, alpha);
        mt_op_leaky_relu_f32_backward(ky, ones, kd, 1, alpha);
        CHECK_NEAR(ky[0], 0.0, 0);
        CHECK_NEAR(kd[0], alpha, 0);
    }
}

int main(void)
{
    /* Each case draws the numbers it did when one program (test_ops_gradcheck.c) ran
     * ReLU, Sigmoid and Tanh, and another (test_conv_gradcheck.c) ran every spatial and
     * graph-shaping check, ReLU6 and LeakyReLU after the pooling cases. */
    static unary_case c;
    mt_test_seed(3752018970u);
    check_unary_op(&c, &relu_op, 1, 24, -2.f, 2.f);
    check_unary_op(&c, &sigmoid_op, 1, 24, -5.f, 5.f);
    check_unary_op(&c, &tanh_op, 1, 24, -3.f, 3.f);
    test_relu_exact();
    mt_test_seed(0x35ce5a07u);
    test_clipped(RELU6, 0.0f);
    test_clipped(LEAKY, 0.1f);
    test_clipped(LEAKY, 0.0f);
    return MT_TEST_END();
}
