/*
 * mt_crc32_update against the CRC-32 definition, a bit a step (ib_crc32_update of the tests'
 * image builder): the slice-by-8 tables of hosted builds entry by entry, known values, and
 * every length, start alignment and split of a buffer, so the eight-byte steps, the byte
 * tail and a CRC continued across calls all meet the definition. On a Cortex-M build the
 * nibble loop runs instead (its tables are the board tests' concern: every image a board
 * boots and every checkpoint it writes is checked with it).
 */
#include <stdint.h>
#include <stdlib.h>

#include "microtrain.h"
#include "mt_test.h"

#include "crc32_slices.h"
#include "image_builder.h"

static void test_slice_tables(void)
{
    int bad = 0;
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        bad += crc32_slice[0][i] != c;
        for (int s = 1; s < 8; ++s) {
            c = (c >> 8) ^ crc32_slice[0][c & 0xFFu]; /* one more zero byte */
            bad += crc32_slice[s][i] != c;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_known_values(void)
{
    CHECK_EQ_INT(mt_crc32_update(0, "", 0), 0u);
    CHECK_EQ_INT(mt_crc32_update(0, "123456789", 9), 0xCBF43926u); /* the CRC-32 check value */
    CHECK_EQ_INT(mt_crc32_update(0, "The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
    CHECK_EQ_INT(mt_crc32_update(0x12345678u, "", 0), 0x12345678u); /* nothing added: unchanged */
}

static void test_lengths_offsets_splits(void)
{
    enum { N = 4096 };
    static uint8_t buf[N + 16];
    uint32_t x = 12345u;
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 23);
    int bad = 0;
    for (size_t off = 0; off < 8; ++off)
        for (size_t n = 0; n <= 80; ++n)
            bad += mt_crc32_update(0, buf + off, n) != ib_crc32_update(0, buf + off, n);
    CHECK_EQ_INT(bad, 0);
    const uint32_t whole = ib_crc32_update(0, buf + 3, N);
    CHECK_EQ_INT(mt_crc32_update(0, buf + 3, N), whole);
    bad = 0;
    for (size_t cut = 0; cut <= N; cut += 37) /* continued across calls, cut anywhere */
        bad += mt_crc32_update(mt_crc32_update(0, buf + 3, cut), buf + 3 + cut, N - cut) != whole;
    CHECK_EQ_INT(bad, 0);
    static uint8_t same[64]; /* all zero and all ones: every table's entry 0 and 255 */
    bad = 0;
    for (int fill = 0; fill < 2; ++fill) {
        memset(same, fill ? 0xFF : 0, sizeof same);
        for (size_t n = 0; n <= sizeof same; ++n)
            bad += mt_crc32_update(0xDEADBEEFu, same, n) != ib_crc32_update(0xDEADBEEFu, same, n);
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    test_slice_tables();
    test_known_values();
    test_lengths_offsets_splits();
    return MT_TEST_END();
}
