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

int main(void)
{
    test_producer_trusts_unvalidated_op();
    return MT_TEST_END();
}
