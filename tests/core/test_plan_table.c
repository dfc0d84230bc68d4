/*
 * A core built with a planner table of MT_TEST_PLAN_BUFFERS entries (CMake's
 * MT_PLAN_MAX_BUFFERS, src/sharing.h; tests/core/CMakeLists.txt builds microtrain_core_table
 * with PLAN_BUFFERS), as `microtrain firmware` builds one for a known plan: the count of that
 * plan's activation and gradient buffers (mt_plan_buffers's), which it reads on the host. That
 * count is at least the table's entries the plan takes (each entry is one tensor's activation
 * or gradient, and each is reported; the report also lists activations and gradients outside
 * the shared region), so a table of that size always holds the plan.
 *   - an MLP whose plan fits a table of 8 entries (10 reported) is planned and bound, and
 *     trains a step;
 *   - the same MLP with a ReLU (two buffers more: its output and gradient) is refused with
 *     MT_ERR_UNSUPPORTED by mt_plan and mt_session_init, and the arena is not written.
 */
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"

#define BATCH 4

static mt_status count_shared(void *user, const mt_buffer_info *buffer)
{
    if (buffer->kind == MT_BUFFER_ACTIVATION || buffer->kind == MT_BUFFER_GRADIENT) *(int *)user += 1;
    return MT_OK;
}

static uint8_t *mlp(int hidden_act, size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 16, spec.hidden = 8, spec.out = 4;
    spec.hidden_act = hidden_act, spec.out_act = MT_OP_SOFTMAX;
    spec.seed = 3u;
    return ib_build_mlp(&spec, bytes);
}

static void config(mt_train_config *cfg)
{
    mt_train_config_init(cfg);
    cfg->optimizer = MT_OPTIMIZER_SGD;
    cfg->loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
    cfg->batch_size = BATCH;
}

static void test_a_plan_filling_the_table(void)
{
    size_t bytes;
    uint8_t *img = mlp(0, &bytes);
    mt_train_config cfg;
    config(&cfg);
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
    int shared = 0;
    CHECK_STATUS(mt_plan_buffers(img, bytes, &cfg, count_shared, &shared), MT_OK);
    printf("  Dense -> Dense -> Softmax: %d shared buffers, table of %u\n", shared,
           (unsigned)MT_TEST_PLAN_BUFFERS);
    CHECK(shared >= MT_TEST_PLAN_BUFFERS); /* the firmware's count would not be smaller */
    uint8_t *block = malloc(plan.total_bytes + MT_ARENA_ALIGN);
    uint8_t *arena = block + (MT_ARENA_ALIGN - (uintptr_t)block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    mt_session *s = NULL;
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes), MT_OK);
    if (s != NULL) {
        float *in, loss = 0.0f;
        void *target;
        int32_t count;
        mt_session_input(s, 0, &in, &count);
        for (int32_t i = 0; i < count; ++i) in[i] = (float)(i % 7) * 0.25f;
        mt_session_target(s, &target, &count);
        for (int32_t i = 0; i < count; ++i) ((float *)target)[i] = i % 4 == (i / 4) % 4 ? 1.0f : 0.0f;
        CHECK_STATUS(mt_session_train_step(s, BATCH, &loss), MT_OK);
        CHECK(loss > 0.0f);
    }
    free(block);
    free(img);
}

static void test_a_larger_plan_is_refused_unwritten(void)
{
    size_t bytes;
    uint8_t *img = mlp(MT_OP_RELU, &bytes);
    mt_train_config cfg;
    config(&cfg);
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_ERR_UNSUPPORTED);
    static uint8_t block[1 << 16];
    uint8_t *arena = block + (MT_ARENA_ALIGN - (uintptr_t)block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    const size_t arena_bytes = sizeof block - MT_ARENA_ALIGN;
    memset(block, 0xA5, sizeof block);
    mt_session *s = NULL;
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, arena_bytes), MT_ERR_UNSUPPORTED);
    CHECK(s == NULL);
    int untouched = 1;
    for (size_t i = 0; i < sizeof block; ++i) untouched &= block[i] == 0xA5;
    CHECK(untouched);
    mt_error_detail detail;
    CHECK_STATUS(mt_model_diagnose(img, bytes, &cfg, &detail), MT_ERR_UNSUPPORTED);
    printf("  with a ReLU: %s\n", mt_status_str(detail.status));
    free(img);
}

int main(void)
{
    test_a_plan_filling_the_table();
    test_a_larger_plan_is_refused_unwritten();
    return MT_TEST_END();
}
