/*
 * The @code example of microtrain.h, compiled and run exactly as the header shows it.
 * CMakeLists.txt cuts the block out of the header into header_example.inc at configure
 * time, so when the manual changes this test compiles the new text; a manual that no
 * longer compiles or runs breaks the build or this test.
 *
 * The example leaves two things to its reader: the model image (image, image_bytes) and
 * "fill the first n rows of x and y". We provide a softmax classifier from image_builder;
 * the example's own step runs on the buffers as init left them, then this test fills x and
 * y through the very pointers the example obtained and keeps training with them.
 */
#include <math.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"

#define ARENA_BYTES 65536 /* the example's static arena; checked against the plan below */
#define IN 4
#define OUT 3

/* What the example leaves behind, handed to the test. */
static struct {
    int reached_end;
    mt_session *s;
    float *x;
    void *y;
    int32_t x_count, y_bytes;
    float loss;
    size_t total_bytes;
} ex;

static void header_example(const void *image, size_t image_bytes, int32_t n)
{
#include "header_example.inc"
    ex.reached_end = 1;
    ex.s = s, ex.x = x, ex.y = y, ex.x_count = x_count, ex.y_bytes = y_bytes, ex.loss = loss;
    ex.total_bytes = plan.total_bytes;
}

int main(void)
{
    ib_mlp_spec spec;
    size_t bytes;
    ib_mlp_defaults(&spec);
    spec.in = IN, spec.hidden = 8, spec.out = OUT, spec.out_act = MT_OP_SOFTMAX;
    uint8_t *image = ib_build_mlp(&spec, &bytes);

    header_example(image, bytes, 16);
    CHECK(ex.reached_end);
    if (!ex.reached_end) /* nothing below can run without the example's session */
        return MT_TEST_END();
    CHECK(ex.total_bytes <= ARENA_BYTES);
    CHECK(isfinite(ex.loss));
    CHECK_EQ_INT(ex.x_count, 16 * IN);       /* [batch, features] */
    CHECK_EQ_INT(ex.y_bytes, 16 * OUT * 4);  /* [batch, outputs] floats for CCE */
    int64_t step = 0, epoch = 0;
    CHECK_STATUS(mt_session_counters(ex.s, &step, &epoch), MT_OK);
    CHECK_EQ_INT(step, 1);

    /* now fill the rows as the example's comment asks: class = argmax of the first 3 inputs */
    float *x = ex.x, *y = (float *)ex.y, first = 0.f, last = 0.f;
    mt_test_seed(5u);
    for (int i = 0; i < 16; i++) {
        int best = 0;
        for (int k = 0; k < IN; k++)
            x[i * IN + k] = mt_test_uniform(-1.f, 1.f);
        for (int k = 1; k < OUT; k++)
            if (x[i * IN + k] > x[i * IN + best])
                best = k;
        for (int k = 0; k < OUT; k++)
            y[i * OUT + k] = k == best ? 1.f : 0.f;
    }
    for (int it = 0; it < 100; it++) {
        float loss;
        CHECK_STATUS(mt_session_train_step(ex.s, 16, &loss), MT_OK);
        if (it == 0)
            first = loss;
        last = loss;
    }
    printf("example model: loss %.4g -> %.4g\n", (double)first, (double)last);
    CHECK(last < 0.5f * first);
    free(image);
    return MT_TEST_END();
}
