/*
 * Mul and Sub (ops/arithmetic.c): forward bit for bit (each output one float operation), the
 * gradients of the activation operands against central finite differences and backward's +=
 * (gradcheck_util.h, check_binary_op). b is a second activation of a's shape, a constant of C
 * values broadcast over the last dimension, or one value; a constant may come first.
 */
#include "gradcheck_util.h"

enum { SAME, CHANNEL, CONST_FIRST };
typedef struct arith_shape {
    int mul, broadcast;
    size_t R; /* rows of C */
    uint32_t C;
} arith_shape;

static void arith_forward(const binary_op *op, const float *a, const float *b, float *y)
{
    const arith_shape *s = op->shape;
    const uint32_t C = s->C;
    if (s->mul) {
        if (s->broadcast == SAME) mt_op_mul_f32_forward(a, C, 1, b, C, 1, y, s->R, C);
        else if (s->broadcast == CHANNEL) mt_op_mul_f32_forward(a, C, 1, b, 0, 1, y, s->R, C);
        else mt_op_mul_f32_forward(b, 0, 0, a, C, 1, y, s->R, C); /* one value · a */
    } else {
        if (s->broadcast == SAME) mt_op_sub_f32_forward(a, C, 1, b, C, 1, y, s->R, C);
        else if (s->broadcast == CHANNEL) mt_op_sub_f32_forward(a, C, 1, b, 0, 1, y, s->R, C);
        else mt_op_sub_f32_forward(b, 0, 1, a, C, 1, y, s->R, C); /* constant − a */
    }
}

static void arith_backward(const binary_op *op, const float *a, const float *b, const float *dy, float *da,
                           float *db)
{
    const arith_shape *s = op->shape;
    const uint32_t C = s->C;
    const size_t N = s->R * C;
    if (s->mul) { /* da += dy · b, db += dy · a */
        if (s->broadcast == SAME) {
            mt_op_mul_f32_backward(b, C, 1, dy, da, s->R, C);
            if (db) mt_op_mul_f32_backward(a, C, 1, dy, db, s->R, C);
        } else if (s->broadcast == CHANNEL) {
            mt_op_mul_f32_backward(b, 0, 1, dy, da, s->R, C);
        } else {
            mt_op_mul_f32_backward(b, 0, 0, dy, da, s->R, C);
        }
    } else { /* the minuend's += dy, the subtrahend's -= dy */
        if (s->broadcast == CONST_FIRST) {
            mt_op_sub_f32_backward(dy, da, N);
        } else {
            mt_op_add_f32_accumulate_ref(dy, da, N);
            if (db && s->broadcast == SAME) mt_op_sub_f32_backward(dy, db, N);
        }
    }
}

static float arith_expected(const binary_op *op, const float *a, const float *b, int i)
{
    const arith_shape *s = op->shape;
    const int ch = i % (int)s->C;
    switch (s->broadcast) {
    case SAME: return s->mul ? a[i] * b[i] : a[i] - b[i];
    case CHANNEL: return s->mul ? a[i] * b[ch] : a[i] - b[ch];
    default: return s->mul ? b[0] * a[i] : b[ch] - a[i];
    }
}

int main(void)
{
    static const char *names[2][3] = { { "sub", "sub_channel", "sub_const_first" },
                                       { "mul", "mul_channel", "mul_scalar_first" } };
    /* where the generator stood when one program (test_ops_gradcheck.c) ran the layout checks */
    mt_test_seed(1462350229u);
    for (int mul = 1; mul >= 0; mul--)
        for (int broadcast = SAME; broadcast <= CONST_FIRST; broadcast++) {
            const arith_shape s = { mul, broadcast, 3 * 2 * 2, 3 }; /* [3, 2, 2, 3] */
            const binary_op op = { names[mul][broadcast], 36, 36, broadcast == SAME, &s,
                                   arith_forward, arith_backward, arith_expected };
            check_binary_op(&op);
        }
    return MT_TEST_END();
}
