/*
 * Dense's reference kernels (mt_op_dense_f32_forward_ref / _backward_ref) against a double
 * reference and central finite differences (gradcheck_util.h): with and without bias, forward
 * values, every gradient, backward accumulation (+=), and NULL gradient pointers (skipped, the
 * others unchanged bit for bit). Its siblings: the kernel table's cases
 * (boards/app/siblings_dense.c, which tests/core/test_kernel_siblings.c runs on the host).
 *
 * With h = 1e-2, |L| ~ 10 and L summed in double from float outputs, truncation (h² times the
 * third derivative) and rounding (~ ε_f32 · |L| / h) are both ~1e-4, well under the tolerance
 * |a - b| <= 2e-3 · max(1, |b|).
 */
#include "gradcheck_util.h"
#include "microtrain.h"

/* ---- dense ----------------------------------------------------------------------------- */

typedef struct dense_ctx {
    float *x, *w, *b, *y, *r;
    int B, I, U;
} dense_ctx;

static double dense_objective(void *p)
{
    dense_ctx *c = (dense_ctx *)p;
    mt_op_dense_f32_forward_ref(c->x, c->w, c->b, c->y, (uint32_t)c->B, (uint32_t)c->I,
                                (uint32_t)c->U, MT_FUSED_NONE);
    return dot_r(c->y, c->r, c->B * c->U);
}

static void test_dense(int B, int I, int U, int with_bias)
{
    int nx = B * I, nw = U * I, ny = B * U;
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
    float *b = malloc(sizeof(float) * (size_t)U), *y = malloc(sizeof(float) * (size_t)ny);
    float *r = malloc(sizeof(float) * (size_t)ny);
    float *dx = calloc((size_t)nx, sizeof(float)), *dw = calloc((size_t)nw, sizeof(float));
    float *db = calloc((size_t)U, sizeof(float));
    float *gx = malloc(sizeof(float) * (size_t)nx), *gw = malloc(sizeof(float) * (size_t)nw);
    float *gb = malloc(sizeof(float) * (size_t)U);
    float *g0x = malloc(sizeof(float) * (size_t)nx), *g0w = malloc(sizeof(float) * (size_t)nw);
    float *g0b = malloc(sizeof(float) * (size_t)U);
    fill(x, nx, -1.f, 1.f);
    fill(w, nw, -1.f, 1.f);
    fill(b, U, -1.f, 1.f);
    fill(r, ny, -1.f, 1.f);
    dense_ctx c = { x, w, with_bias ? b : NULL, y, r, B, I, U };

    /* forward: y[b,u] = Σ_i x[b,i]·W[u,i] + bias[u] */
    mt_op_dense_f32_forward_ref(x, w, c.b, y, (uint32_t)B, (uint32_t)I, (uint32_t)U, MT_FUSED_NONE);
    for (int bb = 0; bb < B; bb++)
        for (int u = 0; u < U; u++) {
            double s = with_bias ? (double)b[u] : 0.0;
            for (int i = 0; i < I; i++)
                s += (double)x[bb * I + i] * (double)w[u * I + i];
            CHECK_NEAR(y[bb * U + u], s, 1e-5 * (1.0 + fabs(s)));
        }

    /* backward with dy = r against finite differences of L */
    mt_op_dense_f32_backward_ref(x, w, r, dx, dw, with_bias ? db : NULL, (uint32_t)B, (uint32_t)I,
                                 (uint32_t)U, 0);
    gradcheck("x", x, nx, dx, 1e-2f, dense_objective, &c);
    gradcheck("W", w, nw, dw, 1e-2f, dense_objective, &c);
    if (with_bias)
        gradcheck("bias", b, U, db, 1e-2f, dense_objective, &c);

    /* accumulation: start from random gradients, run backward twice */
    fill(g0x, nx, -1.f, 1.f);
    fill(g0w, nw, -1.f, 1.f);
    fill(g0b, U, -1.f, 1.f);
    memcpy(gx, g0x, sizeof(float) * (size_t)nx);
    memcpy(gw, g0w, sizeof(float) * (size_t)nw);
    memcpy(gb, g0b, sizeof(float) * (size_t)U);
    mt_op_dense_f32_backward_ref(x, w, r, gx, gw, with_bias ? gb : NULL, (uint32_t)B, (uint32_t)I,
                                 (uint32_t)U, 0);
    float *g1x = malloc(sizeof(float) * (size_t)nx), *g1w = malloc(sizeof(float) * (size_t)nw);
    float *g1b = malloc(sizeof(float) * (size_t)U);
    memcpy(g1x, gx, sizeof(float) * (size_t)nx);
    memcpy(g1w, gw, sizeof(float) * (size_t)nw);
    memcpy(g1b, gb, sizeof(float) * (size_t)U);
    mt_op_dense_f32_backward_ref(x, w, r, gx, gw, with_bias ? gb : NULL, (uint32_t)B, (uint32_t)I,
                                 (uint32_t)U, 0);
    check_accumulates("x", g0x, g1x, gx, nx);
    check_accumulates("W", g0w, g1w, gw, nw);
    if (with_bias)
        check_accumulates("bias", g0b, g1b, gb, U);
    else
        for (int u = 0; u < U; u++) /* dbias NULL: the buffer we kept aside is untouched */
            CHECK_BITS_EQ(gb[u], g0b[u]);

    /* NULL gradients are skipped; the ones given get the same bits as in the full call */
    float *sx = calloc((size_t)nx, sizeof(float)), *sw = calloc((size_t)nw, sizeof(float));
    float *sb = calloc((size_t)U, sizeof(float));
    mt_op_dense_f32_backward_ref(x, w, r, NULL, sw, NULL, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    mt_op_dense_f32_backward_ref(x, w, r, sx, NULL, NULL, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    if (with_bias)
        mt_op_dense_f32_backward_ref(x, w, r, NULL, NULL, sb, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    mt_op_dense_f32_backward_ref(x, w, r, NULL, NULL, NULL, (uint32_t)B, (uint32_t)I, (uint32_t)U, 0);
    for (int i = 0; i < nx; i++)
        CHECK_BITS_EQ(sx[i], dx[i]);
    for (int i = 0; i < nw; i++)
        CHECK_BITS_EQ(sw[i], dw[i]);
    for (int i = 0; with_bias && i < U; i++)
        CHECK_BITS_EQ(sb[i], db[i]);

    free(x), free(w), free(b), free(y), free(r), free(dx), free(dw), free(db);
    free(gx), free(gw), free(gb), free(g0x), free(g0w), free(g0b), free(g1x), free(g1w);
    free(g1b), free(sx), free(sw), free(sb);
}

int main(void)
{
    static const int shapes[][3] = { { 3, 4, 5 }, { 1, 1, 1 }, { 2, 7, 3 }, { 5, 17, 9 } };
    mt_test_seed(20240601u);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        test_dense(shapes[s][0], shapes[s][1], shapes[s][2], 1);
        test_dense(shapes[s][0], shapes[s][1], shapes[s][2], 0);
    }
    return MT_TEST_END();
}
