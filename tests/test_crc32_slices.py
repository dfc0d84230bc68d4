"""micro_core/src/crc32_slices.h is what tools/gen_crc32_slices.py writes (its values are
checked entry by entry in C by tests/core/test_crc32.c)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_header_is_the_generators_output():
    generator = os.path.join(ROOT, "tools", "gen_crc32_slices.py")
    result = subprocess.run([sys.executable, generator, "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
