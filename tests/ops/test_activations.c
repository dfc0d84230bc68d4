/*
 * ReLU6 and LeakyReLU (ops.h) against their definitions and central finite differences
 * (gradcheck_util.h). Inputs are drawn at least 0.1 > h from the kinks 0 and 6, so no
 * difference crosses one; at the kinks themselves the subgradient is checked.
 */
#include "gradcheck_util.h"

/* ---- ReLU6 and LeakyReLU ---------------------------------------------------------------------- */

enum { RELU6, LEAKY };
typedef struct act_ctx {
    int op, n;
    float alpha, x[64], r[64];
} act_ctx;

static void act_fwd(const act_ctx *c, float *y)
{
    if (c->op == RELU6) mt_op_relu6_f32_forward(c->x, y, (size_t)c->n);
    else mt_op_leaky_relu_f32_forward(c->x, y, (size_t)c->n, c->alpha);
}

static double act_objective(void *p)
{
    act_ctx *c = (act_ctx *)p;
    float y[64];
    act_fwd(c, y);
    return dot_r(y, c->r, c->n);
}

static void test_activation(int op, float alpha)
{
    act_ctx c;
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
    act_fwd(&c, y);
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
    gradcheck(op == RELU6 ? "relu6 x" : "leaky x", c.x, c.n, dx, 1e-2f, act_objective, &c);

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
    /* Where the generator stood after the pooling cases when one program (test_conv_gradcheck.c)
     * ran every spatial and graph-shaping check: each case draws the numbers it
     * always did. */
    mt_test_seed(0x35ce5a07u);
    test_activation(RELU6, 0.0f);
    test_activation(LEAKY, 0.1f);
    test_activation(LEAKY, 0.0f);
    return MT_TEST_END();
}
