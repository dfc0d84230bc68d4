/*
 * Export for inference: the model image with the trained weights baked in (an int8 layer
 * trained in place at its own width), streamed in small chunks through a caller callback,
 * its CRC recomputed over the substituted bytes (docs/model_format.md). A device never holds
 * a whole image.
 */
#include <string.h>

#include "microtrain.h"
#include "float_bits.h"
#include "le_bytes.h"
#include "session.h"

#define CHUNK 64u

/* Bytes [from, from + n) of the image with trained weights substituted. */
static void exported_bytes(const mt_session *s, uint32_t from, uint32_t n, uint8_t *out)
{
    memcpy(out, s->img.base + from, n);
    for (int32_t k = 0; k < s->num_trained; ++k) {
        mt_tensor_desc d;
        mt_image_tensor(&s->img, s->trained[k], &d);
        const mt_tensor_rt *t = &s->tensors[s->trained[k]];
        /* a weight whose first rows alone the arena holds: the rest are the image's bytes */
        const uint32_t start = s->img.data_offset + d.data_offset,
                       end = start + (t->rows_held ? mt_held_elements(t) * (uint32_t)mt_dtype_bytes(t->dtype)
                                                   : d.data_bytes);
        const uint32_t lo = from > start ? from : start, hi = from + n < end ? from + n : end;
        for (uint32_t b = lo; b < hi; ++b) { /* little-endian, as the image holds them */
            const uint32_t rel = b - start;
            uint32_t bits;
            if (t->dtype == MT_DTYPE_I8) bits = ((const uint8_t *)(const void *)t->mutable_data)[rel];
            else if (t->dtype == MT_DTYPE_I32) bits = (uint32_t)((const int32_t *)(const void *)t->mutable_data)[rel / 4];
            else bits = mt_f32_bits(t->mutable_data[rel / 4]);
            out[b - from] = (uint8_t)(bits >> (t->dtype == MT_DTYPE_I8 ? 0 : 8 * (rel % 4)));
        }
    }
}

mt_status mt_session_export_image(const mt_session *s, mt_write_fn write, void *user)
{
    if (!mt_session_valid(s) || write == NULL) return MT_ERR_BAD_ARGUMENT;
    const uint32_t size = s->img.bytes;
    uint8_t buf[CHUNK];
    uint32_t crc = 0;
    for (uint32_t off = 16; off < size; off += CHUNK) { /* the image CRC covers [16, size) */
        uint32_t n = size - off < CHUNK ? size - off : CHUNK;
        exported_bytes(s, off, n, buf);
        crc = mt_crc32_update(crc, buf, n);
    }
    memcpy(buf, s->img.base, 12);
    mt_put_u32(buf + 12, crc);
    mt_status st = write(user, buf, 16);
    for (uint32_t off = 16; off < size && st == MT_OK; off += CHUNK) {
        uint32_t n = size - off < CHUNK ? size - off : CHUNK;
        exported_bytes(s, off, n, buf);
        st = write(user, buf, n);
    }
    return st == MT_OK ? MT_OK : (st > 0 ? MT_ERR_IO : st);
}
