/*
 * CRC-32 (IEEE 802.3, zlib's: reflected polynomial 0xEDB88320, initial and final inversion).
 *
 * On a microcontroller (a Cortex-M, bare-metal RISC-V), four bits a step: a 64-byte table of
 * the sixteen 4-bit remainders instead of zlib's 1 KiB one, and a quarter of the bit-at-a-time
 * loop's steps (the image check at boot, the largest share of boot on a Cortex-M, and
 * checkpoints). Entry i is i shifted out four times: c = (c >> 1) ^ (0xEDB88320 if c & 1).
 *
 * On a hosted build (anything else), eight bytes a step with 8 KiB of tables
 * (crc32_slices.h): every query of the C API validates the image it is given, so opening and
 * compiling a model checks it about a dozen times, and the nibble loop spent ~40 ms on a
 * 642 KB MobileNetV2 image. Slicing: for the eight bytes b0..b7 that follow a remainder c,
 *   crc' = S7[(c ^ w) byte 0] ^ S6[(c ^ w) byte 1] ^ S5[(c ^ w) byte 2] ^ S4[(c ^ w) byte 3]
 *        ^ S3[b4] ^ S2[b5] ^ S1[b6] ^ S0[b7],   w = b0 | b1 << 8 | b2 << 16 | b3 << 24,
 * since the CRC is linear over GF(2) and Sk[x] is the remainder of x followed by k zero bytes.
 * Both forms compute the same function; the tail (bytes % 8) takes a byte a step.
 */
#include "microtrain.h"

#if (defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M') || \
    (defined(__riscv) && !defined(__linux__))
#define MT_CRC32_SLICED 0
#else
#define MT_CRC32_SLICED 1
#endif

#if MT_CRC32_SLICED
#include "crc32_slices.h"

uint32_t mt_crc32_update(uint32_t crc, const void *data, size_t bytes)
{
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    for (; bytes >= 8; bytes -= 8, p += 8) {
        /* byte loads: the same on either endianness (GCC and Clang fuse them into one load) */
        crc ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        crc = crc32_slice[7][crc & 0xFFu] ^ crc32_slice[6][(crc >> 8) & 0xFFu] ^
              crc32_slice[5][(crc >> 16) & 0xFFu] ^ crc32_slice[4][crc >> 24] ^ crc32_slice[3][p[4]] ^
              crc32_slice[2][p[5]] ^ crc32_slice[1][p[6]] ^ crc32_slice[0][p[7]];
    }
    for (; bytes > 0; --bytes, ++p) crc = (crc >> 8) ^ crc32_slice[0][(crc ^ *p) & 0xFFu];
    return ~crc;
}

#else
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
#endif
