/*
 * Regressions found by the fuzzers (tests/fuzz, tools/run_fuzz.sh), one function per finding,
 * each building its input with image_builder so the case reads as what went wrong. The raw
 * reproducers are kept beside the harnesses under tests/fuzz/regressions/<harness>/.
 * Some of these read out of bounds without changing any result: they fail only in the
 * sanitizer build (tools/run_sanitizers.sh), which is where they must stay fixed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"

static uint8_t *mlp(size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 3, spec.hidden = 4, spec.out = 2, spec.hidden_act = MT_OP_TANH;
    return ib_build_mlp(&spec, bytes);
}

/* Found by fuzz_model_image and fuzz_session (producer_reads_unvalidated_num_outputs):
 * validating op 0 looks up the producer of each operand over *all* ops, trusting
 * num_outputs of later ops that are not validated yet; a later op declaring more than two
 * outputs made mt_image_producer() index mt_op_desc.outputs[2..254] (past the array, on the
 * stack). The image must simply be refused. */
static void test_producer_trusts_unvalidated_op(void)
{
    /* MLP tensors: x 0, W1 1, b1 2, h 3, a 4, W2 5, b2 6, z 7; ops: dense, tanh, dense. */
    for (int bad = 3; bad <= 255; bad += 84) {
        size_t bytes;
        uint8_t *img = mlp(&bytes);
        ib_put_u16(img, ib_op_entry(img, 1) + 4, 7); /* tanh reads z, written by a later op */
        img[ib_op_entry(img, 2) + 2] = (uint8_t)bad; /* the later op: num_outputs out of range */
        ib_put_u16(img, ib_op_entry(img, 2) + 12, 0xFFFF); /* ... and z nowhere among them */
        ib_refresh_crc(img);
        mt_model_info info;
        CHECK_STATUS(mt_model_check(img, bytes, &info), MT_ERR_BAD_MODEL);
        mt_train_config cfg;
        mt_train_config_init(&cfg);
        mt_memory_plan plan;
        CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_ERR_BAD_MODEL);
        free(img);
    }
}

typedef struct sink {
    uint8_t data[4096];
    size_t size;
} sink;

static mt_status sink_write(void *user, const void *data, size_t bytes)
{
    sink *k = user;
    if (bytes > sizeof k->data - k->size) return MT_ERR_IO;
    memcpy(k->data + k->size, data, bytes);
    k->size += bytes;
    return MT_OK;
}

/* A session on `img` in a static arena after one train step on a row of `x` values and a
 * target of `y` values (each test uses it once, before the next one's). */
static mt_session *trained_one_step(const uint8_t *img, size_t bytes, const mt_train_config *cfg,
                                    float x_value, float y_value)
{
    static uint8_t arena[16384] __attribute__((aligned(16)));
    mt_session *s = NULL;
    CHECK_STATUS(mt_session_init(&s, img, bytes, cfg, arena, sizeof arena), MT_OK);
    float *x;
    void *y;
    int32_t count, target_bytes;
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, &y, &target_bytes);
    for (int32_t i = 0; i < count; ++i) x[i] = x_value;
    for (int32_t i = 0; i < target_bytes / 4; ++i) ((float *)y)[i] = y_value;
    CHECK_STATUS(mt_session_train_step(s, 1, NULL), MT_OK);
    return s;
}

/* Found by fuzz_session (export_rewrites_io_table_inside_trained_weights): the reader accepts
 * an image whose io table lies inside the data of a TRAINABLE tensor (every region only has
 * to be inside the image, not disjoint from the others). Training that tensor and exporting
 * then writes the new weights over the io table, so mt_session_export_image() produces an
 * image that no longer validates, against its contract ("loadable by mt_session_init()").
 * Either such an image is refused, or its export must validate. */
static void test_export_of_overlapping_regions(void)
{
    size_t bytes;
    uint8_t *img = mlp(&bytes);
    const uint32_t data_offset = ib_get_u32(img, 44);
    const size_t w1 = ib_tensor_entry(img, 1);
    const uint32_t io_at = data_offset + ib_get_u32(img, w1 + 20); /* W1's first floats */
    const uint16_t input = ib_get_u16(img, ib_get_u32(img, 40));
    const uint16_t output = ib_get_u16(img, ib_get_u32(img, 40) + 2);
    ib_put_u32(img, 40, io_at);
    ib_put_u16(img, io_at, input);  /* W1[0] now holds the io table's bits */
    ib_put_u16(img, io_at + 2, output);
    ib_refresh_crc(img);
    mt_status st = mt_model_check(img, bytes, NULL);
    CHECK(st == MT_OK || st == MT_ERR_BAD_MODEL);
    if (st == MT_OK) {
        mt_train_config cfg;
        mt_train_config_init(&cfg);
        mt_session *s = trained_one_step(img, bytes, &cfg, 1.0f, 1.0f);
        static sink out;
        out.size = 0;
        CHECK_STATUS(mt_session_export_image(s, sink_write, &out), MT_OK);
        CHECK_STATUS(mt_model_check(out.data, out.size, NULL), MT_OK);
    }
    free(img);
}

/* Found by fuzz_checkpoint (step_counter_overflows_at_int64_max), contents mode: a valid
 * checkpoint whose step counter is INT64_MAX (any counter >= 0 is accepted) loads, and the
 * next step's `step += 1` overflowed a signed integer (undefined behaviour; UBSan reports
 * it, and in practice the counter wrapped negative, which no checkpoint may then hold). The
 * counter now saturates. */
static void test_step_counter_at_int64_max(void)
{
    size_t bytes;
    uint8_t *img = mlp(&bytes);
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.momentum = 0.9f;
    mt_session *s = trained_one_step(img, bytes, &cfg, 0.5f, 0.25f);
    static sink ck;
    ck.size = 0;
    CHECK_STATUS(mt_checkpoint_save(s, 1, NULL, 0, sink_write, &ck), MT_OK);
    ib_put_u32(ck.data, 32, 0xFFFFFFFFu); /* step = INT64_MAX */
    ib_put_u32(ck.data, 36, 0x7FFFFFFFu);
    ib_put_u32(ck.data, ck.size - 4, ib_crc32(ck.data, ck.size - 4));
    CHECK_STATUS(mt_checkpoint_load_buffer(s, ck.data, ck.size, NULL, NULL), MT_OK);
    for (int k = 0; k < 2; ++k) CHECK_STATUS(mt_session_train_step(s, 1, NULL), MT_OK);
    int64_t step = 0;
    CHECK_STATUS(mt_session_counters(s, &step, NULL), MT_OK);
    CHECK(step == INT64_MAX);
    ck.size = 0; /* and the session still saves a checkpoint that loads */
    CHECK_STATUS(mt_checkpoint_save(s, 1, NULL, 0, sink_write, &ck), MT_OK);
    CHECK_STATUS(mt_checkpoint_load_buffer(s, ck.data, ck.size, NULL, NULL), MT_OK);
    free(img);
}

int main(void)
{
    test_producer_trusts_unvalidated_op();
    test_export_of_overlapping_regions();
    test_step_counter_at_int64_max();
    return MT_TEST_END();
}
