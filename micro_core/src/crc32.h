/* CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320): the value zlib.crc32 gives. */
#ifndef MT_CRC32_H
#define MT_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC over more bytes; start with crc = 0. Table-free: no 1 KiB of flash spent. */
uint32_t mt_crc32_update(uint32_t crc, const void *data, size_t bytes);

#endif /* MT_CRC32_H */
