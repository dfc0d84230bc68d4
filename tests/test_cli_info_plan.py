"""``microtrain info``: the memory plan's lower bound, ratio, reuse and update mode, and
``--plot`` drawing the arena from mt_plan_buffers."""

import sys

import pytest

import microtrain
from microtrain import layers
from microtrain.tools import cli


@pytest.fixture
def cnn_path(tmp_path):
    model = microtrain.Sequential([
        layers.Conv2D(4, 3, padding="same", activation="relu"), layers.MaxPool2D(2),
        layers.Conv2D(8, 3, activation="relu"), layers.GlobalAveragePool(),
        layers.Dense(10), layers.Softmax()], input_shape=(8, 8, 1), seed=0)
    path = tmp_path / "cnn.mtm"
    model.save(str(path))
    return str(path)


def plan_rows(text):
    rows = {}
    for line in text.splitlines():
        parts = line.rsplit(None, 1)
        if len(parts) == 2:
            rows[parts[0].strip()] = parts[1]
    return rows


def test_info_reports_lower_bound_ratio_reuse_and_update_mode(cnn_path, capsys):
    assert cli.main(["info", cnn_path, "--batch-size", "8", "--optimizer", "adam",
                     "--loss", "scce"]) == 0
    rows = plan_rows(capsys.readouterr().out)
    total, bound = int(rows["total"]), int(rows["lower bound (most bytes live at once)"])
    assert bound <= total <= 1.10 * bound
    assert float(rows["ratio total / lower bound"]) == pytest.approx(total / bound, abs=1e-3)
    assert int(rows["shared lifetimes"]) < 0  # reuse
    assert rows["update mode"] == "fused"

    assert cli.main(["info", cnn_path, "--batch-size", "8", "--optimizer", "adam",
                     "--loss", "scce", "--accumulate-gradients"]) == 0
    accumulate = plan_rows(capsys.readouterr().out)
    assert accumulate["update mode"] == "accumulate"
    assert int(accumulate["total"]) > total  # gradients persist
    assert "weights updated in tiles" not in rows  # Dense [10, 8]: under 16 KiB, whole

    assert cli.main(["info", cnn_path, "--batch-size", "8", "--optimizer", "adam",
                     "--loss", "scce", "--trainable", "1"]) == 0  # the last layer with
    last_dense = plan_rows(capsys.readouterr().out)                          # weights
    assert int(last_dense["total"]) < total


def test_info_plot_writes_a_png(cnn_path, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "arena.png"
    assert cli.main(["info", cnn_path, "--batch-size", "4", "--optimizer", "sgd", "--loss",
                     "scce", "--trainable", "2,4", "--plot", str(out)]) == 0
    assert "arena plot: %s" % out in capsys.readouterr().out
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_info_plot_without_matplotlib_is_a_one_line_error(cnn_path, tmp_path, capsys,
                                                          monkeypatch):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises ImportError
    out = tmp_path / "arena.png"
    assert cli.main(["info", cnn_path, "--loss", "scce", "--plot", str(out)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "needs matplotlib" in error
    assert not out.exists()


def test_plan_buffers_cover_the_arena_without_overlap_in_time(cnn_path):
    from microtrain.tools import arena
    with microtrain.TrainSession(cnn_path) as session:
        session.compile("adam", "sparse_categorical_crossentropy", batch_size=4)
        total = session.memory_plan()["total_bytes"]
        buffers = arena.plan_buffers(session)
        labels = arena.schedule_labels(session)
    assert {b["kind"] for b in buffers} >= {"metadata", "weight", "gradient", "optimizer",
                                            "activation", "target"}
    assert len(labels) == 2 * 6 + 2
    for b in buffers:
        assert 0 <= b["offset"] and b["offset"] + b["bytes"] <= total
        assert 0 <= b["start"] <= b["end"] < len(labels)
    for i, a in enumerate(buffers):  # two buffers share bytes only at disjoint times
        for b in buffers[i + 1:]:
            overlap_bytes = a["offset"] < b["offset"] + b["bytes"] and \
                b["offset"] < a["offset"] + a["bytes"]
            overlap_time = a["start"] <= b["end"] and b["start"] <= a["end"]
            if overlap_bytes and overlap_time:
                assert b["in_place_of"] == a["tensor"] or a["in_place_of"] == b["tensor"]


def test_info_reports_the_weights_updated_in_tiles(tmp_path, capsys):
    # Dense(80) over 64 features: W [80, 64], 20,480 bytes, is updated in tiles of the most
    # whole rows whose dW and dy columns fit 4 KiB: 14 rows of 64 + 8 floats, 4,032 bytes
    model = microtrain.Sequential([layers.Dense(80), layers.Softmax()], input_shape=(64,), seed=0)
    path = str(tmp_path / "wide.mtm")
    model.save(path)
    args = ["info", path, "--batch-size", "8", "--optimizer", "sgd", "--loss", "scce"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    rows = plan_rows(out)
    assert int(rows["weights updated in tiles"]) == 1
    assert int(rows["largest tile"]) == 14 * (64 + 8) * 4
    assert "update mode fused, tiled:" in out
    assert cli.main(args + ["--accumulate-gradients"]) == 0
    rows = plan_rows(capsys.readouterr().out)
    assert rows["update mode"] == "accumulate" and "weights updated in tiles" not in rows
