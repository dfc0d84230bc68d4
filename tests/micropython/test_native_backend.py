"""The native backend `_microtrain` under MicroPython: steps allocate nothing, bad input is a
MicrotrainError the script survives, and every interface method gives the host's bits.

The scripts in scripts/ run on the unix port and on both QEMU boards; the conformance
script also runs on CPython (ctypes backend), and the two outputs must be the same lines.
"""

import os
import re
import subprocess
import sys

import pytest

import microtrain
from microtrain import layers

from mp_setup import BOARDS, SCRIPTS, run_micropython

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from small_models import saved_classifier  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 8 -> 4 relu -> 3 softmax model, and the same one for sparse labels."""
    folder = tmp_path_factory.mktemp("tiny")
    saved_classifier(folder / "tiny.mtm", 4, seed=1)
    # and one with more tensors (41) and ops (20) than a describe chunk holds (16)
    stack = []
    for _ in range(9):
        stack += [layers.Dense(4), layers.ReLU()]
    microtrain.Sequential(stack + [layers.Dense(3), layers.Softmax()], input_shape=(8,),
                          seed=2).save(str(folder / "deep.mtm"))
    return {"image": str(folder / "tiny.mtm"), "deep": str(folder / "deep.mtm"),
            "files": [(str(folder / "tiny.mtm"), "/data/tiny.mtm"),
                      (str(folder / "deep.mtm"), "/data/deep.mtm")]}


def run_tiny_script(board, script, tiny, *args):
    """The output of tests/micropython/scripts/``script`` run on ``board`` with the tiny
    models in /data, which must exit 0"""
    status, output, errors = run_micropython(board, os.path.join(SCRIPTS, script),
                                             tiny["files"], *args)
    assert status == 0, errors[-3000:]
    return output


@pytest.mark.parametrize("board", BOARDS)
def test_a_thousand_steps_leave_mem_free_unchanged(board, micropython_firmware, tiny):
    output = run_tiny_script(board, "backend_steps_allocate_nothing.py", tiny, "/data/tiny.mtm")
    assert "native backend True" in output
    assert "steps allocate 0 bytes" in output, output
    assert "eval steps allocate 0 bytes" in output, output
    assert "accumulate steps allocate 0 bytes" in output, output
    per_float = int(re.search(r"returned floats allocate (\d+) bytes per step", output).group(1))
    assert per_float > 0  # double floats are boxed: what the `out` argument saves
    assert "counters (2002, 0)" in output or "counters (1, 0)" in output, output


@pytest.mark.parametrize("board", BOARDS)
def test_bad_input_raises_microtrain_error_and_the_script_goes_on(board, micropython_firmware,
                                                                    tiny):
    output = run_tiny_script(board, "backend_bad_input.py", tiny, "/data/tiny.mtm",
                             "/data/tiny.mtm")
    cases = dict(re.findall(r"^case (.+?): (.*)$", output, re.MULTILINE))
    assert "no error" not in cases.values(), output
    expected = {
        "step before open": "-4 mt_session_train_step: call not valid",
        "corrupt image": "-2 mt_model_check: corrupt or inconsistent model image",
        "unknown config field": "-1 mt_plan: bad argument [MT_ERR_BAD_ARGUMENT]: config has "
                                "no field 'learning_rat'",
        "arena too small": "-6 mt_session_init_from_plan: arena too small "
                           "[MT_ERR_ARENA_TOO_SMALL]: the "
                           "arena buffer of 100 bytes",
        "misaligned arena of exactly the plan": "-6 mt_session_init_from_plan: arena too small",
        "read-only arena": "-1 open: bad argument [MT_ERR_BAD_ARGUMENT]: the arena must be a "
                           "writable buffer",
        "too many input values": "-1 write_rows: bad argument [MT_ERR_BAD_ARGUMENT]: 36 "
                                 "values do not fit in 32",
        "partial row": "-1 write_rows: bad argument [MT_ERR_BAD_ARGUMENT]: 7 values are not "
                       "whole rows of 8",
        "rows past the batch": "-1 write_rows: bad argument [MT_ERR_BAD_ARGUMENT]: 32 values "
                               "do not fit in 8",
        "no such input": "-1 mt_session_input: bad argument [MT_ERR_BAD_ARGUMENT]: the model "
                         "has no input 1",
        "weight of the wrong size": "-1 write_param: bad argument [MT_ERR_BAD_ARGUMENT]: 3 "
                                    "values for a weight of 32",
        "n above the batch size": "-1 mt_session_train_step: bad argument "
                                  "[MT_ERR_BAD_ARGUMENT]: n = 5 rows, a step takes 1 to 4",
        "n zero": "-1 mt_session_train_step: bad argument [MT_ERR_BAD_ARGUMENT]: n = 0 rows",
        "loss into a list": "-1 mt_session_train_step: bad argument [MT_ERR_BAD_ARGUMENT]: out must be an "
                            "array('f')",
        "NaN input": "-7 mt_session_train_step: NaN or infinite loss, gradient or update; step "
                     "refused [MT_ERR_NUMERIC]",
        "label out of range": "-1 mt_session_train_step: bad argument [MT_ERR_BAD_ARGUMENT]: "
                              "row 2 has label 7; labels are 0..2",
        "float label": "-1 write_rows: bad argument [MT_ERR_BAD_ARGUMENT]: value 0 is a "
                       "float; labels are integers",
        "Session NaN": "-7 mt_session_train_step: NaN or infinite loss",
    }
    for name, start in expected.items():
        assert cases.get(name, "").startswith(start), (name, cases.get(name), output)
    assert "arena of plan + 15 bytes opens" in output
    assert "NaN loss carried: True" in output
    assert "numeric errors 1" in output
    assert re.search(r"^still trains: loss \d", output, re.MULTILINE)
    assert re.search(r"^labels fixed: loss \d", output, re.MULTILINE)
    assert re.search(r"^Session still trains: loss \d", output, re.MULTILINE)
    assert "Session short row: ValueError: input 0 row 0 has 7 values" in output
    assert output.rstrip().endswith("survived")


@pytest.fixture(scope="module")
def cpython_conformance(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("conformance_cpython")
    result = subprocess.run([sys.executable, os.path.join(SCRIPTS, "conformance.py"),
                             tiny["image"], str(out), tiny["deep"]], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("done")
    return result.stdout, out


@pytest.mark.parametrize("board", BOARDS)
def test_every_backend_method_gives_the_ctypes_backend_bits(board, micropython_firmware, tiny,
                                                             cpython_conformance, tmp_path):
    """describe, plan, open (writable image), rows, steps, params, weights, rates, counters,
    checkpoints with properties (and a load failing half-way, which must change nothing),
    export; then Session over it: partial batches, metrics, frozen and trained
    set_weights, checkpoint files, train() with a scheduler, a numeric error,
    accumulation, sparse labels. Line for line what CPython prints; and the files."""
    expected, cpython_out = cpython_conformance
    status, output, errors = run_micropython(
        board, os.path.join(SCRIPTS, "conformance.py"), tiny["files"], "/data/tiny.mtm",
        "/out", "/data/deep.mtm", out=str(tmp_path))
    assert status == 0, errors[-3000:]
    assert output.splitlines() == expected.splitlines()
    assert "backend state kept by a failed load [True" in output
    for name in ("session.mtc", "exported.mtm"):
        with open(str(tmp_path / name), "rb") as mine, open(str(cpython_out / name), "rb") as host:
            assert mine.read() == host.read(), name


@pytest.mark.parametrize("board", BOARDS)
def test_an_aligned_read_only_image_is_read_in_place(board, micropython_firmware, tiny):
    output = run_tiny_script(board, "backend_image_in_place.py", tiny, "/data/tiny.mtm")
    assert "in place: open allocates 0 bytes" in output
    assert "in place: plan allocates less than the image: True" in output
    assert "unaligned: plan allocates at least the image: True" in output
    assert "unaligned: open allocates 0 bytes" in output
    assert "frozen weight changed: True True" in output
    assert "the file is unchanged: True" in output
    assert re.search(r"^trains on the copy: loss \d", output, re.MULTILINE)


SHARED = os.path.join(os.path.dirname(SCRIPTS), "..", "scripts", "shared_behaviour.py")


@pytest.fixture(scope="module")
def shared_model(tmp_path_factory):
    """The model of tests/test_shared_behaviour.py, and the ctypes backend's transcript."""
    folder = tmp_path_factory.mktemp("shared")
    model = saved_classifier(folder / "model.mtm", 5, classes=2, features=3)
    host_dir = folder / "host"
    host_dir.mkdir()
    host = subprocess.run([sys.executable, SHARED, model, str(host_dir)], capture_output=True,
                          text=True, timeout=300)
    assert host.returncode == 0, host.stderr[-3000:]
    assert host.stdout.splitlines()[-1] == "done"
    return model, host.stdout


@pytest.mark.parametrize("board", BOARDS)
def test_the_shared_behaviour_script_gives_the_ctypes_transcript(board, micropython_firmware,
                                                                 shared_model, tmp_path):
    """CONTRIBUTING.md's proof of a backend (tests/scripts/shared_behaviour.py)."""
    model, expected = shared_model
    status, output, errors = run_micropython(board, SHARED, [(model, "/data/model.mtm")],
                                             "/data/model.mtm", "/out", out=str(tmp_path))
    assert status == 0, errors[-3000:]
    assert output.splitlines() == expected.splitlines()
