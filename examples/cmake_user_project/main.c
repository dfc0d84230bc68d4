/* The smallest firmware shape: model image in flash, arena sized by the build, one header. */
#include <stdint.h>

#include "microtrain.h"

/* Your model image (generate the array with `microtrain firmware`, or link the .mtm file in). */
extern const uint8_t model_image[];
extern const size_t model_image_bytes;
const uint8_t model_image[64] __attribute__((aligned(16))) = {'M', 'T', 'M', '1'};
const size_t model_image_bytes = sizeof model_image;

/* mt_plan().total_bytes for your model and configuration, computed on the host. */
#ifndef ARENA_BYTES
#define ARENA_BYTES 16384u
#endif
static uint8_t arena[ARENA_BYTES] __attribute__((aligned(MT_ARENA_ALIGN)));

int main(void)
{
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.batch_size = 8;
    mt_memory_plan plan;
    mt_status status = mt_plan(model_image, model_image_bytes, &cfg, &plan);
    if (status != MT_OK || plan.total_bytes > sizeof arena)
        return 1; /* this placeholder image is not a model: here */
    mt_session *session;
    status = mt_session_init(&session, model_image, model_image_bytes, &cfg, arena, sizeof arena);
    return status == MT_OK ? 0 : 1;
}
