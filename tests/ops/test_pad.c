/*
 * Pad (ops/pad.c): zero padding of H and W, forward bit for bit against index arithmetic,
 * the gradient against central finite differences and its += (gradcheck_util.h,
 * check_binary_op; Pad has one operand, b is drawn and unused).
 */
#include "gradcheck_util.h"

typedef struct pad_shape {
    int nb, ih, iw, ic;
    uint32_t top, bottom, left, right;
} pad_shape;

static void pad_forward(const binary_op *op, const float *a, const float *b, float *y)
{
    const pad_shape *p = op->shape;
    (void)b;
    mt_op_pad_f32_forward(a, y, (uint32_t)p->nb, (uint32_t)p->ih, (uint32_t)p->iw, (uint32_t)p->ic, p->top,
                          p->bottom, p->left, p->right);
}

static void pad_backward(const binary_op *op, const float *a, const float *b, const float *dy, float *da, float *db)
{
    const pad_shape *p = op->shape;
    (void)a, (void)b, (void)db;
    mt_op_pad_f32_backward(dy, da, (uint32_t)p->nb, (uint32_t)p->ih, (uint32_t)p->iw, (uint32_t)p->ic, p->top,
                           p->bottom, p->left, p->right);
}

/* y[b, oh, ow, ch] = a[b, oh - top, ow - left, ch] inside, 0 in the border */
static float pad_expected(const binary_op *op, const float *a, const float *b, int i)
{
    const pad_shape *p = op->shape;
    const int OH = (int)(p->top + p->bottom) + p->ih, OW = (int)(p->left + p->right) + p->iw;
    const int ch = i % p->ic, ow = i / p->ic % OW, oh = i / p->ic / OW % OH, n = i / p->ic / OW / OH;
    const int h = oh - (int)p->top, w = ow - (int)p->left;
    (void)b;
    return (h < 0 || h >= p->ih || w < 0 || w >= p->iw) ? 0.0f : a[((n * p->ih + h) * p->iw + w) * p->ic + ch];
}

int main(void)
{
    static const uint32_t pads[][4] = { { 1, 1, 1, 1 }, { 0, 2, 3, 0 }, { 2, 0, 0, 1 }, { 0, 0, 0, 0 } };
    /* where the generator stood when one program (test_ops_gradcheck.c) ran the layout checks */
    mt_test_seed(4283532782u);
    for (size_t k = 0; k < sizeof pads / sizeof pads[0]; k++) {
        const pad_shape p = { 2, 3, 4, 2, pads[k][0], pads[k][1], pads[k][2], pads[k][3] };
        const binary_op op = { "pad", p.nb * p.ih * p.iw * p.ic,
                               p.nb * (p.ih + (int)(p.top + p.bottom)) * (p.iw + (int)(p.left + p.right)) * p.ic,
                               0, &p, pad_forward, pad_backward, pad_expected };
        check_binary_op(&op);
    }
    return MT_TEST_END();
}
