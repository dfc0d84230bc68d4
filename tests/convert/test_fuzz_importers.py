"""The importers fuzzed from Python (issue 45): seeded mutations of int8 and float .tflite
files and .onnx files (fuzz_importers.py), in one process under an address-space cap and
a timeout as the C fuzzers run under sanitizers (tools/run_fuzz.sh). Only a converted
model or a ConversionError may come out; the seed is fixed, so a failure reproduces with
``python tests/convert/fuzz_importers.py 45 COUNT FIXTURE``."""

import json
import os
import resource
import subprocess
import sys

import pytest

pytest.importorskip("onnx")
pytest.importorskip("tflite")

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 45
MUTANTS = 300        # per fixture: ~2 s of one core each
ADDRESS_SPACE = 4 << 30
PEAK_RSS = 1 << 30   # what any mutant may cost (budget.py bounds folding far below)


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_mutated_files_convert_or_raise_conversion_error_within_a_budget():
    script = os.path.join(HERE, "fuzz_importers.py")
    child = subprocess.Popen([sys.executable, script, str(SEED), str(MUTANTS)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_limited)
    try:
        out, err = child.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail("the fuzz did not finish in 600 s (a hang): %s" % out[-2000:])
    assert child.returncode == 0, err[-3000:]
    results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    peak = results.pop()["peak_rss_kib"]
    assert len(results) == 5, out
    findings = []
    for result in results:
        assert result["converted"] + result["refused"] + len(result["findings"]) == MUTANTS
        assert result["refused"] > MUTANTS // 4, result  # the mutations do break files
        findings += ["%s trial %d: %s" % (result["fixture"], f["trial"], f["error"])
                     for f in result["findings"]]
    assert not findings, "\n".join(findings)
    assert peak * 1024 < PEAK_RSS, "peak RSS %d KiB" % peak
