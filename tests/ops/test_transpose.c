/*
 * Transpose (ops/transpose.c): the sample axes permuted, forward bit for bit against index
 * arithmetic, the gradient (the inverse permutation) against central finite differences and
 * its += (gradcheck_util.h, check_binary_op; one operand, b is drawn and unused).
 */
#include "gradcheck_util.h"

/* 4-D sample dims as the adapter passes them (leading axes of size 1 stay in place) */
typedef struct transpose_shape {
    uint32_t nb, X[4], perm[4];
} transpose_shape;

static void transpose_forward(const binary_op *op, const float *a, const float *b, float *y)
{
    const transpose_shape *t = op->shape;
    (void)b;
    mt_op_transpose_f32_forward(a, y, t->nb, t->X, t->perm);
}

static void transpose_backward(const binary_op *op, const float *a, const float *b, const float *dy, float *da,
                               float *db)
{
    const transpose_shape *t = op->shape;
    (void)a, (void)b, (void)db;
    mt_op_transpose_f32_backward(dy, da, t->nb, t->X, t->perm);
}

/* y's axis k is x's axis perm[k]: y's index i, split over the dims X[perm[k]], gives the
 * coordinates j[perm[k]] of the element of x it holds */
static float transpose_expected(const binary_op *op, const float *a, const float *b, int i)
{
    const transpose_shape *t = op->shape;
    const uint32_t count = t->X[0] * t->X[1] * t->X[2] * t->X[3];
    uint32_t j[4], rest = (uint32_t)i % count, e = 0;
    (void)b;
    for (int k = 3; k >= 0; k--) j[t->perm[k]] = rest % t->X[t->perm[k]], rest /= t->X[t->perm[k]];
    for (int d = 0; d < 4; d++) e = e * t->X[d] + j[d];
    return a[(uint32_t)i / count * count + e];
}

int main(void)
{
    static const transpose_shape cases[] = {
        { 2, { 1, 3, 4, 2 }, { 0, 2, 3, 1 } }, /* [C, H, W] -> [H, W, C]: an ONNX input */
        { 2, { 1, 4, 2, 3 }, { 0, 3, 1, 2 } }, /* [H, W, C] -> [C, H, W]: an ONNX output */
        { 2, { 1, 1, 5, 3 }, { 0, 1, 3, 2 } }, /* a matrix */
        { 2, { 2, 3, 1, 4 }, { 3, 1, 0, 2 } }, /* 4-D */
        { 2, { 1, 1, 1, 6 }, { 0, 1, 2, 3 } }, /* identity */
    };
    /* where the generator stood when one program (test_ops_gradcheck.c) ran the layout checks */
    mt_test_seed(1554963117u);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const transpose_shape *t = &cases[k];
        const int n = (int)(t->nb * t->X[0] * t->X[1] * t->X[2] * t->X[3]);
        const binary_op op = { "transpose", n, n, 0, t, transpose_forward, transpose_backward, transpose_expected };
        check_binary_op(&op);
    }
    return MT_TEST_END();
}
