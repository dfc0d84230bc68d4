/*
 * ADD_S8's backward (ops/add_s8.c, the straight-through estimator of ops/quant_grad.h): both
 * operands take dy where the forward's clamp left the sum unchanged and 0 where it cut it, the
 * mask against the forward run with the clamp range widened by one at each end; da adds to what
 * is there, db too. Its forward: LiteRT's kernel (tests/ops/test_add_s8.py) and the kernel
 * table's int8 cases (boards/app/siblings_s8.c, run by tests/core/test_int8_siblings.c).
 */
#include "int8_gradcheck_util.h"

static void check_add_backward(void)
{
    enum { N = 96 };
    static int8_t a[N], b[N], y[N], wide[N];
    static float dy[N], r[N], da[N], db[N], da0[N];
    const float sa = 0.05f, sb = 0.03f, sy = 0.04f;
    const double twice_max = 2.0 * (sa > sb ? sa : sb);
    int32_t rq[8];
    quantize_multiplier(sa / twice_max, &rq[0], &rq[1]);
    quantize_multiplier(sb / twice_max, &rq[2], &rq[3]);
    quantize_multiplier(twice_max / ((double)(1 << 20) * sy), &rq[4], &rq[5]);
    rq[6] = 20, rq[7] = 0;
    const uint32_t zero_points = (uint32_t)(uint8_t)3 | (uint32_t)(uint8_t)-9 << 8 | (uint32_t)(uint8_t)4 << 16;
    fill_s8(a, N, -128, 127), fill_s8(b, N, -128, 127);
    mt_kernel_add_s8_forward(a, b, y, N, rq, zero_points, (uint32_t)(uint8_t)LO | (uint32_t)(uint8_t)HI << 8);
    mt_kernel_add_s8_forward(a, b, wide, N, rq, zero_points,
                             (uint32_t)(uint8_t)(LO - 1) | (uint32_t)(uint8_t)(HI + 1) << 8);
    fill(r, N, -1.0f, 1.0f);
    memcpy(dy, r, sizeof dy);
    fill(da, N, -0.5f, 0.5f);
    memcpy(da0, da, sizeof da);
    memset(db, 0, sizeof db);
    mt_op_add_s8_backward(a, b, dy, da, db, N, rq, zero_points, (uint32_t)(uint8_t)LO | (uint32_t)(uint8_t)HI << 8);
    int low = 0, high = 0, wrong = 0;
    for (int i = 0; i < N; ++i) {
        const int passes = wide[i] >= LO && wide[i] <= HI;
        low += wide[i] < LO, high += wide[i] > HI;
        const float want = passes ? r[i] : 0.0f;
        wrong += memcmp(&db[i], &want, sizeof want) != 0 || da[i] != da0[i] + want;
    }
    printf("  add_s8: %d cut low, %d cut high of %d\n", low, high, N);
    CHECK(low > 0 && high > 0);
    CHECK_EQ_INT(wrong, 0);
}

int main(void)
{
    /* where the generator stood when one program ran every int8 op's backward: the case draws
     * the numbers it always did */
    mt_test_seed(2431132471u);
    check_add_backward();
    return MT_TEST_END();
}
