/*
 * libFuzzer harness: plan query, session init and the steps on whatever validates.
 * Input: an 8-byte configuration prefix (fuzz_models.h, FM_CONFIG_BYTES) then a model image.
 * The image runs as given and with its CRC recomputed. When mt_plan() accepts it and the
 * arena is at most 4 MiB (and the estimated work small, to keep the fuzzer fast), the
 * session is initialised from the plan in an exact-size heap arena with guard bytes on both
 * sides (mt_session_init and init from the plan both refuse one byte short), and a
 * train step, accumulate + optimizer step, eval step, inference, the same three steps on rows
 * read in place from exact-size heap blocks, a checkpoint round trip and an inference export
 * run on deterministic inputs (with a NaN when the prefix asks).
 * Properties: no crash or sanitizer report; statuses are the documented ones; init into an
 * arena one byte short is refused; nothing is written outside the planned arena; trained
 * weights that start finite stay finite through every step (the numeric guard refuses an
 * update that would write a NaN or infinity, whatever the model, rate or mode).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_models.h"
#include "fuzz_util.h"
#include "microtrain.h"

#define MAX_ARENA (4u << 20)
#define MAX_WORK 20000000.0 /* multiply-adds of one forward pass, roughly */
#define GUARD 64

static int known_status(mt_status st)
{
    return st <= MT_OK && st >= MT_ERR_IO;
}

/* An upper bound of one forward pass's work, from the (validated) op table: each op's output
 * elements times its constant operands' elements (or its pooling window). */
static double work_estimate(const uint8_t *img, size_t size, int32_t batch)
{
    const uint32_t num_ops = fz_get_u32(img + 20), ops = fz_get_u32(img + 36);
    double total = 0;
    for (uint32_t o = 0; o < num_ops; ++o) {
        const uint8_t *e = img + ops + 32u * o;
        mt_tensor_info out, in;
        if (mt_model_tensor(img, size, e[12] | e[13] << 8, &out) != MT_OK) return 1e30;
        double per = 1.0 + (double)(fz_get_u32(e + 16) & 0xFFFFu) * (fz_get_u32(e + 16) >> 16);
        for (int k = 0; k < 4; ++k) {
            const uint32_t idx = (uint32_t)(e[4 + 2 * k] | e[5 + 2 * k] << 8);
            if (idx == 0xFFFFu) continue;
            if (mt_model_tensor(img, size, (int32_t)idx, &in) != MT_OK) return 1e30;
            per += (in.flags & MT_TENSOR_CONST) ? (double)in.count : 1.0;
        }
        total += per * out.count * batch;
    }
    return total;
}

static void check_guards(const uint8_t *block, size_t arena_bytes)
{
    for (size_t i = 0; i < GUARD; ++i)
        if (block[i] != 0xA5 || block[GUARD + arena_bytes + i] != 0xA5) abort();
}

/* Every trained weight of s is finite (the image may hold NaN weights of its own). */
static int trained_weights_finite(mt_session *s)
{
    int32_t n = 0;
    mt_session_param_count(s, &n);
    for (int32_t p = 0; p < n; ++p) {
        mt_param_info info;
        if (mt_session_param(s, p, &info) != MT_OK) abort();
        for (int32_t i = 0; i < info.held; ++i) /* the arena's values (mt_param_info.held) */
            if (!isfinite(info.data[i])) return 0;
    }
    return 1;
}

/* The same steps on rows read where they lie (mt_session_*_rows), from heap blocks of exactly
 * n rows, which the sanitizers fence: a kernel reading past them is a heap overflow, and one
 * writing them changes what a pristine copy keeps. The eval step's status and loss are those
 * of the same rows copied into the input buffer, bit for bit. */
static void steps_on_rows(mt_session *s, const uint8_t *img, size_t size, int32_t rows, int poison, int32_t batch)
{
    mt_model_info info;
    if (mt_model_check(img, size, &info) != MT_OK || info.num_inputs < 1) abort();
    const int32_t K = info.num_inputs;
    void **blocks = calloc((size_t)K, sizeof *blocks), **pristine = calloc((size_t)K, sizeof *pristine);
    const float **inputs = calloc((size_t)K, sizeof *inputs);
    size_t *bytes = calloc((size_t)K, sizeof *bytes);
    if (!blocks || !pristine || !inputs || !bytes) abort();
    fm_fill(s, rows, 9u, poison);
    for (int32_t k = 0; k < K; ++k) {
        float *x;
        int32_t count, index;
        mt_tensor_info t;
        if (mt_session_input(s, k, &x, &count) != MT_OK || mt_model_io(img, size, 0, k, &index) != MT_OK ||
            mt_model_tensor(img, size, index, &t) != MT_OK)
            abort();
        bytes[k] = (size_t)rows * (size_t)(count / batch) * (t.dtype == MT_DTYPE_I8 ? 1u : 4u);
        blocks[k] = malloc(bytes[k] ? bytes[k] : 1), pristine[k] = malloc(bytes[k] ? bytes[k] : 1);
        if (!blocks[k] || !pristine[k]) abort();
        memcpy(blocks[k], x, bytes[k]), memcpy(pristine[k], x, bytes[k]);
        inputs[k] = (const float *)blocks[k];
    }
    float copied = 0.0f, in_place = 1.0f;
    const mt_status a = mt_session_eval_step(s, rows, &copied);
    const mt_status b = mt_session_eval_step_rows(s, rows, inputs, &in_place);
    if (a != b || (a == MT_OK && memcmp(&copied, &in_place, sizeof copied) != 0)) abort();
    const mt_status st = mt_session_train_step_rows(s, rows, inputs, &in_place);
    if (st != MT_OK && st != MT_ERR_NUMERIC && st != MT_ERR_STATE && st != MT_ERR_BAD_ARGUMENT) abort();
    if (mt_session_infer_rows(s, rows, inputs) != MT_OK) abort();
    for (int32_t k = 0; k < K; ++k) {
        if (memcmp(blocks[k], pristine[k], bytes[k]) != 0) abort(); /* an input was written */
        free(blocks[k]), free(pristine[k]);
    }
    free(blocks), free(pristine), free(inputs), free(bytes);
}

