#!/usr/bin/env python3
"""Write micro_core/src/crc32_slices.h, the slice-by-8 tables of mt_crc32_update.

    python3 tools/gen_crc32_slices.py           write the header
    python3 tools/gen_crc32_slices.py --check   exit 1 if the header differs from what this
                                                would write

The tables (the header's comment gives the math; tests/core/test_crc32.c recomputes every
entry in C): slice 0 is the reflected CRC-32 (polynomial 0xEDB88320) of each byte value,
slice k the remainder of byte i followed by k zero bytes. Eight entries a line: 32 lines a
slice. Standard library only.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "micro_core", "src", "crc32_slices.h")
PER_LINE = 8

PREAMBLE = """/*
 * The slice-by-8 tables of mt_crc32_update on hosted builds (crc32.c), 8 KiB:
 *   crc32_slice[0][i] = i shifted out eight times, c = (c >> 1) ^ (0xEDB88320 if c & 1),
 *   crc32_slice[k][i] = (crc32_slice[k-1][i] >> 8) ^ crc32_slice[0][crc32_slice[k-1][i] & 0xFF],
 * the remainder of byte i followed by k zero bytes. tests/core/test_crc32.c recomputes every
 * entry from these two lines. Written by tools/gen_crc32_slices.py.
 */
#ifndef MT_CRC32_SLICES_H
#define MT_CRC32_SLICES_H

#include <stdint.h>

static const uint32_t crc32_slice[8][256] = {
"""


def slices():
    """The eight tables of 256 entries, by the two lines of the header's comment."""
    first = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0xEDB88320 if c & 1 else 0)
        first.append(c)
    tables = [first]
    for _ in range(7):
        tables.append([(v >> 8) ^ first[v & 0xFF] for v in tables[-1]])
    return tables


def header_text():
    lines = [PREAMBLE.rstrip("\n")]
    for table in slices():
        lines.append("    {")
        for start in range(0, 256, PER_LINE):
            lines.append("        " + " ".join("0x%08Xu," % v for v in table[start:start + PER_LINE]))
        lines.append("    },")
    lines += ["};", "", "#endif", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the header differs from what this would write")
    args = parser.parse_args(argv)
    text = header_text()
    with open(HEADER) as handle:
        current = handle.read()
    if args.check:
        if current != text:
            print("%s differs from what tools/gen_crc32_slices.py writes" % HEADER)
            return 1
        return 0
    with open(HEADER, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
