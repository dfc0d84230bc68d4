"""benchmarks/soak.py works: a short soak passes (flat RSS, three runs bit-identical with
and without checkpoint reloads) and a failed check exits non-zero. The full 10^6-step
soak is a benchmark, run by hand: python benchmarks/soak.py."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "soak.py")


def soak(*arguments):
    return subprocess.run([sys.executable, SCRIPT] + list(arguments), capture_output=True,
                          text=True, timeout=300)


def test_a_short_soak_passes_with_identical_runs():
    result = soak("--steps", "20000", "--checkpoint-every", "1000")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split("|") for line in result.stdout.splitlines()
            if line.startswith("| A ") or line.startswith("| B ") or line.startswith("| C ")]
    assert len(rows) == 3
    assert "20 reloads (6 fresh)" in rows[0][2] and rows[2][2].strip() == "none"
    assert len({(row[5], row[6]) for row in rows}) == 1  # same weight CRC and loss hash
    assert result.stdout.rstrip().endswith("soak passed")


def test_a_failed_check_exits_non_zero():
    result = soak("--steps", "2000", "--checkpoint-every", "500", "--rss-bound-kib", "-1")
    assert result.returncode == 1
    assert "FAIL: RSS of run A grew" in result.stdout and "soak FAILED" in result.stdout
