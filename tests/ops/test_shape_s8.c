/*
 * The int8 layout ops (ops/shape_s8.c) through their graph adapters, on two samples:
 * RESHAPE_S8's forward copies the bytes (nothing moved when planned in place) and its backward
 * adds dy to dx, bit for bit (ops/quant_grad.h: a reshape under one scale and zero point is the
 * identity of the dequantized values, so dx = dy exactly); CONCATENATION_S8 and PAD_S8, inference
 * only (no backward in their adapters), against index arithmetic written out here. LiteRT's own
 * kernels: tests/ops/test_shape_s8.py.
 */
#include "int8_gradcheck_util.h"

enum { NB = 2 }; /* samples */

/* an int8 activation of one sample's shape [d0, d1, d2] (d2 the last dimension) */
static void s8_tensor(mt_tensor_rt *t, int8_t *data, float *grad, uint32_t d0, uint32_t d1, uint32_t d2)
{
    memset(t, 0, sizeof *t);
    t->data = (const float *)(const void *)data, t->mutable_data = (float *)(void *)data, t->grad = grad;
    t->dims[0] = d0, t->dims[1] = d1, t->dims[2] = d2;
    t->count = d0 * d1 * d2;
    t->dtype = MT_DTYPE_I8;
}

static void one_to_one(mt_op_desc *op, int type)
{
    memset(op, 0, sizeof *op);
    op->type = (uint8_t)type, op->num_inputs = 1, op->num_outputs = 1;
    op->inputs[0] = 0, op->inputs[1] = op->inputs[2] = op->inputs[3] = MT_NO_TENSOR;
    op->outputs[0] = 1, op->outputs[1] = MT_NO_TENSOR;
}

static void check_reshape_s8(void)
{
    enum { R = 3, C = 4, N = NB * R * C };
    int8_t x[N], y[N];
    float dx[N], dy[N], d0[N];
    mt_tensor_rt t[2];
    mt_op_desc op;
    const mt_op_kernel *k = mt_op_kernel_for(MT_OP_RESHAPE_S8);
    if (!CHECK(k != NULL && k->backward != NULL)) return;
    one_to_one(&op, MT_OP_RESHAPE_S8);
    fill_s8(x, N, -128, 127);
    memset(y, 0, sizeof y);
    fill(dy, N, -1.f, 1.f), fill(d0, N, -1.f, 1.f);
    s8_tensor(&t[0], x, dx, 1, R, C);
    s8_tensor(&t[1], y, dy, 1, C, R); /* [3, 4] -> [4, 3] */
    k->forward(&op, t, NB, NULL);
    CHECK(memcmp(y, x, sizeof x) == 0);

    memset(dx, 0, sizeof dx);
    k->backward(&op, t, NB, NULL);
    CHECK(memcmp(dx, dy, sizeof dy) == 0); /* 0 + dy: exact */
    memcpy(dx, d0, sizeof dx); /* accumulates: d0 + dy, each one float addition */
    k->backward(&op, t, NB, NULL);
    int differ = 0;
    for (int i = 0; i < N; i++) differ += !CHECK_BITS_EQ(dx[i], d0[i] + dy[i]);
    if (differ) printf("    reshape_s8: dx is not d0 + dy\n");

    s8_tensor(&t[1], x, dy, 1, C, R); /* planned in place: the output is the input's buffer */
    memcpy(y, x, sizeof x);
    k->forward(&op, t, NB, NULL);
    CHECK(memcmp(x, y, sizeof x) == 0);

    /* An input no trained op writes (a frozen branch beside a trained one) has no gradient
     * buffer: the backward leaves it alone rather than writing through NULL. */
    s8_tensor(&t[0], x, NULL, 1, R, C);
    s8_tensor(&t[1], y, dy, 1, C, R);
    k->backward(&op, t, NB, NULL);
}

