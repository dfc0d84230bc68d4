/*
 * Helpers shared by the libFuzzer harnesses (header-only: each harness is one .c file).
 *
 * A mutated image or checkpoint almost always fails its CRC, which would stop the fuzzer at
 * the first check. So each harness runs an input twice: as given (the CRC check itself is
 * fuzzed) and with the CRC recomputed over the mutated bytes (everything behind it is).
 */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "microtrain.h"

static inline uint32_t fz_crc32(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

static inline uint32_t fz_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void fz_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* An exact-size, 16-byte-aligned heap copy, so ASan sees any read past the end.
 * (malloc is 16-aligned on the hosts we fuzz on; sizes are rounded for aligned_alloc.) */
static inline uint8_t *fz_copy(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (p && size) memcpy(p, data, size);
    return p;
}

/* Recompute the model image CRC (header offset 12, over [16, image_bytes)) in place when the
 * header's image_bytes field is plausible. Returns 1 if it changed anything. */
static inline int fz_fix_image_crc(uint8_t *img, size_t size)
{
    if (size < 64) return 0;
    uint32_t declared = fz_get_u32(img + 8);
    if (declared < 16 || declared > size) return 0;
    uint32_t crc = fz_crc32(img + 16, declared - 16);
    if (crc == fz_get_u32(img + 12)) return 0;
    fz_put_u32(img + 12, crc);
    return 1;
}

/* Recompute a checkpoint's CRC-32 trailer (the last 4 bytes cover every byte before them). */
static inline int fz_fix_checkpoint_crc(uint8_t *ck, size_t size)
{
    if (size < 4) return 0;
    uint32_t crc = fz_crc32(ck, size - 4);
    if (crc == fz_get_u32(ck + size - 4)) return 0;
    fz_put_u32(ck + size - 4, crc);
    return 1;
}

/* A memory-backed checkpoint source and sink for mt_read_fn / mt_write_fn. */
typedef struct fz_buffer {
    uint8_t *data;
    size_t size, cap;
} fz_buffer;

static inline mt_status fz_read(void *user, size_t offset, void *out, size_t bytes)
{
    const fz_buffer *b = user;
    if (offset > b->size || bytes > b->size - offset) return MT_ERR_IO;
    memcpy(out, b->data + offset, bytes);
    return MT_OK;
}

static inline mt_status fz_write(void *user, const void *data, size_t bytes)
{
    fz_buffer *b = user;
    if (bytes > b->cap - b->size) return MT_ERR_IO;
    memcpy(b->data + b->size, data, bytes);
    b->size += bytes;
    return MT_OK;
}

static inline mt_status fz_property(void *user, const mt_property *p)
{
    (void)user;
    /* touch every byte the core hands over, so ASan checks the strings are terminated */
    volatile size_t n = strlen(p->name);
    if (p->type == MT_PROPERTY_STRING) n += strlen(p->str_value);
    (void)n;
    return MT_OK;
}

#endif /* FUZZ_UTIL_H */
