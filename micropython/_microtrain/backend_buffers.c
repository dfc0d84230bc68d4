/*
 * _microtrain's buffers the caller lends (modmicrotrain.c describes the module): the image and
 * the arena stay the script's objects while the session reads and writes them, and a script can
 * change them. A bytearray that grows (extend, +=, a slice assignment) is reallocated: it may
 * move to a new heap block and free the old one, which the session would go on reading (the
 * image) and writing (the arena). So:
 *
 *   - a writable image buffer (bytearray, array, a memoryview of one) is copied by plan()
 *     into a bytearray the plan holds (backend_open.c's planned_image), so the script may
 *     change or resize its own freely; only a read-only one (bytes, a frozen object, a ROMFS
 *     file's memoryview), which cannot change, is read in place;
 *   - every call but open/close/describe/plan first compares the image read in place and the
 *     caller's arena with what open() recorded (address and length): when either moved or
 *     changed size, the module forgets the session without touching its memory and raises
 *     MicrotrainError MT_ERR_STATE naming the buffer. Python code that runs inside a call
 *     (a checkpoint's write or read callable, a generator of rows or weights, a __float__)
 *     is checked after too: a callable's moving the arena stops the core (MT_ERR_IO) before
 *     it touches the session again, and the call then raises the same way;
 *   - open() refuses an arena that overlaps the image before anything is written.
 *
 * What no check can see: a script that writes into the arena's bytes while the session lives,
 * or resizes the bytearray under a memoryview it gave as arena (the memoryview keeps the old
 * address). The arena belongs to the session from open() to close().
 */
#include "backend.h"

static bool overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a_bytes != 0 && b_bytes != 0 && a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

/* open(): an arena that overlaps the image is refused before anything is written (a refused
 * open() wrote the arena's layout over the caller's image). */
void mtmod_refuse_overlap(mp_obj_t image, const mp_buffer_info_t *arena) {
    mp_buffer_info_t bytes;
    mp_get_buffer_raise(image, &bytes, MP_BUFFER_READ);
    if (arena->buf != NULL && overlap(arena->buf, arena->len, bytes.buf, bytes.len)) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, "open",
            "the arena (%lu bytes at 0x%p) overlaps the image (%lu bytes at 0x%p): give the arena "
            "a buffer of its own", (unsigned long)arena->len, arena->buf,
            (unsigned long)bytes.len, bytes.buf);
    }
}

/* The image still at open()'s address, with its bytes inside the object's buffer: `now` is
 * that object's buffer as it is (the caller's, or the plan's aligned copy, whose image begins
 * image_offset bytes in). */
static bool image_in_place(const backend_obj_t *self, const mp_buffer_info_t *now) {
    return (const uint8_t *)now->buf + self->image_offset == self->image &&
        now->len >= self->image_offset && now->len - self->image_offset >= self->image_bytes;
}

/* Where open() put the session in `buffer`: its MT_ARENA_ALIGN-aligned start and the bytes
 * usable from there (backend_open.c lays a caller's arena out the same way). */
static uint8_t *arena_start(const mp_buffer_info_t *buffer, size_t *usable) {
    const uintptr_t start = (uintptr_t)buffer->buf;
    const uintptr_t aligned = (start + MT_ARENA_ALIGN - 1) & ~(uintptr_t)(MT_ARENA_ALIGN - 1);
    const size_t skipped = (size_t)(aligned - start);
    *usable = buffer->len > skipped ? buffer->len - skipped : 0;
    return (uint8_t *)aligned;
}

static MP_NORETURN void moved(backend_obj_t *self, const char *method, const char *what,
    size_t was_bytes, const void *was, size_t now_bytes, const void *now) {
    mtmod_forget(self); /* the old memory may be freed: the session is not touched again */
    mtmod_raise_error(MT_ERR_STATE, method,
        "the %s changed after open() (%lu bytes at 0x%p, now %lu at 0x%p), so the session is "
        "closed; keep the %s's size while a session uses it, and open() again", what,
        (unsigned long)was_bytes, was, (unsigned long)now_bytes, now, what);
}

/* Every session call: the lent image and arena are where open() found them (see above). */
void mtmod_check_lent(backend_obj_t *self, const char *method) {
    mp_buffer_info_t now;
    if (self->image_obj != MP_OBJ_NULL) {
        mp_get_buffer_raise(self->image_obj, &now, MP_BUFFER_READ);
        if (!image_in_place(self, &now)) {
            moved(self, method, "image buffer", self->image_bytes, self->image, now.len,
                now.buf);
        }
    }
    if (self->arena_obj != MP_OBJ_NULL) {
        mp_get_buffer_raise(self->arena_obj, &now, MP_BUFFER_READ);
        size_t usable;
        const uint8_t *start = arena_start(&now, &usable);
        if (start != self->arena || usable != self->arena_bytes) {
            moved(self, method, "arena buffer", self->arena_bytes, self->arena, usable, start);
        }
    }
}

/* The same test without raising, for the Python code a core call runs (a checkpoint's write
 * or read callable, a generator of rows): true when a buffer moved, so that the callback
 * makes the core stop (MT_ERR_IO) before it touches the session again; the call then raises
 * through mtmod_check_lent once the core has returned. */
bool mtmod_lent_moved(backend_obj_t *self) {
    mp_buffer_info_t now;
    if (self->session == NULL) {
        return false;
    }
    if (self->image_obj != MP_OBJ_NULL && (!mp_get_buffer(self->image_obj, &now,
        MP_BUFFER_READ) || !image_in_place(self, &now))) {
        return true;
    }
    if (self->arena_obj != MP_OBJ_NULL) {
        if (!mp_get_buffer(self->arena_obj, &now, MP_BUFFER_READ)) {
            return true;
        }
        size_t usable;
        const uint8_t *start = arena_start(&now, &usable);
        return start != self->arena || usable != self->arena_bytes;
    }
    return false;
}
