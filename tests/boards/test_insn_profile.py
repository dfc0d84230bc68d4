"""The instruction histogram of benchmarks/qemu_plugin/insn_count.c (hist=) and its summary in
benchmarks/insn_profile.py: on the digits example's benchmark firmware for the M7, the
histogram holds every executed instruction, and the per-function differences of bench and
bench_base add up to arm_cost's exact count per train step.
"""

import os
import sys

import pytest

from board_setup import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
import arm_cost  # noqa: E402
import insn_profile  # noqa: E402

BOARD = "mps2-an500"


def test_histogram_sums_to_the_count_and_the_functions_to_the_step(board_builds, tmp_path, monkeypatch):
    info = board_builds[BOARD]
    plugin = arm_cost.build_plugin(str(tmp_path))
    folder = str(tmp_path / "profile")
    monkeypatch.setenv(arm_cost.PROFILE_ENV, folder)
    base = arm_cost.count_instructions(info, "bench_base", plugin)
    total = arm_cost.count_instructions(info, "bench", plugin)

    pairs = insn_profile.runs(folder)
    assert len(pairs) == 1
    bench, bench_base = pairs[0]
    assert (bench["instructions"], bench_base["instructions"]) == (total, base)
    for run in (bench, bench_base):  # every executed instruction is in the histogram
        assert sum(insn_profile.read_histogram(run["hist"]).values()) == run["instructions"]

    functions, steps = insn_profile.per_step(bench, bench_base)
    assert steps > 0
    # per-step figures are quotients (a function's executions over the steps), so their sum
    # times the steps is the difference up to float rounding
    assert sum(functions.values()) * steps == pytest.approx(total - base, abs=0.5)
    # the step's own work is there (Dense's kernels lead the digits MLP's step), and almost
    # nothing outside a named function
    assert functions["mt_session_train_step"] > 0
    top = sorted(functions, key=functions.get, reverse=True)[:5]
    assert "?" not in top and any("dense" in name or name == "grad_blocked" for name in top), top
    assert abs(functions.get("?", 0)) < 0.01 * (total - base) / steps

    listing = insn_profile.annotate(bench, bench_base, "mt_session_train_step", steps)
    assert listing and all(line.split()[0].isdigit() for line in listing)
