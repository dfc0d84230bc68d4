/*
 * Optimized kernels are siblings of the reference kernels and must compute the same bits
 * (STYLE: "reference first"): host and device may run either, and host simulation is exact
 * only if they agree. Each sibling runs beside its reference on random shapes and data,
 * with gradients that start non-zero (backward accumulates), and every output element must
 * be bitwise equal; NULL gradients are skipped alike.
 */
#include <stdlib.h>
#include <string.h>

#include "mt_test.h"
#include "ops/fast/fast.h"
#include "ops/ops.h"

static void fill(float *v, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) v[i] = mt_test_uniform(-scale, scale);
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* mt_op_dense_f32_backward_rows against mt_op_dense_f32_backward */
static void check_dense_rows(uint32_t B, uint32_t I, uint32_t U, unsigned seed)
{
    mt_test_seed(seed);
    float *x = malloc(sizeof(float) * B * I), *w = malloc(sizeof(float) * U * I);
    float *dy = malloc(sizeof(float) * B * U), *acc = malloc(mt_op_dense_f32_scratch_bytes(B, I, U));
    float *dx[2], *dw[2], *db[2];
    for (int k = 0; k < 2; k++) {
        dx[k] = malloc(sizeof(float) * B * I), dw[k] = malloc(sizeof(float) * U * I);
        db[k] = malloc(sizeof(float) * U);
    }
    fill(x, (size_t)B * I, 2.0f), fill(w, (size_t)U * I, 1.0f), fill(dy, (size_t)B * U, 1.5f);
    fill(dx[0], (size_t)B * I, 0.5f), fill(dw[0], (size_t)U * I, 0.5f), fill(db[0], U, 0.5f);
    memcpy(dx[1], dx[0], sizeof(float) * B * I), memcpy(dw[1], dw[0], sizeof(float) * U * I);
    memcpy(db[1], db[0], sizeof(float) * U);

    mt_op_dense_f32_backward(x, w, dy, dx[0], dw[0], db[0], B, I, U);
    mt_op_dense_f32_backward_rows(x, w, dy, dx[1], dw[1], db[1], B, I, U, acc);
    CHECK(same_bits(dx[0], dx[1], (size_t)B * I));
    CHECK(same_bits(dw[0], dw[1], (size_t)U * I));
    CHECK(same_bits(db[0], db[1], U));

    /* only some gradients wanted: the others stay untouched in both */
    mt_op_dense_f32_backward(x, w, dy, NULL, dw[0], NULL, B, I, U);
    mt_op_dense_f32_backward_rows(x, w, dy, NULL, dw[1], NULL, B, I, U, acc);
    mt_op_dense_f32_backward(x, w, dy, dx[0], NULL, NULL, B, I, U);
    mt_op_dense_f32_backward_rows(x, w, dy, dx[1], NULL, NULL, B, I, U, acc);
    CHECK(same_bits(dx[0], dx[1], (size_t)B * I));
    CHECK(same_bits(dw[0], dw[1], (size_t)U * I));
    CHECK(same_bits(db[0], db[1], U));

    for (int k = 0; k < 2; k++) free(dx[k]), free(dw[k]), free(db[k]);
    free(x), free(w), free(dy), free(acc);
}

/* mt_op_dense_f32_forward_blocked against mt_op_dense_f32_forward (U not a multiple of 4 too) */
static void check_dense_forward_blocked(uint32_t B, uint32_t I, uint32_t U, unsigned seed, int with_bias)
{
    mt_test_seed(seed);
    float *x = malloc(sizeof(float) * B * I), *w = malloc(sizeof(float) * U * I);
    float *bias = malloc(sizeof(float) * U), *y0 = malloc(sizeof(float) * B * U);
    float *y1 = malloc(sizeof(float) * B * U);
    fill(x, (size_t)B * I, 2.0f), fill(w, (size_t)U * I, 1.0f), fill(bias, U, 0.5f);
    mt_op_dense_f32_forward(x, w, with_bias ? bias : NULL, y0, B, I, U);
    mt_op_dense_f32_forward_blocked(x, w, with_bias ? bias : NULL, y1, B, I, U);
    CHECK(same_bits(y0, y1, (size_t)B * U));
    free(x), free(w), free(bias), free(y0), free(y1);
}

int main(void)
{
    static const uint32_t shapes[][3] = {{1, 1, 1}, {3, 5, 2}, {16, 64, 32}, {7, 33, 10}, {64, 100, 17},
                                         {2, 257, 3}, {5, 1, 9}, {4, 8, 4}, {3, 6, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (unsigned seed = 1; seed <= 3; seed++)
        {
            check_dense_rows(shapes[s][0], shapes[s][1], shapes[s][2], seed * 101u + (unsigned)s);
            check_dense_forward_blocked(shapes[s][0], shapes[s][1], shapes[s][2], seed * 7u + (unsigned)s,
                                        (int)(seed & 1u));
        }
    CHECK_EQ_INT(mt_op_dense_f32_scratch_bytes(16, 64, 32), 64 * sizeof(float));
    return MT_TEST_END();
}
