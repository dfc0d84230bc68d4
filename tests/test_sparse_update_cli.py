"""Sparse update from the command line: ``microtrain info MODEL --budget B`` (its scheme and
plan, ``--trainable-scheme`` for a saved one, ``--calibration DATA.npz`` to choose by measured
contribution) and ``microtrain firmware --budget``, each hostile flag refused with one line
and exit status 2. The small CNN and its rows are tests/test_sparse_update.py's."""

import json
import os
import re
import sys

import numpy as np
import pytest

import microtrain
from microtrain.sparse_scheme import SparseScheme

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_sparse_update import batch, cnn  # noqa: E402


def test_info_budget_prints_the_scheme_and_its_plan(tmp_path, capsys):
    from microtrain.tools import cli
    path = str(tmp_path / "cnn.mtm")
    cnn().save(path)
    assert cli.main(["info", path, "--budget", "12000", "--batch-size", "1", "--loss",
                     "cce"]) == 0
    out = capsys.readouterr().out
    scheme = SparseScheme.from_json(out.split("scheme: ")[1].strip())
    with microtrain.TrainSession(path) as session:
        session.compile(loss="cce", batch_size=1, trainable=scheme)
        total = session.memory_plan()["total_bytes"]
        assert total == scheme.total_bytes <= 12000
        assert "total" in out and str(total) in out
        for row in session.memory_plan()["layers"]:  # the table: layer, trains, bytes
            assert re.search(r"(?m)^%s +%s +%d$" % (re.escape(row["label"]), row["trains"],
                                                    row["bytes"]), out)
    saved = tmp_path / "scheme.json"
    saved.write_text(scheme.to_json())
    assert cli.main(["info", path, "--trainable-scheme", str(saved), "--batch-size", "1",
                     "--loss", "cce"]) == 0
    assert "scheme: %s" % scheme.to_json() in capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (["--budget", "-5"], "--budget: expected a positive integer"),
    (["--budget", "100", "--batch-size", "1"], "--budget: a budget of 100 bytes fits no "
                                               "sparse update"),
    (["--budget", "9000", "--trainable", "2"], "leave out --trainable"),
    (["--trainable-scheme", "GARBLED"], "--trainable-scheme .*this is not JSON"),
    (["--trainable-scheme", "RANGE"], "--trainable-scheme .*layer 2 \\(Conv2D\\) has 12 output"),
    (["--trainable-scheme", "MISSING"], "--trainable-scheme .*No such file"),
])
def test_info_hostile_sparse_flags_exit_2(tmp_path, capsys, flags, message):
    from microtrain.tools import cli
    path = str(tmp_path / "cnn.mtm")
    cnn().save(path)
    (tmp_path / "GARBLED").write_text("{layers: [")
    (tmp_path / "RANGE").write_text('{"2": 13}')
    flags = [str(tmp_path / f) if f in ("GARBLED", "RANGE", "MISSING") else f for f in flags]
    assert cli.main(["info", path] + flags) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "Traceback" not in err and len(err.splitlines()) == 1


def calibration_rows(seed=5, rows=12):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (rows, 6, 6, 3)).astype(np.float32)
    return x, np.eye(5, dtype=np.float32)[rng.integers(0, 5, rows)]


def test_info_and_firmware_choose_by_calibration(tmp_path, capsys):
    """`--budget B --calibration DATA.npz`: the scheme sparse_update(..., calibration=(x, y))
    picks, printed by info and compiled into the firmware's configuration."""
    from microtrain.tools import cli
    path = str(tmp_path / "cnn.mtm")
    cnn().save(path)
    x, y = calibration_rows()
    np.savez(str(tmp_path / "cal.npz"), x=x, y=y)
    want = microtrain.sparse_update(path, 12000, batch_size=1, loss="cce", calibration=(x, y))
    assert cli.main(["info", path, "--budget", "12000", "--calibration", str(tmp_path / "cal.npz"),
                     "--batch-size", "1", "--loss", "cce"]) == 0
    out = capsys.readouterr().out
    assert SparseScheme.from_json(out.split("scheme: ")[1].strip()) == want
    assert cli.main(["firmware", "--sources-only", "--model", path, "--data",
                     str(tmp_path / "cal.npz"), "--batch-size", "1", "--loss", "cce", "--out",
                     str(tmp_path / "fw"), "--budget", "12000", "--calibration",
                     str(tmp_path / "cal.npz")]) == 0
    record = json.loads((tmp_path / "fw" / "firmware.json").read_text())
    assert record["plan"]["total_bytes"] == want.total_bytes


