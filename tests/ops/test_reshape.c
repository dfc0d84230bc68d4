/*
 * Reshape / Flatten (ops/reshape.c) through its graph adapter: y = x bit for bit into another
 * buffer, nothing moved when planned in place (y is x), and dx += dy, a NULL gradient skipped.
 * The gradient, dx = dy, against central finite differences (gradcheck_util.h).
 */
#include "gradcheck_util.h"

int main(void)
{
    enum { NB = 2, R = 3, C = 4, N = NB * R * C };
    float x[N], y[N], r[N], dx[N], d0[N];
    graph_ctx c;
    memset(&c, 0, sizeof c);
    mt_test_seed(20240612u);
    fill(x, N, -1.f, 1.f), fill(r, N, -1.f, 1.f), fill(d0, N, -1.f, 1.f);
    c.k = mt_op_kernel_for(MT_OP_RESHAPE);
    if (!CHECK(c.k != NULL)) return MT_TEST_END();
    c.op.type = MT_OP_RESHAPE, c.op.num_inputs = 1, c.op.num_outputs = 1;
    c.op.inputs[0] = 0, c.op.inputs[1] = c.op.inputs[2] = c.op.inputs[3] = MT_NO_TENSOR;
    c.op.outputs[0] = 1, c.op.outputs[1] = MT_NO_TENSOR;
    c.n = NB, c.out = 1, c.ny = N, c.r = r;
    memset(dx, 0, sizeof dx);
    tensor_rt(&c.t[0], x, dx, R, C);
    tensor_rt(&c.t[1], y, r, C, R); /* [3, 4] -> [4, 3], dy = r */
    c.k->forward(&c.op, c.t, c.n, NULL);
    CHECK(memcmp(y, x, sizeof x) == 0);
    c.k->backward(&c.op, c.t, c.n, NULL);
    CHECK(memcmp(dx, r, sizeof r) == 0); /* 0 + dy: exact */
    gradcheck("reshape x", x, N, dx, 1e-2f, graph_objective, &c);

    memcpy(dx, d0, sizeof dx); /* accumulates: d0 + dy, each one float addition */
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++) CHECK_BITS_EQ(dx[i], d0[i] + r[i]);
    c.t[0].grad = NULL; /* an input without a gradient: nothing written */
    memcpy(dx, d0, sizeof dx);
    c.k->backward(&c.op, c.t, c.n, NULL);
    CHECK(memcmp(dx, d0, sizeof dx) == 0);

    tensor_rt(&c.t[1], x, r, C, R); /* planned in place: the output is the input's buffer */
    memcpy(y, x, sizeof x);
    c.k->forward(&c.op, c.t, c.n, NULL);
    CHECK(memcmp(x, y, sizeof x) == 0);
    return MT_TEST_END();
}
