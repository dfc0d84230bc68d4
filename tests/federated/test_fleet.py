"""A fleet learns together: microtrain clients under Flower's simulation engine.

Small fleets (10 clients, scikit-learn's digits, a label-skewed split: 3 classes per
client) on Flower's Ray engine with 2 CPUs, one client per CPU:

* FedAvg over microtrain clients reaches the accuracy of centralised training on the same
  rows (as many epochs as the fleet's rounds × local epochs, same optimizer and batch)
  within MARGIN on the held-out rows;
* a seeded fleet gives the same global weights, bit for bit, run after run;
* a client on an emulated board (MicroPython firmware under QEMU mps2-an500, Cortex-M7)
  sends an update equal, bit for bit, to the simulated client's for the same round,
  partition and seed — alone, and inside a fleet, whose global weights then equal the
  all-simulated fleet's every round;
* a client whose update the numeric guard refuses, and one whose process dies, are dropped
  from every round with their reason; the rounds complete with the others and the global
  weights stay finite;
* FedProx's proximal-mu reaches the clients' core (their updates change with μ).

Ray is started and shut down by each simulation (Flower's run_simulation); no process of it
outlives the test (checked at the end).
"""

import io
import os
import re
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

pytest.importorskip("flwr", reason="microtrain.federated needs Flower: pip install "
                                   "microtrain[federated] (tools/setup_host.sh --test)")

import microtrain  # noqa: E402
from microtrain import DataLoader, optimizers  # noqa: E402
from microtrain.federated import client, local_round  # noqa: E402
from microtrain.federated.fleet import run_fleet  # noqa: E402
from microtrain.federated.task import FleetTask  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MARGIN = 0.08
FLEET = dict(clients=10, split="label", classes_per_client=3, optimizer="sgd",
             learning_rate=0.2, batch_size=16, epochs=1, seed=0)


def crc(weights):
    return zlib.crc32(b"".join(np.ascontiguousarray(w, dtype="<f4").tobytes()
                               for w in weights)) & 0xFFFFFFFF


@pytest.fixture(scope="module")
def short_fleet(digits):
    """3 rounds of the all-simulated fleet (the reference of several tests)."""
    return run_fleet(digits["model"], digits["data"], rounds=3, **FLEET)


def test_fedavg_reaches_centralised_accuracy_on_a_label_skewed_split(digits):
    rounds = 30
    out = io.StringIO()
    fleet = run_fleet(digits["model"], digits["data"], rounds=rounds, strategy="fedavg",
                      stream=out, **FLEET)
    data = np.load(digits["data"])
    with microtrain.TrainSession(digits["model"]) as session:
        session.compile(optimizers.SGD(learning_rate=FLEET["learning_rate"]),
                        "categorical_crossentropy", batch_size=FLEET["batch_size"])
        session.train(DataLoader(data["x"], data["y"], batch_size=FLEET["batch_size"],
                                 shuffle=True, seed=0), epochs=rounds * FLEET["epochs"],
                      verbose=0)
        predicted = session.predict(data["x_eval"]).argmax(axis=1)
    centralised = float(np.mean(predicted == data["y_eval"].argmax(axis=1)))
    assert centralised > 0.85
    assert fleet.accuracy >= centralised - MARGIN, (fleet.accuracy, centralised, out.getvalue())
    assert fleet.rounds[0]["accuracy"] < 0.2  # it learned
    assert [row["round"] for row in fleet.rounds] == list(range(rounds + 1))
    assert all(row["clients"] == 10 and row["dropped"] == 0 for row in fleet.rounds[1:])
    # only the trained tensors travel: 10 clients x (64*32 + 32 + 32*10 + 10) floats + headers
    payload = 4 * (64 * 32 + 32 + 32 * 10 + 10)
    assert 10 * payload <= fleet.rounds[1]["bytes_down"] < 10 * payload + 10 * 4 * 200
    assert fleet.rounds[1]["bytes_up"] == fleet.rounds[1]["bytes_down"]
    assert "accuracy" in out.getvalue() and "bytes down" in out.getvalue()


def test_a_seeded_fleet_gives_the_same_global_weights(digits, short_fleet):
    again = run_fleet(digits["model"], digits["data"], rounds=3, **FLEET)
    assert again.crc32 == short_fleet.crc32
    for ours, theirs in zip(again.weights, short_fleet.weights):
        assert np.array_equal(ours, theirs)
    assert [r["accuracy"] for r in again.rounds] == [r["accuracy"] for r in short_fleet.rounds]
    other = run_fleet(digits["model"], digits["data"], rounds=1, **dict(FLEET, seed=1))
    assert other.crc32 != short_fleet.crc32  # the seed matters (shuffles, split)


