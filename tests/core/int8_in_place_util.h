/*
 * int8_in_place_util.h: the int8 CNN trained in place of int8_in_place_images.h (generated),
 * and the same model with float master copies, which the C tests of its state share
 * (test_checkpoint_int8.c, test_int8_weights.c).
 */
#ifndef INT8_IN_PLACE_UTIL_H
#define INT8_IN_PLACE_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "int8_in_place_images.h"
#include "microtrain.h"

/* A copy of int8_in_place (malloc'd, *bytes long) with MT_TENSOR_MASTER on every TRAINABLE
 * int8 tensor and its CRC refreshed: what convert(..., int8_master_weights=True) writes (the
 * two images differ in those flags and the CRC alone). */
static inline uint8_t *int8_in_place_master(size_t *bytes)
{
    uint8_t *image = malloc(sizeof int8_in_place);
    memcpy(image, int8_in_place, sizeof int8_in_place);
    const uint32_t tensors = ib_get_u32(image, 16);
    for (uint32_t i = 0; i < tensors; i++) {
        const size_t e = ib_tensor_entry(image, (int)i);
        const uint16_t flags = ib_get_u16(image, e + 2);
        if (image[e] == MT_DTYPE_I8 && (flags & MT_TENSOR_TRAINABLE))
            ib_put_u16(image, e + 2, (uint16_t)(flags | MT_TENSOR_MASTER));
    }
    ib_refresh_crc(image);
    *bytes = sizeof int8_in_place;
    return image;
}

#endif /* INT8_IN_PLACE_UTIL_H */
