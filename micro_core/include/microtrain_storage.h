/**
 * @file microtrain_storage.h
 * @brief Power-loss-safe checkpoints in flash: two slots (A/B), a sequence number and CRCs.
 *
 * A save streams the checkpoint (mt_checkpoint_save()) into the slot that does not hold the
 * newest complete checkpoint, after erasing it, reads it back to verify, and only then
 * programs the slot header (sequence, length, CRCs). A power cut at any moment therefore
 * leaves either the old checkpoint or the new one recoverable: a slot whose header is not
 * fully written, or whose payload does not match its CRC, is ignored. A load takes the
 * complete slot with the highest sequence number (compared modulo 2^32, so the counter
 * wraps), and falls back to the other slot if the newest does not load.
 *
 * Flash model (NOR): erase sets a whole sector to 0xFF; program can only clear bits, in
 * units of program_bytes at offsets that are multiples of it, each unit once per erase.
 * The layer never allocates; it streams through a 64-byte buffer on the stack.
 *
 * Slot layout (offsets from the slot start; header fields little-endian):
 * @code
 *   [0, 32)          header: "MTSL", u16 version 1, u16 header bytes 32, u32 sequence,
 *                    u32 payload bytes, u32 payload CRC-32, u32[2] reserved 0,
 *                    u32 CRC-32 of header bytes [0, 28)
 *   [H, H + bytes)   payload: the checkpoint (docs/checkpoint_format.md), where
 *                    H = 32 rounded up to program_bytes; the last unit is padded with 0xFF
 * @endcode
 *
 * @code
 *   static mt_status erase(void *u, size_t offset);                 // one sector at offset
 *   static mt_status program(void *u, size_t offset, const void *p, size_t n);
 *   static mt_status read(void *u, size_t offset, void *p, size_t n);
 *   mt_flash flash = {erase, program, read, NULL, 4096, 8, {0x40000, 0x48000}, 0x8000};
 *   if (mt_storage_load(s, &flash, NULL, NULL) != MT_OK) { ... no checkpoint yet: train from the image ... }
 *   ...
 *   mt_storage_save(s, 1, NULL, 0, &flash);
 * @endcode
 */
#ifndef MICROTRAIN_STORAGE_H
#define MICROTRAIN_STORAGE_H

#include "microtrain.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of a slot header; the payload starts at this offset rounded up to program_bytes. */
#define MT_STORAGE_HEADER_BYTES 32u
/** Largest program unit supported (bytes). */
#define MT_STORAGE_MAX_PROGRAM_BYTES 64u

/** Erase the sector that starts at @p offset (a multiple of sector_bytes). Return MT_OK or MT_ERR_IO. */
typedef mt_status (*mt_flash_erase_fn)(void *user, size_t offset);
/** Program @p bytes at @p offset (both multiples of program_bytes, inside one slot).
 *  Return MT_OK or MT_ERR_IO. */
typedef mt_status (*mt_flash_program_fn)(void *user, size_t offset, const void *data, size_t bytes);

/** A flash device and the two slot regions the checkpoints live in. Offsets are the
 *  device's own addresses (passed to the callbacks unchanged). */
typedef struct mt_flash {
    mt_flash_erase_fn erase;
    mt_flash_program_fn program;
    mt_read_fn read;         /**< reads any bytes at any offset (memory-mapped flash: a memcpy) */
    void *user;              /**< passed to every callback */
    size_t sector_bytes;     /**< erase unit, >= 1 */
    size_t program_bytes;    /**< program unit: a power of two, 1..MT_STORAGE_MAX_PROGRAM_BYTES */
    size_t slot_offset[2];   /**< start of slots A and B: multiples of sector_bytes */
    size_t slot_bytes;       /**< size of each slot: a multiple of sector_bytes; slots must not overlap */
} mt_flash;

/** What a scan found in one slot. */
typedef struct mt_storage_slot {
    int32_t valid;           /**< 1: header and payload CRCs match */
    uint32_t sequence;       /**< valid slots only */
    uint32_t payload_bytes;  /**< valid slots only: the checkpoint's size */
} mt_storage_slot;

/** What a scan found in both slots. */
typedef struct mt_storage_info {
    mt_storage_slot slot[2];
    int32_t newest;          /**< 0 or 1: the valid slot with the highest sequence; -1: none */
} mt_storage_info;

/**
 * @brief Inspect both slots (headers and payload CRCs) without a session.
 * @return MT_OK (also for blank flash: newest = -1), MT_ERR_BAD_ARGUMENT (NULL, bad geometry),
 *         MT_ERR_IO.
 */
MT_API mt_status mt_storage_scan(const mt_flash *flash, mt_storage_info *info);

/**
 * @brief Save a checkpoint of @p s (as mt_checkpoint_save()) into the slot that does not hold
 *        the newest complete checkpoint, with sequence number newest + 1, committing last.
 *
 * Before anything is erased the checkpoint's size is checked against the slot. After the
 * payload is programmed it is read back and compared by CRC; only then is the header
 * programmed. On any failure the previous newest checkpoint is untouched.
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, bad geometry or properties, checkpoint larger than
 *         a slot), MT_ERR_IO (a callback failed or the read-back did not match).
 */
MT_API mt_status mt_storage_save(const mt_session *s, int32_t include_optimizer,
                                 const mt_property *properties, int32_t num_properties,
                                 const mt_flash *flash);

/**
 * @brief Load the newest complete checkpoint into @p s (through mt_checkpoint_load(), which
 *        validates before touching the session); if it does not load, try the other slot.
 * @return MT_OK; MT_ERR_BAD_CHECKPOINT when no slot holds a complete checkpoint (blank flash
 *         included: mt_storage_scan() tells them apart); otherwise the newest slot's
 *         mt_checkpoint_load() status (e.g. MT_ERR_CHECKPOINT_MISMATCH); MT_ERR_BAD_ARGUMENT,
 *         MT_ERR_IO.
 */
MT_API mt_status mt_storage_load(mt_session *s, const mt_flash *flash, mt_property_fn on_property,
                                 void *property_user);

#ifdef __cplusplus
}
#endif
#endif /* MICROTRAIN_STORAGE_H */
