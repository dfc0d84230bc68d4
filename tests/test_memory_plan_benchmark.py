"""benchmarks/memory_plan.py runs and reports arena / lower bound for its model zoo.

Known core limitation (reported, micro_core is not this test's to fix): the residual
DAG CNN plans at 1.17-1.19 x its lower bound. Minimal reproducer, batch 16, Adam,
sparse CCE: x[16,16,3] -> Conv 3x3x8 same relu = y -> Conv 3x3x8 same -> Conv 1x1x8
-> Add(y, .) -> MaxPool 2 -> GAP -> Dense 4 -> Softmax gives 848784 bytes for a lower
bound of 718000 (without the MaxPool, or with a single op in the branch: 1.000).
``test_every_model_meets_the_target`` is a strict xfail until the planner is fixed, so
the fix shows up as an unexpected pass to remove the mark.
"""

import os
import re
import subprocess
import sys

import pytest

import microtrain

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KNOWN_OVER_TARGET = {"residual DAG CNN"}


def run_benchmark():
    environment = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(microtrain.__file__)))
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_parent, environment.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "benchmarks",
                                                          "memory_plan.py")],
                            env=environment, capture_output=True, text=True, timeout=300)
    rows = [(m.group(1).strip(), m.group(2), int(m.group(3)), int(m.group(4)),
             float(m.group(5)))
            for m in re.finditer(r"^(.+?)  +(\S.*?(?:fused|accumulate))  +(\d+)  +(\d+)  +"
                                 r"([\d.]+) ", result.stdout, re.MULTILINE)]
    return result, rows


def test_benchmark_plans_every_model_and_choice():
    result, rows = run_benchmark()
    assert result.returncode in (0, 1), result.stdout + result.stderr
    models = {row[0] for row in rows}
    assert models == {"digits MLP", "digits CNN", "residual DAG CNN",
                      "keyword-spotting CNN", "MobileNet-style blocks"}, result.stdout
    assert len(rows) == 38
    for model, choice, total, bound, ratio in rows:
        assert bound <= total and ratio == pytest.approx(total / bound, abs=1e-3)
        if model not in KNOWN_OVER_TARGET:
            assert ratio <= 1.10, (model, choice, ratio)
    by_key = {(row[0], row[1]): row[2] for row in rows}
    for model in models:  # the tail alone needs less than everything; fused <= accumulate
        assert by_key[(model, "last 1, fused")] < by_key[(model, "all, fused")]
        assert by_key[(model, "all, fused")] <= by_key[(model, "all, accumulate")]
    assert "worst ratio" in result.stdout


@pytest.mark.xfail(strict=True, reason="core planner: residual DAG CNN at 1.18 x lower bound")
def test_every_model_meets_the_target():
    result, rows = run_benchmark()
    assert result.returncode == 0, result.stdout
