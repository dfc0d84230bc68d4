/*
 * Power-loss-safe checkpoint storage on NOR flash (include/microtrain_storage.h).
 *
 * Commit protocol of a save, into the slot T that does not hold the newest complete
 * checkpoint (the other slot is never touched, so it survives whatever happens to T):
 *     1. erase T's sectors, header sector first   (T now blank: ignored by a scan)
 *     2. program the payload after the header area (no header yet: still ignored)
 *     3. read the payload back, compare its CRC    (a bad program never gets committed)
 *     4. program the header, its CRC last          (T complete: newest by sequence)
 * A cut during 1-3 leaves T without a valid header; a cut during 4 leaves a header whose
 * CRC cannot match (its last bytes are still 0xFF or only partly programmed). Either way a
 * scan still finds the previous checkpoint in the other slot.
 *
 * No malloc; all I/O streams through one 64-byte stack buffer.
 */
#include <string.h>

#include "microtrain.h"
#include "le_bytes.h"
#include "microtrain_storage.h"

#define SLOT_MAGIC "MTSL"
#define SLOT_VERSION 1u
#define BUF_BYTES 64u /* = MT_STORAGE_MAX_PROGRAM_BYTES: every program unit divides it */





/* A callback's status: anything but MT_OK that is not already an error becomes MT_ERR_IO. */
static mt_status io(mt_status st)
{
    return st == MT_OK ? MT_OK : (st < 0 ? st : MT_ERR_IO);
}

/* Offset of the payload inside a slot: the header rounded up to the program unit. */
static size_t header_area(const mt_flash *f)
{
    return (MT_STORAGE_HEADER_BYTES + f->program_bytes - 1u) & ~(f->program_bytes - 1u);
}

static int valid_geometry(const mt_flash *f)
{
    if (f == NULL || f->erase == NULL || f->program == NULL || f->read == NULL) return 0;
    const size_t sector = f->sector_bytes, unit = f->program_bytes;
    if (sector == 0 || unit == 0 || unit > MT_STORAGE_MAX_PROGRAM_BYTES || (unit & (unit - 1u)) != 0)
        return 0;
    if (f->slot_bytes % sector != 0 || f->slot_bytes <= header_area(f)) return 0;
    for (int k = 0; k < 2; ++k) {
        if (f->slot_offset[k] % sector != 0 || f->slot_offset[k] % unit != 0) return 0;
        if (f->slot_offset[k] > (size_t)-1 - f->slot_bytes) return 0; /* end must not wrap */
    }
    const size_t a = f->slot_offset[0], b = f->slot_offset[1];
    return a + f->slot_bytes <= b || b + f->slot_bytes <= a;
}

/* Sequence a is newer than b, modulo 2^32 (RFC 1982 serial-number arithmetic). */
static int newer(uint32_t a, uint32_t b)
{
    return a != b && (uint32_t)(a - b) < 0x80000000u;
}

/* CRC-32 of bytes [offset, offset + bytes) of the flash. */
static mt_status crc_of(const mt_flash *f, size_t offset, size_t bytes, uint32_t *crc)
{
    uint8_t buf[BUF_BYTES];
    uint32_t c = 0;
    for (size_t done = 0; done < bytes;) {
        const size_t n = bytes - done < BUF_BYTES ? bytes - done : BUF_BYTES;
        mt_status st = io(f->read(f->user, offset + done, buf, n));
        if (st != MT_OK) return st;
        c = mt_crc32_update(c, buf, n);
        done += n;
    }
    *crc = c;
    return MT_OK;
}

static mt_status scan_slot(const mt_flash *f, int k, mt_storage_slot *slot)
{
    uint8_t h[MT_STORAGE_HEADER_BYTES];
    memset(slot, 0, sizeof *slot);
    mt_status st = io(f->read(f->user, f->slot_offset[k], h, sizeof h));
    if (st != MT_OK) return st;
    if (memcmp(h, SLOT_MAGIC, 4) != 0 || mt_get_u16(h + 4) != SLOT_VERSION ||
        mt_get_u16(h + 6) != MT_STORAGE_HEADER_BYTES || mt_get_u32(h + 20) != 0 || mt_get_u32(h + 24) != 0 ||
        mt_get_u32(h + 28) != mt_crc32_update(0, h, 28))
        return MT_OK; /* blank, torn or foreign: not a checkpoint */
    const uint32_t bytes = mt_get_u32(h + 12);
    if (bytes == 0 || bytes > f->slot_bytes - header_area(f)) return MT_OK;
    uint32_t crc;
    if ((st = crc_of(f, f->slot_offset[k] + header_area(f), bytes, &crc)) != MT_OK) return st;
    if (crc != mt_get_u32(h + 16)) return MT_OK;
    slot->valid = 1;
    slot->sequence = mt_get_u32(h + 8);
    slot->payload_bytes = bytes;
    return MT_OK;
}

mt_status mt_storage_scan(const mt_flash *flash, mt_storage_info *info)
{
    if (!valid_geometry(flash) || info == NULL) return MT_ERR_BAD_ARGUMENT;
    mt_storage_info r;
    for (int k = 0; k < 2; ++k) {
        mt_status st = scan_slot(flash, k, &r.slot[k]);
        if (st != MT_OK) return st;
    }
    r.newest = -1;
    if (r.slot[0].valid) r.newest = 0;
    if (r.slot[1].valid && (r.newest < 0 || newer(r.slot[1].sequence, r.slot[0].sequence))) r.newest = 1;
    *info = r;
    return MT_OK;
}