static void steps(mt_session *s, int32_t rows, int poison, const uint8_t *block, size_t arena_bytes,
                  const uint8_t *img, size_t size, int32_t batch)
{
    float loss;
    mt_status st;
    const int finite = trained_weights_finite(s);
    fm_fill(s, rows, 7u, poison);
    st = mt_session_train_step(s, rows, &loss);
    if (st != MT_OK && st != MT_ERR_NUMERIC && st != MT_ERR_STATE && st != MT_ERR_BAD_ARGUMENT) abort();
    check_guards(block, arena_bytes);
    st = mt_session_accumulate(s, rows, &loss);
    if (st == MT_OK) {
        fm_fill(s, rows, 8u, poison);
        st = mt_session_accumulate(s, rows, NULL);
        if (!known_status(st)) abort();
        /* the loss was finite, but a gradient may not be: refused whole (numeric guard) */
        st = mt_session_optimizer_step(s);
        if (st != MT_OK && st != MT_ERR_NUMERIC) abort();
    }
    check_guards(block, arena_bytes);
    st = mt_session_eval_step(s, rows, &loss);
    if (!known_status(st)) abort();
    if (mt_session_infer(s, rows) != MT_OK) abort();
    check_guards(block, arena_bytes);
    steps_on_rows(s, img, size, rows, poison, batch);
    check_guards(block, arena_bytes);
    mt_error_detail last; /* what the failing calls above noted */
    if (mt_session_last_error(s, &last) != MT_OK || !known_status(last.status) || last.op_index < -1 ||
        last.tensor_index < -1 || last.tensor_index >= MT_MAX_TENSORS)
        abort();
    if (finite && !trained_weights_finite(s)) abort(); /* an update wrote a NaN or infinity */

    /* checkpoint round trip and export: the output sizes are what the queries said */
    size_t bytes;
    if (mt_checkpoint_bytes(s, 1, NULL, 0, &bytes) != MT_OK) abort();
    fz_buffer ck = {malloc(bytes), 0, bytes};
    if (mt_checkpoint_save(s, 1, NULL, 0, fz_write, &ck) != MT_OK || ck.size != bytes) abort();
    /* a checkpoint holding a NaN or infinite weight is refused; only the image can put one in */
    st = mt_checkpoint_load(s, ck.size, fz_read, &ck, NULL, NULL);
    if (st != MT_OK && !(st == MT_ERR_BAD_CHECKPOINT && !finite)) abort();
    free(ck.data);
    check_guards(block, arena_bytes);
}

static void run(const uint8_t *prefix, const uint8_t *img, size_t size)
{
    mt_train_config cfg;
    int32_t rows;
    int poison;
    mt_memory_plan plan;
    mt_status st = fm_plan(prefix, img, size, &cfg, &rows, &poison, &plan);
    if (!known_status(st)) abort();
    mt_error_detail detail; /* the plan's validation again, telling where */
    if (mt_model_diagnose(img, size, &cfg, &detail) != st || detail.status != st) abort();
    if (st != MT_OK || plan.total_bytes > MAX_ARENA) return;
    if (work_estimate(img, size, cfg.batch_size) > MAX_WORK) return;

    const size_t arena_bytes = plan.total_bytes;
    uint8_t *block = aligned_alloc(16, 2 * GUARD + ((arena_bytes + 15) & ~(size_t)15));
    if (block == NULL) return;
    memset(block, 0xA5, 2 * GUARD + arena_bytes);
    uint8_t *arena = block + GUARD;
    mt_session *s = NULL;
    if (arena_bytes >= 1 &&
        (mt_session_init(&s, img, size, &cfg, arena, arena_bytes - 1) != MT_ERR_ARENA_TOO_SMALL ||
         mt_session_init_from_plan(&s, &plan, &cfg, arena, arena_bytes - 1) != MT_ERR_ARENA_TOO_SMALL))
        abort();
    check_guards(block, arena_bytes);
    /* from the plan: the image validated once, by mt_plan() */
    st = mt_session_init_from_plan(&s, &plan, &cfg, arena, arena_bytes);
    if (st != MT_OK) abort(); /* the plan said it fits */
    check_guards(block, arena_bytes);
    steps(s, rows, poison, block, arena_bytes, img, size, cfg.batch_size);

    /* inference export: same size as the image, and it validates */
    mt_model_info info;
    mt_model_check(img, size, &info);
    fz_buffer ex = {malloc(size), 0, size};
    if (mt_session_export_image(s, fz_write, &ex) != MT_OK) abort();
    if (mt_model_check(ex.data, ex.size, NULL) != MT_OK) abort();
    free(ex.data);
    free(block);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FM_CONFIG_BYTES) return 0;
    uint8_t *img = fz_copy(data + FM_CONFIG_BYTES, size - FM_CONFIG_BYTES);
    if (img == NULL) return 0;
    run(data, img, size - FM_CONFIG_BYTES);
    if (fz_fix_image_crc(img, size - FM_CONFIG_BYTES)) run(data, img, size - FM_CONFIG_BYTES);
    free(img);
    return 0;
}
