/*
 * Checkpoints and inference export through memory buffers, for hosts that cannot pass C
 * callbacks (a WebAssembly host calls exported functions with offsets into its memory) and
 * for devices whose flash is memory-mapped. Each function is a thin front end of its
 * streamed twin in checkpoint.c, with a memory reader or writer as the callback: the format
 * has one writer and one reader.
 */
#include <string.h>

#include "microtrain.h"
#include "session.h"

/* A bounded memory writer (mt_write_fn) and reader (mt_read_fn). */
typedef struct memory {
    uint8_t *data;       /* NULL for a reader */
    const uint8_t *read; /* NULL for a writer */
    size_t size, capacity;
} memory;

static mt_status memory_write(void *user, const void *data, size_t bytes)
{
    memory *m = (memory *)user;
    if (bytes > m->capacity - m->size) return MT_ERR_IO; /* the caller checked the capacity */
    memcpy(m->data + m->size, data, bytes);
    m->size += bytes;
    return MT_OK;
}

static mt_status memory_read(void *user, size_t offset, void *data, size_t bytes)
{
    const memory *m = (const memory *)user;
    if (offset > m->size || bytes > m->size - offset) return MT_ERR_IO; /* fetch() bounds it first */
    memcpy(data, m->read + offset, bytes);
    return MT_OK;
}

/* Memory a buffer function may write must lie outside the session's arena (the session is
 * at its start) and its model image, which the session reads frozen weights from. */
static int writable(const mt_session *s, const void *p, size_t n)
{
    return !mt_in_arena(s, p, n) && !mt_bytes_overlap(p, n, s->img.base, s->img.bytes);
}

mt_status mt_checkpoint_save_buffer(const mt_session *s, int32_t include_optimizer,
                                    const mt_property *properties, int32_t num_properties, void *buffer,
                                    size_t capacity, size_t *written)
{
    size_t bytes;
    mt_status st = mt_checkpoint_bytes(s, include_optimizer, properties, num_properties, &bytes);
    if (st != MT_OK) return st;
    if (buffer == NULL || capacity < bytes || !writable(s, buffer, bytes)) return MT_ERR_BAD_ARGUMENT;
    memory m = {(uint8_t *)buffer, NULL, 0, capacity};
    st = mt_checkpoint_save(s, include_optimizer, properties, num_properties, memory_write, &m);
    if (st == MT_OK && written != NULL) *written = m.size;
    return st;
}

mt_status mt_checkpoint_load_buffer(mt_session *s, const void *checkpoint, size_t checkpoint_bytes,
                                    mt_property_fn on_property, void *property_user)
{
    /* pass 2 writes the arena while it reads the checkpoint: they must not share bytes */
    if (!mt_session_valid(s) || checkpoint == NULL || mt_in_arena(s, checkpoint, checkpoint_bytes))
        return MT_ERR_BAD_ARGUMENT;
    memory m = {NULL, (const uint8_t *)checkpoint, checkpoint_bytes, checkpoint_bytes};
    return mt_checkpoint_load(s, checkpoint_bytes, memory_read, &m, on_property, property_user);
}

mt_status mt_session_export_image_buffer(const mt_session *s, void *buffer, size_t capacity, size_t *written)
{
    if (!mt_session_valid(s) || buffer == NULL) return MT_ERR_BAD_ARGUMENT;
    const size_t bytes = s->img.bytes; /* the export is the image's size */
    if (capacity < bytes || !writable(s, buffer, bytes)) return MT_ERR_BAD_ARGUMENT;
    memory m = {(uint8_t *)buffer, NULL, 0, capacity};
    mt_status st = mt_session_export_image(s, memory_write, &m);
    if (st == MT_OK && written != NULL) *written = m.size;
    return st;
}