def _task(digits, **extra):
    settings = dict(
        optimizer="sgd", learning_rate=FLEET["learning_rate"],
        loss="categorical_crossentropy", batch_size=16, trainable=-1, epochs=2,
        proximal_mu=0.01, seed=0)
    with open(digits["model"], "rb") as handle:
        image = handle.read()
    return FleetTask(image, digits["data"], 10, settings, split="label",
                     classes_per_client=3, **extra)


def test_the_emulated_board_sends_the_simulated_clients_update_bit_for_bit(digits):
    task = _task(digits, device={"board": "mps2-an500", "partitions": [4]})
    with microtrain.TrainSession(digits["model"]) as session:
        start = [np.asarray(w) + np.float32(0.01) for w in session.get_weights()]
    simulated, logs, rows = client.simulated_round(task, 4, start, server_round=7)
    on_board, board_logs, board_rows = client.device_round(task, 4, start, server_round=7)
    assert rows == board_rows > 0
    assert crc(on_board) == crc(simulated)
    assert all(np.array_equal(a, b) for a, b in zip(on_board, simulated))
    assert board_logs["loss"] == logs["loss"]  # the epoch's mean loss, a double, exactly
    with microtrain.TrainSession(digits["model"]) as session:
        local_round.compile_session(session, task.settings)
        assert board_logs["arena"] == session.memory_plan()["total_bytes"]
    assert not all(np.array_equal(a, b) for a, b in zip(simulated, start))  # it trained


def test_a_fleet_with_a_board_in_the_loop_has_the_simulated_fleets_bits(digits, short_fleet):
    fleet = run_fleet(digits["model"], digits["data"], rounds=3,
                      device={"board": "mps2-an500", "partitions": [0]}, **FLEET)
    assert fleet.crc32 == short_fleet.crc32
    assert [r["loss"] for r in fleet.rounds] == [r["loss"] for r in short_fleet.rounds]


def test_bad_clients_are_dropped_with_their_reason_and_the_rounds_complete(
        digits, short_fleet, caplog):
    out = io.StringIO()
    fleet = run_fleet(digits["model"], digits["data"], rounds=2, stream=out,
                      faults={2: "nan", 5: "die"}, **FLEET)
    warned = [r.getMessage() for r in caplog.records if r.name == "microtrain.federated"]
    assert any("round 1: client 5 dropped" in message for message in warned), warned
    assert all(np.all(np.isfinite(w)) for w in fleet.weights)
    for row in fleet.rounds[1:]:
        assert row["clients"] == 8 and row["dropped"] == 2
    reasons = {(r, p): why for r, p, why in fleet.dropped}
    assert sorted(reasons) == [(1, 2), (1, 5), (2, 2), (2, 5)]
    assert "MT_ERR_NUMERIC" in reasons[(1, 2)]
    assert "process exited with status 71" in reasons[(1, 5)]
    assert "dropped in round 1: client 5" in out.getvalue()
    assert fleet.crc32 != short_fleet.crc32
    assert fleet.rounds[-1]["accuracy"] > fleet.rounds[0]["accuracy"]