/* ---- save: a mt_write_fn that programs the slot in whole units ---- */

typedef struct slot_writer {
    const mt_flash *f;
    size_t at;      /* flash offset of buf[0] */
    size_t limit;   /* end of the slot */
    uint8_t buf[BUF_BYTES];
    size_t fill;
    uint32_t crc;   /* of the payload bytes, padding excluded */
} slot_writer;

static mt_status flush(slot_writer *w)
{
    if (w->fill == 0) return MT_OK;
    const size_t unit = w->f->program_bytes;
    const size_t n = (w->fill + unit - 1u) & ~(unit - 1u);
    memset(w->buf + w->fill, 0xFF, n - w->fill); /* erased value: the padding programs nothing */
    if (n > w->limit - w->at) return MT_ERR_IO;
    mt_status st = io(w->f->program(w->f->user, w->at, w->buf, n));
    w->at += n;
    w->fill = 0;
    return st;
}

static mt_status slot_write(void *user, const void *data, size_t bytes)
{
    slot_writer *w = (slot_writer *)user;
    const uint8_t *p = (const uint8_t *)data;
    w->crc = mt_crc32_update(w->crc, p, bytes);
    while (bytes > 0) {
        size_t n = BUF_BYTES - w->fill < bytes ? BUF_BYTES - w->fill : bytes;
        memcpy(w->buf + w->fill, p, n);
        w->fill += n, p += n, bytes -= n;
        if (w->fill == BUF_BYTES) {
            mt_status st = flush(w);
            if (st != MT_OK) return st;
        }
    }
    return MT_OK;
}

mt_status mt_storage_save(const mt_session *s, int32_t include_optimizer,
                          const mt_property *properties, int32_t num_properties, const mt_flash *flash)
{
    if (!valid_geometry(flash)) return MT_ERR_BAD_ARGUMENT;
    size_t total;
    mt_status st = mt_checkpoint_bytes(s, include_optimizer, properties, num_properties, &total);
    if (st != MT_OK) return st;
    const size_t area = header_area(flash);
    if (total > flash->slot_bytes - area || total > 0xFFFFFFFFu) return MT_ERR_BAD_ARGUMENT;

    mt_storage_info info;
    if ((st = mt_storage_scan(flash, &info)) != MT_OK) return st;
    const int target = info.newest < 0 ? 0 : 1 - info.newest;
    const uint32_t sequence = info.newest < 0 ? 1u : info.slot[info.newest].sequence + 1u;
    const size_t base = flash->slot_offset[target];

    /* 1. erase what the checkpoint will occupy, the header's sector first */
    for (size_t off = 0; off < area + total; off += flash->sector_bytes)
        if ((st = io(flash->erase(flash->user, base + off))) != MT_OK) return st;

    /* 2. payload */
    slot_writer w;
    memset(&w, 0, sizeof w);
    w.f = flash;
    w.at = base + area;
    w.limit = base + flash->slot_bytes;
    st = mt_checkpoint_save(s, include_optimizer, properties, num_properties, slot_write, &w);
    if (st == MT_OK) st = flush(&w);
    if (st != MT_OK) return st;

    /* 3. read back */
    uint32_t crc;
    if ((st = crc_of(flash, base + area, total, &crc)) != MT_OK) return st;
    if (crc != w.crc) return MT_ERR_IO;

    /* 4. commit: the header, whose own CRC is its last field */
    uint8_t h[BUF_BYTES];
    memset(h, 0xFF, sizeof h);
    memcpy(h, SLOT_MAGIC, 4);
    mt_put_u16(h + 4, SLOT_VERSION);
    mt_put_u16(h + 6, MT_STORAGE_HEADER_BYTES);
    mt_put_u32(h + 8, sequence);
    mt_put_u32(h + 12, (uint32_t)total);
    mt_put_u32(h + 16, crc);
    mt_put_u32(h + 20, 0);
    mt_put_u32(h + 24, 0);
    mt_put_u32(h + 28, mt_crc32_update(0, h, 28));
    return io(flash->program(flash->user, base, h, area));
}

/* ---- load: a mt_read_fn over one slot's payload ---- */

typedef struct slot_reader {
    const mt_flash *f;
    size_t base;
} slot_reader;

static mt_status slot_read(void *user, size_t offset, void *data, size_t bytes)
{
    const slot_reader *r = (const slot_reader *)user;
    return io(r->f->read(r->f->user, r->base + offset, data, bytes));
}

mt_status mt_storage_load(mt_session *s, const mt_flash *flash, mt_property_fn on_property,
                          void *property_user)
{
    if (s == NULL || !valid_geometry(flash)) return MT_ERR_BAD_ARGUMENT;
    mt_storage_info info;
    mt_status st = mt_storage_scan(flash, &info);
    if (st != MT_OK) return st;
    if (info.newest < 0) return MT_ERR_BAD_CHECKPOINT;
    mt_status first = MT_OK;
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int k = attempt == 0 ? info.newest : 1 - info.newest;
        if (!info.slot[k].valid) break;
        slot_reader r = {flash, flash->slot_offset[k] + header_area(flash)};
        st = mt_checkpoint_load(s, info.slot[k].payload_bytes, slot_read, &r, on_property, property_user);
        if (st == MT_OK) return MT_OK;
        if (attempt == 0) first = st;
        /* fall back only when the slot's content is at fault, not the caller's callback */
        if (st != MT_ERR_BAD_CHECKPOINT && st != MT_ERR_CHECKPOINT_MISMATCH && st != MT_ERR_IO) break;
    }
    return first;
}
