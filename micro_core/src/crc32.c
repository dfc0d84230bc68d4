/*
 * CRC-32 (IEEE 802.3, zlib's: reflected polynomial 0xEDB88320, initial and final inversion)
 * four bits a step: a 64-byte table of the sixteen 4-bit remainders instead of zlib's 1 KiB
 * one, and a quarter of the bit-at-a-time loop's steps (the image check at boot, the largest
 * share of boot on a Cortex-M, and checkpoints). Entry i is i shifted out four times:
 * c = (c >> 1) ^ (0xEDB88320 if c & 1).
 */
#include "microtrain.h"

static const uint32_t crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t mt_crc32_update(uint32_t crc, const void *data, size_t bytes)
{
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    for (size_t i = 0; i < bytes; ++i) {
        crc ^= p[i];
        crc = (crc >> 4) ^ crc32_nibble[crc & 15u];
        crc = (crc >> 4) ^ crc32_nibble[crc & 15u];
    }
    return ~crc;
}
