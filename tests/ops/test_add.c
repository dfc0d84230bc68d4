/*
 * Add and Concatenation (ops.h), raw and through their graph adapters, against central finite
 * differences (gradcheck_util.h): Add of x + x (one tensor in both slots) and with an input
 * that carries no gradient; Concatenation of 2 and 3 inputs and of the same tensor twice.
 */
#include "gradcheck_util.h"

/* ---- Add and Concatenation, raw and through their graph adapters ------------------------------- */

static void tensor_rt(mt_tensor_rt *t, float *data, float *grad, uint32_t rows, uint32_t cols)
{
    memset(t, 0, sizeof *t);
    t->data = data, t->mutable_data = data, t->grad = grad;
    t->dims[0] = rows, t->dims[1] = cols;
    t->count = rows * cols, t->last_dim = cols;
    t->dtype = MT_DTYPE_F32;
}

typedef struct graph_ctx {
    const mt_op_kernel *k;
    mt_op_desc op;
    mt_tensor_rt t[5];
    int out, ny;
    uint32_t n;
    const float *r;
} graph_ctx;

static double graph_objective(void *p)
{
    graph_ctx *c = (graph_ctx *)p;
    c->k->forward(&c->op, c->t, c->n, NULL);
    return dot_r(c->t[c->out].data, c->r, c->ny);
}

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
    /* Where the generator stood after the activation cases when one program (test_conv_gradcheck.c)
     * ran every spatial and graph-shaping check: each case draws the numbers it
     * always did. */
    mt_test_seed(0x44d620d4u);
    test_add();
    test_concat(w2, 2, 0);
    test_concat(w3, 3, 0);
    test_concat(wsame, 3, 1); /* Concatenation(a, b, a) */
    return MT_TEST_END();
}