/* y [.., 2 + 3 + 1] = a [.., 2] | b [.., 3] | c [.., 1], rows of both samples */
static void check_concatenation_s8(void)
{
    enum { ROWS = 3, CA = 2, CB = 3, CC = 1, CY = CA + CB + CC };
    int8_t a[NB * ROWS * CA], b[NB * ROWS * CB], c[NB * ROWS * CC], y[NB * ROWS * CY];
    mt_tensor_rt t[4];
    mt_op_desc op;
    const mt_op_kernel *k = mt_op_kernel_for(MT_OP_CONCATENATION_S8);
    if (!CHECK(k != NULL && k->backward == NULL)) return; /* inference only */
    memset(&op, 0, sizeof op);
    op.type = MT_OP_CONCATENATION_S8, op.num_inputs = 3, op.num_outputs = 1;
    op.inputs[0] = 0, op.inputs[1] = 1, op.inputs[2] = 2, op.inputs[3] = MT_NO_TENSOR;
    op.outputs[0] = 3, op.outputs[1] = MT_NO_TENSOR;
    fill_s8(a, (int)sizeof a, -128, 127), fill_s8(b, (int)sizeof b, -128, 127), fill_s8(c, (int)sizeof c, -128, 127);
    s8_tensor(&t[0], a, NULL, 1, ROWS, CA);
    s8_tensor(&t[1], b, NULL, 1, ROWS, CB);
    s8_tensor(&t[2], c, NULL, 1, ROWS, CC);
    s8_tensor(&t[3], y, NULL, 1, ROWS, CY);
    k->forward(&op, t, NB, NULL);
    int wrong = 0;
    for (int r = 0; r < NB * ROWS; r++)
        for (int j = 0; j < CY; j++) {
            const int8_t want = j < CA ? a[r * CA + j] : j < CA + CB ? b[r * CB + j - CA] : c[r * CC + j - CA - CB];
            wrong += y[r * CY + j] != want;
        }
    CHECK_EQ_INT(wrong, 0);
}

/* x [2, 3, 2] padded by (1, 0) rows, (2, 1) columns, (0, 1) channels with the zero point -7 */
static void check_pad_s8(void)
{
    enum { H = 2, W = 3, C = 2, TOP = 1, BOTTOM = 0, LEFT = 2, RIGHT = 1, FRONT = 0, BACK = 1 };
    enum { OH = TOP + H + BOTTOM, OW = LEFT + W + RIGHT, OC = FRONT + C + BACK };
    int8_t x[NB * H * W * C], y[NB * OH * OW * OC];
    const int8_t zero_point = -7;
    mt_tensor_rt t[2];
    mt_op_desc op;
    const mt_op_kernel *k = mt_op_kernel_for(MT_OP_PAD_S8);
    if (!CHECK(k != NULL && k->backward == NULL)) return; /* inference only */
    one_to_one(&op, MT_OP_PAD_S8);
    op.params[0] = TOP | BOTTOM << 16, op.params[1] = LEFT | RIGHT << 16, op.params[2] = FRONT | BACK << 16;
    op.params[3] = (uint8_t)zero_point;
    fill_s8(x, (int)sizeof x, -128, 127);
    memset(y, 0x55, sizeof y);
    s8_tensor(&t[0], x, NULL, H, W, C);
    s8_tensor(&t[1], y, NULL, OH, OW, OC);
    k->forward(&op, t, NB, NULL);
    int wrong = 0;
    for (int b = 0; b < NB; b++)
        for (int h = 0; h < OH; h++)
            for (int w = 0; w < OW; w++)
                for (int c = 0; c < OC; c++) {
                    const int ih = h - TOP, iw = w - LEFT, ic = c - FRONT;
                    const int inside = ih >= 0 && ih < H && iw >= 0 && iw < W && ic >= 0 && ic < C;
                    const int8_t want = inside ? x[((b * H + ih) * W + iw) * C + ic] : zero_point;
                    wrong += y[((b * OH + h) * OW + w) * OC + c] != want;
                }
    CHECK_EQ_INT(wrong, 0);
}

int main(void)
{
    mt_test_seed(20240615u);
    check_reshape_s8();
    check_concatenation_s8();
    check_pad_s8();
    return MT_TEST_END();
}
