/*
 * bad_input_util.h: what the bad-input programs (test_bad_image.c, test_bad_session_input.c)
 * share, header-only like mt_test.h: the default MLP image, fresh for every case; the
 * configuration of B = 2; one arena for every session of a program.
 */
#ifndef BAD_INPUT_UTIL_H
#define BAD_INPUT_UTIL_H

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"

/* Default MLP: tensors 0 x[3] (INPUT), 1 W1[4,3], 2 b1[4], 3 h[4], 4 a[4], 5 W2[2,4], 6 b2[2],
 * 7 z[2] (OUTPUT); ops 0 dense(0,1,2 -> 3), 1 relu(3 -> 4), 2 dense(4,5,6 -> 7); a version 2
 * image whose layers are 0 (dense + relu) and 1 (dense). */
static int square_model; /* 1: x has 4 features like h, so retargeting an op keeps shapes */

static inline uint8_t *fresh(size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = square_model ? 4 : 3;
    return ib_build_mlp(&spec, bytes);
}

static inline void default_cfg(mt_train_config *cfg)
{
    mt_train_config_init(cfg);
    cfg->batch_size = 2;
}

/* An aligned arena big enough for every session of a program. */
static uint8_t arena_storage[1 << 16] __attribute__((aligned(16)));

#endif /* BAD_INPUT_UTIL_H */
