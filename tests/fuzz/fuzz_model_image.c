/*
 * libFuzzer harness: the model-image reader.
 * Input: the bytes of a .mtm image. Runs mt_model_check and mt_model_diagnose (which must
 * agree, as must mt_plan and mt_model_diagnose with a configuration), then mt_model_tensor for every
 * index (and out-of-range ones), mt_model_op for every op, both tables at once
 * (mt_model_tensors, mt_model_ops, and a range past them), mt_model_io for every position
 * and the plan query with the default configuration; once as given and once with the
 * header CRC recomputed.
 * Property: no crash, no sanitizer report, every status a known one, and what a successful
 * check reports agrees with the per-tensor and per-op queries (operands in range, data
 * inside the image, layers numbered by the format's rule).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "microtrain.h"

static int known_status(mt_status st)
{
    return st <= MT_OK && st >= MT_ERR_IO;
}

/* Index i of a table of n entries, queried with status st: 1 for an entry (0 <= i < n), whose
 * answer the caller checks; 0 for one past either end (-1, n), which must have been refused. */
static int is_entry(mt_status st, int32_t i, int32_t n)
{
    if (i >= 0 && i < n) return 1;
    if (st != MT_ERR_BAD_ARGUMENT) abort();
    return 0;
}

static void run(const uint8_t *img, size_t size)
{
    mt_model_info info;
    mt_status st = mt_model_check(img, size, &info);
    if (!known_status(st)) abort();
    if (mt_model_check(img, size, NULL) != st) abort(); /* info is optional */
    mt_error_detail detail; /* the same validation, telling where */
    if (mt_model_diagnose(img, size, NULL, &detail) != st || detail.status != st) abort();
    if (detail.op_index < -1 || detail.op_index >= MT_MAX_OPS || detail.tensor_index < -1 ||
        detail.tensor_index >= MT_MAX_TENSORS || (detail.op_index < 0 && detail.op_type != 0) ||
        (st == MT_OK && (detail.op_index != -1 || detail.tensor_index != -1)))
        abort();
    if (st != MT_OK) {
        mt_tensor_info t;
        mt_op_info op;
        int32_t index;
        if (mt_model_tensor(img, size, 0, &t) != st) abort();
        if (mt_model_op(img, size, 0, &op) != st) abort();
        if (mt_model_io(img, size, 0, 0, &index) != st) abort();
        return;
    }
    if (info.num_tensors < 1 || info.num_tensors > MT_MAX_TENSORS || info.num_ops < 1 ||
        info.num_ops > MT_MAX_OPS)
        abort();
    int32_t params = 0;
    for (int32_t i = -1; i <= info.num_tensors; ++i) {
        mt_tensor_info t;
        st = mt_model_tensor(img, size, i, &t);
        if (!is_entry(st, i, info.num_tensors)) continue;
        if (st != MT_OK || t.ndim < 1 || t.ndim > MT_MAX_DIMS || t.count < 1) abort();
        if (t.producer < -1 || t.producer >= info.num_ops) abort();
        if (t.flags & MT_TENSOR_TRAINABLE) ++params;
        const size_t element = t.dtype == MT_DTYPE_I8 ? 1u : 4u; /* int8 constants: one byte each */
        if ((t.flags & MT_TENSOR_CONST) ? t.data_offset < 64 || (size_t)t.data_offset + element * (size_t)t.count > size
                                        : t.data_offset != -1)
            abort();
    }
    if (params != info.num_params) abort();
    { /* the whole tables at once (mt_model_tensors, mt_model_ops): the per-entry answers */
        static mt_tensor_info tensors[MT_MAX_TENSORS];
        static mt_op_info ops[MT_MAX_OPS];
        mt_tensor_info t;
        mt_op_info op;
        if (mt_model_tensors(img, size, 0, info.num_tensors, tensors) != MT_OK ||
            mt_model_ops(img, size, 0, info.num_ops, ops) != MT_OK)
            abort();
        for (int32_t i = 0; i < info.num_tensors; ++i)
            if (mt_model_tensor(img, size, i, &t) != MT_OK || memcmp(&t, &tensors[i], sizeof t) != 0) abort();
        for (int32_t o = 0; o < info.num_ops; ++o)
            if (mt_model_op(img, size, o, &op) != MT_OK || memcmp(&op, &ops[o], sizeof op) != 0) abort();
        if (mt_model_tensors(img, size, 1, info.num_tensors, tensors) != MT_ERR_BAD_ARGUMENT ||
            mt_model_ops(img, size, info.num_ops, 1, ops) != MT_ERR_BAD_ARGUMENT)
            abort();
    }
    int32_t previous_layer = -1;
    for (int32_t o = -1; o <= info.num_ops; ++o) {
        mt_op_info op;
        st = mt_model_op(img, size, o, &op);
        if (!is_entry(st, o, info.num_ops)) continue;
        if (st != MT_OK || op.index != o || mt_op_name(op.type) == NULL) abort();
        if (op.num_inputs < 1 || op.num_inputs > 4 || op.num_outputs < 1 || op.num_outputs > 2) abort();
        for (int k = 0; k < 4; ++k)
            if (op.inputs[k] < -1 || op.inputs[k] >= info.num_tensors || (k >= op.num_inputs && op.inputs[k] != -1))
                abort();
        for (int k = 0; k < 2; ++k)
            if ((k < op.num_outputs) != (op.outputs[k] >= 0) || op.outputs[k] >= info.num_tensors) abort();
        /* the format's rule: from op to op the layer stays or grows (numbers may be skipped) */
        if (op.layer < previous_layer || op.layer < 0 || op.layer > 255) abort();
        previous_layer = op.layer;
    }
    for (int32_t out = 0; out <= 1; ++out) {
        const int32_t n = out ? info.num_outputs : info.num_inputs;
        for (int32_t k = -1; k <= n; ++k) {
            int32_t index = -1;
            st = mt_model_io(img, size, out, k, &index);
            if (!is_entry(st, k, n)) continue;
            if (st == MT_ERR_BAD_ARGUMENT || (st == MT_OK && (index < 0 || index >= info.num_tensors))) abort();
        }
    }
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    mt_memory_plan plan;
    st = mt_plan(img, size, &cfg, &plan);
    if (!known_status(st)) abort();
    if (mt_model_diagnose(img, size, &cfg, &detail) != st || detail.status != st) abort();
    if (st == MT_OK && plan.total_bytes < plan.metadata_bytes) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *img = fz_copy(data, size);
    if (img == NULL) return 0;
    run(img, size);
    if (fz_fix_image_crc(img, size)) run(img, size);
    free(img);
    return 0;
}