def test_run_fleet_keeps_flowers_notices_quiet_and_ours_heard(digits):
    """In a fresh interpreter (Flower imported by run_fleet itself, which sets its logger to
    DEBUG on import), run_fleet(stream=...) prints the fleet's lines and its own warnings,
    not Flower's deprecation of run_simulation nor its "fraction_evaluate is set to 0.0"."""
    code = ("import sys\nfrom microtrain.federated import run_fleet\n"
            "run_fleet(%r, %r, clients=2, rounds=1, faults={1: 'nan'}, stream=sys.stdout)"
            % (digits["model"], digits["data"]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, env=dict(os.environ))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "dropped in round 1: client 1" in result.stdout
    assert "round 1: client 1 dropped" in result.stderr  # logger microtrain.federated
    for noise in ("DEPRECATED", "run_simulation", "fraction_evaluate", "\x1b["):
        assert noise not in result.stdout + result.stderr, (noise, result.stderr[-2000:])


def test_a_dead_board_is_a_dropped_client(digits):
    task = _task(digits, device={"board": "mps2-an500", "partitions": [1]}, faults={1: "die"})
    with microtrain.TrainSession(digits["model"]) as session:
        start = session.get_weights()
    from microtrain.federated.device import DeviceError
    with pytest.raises(DeviceError, match="stopped without an update"):
        client.device_round(task, 1, start, server_round=1)


def test_fedprox_mu_reaches_the_clients_core(digits):
    with microtrain.TrainSession(digits["model"]) as session:
        start = session.get_weights()
    task = _task(digits)
    plain, _, _ = client.simulated_round(task, 3, start, 1, dict(task.settings,
                                                                 proximal_mu=0.0))
    config = {"proximal-mu": 0.5, "server-round": 1}
    proximal, _, _ = client.simulated_round(task, 3, start, 1,
                                            client.settings_for(task, config))
    moved = sum(float(np.abs(p - s).sum()) for p, s in zip(plain, start))
    pulled = sum(float(np.abs(p - s).sum()) for p, s in zip(proximal, start))
    assert 0 < pulled < moved  # the proximal term holds the update nearer the global model


def test_a_fleets_result_is_the_whole_global_model(digits, short_fleet, tmp_path):
    """result.weights is every tensor, result.crc32 is weights_crc32() of a session holding
    them, and the result goes into a session (apply) or a file (save) as it is; also when
    only the last layer trained and travelled (a FleetResult built as run_fleet builds it)."""
    from microtrain.federated.fleet import FleetResult, make_settings
    with open(digits["model"], "rb") as handle:
        image = handle.read()
    with microtrain.TrainSession(image) as session:
        short_fleet.apply(session)
        assert session.weights_crc32() == short_fleet.crc32
        assert crc(session.get_weights()) == short_fleet.crc32
    short_fleet.save(str(tmp_path / "global.mtm"))
    with microtrain.TrainSession(str(tmp_path / "global.mtm")) as saved:
        assert saved.weights_crc32() == short_fleet.crc32
    settings = make_settings("sgd", 0.2, "categorical_crossentropy", 16, trainable=1)
    with microtrain.TrainSession(image) as session:
        local_round.compile_session(session, settings)
        frozen = session.get_weights()
        keys = ["t%d" % t for t in session.trained_tensors()]
    trained = [frozen[2] + np.float32(0.5), frozen[3] - np.float32(0.25)]
    result = FleetResult([], trained, keys, [], 0, 0.0, settings, model=image)
    assert len(result.weights) == 4 and len(result.trained_weights) == 2
    expected = frozen[:2] + trained
    assert all(np.array_equal(a, b) for a, b in zip(result.weights, expected))
    assert result.crc32 == crc(expected)
    with microtrain.TrainSession(image) as session:
        result.apply(session)
        assert session.weights_crc32() == result.crc32
        session.compile("sgd", "categorical_crossentropy", batch_size=4)
        session.set_weights(dict(zip(result.keys, result.trained_weights)))
        assert session.weights_crc32() == result.crc32
    result.save(str(tmp_path / "last_layer.mtm"))
    with microtrain.TrainSession(str(tmp_path / "last_layer.mtm")) as saved:
        assert saved.weights_crc32() == result.crc32


def test_the_fleet_command_prints_the_table(digits, tmp_path):
    env = dict(os.environ)
    result = subprocess.run(
        ["python", "-m", "microtrain", "fleet", "--model", digits["model"], "--data",
         digits["data"], "--clients", "4", "--rounds", "1", "--split", "dirichlet",
         "--alpha", "0.5", "--strategy", "fedavgm", "--seed", "3",
         "--export", str(tmp_path / "global.mtm")],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "FedAvgM" in result.stdout and "bytes down" in result.stdout
    printed = re.search(r"global weights crc32 (0x[0-9a-f]{8})", result.stdout).group(1)
    with microtrain.TrainSession(str(tmp_path / "global.mtm")) as saved:
        assert "0x%08x" % saved.weights_crc32() == printed  # the model the table ends on
    assert "global model: %s (weights crc32 %s)" % (tmp_path / "global.mtm", printed) in \
        result.stdout
    for noise in ("DEPRECATED", "fraction_evaluate"):  # Flower's notices: --verbose only
        assert noise not in result.stdout + result.stderr, result.stderr[-2000:]
    bad = subprocess.run(["python", "-m", "microtrain", "fleet", "--model", digits["model"],
                          "--data", digits["data"], "--strategy", "nope"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def ray_processes():
    """{pid: state} of the Ray processes on the machine (state "Z": a zombie, reaped soon)."""
    found = subprocess.run(["pgrep", "-f", "ray::|raylet|gcs_server"], capture_output=True,
                           text=True)
    states = {}
    for pid in found.stdout.split():
        try:
            with open("/proc/%s/stat" % pid) as handle:
                states[int(pid)] = handle.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError, ValueError):
            continue
    return states


@pytest.fixture(scope="module", autouse=True)
def ray_before_this_module():
    """The Ray processes that existed before these tests (another user's, not ours)."""
    return set(ray_processes())


def test_no_ray_process_outlives_the_simulations(ray_before_this_module):
    # Ray stops its raylet and GCS asynchronously after ray.shutdown() (and after a CLI
    # subprocess exits): allow them a few seconds, then none of ours may be left running.
    deadline = time.monotonic() + 20.0
    while True:
        ours = {pid: state for pid, state in ray_processes().items()
                if pid not in ray_before_this_module and state != "Z"}
        if not ours or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not ours, "Ray processes still running after the simulations: %s" % ours
