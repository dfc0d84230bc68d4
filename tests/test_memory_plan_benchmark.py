"""benchmarks/memory_plan.py runs and reports arena / lower bound for its model zoo, and
every model and training choice meets the issue's target: arena <= 1.10 x lower bound.

The residual DAG CNN (x -> Conv relu = y -> Conv -> Conv 1x1 -> Add(y, .) -> MaxPool -> GAP
-> Dense -> Softmax) once planned at 1.18 x with largest-first placement alone; the planner
now keeps the best of several greedy orders.
"""

import os
import re
import subprocess
import sys

import pytest

import microtrain

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
        assert ratio <= 1.10, (model, choice, ratio)
    by_key = {(row[0], row[1]): row[2] for row in rows}
    for model in models:  # the tail alone needs less than everything; fused <= accumulate
        assert by_key[(model, "last 1, fused")] < by_key[(model, "all, fused")]
        assert by_key[(model, "all, fused")] <= by_key[(model, "all, accumulate")]
    assert "worst ratio" in result.stdout


def test_every_model_meets_the_target():
    result, rows = run_benchmark()
    assert result.returncode == 0, result.stdout
