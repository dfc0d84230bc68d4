/*
 * Add (ops/add.c), raw and through its graph adapter, against exact sums and central finite
 * differences (gradcheck_util.h): Add of x + x (one tensor in both slots) and with an input
 * that carries no gradient. Its gradient's += is a row of the kernel table
 * (add_f32_accumulate: boards/app/siblings_elementwise.c, run by test_kernel_siblings.c).
 */
#include "gradcheck_util.h"

static void test_add(void)
{
    enum { N = 2 * 3 * 4 };
    float a[N], b[N], y[N], r[N], da[N], db[N], d0[N];
    fill(a, N, -1.f, 1.f), fill(b, N, -1.f, 1.f), fill(r, N, -1.f, 1.f), fill(d0, N, -1.f, 1.f);
    mt_op_add_f32_forward(a, b, y, N);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(y[i], a[i] + b[i]);
    memcpy(da, d0, sizeof da);
    mt_op_add_f32_accumulate_ref(r, da, N);
    mt_op_add_f32_accumulate_ref(r, da, N);
    for (int i = 0; i < N; i++)
        CHECK_NEAR(da[i], (double)d0[i] + 2.0 * r[i], 1e-6);

    /* adapter, y = a + a (one tensor in both slots): da = 2·dy */
    graph_ctx c;
    memset(&c, 0, sizeof c);
    c.k = mt_op_kernel_for(MT_OP_ADD);
    if (!CHECK(c.k != NULL))
        return;
    c.op.type = MT_OP_ADD, c.op.num_inputs = 2, c.op.num_outputs = 1;
    c.op.inputs[0] = 0, c.op.inputs[1] = 0, c.op.inputs[2] = c.op.inputs[3] = MT_NO_TENSOR;
    c.op.outputs[0] = 1, c.op.outputs[1] = MT_NO_TENSOR;
    c.n = 2, c.out = 1, c.ny = N, c.r = r;
    memset(da, 0, sizeof da);
    tensor_rt(&c.t[0], a, da, 3, 4);
    tensor_rt(&c.t[1], y, (float *)r, 3, 4); /* dy = r */
    c.k->forward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(y[i], a[i] + a[i]);
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(da[i], 2.0f * r[i]);
    gradcheck("add(a,a) a", a, N, da, 1e-2f, graph_objective, &c);

    /* adapter, y = a + b with b carrying no gradient: b skipped, a gets dy */
    c.op.inputs[1] = 2;
    memset(da, 0, sizeof da);
    memcpy(db, d0, sizeof db);
    tensor_rt(&c.t[2], b, NULL, 3, 4);
    c.k->forward(&c.op, c.t, c.n, NULL);
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int i = 0; i < N; i++)
        CHECK_BITS_EQ(da[i], r[i]);
    CHECK(memcmp(db, d0, sizeof db) == 0);
}

int main(void)
{
    /* Where the generator stood after the activation cases when one program (test_conv_gradcheck.c)
     * ran every spatial and graph-shaping check: each case draws the numbers it
     * always did. */
    mt_test_seed(0x44d620d4u);
    test_add();
    return MT_TEST_END();
}
