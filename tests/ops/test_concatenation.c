/*
 * Concatenation (ops/concatenation.c) through its graph adapter: forward bit for bit, the
 * gradients against central finite differences (gradcheck_util.h), of 2 and 3 inputs and of
 * the same tensor twice; accumulation, and an input without a gradient skipped.
 */
#include "gradcheck_util.h"

/* inputs: widths of the K inputs (0 ends), each [R = 3, C_k] per sample, batch 2;
 * same_twice: the first tensor also fills the last slot. */
static void test_concat(const uint32_t *widths, int K, int same_twice)
{
    enum { R = 3, NB = 2 };
    static float x[4][MAXE], dx[4][MAXE], y[MAXE], r[MAXE], d0[4][MAXE];
    graph_ctx c;
    memset(&c, 0, sizeof c);
    c.k = mt_op_kernel_for(MT_OP_CONCATENATION);
    if (!CHECK(c.k != NULL))
        return;
    uint32_t total = 0;
    int distinct = same_twice ? K - 1 : K;
    c.op.type = MT_OP_CONCATENATION, c.op.num_inputs = (uint8_t)K, c.op.num_outputs = 1;
    for (int k = 0; k < 4; k++)
        c.op.inputs[k] = k < K ? (uint16_t)(k < distinct ? k : 0) : MT_NO_TENSOR;
    for (int k = 0; k < distinct; k++) {
        fill(x[k], NB * R * (int)widths[k], -1.f, 1.f);
        memset(dx[k], 0, sizeof dx[k]);
        tensor_rt(&c.t[k], x[k], dx[k], R, widths[k]);
    }
    for (int k = 0; k < K; k++)
        total += widths[k < distinct ? k : 0];
    c.ny = NB * R * (int)total, c.out = 4, c.n = NB, c.r = r;
    fill(r, c.ny, -1.f, 1.f);
    tensor_rt(&c.t[4], y, r, R, total);
    c.op.outputs[0] = 4, c.op.outputs[1] = MT_NO_TENSOR;
    c.k->forward(&c.op, c.t, c.n, NULL);
    int bad = 0;
    for (int row = 0; row < NB * R; row++) {
        uint32_t off = 0;
        for (int k = 0; k < K; k++) {
            int src = k < distinct ? k : 0;
            uint32_t w = widths[src];
            for (uint32_t j = 0; j < w; j++)
                bad += memcmp(&y[(size_t)row * total + off + j], &x[src][(size_t)row * w + j], 4) != 0;
            off += w;
        }
    }
    CHECK_EQ_INT(bad, 0);
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int k = 0; k < distinct; k++)
        gradcheck("concat x", x[k], NB * R * (int)widths[k], dx[k], 1e-2f, graph_objective, &c);
    /* accumulation, and an input without a gradient is skipped */
    for (int k = 0; k < distinct; k++)
        memcpy(d0[k], dx[k], sizeof d0[k]);
    c.t[distinct - 1].grad = NULL;
    c.k->backward(&c.op, c.t, c.n, NULL);
    for (int k = 0; k < distinct - 1; k++)
        for (int i = 0; i < NB * R * (int)widths[k]; i++)
            CHECK_NEAR(dx[k][i], 2.0 * d0[k][i], 1e-6);
    CHECK(memcmp(dx[distinct - 1], d0[distinct - 1], sizeof d0[0]) == 0);
}

int main(void)
{
    static const uint32_t w2[] = { 2, 3 }, w3[] = { 1, 4, 2 }, wsame[] = { 3, 2, 3 };
    /* where the generator stood when one program (test_conv_gradcheck.c) ran every spatial and
     * graph-shaping check: each case draws the numbers it always did */
    mt_test_seed(3382773242u);
    test_concat(w2, 2, 0);
    test_concat(w3, 3, 0);
    test_concat(wsame, 3, 1); /* Concatenation(a, b, a) */
    return MT_TEST_END();
}
