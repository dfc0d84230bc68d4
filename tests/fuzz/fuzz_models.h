/*
 * fuzz_models: the models the fuzz seed corpus and the checkpoint harness are built from,
 * written with tests/core/image_builder so that no seed is hand-made bytes.
 *
 * Together the models use every op type of docs/model_format.md (1..15), SAME and VALID
 * padding, strides 1 and 2, fused ReLU/ReLU6, optional biases present and absent, two model
 * inputs, a residual ADD and a CONCATENATION.
 */
#ifndef FUZZ_MODELS_H
#define FUZZ_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "microtrain.h"

enum { FM_NUM_MODELS = 7 };

/* Build model number which (0..FM_NUM_MODELS-1); malloc'ed image, release with free().
 * *name is a short file-name-safe label; *loss a loss that fits the model's output 0. */
uint8_t *fm_build(int which, size_t *image_bytes, const char **name, int *loss);

/*
 * The 8-byte configuration prefix the session harness reads before the image, so the
 * fuzzer mutates the training configuration too:
 *   [0] optimizer % 3   [1] loss % 5          [2] bit0 reduction
 *   [3] batch 1 + v % 4 [4] num_trainable_ops (v % 8) - 1   (-1 = all .. 6)
 *   [5] bit0 biases_only, bit1 momentum 0.9, bit2 weight decay 0.01, bit3 accumulate_gradients
 *   [6] rows: 1 + v % batch; bit7 puts a NaN into the inputs
 *   [7] learning rate 10^-(1 + v % 4)
 */
#define FM_CONFIG_BYTES 8
void fm_decode_config(const uint8_t *prefix, mt_train_config *cfg, int32_t *rows, int *poison);
void fm_encode_config(uint8_t *prefix, int optimizer, int loss, int batch, int trainable_ops);
/* fm_decode_config, then mt_plan of the image under that configuration: its status */
mt_status fm_plan(const uint8_t *prefix, const uint8_t *img, size_t size, mt_train_config *cfg, int32_t *rows,
                  int *poison, mt_memory_plan *plan);

/* The fixed model of the checkpoint harness (model 0) and its four configurations:
 * 0 SGD, 1 SGD + momentum (1 state array), 2 Adam, 3 AdamW (2 state arrays); batch 2. */
#define FM_CK_CONFIGS 4
void fm_checkpoint_config(int which, mt_train_config *cfg);

/* Deterministic fill of a session's inputs and targets (labels in range, or not with bad_label). */
void fm_fill(mt_session *s, int32_t rows, unsigned seed, int poison);

#endif /* FUZZ_MODELS_H */