@pytest.mark.parametrize("make, message", [
    (None, "--calibration: file not found: .*MISSING"),
    (lambda p: p.write_text("not a zip"), "--calibration .*is not an .npz archive"),
    (lambda p: np.savez(str(p), x=calibration_rows()[0]), "--calibration .*has no array 'y'"),
    (lambda p: np.savez(str(p), x=calibration_rows()[0][:, :5], y=calibration_rows()[1]),
     "--calibration .*calibration x rows have shape \\(5, 6, 3\\); the model's input is "
     "\\(6, 6, 3\\)"),
    (lambda p: np.savez(str(p), x=calibration_rows()[0], y=calibration_rows()[1][:5]),
     "--calibration .*calibration x has 12 rows but y has 5"),
    ("no budget", "--calibration chooses --budget's scheme: give --budget BYTES too"),
])
def test_info_hostile_calibration_exits_2(tmp_path, capsys, make, message):
    from microtrain.tools import cli
    path = str(tmp_path / "cnn.mtm")
    cnn().save(path)
    calibration = tmp_path / "MISSING.npz"
    budget = ["--budget", "12000"]
    if make == "no budget":
        np.savez(str(calibration), x=calibration_rows()[0], y=calibration_rows()[1])
        budget = []
    elif make is not None:
        make(calibration)
    assert cli.main(["info", path, "--calibration", str(calibration), "--batch-size", "1",
                     "--loss", "cce"] + budget) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_firmware_sources_train_the_budget_s_scheme(tmp_path, capsys):
    """`microtrain firmware --budget`: the generated configuration holds the scheme's op
    mask and channel counts, and the record its plan; hostile flags exit 2."""
    from microtrain.tools import firmware
    path = str(tmp_path / "cnn.mtm")
    cnn().save(path)
    x, y = batch()
    np.savez(str(tmp_path / "d.npz"), x=x, y=y)
    common = ["--sources-only", "--model", path, "--data", str(tmp_path / "d.npz"),
              "--batch-size", "1", "--loss", "cce", "--out", str(tmp_path / "fw")]
    assert firmware.main(common + ["--budget", "20000"]) == 0
    scheme = microtrain.sparse_update(path, 20000, batch_size=1, loss="cce")
    with microtrain.TrainSession(path) as session:
        session.compile(loss="cce", batch_size=1, trainable=scheme)
        config = session.config
    source = (tmp_path / "fw" / "data" / "mt_firmware_data.c").read_text()
    for name, c_type in (("trainable_op_mask", "uint8_t"), ("trainable_op_channels", "int32_t")):
        short = {"trainable_op_mask": "mask", "trainable_op_channels": "channels"}[name]
        values = ", ".join("%d" % v for v in config[name])
        assert "static const %s %s[%d] = {%s};" % (c_type, short, len(config[name]),
                                                   values) in source
        assert "cfg->%s = %s;" % (name, short) in source
    record = json.loads((tmp_path / "fw" / "firmware.json").read_text())
    assert record["plan"]["total_bytes"] == scheme.total_bytes <= 20000
    capsys.readouterr()
    from microtrain.tools import cli
    assert cli.main(["firmware"] + common + ["--budget", "0"]) == 2
    assert "--budget: expected a positive integer" in capsys.readouterr().err
    assert cli.main(["firmware"] + common + ["--budget", "100"]) == 2
    assert "--budget: a budget of 100 bytes fits no sparse update" in capsys.readouterr().err
