"""A fleet on Flower's deployment engine, on loopback: SuperLink, SuperNodes, a board.

4 clients of scikit-learn's digits (3 classes each), FedAvg, SGD 0.2:

* an emulated board (MicroPython firmware under QEMU mps2-an500, its UART on a TCP
  socket) trains two rounds over the framed protocol with the simulated client's bits,
  and a board reset mid-round is a failed round at once;
* a round's node sampling does not depend on what else drew from Python's ``random``;
* the Flower App (examples/flower_app, microtrain.federated.flower_app) runs unchanged by
  ``flwr run`` on Flower's simulation runtime and gives the global weights of
  ``microtrain fleet`` (the simulation engine), round after round;
* a deployment over TLS (self-signed certificates made here) of a SuperLink and 4
  SuperNodes, one of them the board's gateway, gives the same global weights round after
  round; every socket it listened on was on 127.0.0.1;
* a SuperNode killed mid-round is dropped and the round completes (after the round's
  timeout), as it does when the board stops answering (after the board's), when a client's
  reply is one the server's guard refuses, and when a client raises (its own words);
* what the simulation refuses before Ray starts, a deployment refuses before any process
  starts (rows the model cannot take, an arena smaller than the plan, bad arguments), and
  a board's faults need a gateway board;
* ``microtrain fleet --deployment`` with QFedAvg and --trainable prints the simulation's
  table and last line (the same global weights) and --export writes that model; interrupted
  with Ctrl-C (SIGINT), or when its SuperLink dies, it stops everything it started.

After each deployment no process it started is left (they carry its marker in their
environment), nor a listening socket; the last test counts them over the whole module.
"""

import datetime
import io
import ipaddress
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("flwr", reason="microtrain.federated needs Flower: pip install "
                                   "microtrain[federated] (tools/setup_host.sh --test)")

import microtrain  # noqa: E402
from microtrain.federated import client, flower_app, gateway, processes  # noqa: E402
from microtrain.federated.board_emulator import EmulatedBoard  # noqa: E402
from microtrain.federated.deployment import DeploymentError, run_deployment  # noqa: E402
from microtrain.federated.fleet import run_fleet  # noqa: E402
from microtrain.federated.task import FleetTask  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FLEET = dict(clients=4, split="label", classes_per_client=3, optimizer="sgd",
             learning_rate=0.2, batch_size=16, epochs=1, seed=0)
ROUNDS = 2
BOARD = "mps2-an500"


def marked_processes():
    """{pid: command} of live processes carrying any deployment's marker."""
    needle = (processes.MARKER + "=").encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as handle:
                marked = any(item.startswith(needle) for item in handle.read().split(b"\0"))
            with open("/proc/%s/stat" % entry) as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marked and state != "Z":
            found[int(entry)] = processes._name(int(entry))
    return found


def listening_ports():
    ports = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(path) as handle:
            for line in handle.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.fixture(scope="module", autouse=True)
def marked_before_this_module():
    return marked_processes()


def assert_nothing_left(result, ray=False):
    """Every socket the deployment listened on was on 127.0.0.1 (but Ray's, with ``ray``:
    Flower's simulation runtime runs Ray, which listens on every interface), none of them
    is still listening, and no process of the deployment is left."""
    assert not processes.marked(result.deployment["id"])
    listening = result.deployment["listening"]
    flower = [entry for entry in listening if not ray or "flower-" in entry[1]]
    assert flower and all(host == "127.0.0.1" for _, _, host, _ in flower), listening
    assert not set(port for _, _, _, port in listening) & listening_ports()


@pytest.fixture(scope="module")
def simulated(digits):
    """The fleet on Flower's simulation engine (``microtrain fleet``): the reference."""
    return run_fleet(digits["model"], digits["data"], rounds=ROUNDS, **FLEET)


def crcs(result):
    return [row["crc32"] for row in result.rounds]


def test_the_committed_app_is_the_one_the_package_writes():
    with open(os.path.join(ROOT, "examples", "flower_app", "pyproject.toml")) as handle:
        assert handle.read() == flower_app.pyproject_text()
    config = dict(flower_app.DEFAULTS, model="m.mtm", data="d.npz", faults="2:nan,5:die")
    arguments = flower_app.fleet_arguments(config)
    assert arguments["faults"] == {2: "nan", 5: "die"} and arguments["proximal_mu"] is None
    again = flower_app.run_config_of(dict(arguments, model="m.mtm", data="d.npz"), 3)
    assert flower_app.fleet_arguments(again) == dict(
        arguments, model=os.path.abspath("m.mtm"), data=os.path.abspath("d.npz"))
    with pytest.raises(ValueError, match="PARTITION:FAULT"):
        flower_app.parse_faults("2-nan")


def test_node_sampling_is_seeded_per_round_whatever_else_draws_from_random(monkeypatch):
    """A deployment's ServerApp shares Python's ``random`` with Flower's HTTP retries
    (their jitter), a simulation's with its threads: the nodes a round samples must not
    depend on how many numbers those drew before it."""
    import random
    from flwr.app import ArrayRecord, ConfigRecord
    from flwr.serverapp.strategy import fedavg
    from microtrain.federated import server

    class Sampled(Exception):
        """Flower's sampler returned (the messages it would build need a live run)."""

    sample_nodes = fedavg.sample_nodes

    def sample_and_stop(*args):
        raise Sampled(sorted(sample_nodes(*args)[0]))

    monkeypatch.setattr(fedavg, "sample_nodes", sample_and_stop)

    class Grid:
        def get_node_ids(self):
            return list(range(100, 120))

    def sampled(server_round, draws):
        strategy = server.make_strategy("fedavg", fraction_train=0.3)
        strategy.sampling_seed = 7
        random.seed(0)
        for _ in range(draws):  # whatever Flower did since the seed
            random.random()
        with pytest.raises(Sampled) as nodes:
            strategy.configure_train(server_round, ArrayRecord(), ConfigRecord(), Grid())
        return nodes.value.args[0]

    assert len(sampled(1, 0)) == 6
    assert sampled(1, 0) == sampled(1, 5) == sampled(1, 1000)
    assert sampled(2, 3) == sampled(2, 0) != sampled(1, 0)


def test_the_emulated_board_trains_with_the_simulated_clients_bits(digits):
    settings = dict(optimizer="sgd", learning_rate=0.2, loss="categorical_crossentropy",
                    batch_size=16, trainable=-1, epochs=1, proximal_mu=0.0, seed=0)
    with open(digits["model"], "rb") as handle:
        image = handle.read()
    task = FleetTask(image, digits["data"], 4, settings, split="label", classes_per_client=3,
                     faults={2: "reset"})
    with microtrain.TrainSession(image) as session:
        start = [np.asarray(w) + np.float32(0.01) for w in session.get_weights()]
    for partition in (1, 2):
        x, y = task.rows(partition)
        board = EmulatedBoard(BOARD, x, y)
        board.start(timeout=120)
        try:
            if partition == 1:
                for server_round in (1, 2):
                    update, logs, rows = gateway.board_round(task, board.address, 1, start,
                                                             server_round, settings, 5, 120)
                    expected, expected_logs, n = client.simulated_round(task, 1, start,
                                                                        server_round, settings)
                    assert rows == n and logs["loss"] == expected_logs["loss"]
                    assert all(np.array_equal(a, b) for a, b in zip(update, expected))
            else:  # reset mid-round: its emulator ends, the round fails at once
                began = time.monotonic()
                with pytest.raises(gateway.BoardError, match="link at .* closed"):
                    gateway.board_round(task, board.address, 2, start, 1, settings, 5, 120)
                assert time.monotonic() - began < 60
                board.process.wait(timeout=10)
        finally:
            board.stop()
        assert board.process.poll() is not None


def test_the_app_runs_unchanged_on_flowers_simulation_runtime(digits, simulated):
    result = run_deployment(digits["model"], digits["data"], rounds=ROUNDS,
                            runtime="simulation", **FLEET)
    assert crcs(result) == crcs(simulated)
    assert [r["loss"] for r in result.rounds] == [r["loss"] for r in simulated.rounds]
    assert_nothing_left(result, ray=True)


def make_certificates(folder):
    """A CA and a server certificate for 127.0.0.1 signed by it (self-signed, 1 day)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(text):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    def builder(subject, issuer, key):
        return (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1)))

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), \
        ec.generate_private_key(ec.SECP256R1())
    ca = builder("microtrain test CA", "microtrain test CA", ca_key).add_extension(
        x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(ca_key,
                                                                           hashes.SHA256())
    server = builder("127.0.0.1", "microtrain test CA", server_key).add_extension(
        x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                     x509.DNSName("localhost")]), critical=False).add_extension(
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False).sign(
        ca_key, hashes.SHA256())
    pem = serialization.Encoding.PEM
    files = {"ca.crt": ca.public_bytes(pem), "server.crt": server.public_bytes(pem),
             "server.key": server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption())}
    os.makedirs(folder, exist_ok=True)
    for file_name, data in files.items():
        with open(os.path.join(folder, file_name), "wb") as handle:
            handle.write(data)
    return folder


def test_a_deployment_over_tls_with_a_board_has_the_simulations_bits(digits, simulated,
                                                                      tmp_path):
    out = io.StringIO()
    result = run_deployment(digits["model"], digits["data"], rounds=ROUNDS,
                            device={"board": BOARD, "partitions": [1]},
                            tls=make_certificates(str(tmp_path / "tls")),
                            logs=str(tmp_path / "logs"), board_timeout=180,
                            round_timeout=600, stream=out, **FLEET)
    assert crcs(result) == crcs(simulated), out.getvalue()
    assert result.crc32 == simulated.crc32
    assert [r["loss"] for r in result.rounds] == [r["loss"] for r in simulated.rounds]
    assert all(r["clients"] == 4 and r["dropped"] == 0 for r in result.rounds[1:])
    assert [r["bytes_up"] for r in result.rounds] == [r["bytes_up"]
                                                      for r in simulated.rounds]
    text = out.getvalue()
    assert "(TLS)" in text and "client 1 on mps2-an500" in text
    assert "global weights crc32 0x%08x" % simulated.crc32 in text
    with open(str(tmp_path / "logs" / "superlink.log")) as handle:
        assert "running on https://127.0.0.1:" in handle.read()
    commands = " ".join(command for _, command, _, _ in result.deployment["listening"])
    for server in ("flower-superlink", "flower-supernode", "qemu-system-arm"):
        assert server in commands
    assert_nothing_left(result)


def test_killed_silent_hostile_and_raising_clients_are_dropped_and_the_round_completes(
        digits):
    out = io.StringIO()
    result = run_deployment(digits["model"], digits["data"], rounds=1,
                            device={"board": BOARD, "partitions": [1]},
                            faults={1: "hang", 2: "kill", 3: "huge", 4: "raise"},
                            board_timeout=10, round_timeout=40, stream=out,
                            **dict(FLEET, clients=5))
    assert (result.rounds[1]["clients"], result.rounds[1]["dropped"]) == (1, 4)
    reasons = {(r, p): why for r, p, why in result.dropped}
    assert sorted(reasons) == [(1, 1), (1, 2), (1, 3), (1, 4)], out.getvalue()
    assert "no reply within the round's timeout (40 s)" in reasons[(1, 2)]
    assert "did not answer the ROUND within the round's 10 s" in reasons[(1, 1)]
    assert "tensor t1 is not finite in float32" in reasons[(1, 3)]  # the server's guard
    assert "ZeroDivisionError: client 4 divides by zero" in reasons[(1, 4)]
    assert "dropped in round 1: client 2: no reply" in out.getvalue()
    assert all(np.all(np.isfinite(w)) for w in result.weights)
    assert result.rounds[1]["accuracy"] > result.rounds[0]["accuracy"]  # client 0 trained
    assert_nothing_left(result)


def test_a_deployment_refuses_what_a_simulation_refuses_before_anything_starts(digits,
                                                                                tmp_path):
    before = marked_processes()
    x = np.zeros((40, 5), np.float32)
    misfit = str(tmp_path / "misfit.npz")
    np.savez(misfit, x=x, y=np.eye(10, dtype=np.float32)[np.arange(40) % 10])
    common = dict(FLEET, clients=2)
    for data, options, words in (
            (misfit, {}, "the model takes rows of shape (64,)"),
            (digits["data"], {"arena_bytes": 100}, "cannot hold a client's plan"),
            (digits["data"], {"fraction": 0.0}, "fraction must be in (0, 1]"),
            (digits["data"], {"device": {"board": "mps2-an500", "partitions": [2]}},
             "device client 2 is not a client"),
            (digits["data"], {"device": {"board": "unix", "partitions": [0]}},
             "a gateway's emulated board is one of"),
            (digits["data"], {"faults": {0: "hang"}}, "client 0 is no gateway board"),
            (digits["data"], {"faults": {0: "bogus"}}, "the faults are")):
        out = io.StringIO()
        with pytest.raises(ValueError) as refused:
            run_deployment(digits["model"], data, rounds=1, stream=out,
                           **dict(common, **options))
        assert words in str(refused.value)
        assert out.getvalue() == ""  # no deployment line: nothing started
    with pytest.raises(ValueError, match="gateway board's: they need run_deployment"):
        run_fleet(digits["model"], digits["data"], rounds=1, faults={1: "reset"}, **common)
    command = subprocess.run(
        [sys.executable, "-m", "microtrain", "fleet", "--deployment", "--model",
         digits["model"], "--data", digits["data"], "--clients", "2", "--device-clients",
         "3"], capture_output=True, text=True, timeout=120)
    assert command.returncode == 2 and "device client 3 is not a client" in command.stderr
    assert set(marked_processes()) <= set(before), marked_processes()


def test_a_fleet_of_int8_layers_trained_in_place_is_refused_naming_the_tensor(digits,
                                                                             tmp_path):
    """Fleets average float32 tensors: an int8 layer trained in place (int8 weights, int32
    biases) is refused on both engines before anything starts, the tensor named."""
    pytest.importorskip("tflite")
    kws = os.path.join(ROOT, "examples", "models", "mlperf_tiny", "kws_ref_model.tflite")
    model = str(tmp_path / "kws_int8_in_place.mtm")
    microtrain.convert(kws, train_from="conv2d_4", int8_train=True).save(model)
    before = marked_processes()
    for run in (run_fleet, run_deployment):
        out = io.StringIO()
        with pytest.raises(ValueError) as refused:
            run(model, digits["data"], rounds=1, stream=out, **dict(FLEET, clients=2))
        words = str(refused.value)
        assert words.startswith("layers 8, 11 train int8 weights in place"), words
        assert out.getvalue() == ""
    assert set(marked_processes()) <= set(before), marked_processes()


def test_the_command_deploys_the_simulations_fleet_and_exports_its_model(digits, tmp_path):
    """QFedAvg (it needs the clients' learning rate and loss metric) over the last layer
    with weights (--trainable 1): ``microtrain fleet --deployment`` prints the table of
    run_fleet's simulation of the same fleet (but its seconds) and the same last line, and
    --export writes the global model whose crc32 it printed."""
    options = dict(clients=2, rounds=1, split="iid", seed=2, strategy="qfedavg",
                   learning_rate=0.2)
    simulated = run_fleet(digits["model"], digits["data"], trainable=1, **options)
    assert len(simulated.trained_weights) == 2  # Dense(10)'s kernel and bias
    export = str(tmp_path / "global.mtm")
    command = subprocess.run(
        [sys.executable, "-m", "microtrain", "fleet", "--deployment", "--model",
         digits["model"], "--data", digits["data"], "--trainable", "1", "--export", export]
        + ["--%s=%s" % (name.replace("_", "-"), value) for name, value in options.items()],
        capture_output=True, text=True, timeout=600)
    assert command.returncode == 0, command.stderr[-3000:]
    out = command.stdout

    def without_seconds(table):
        return [line.rsplit(None, 1)[0] for line in table.splitlines()]

    table = out[out.index("round clients"):].split("\n")[:len(simulated.rounds) + 1]
    assert without_seconds("\n".join(table)) == without_seconds(simulated.table())
    assert "QFedAvg" in out.splitlines()[0]
    assert "global weights crc32 0x%08x" % simulated.crc32 in out
    assert "global model: %s (weights crc32 0x%08x)" % (export, simulated.crc32) in out
    with microtrain.TrainSession(export) as saved:
        assert saved.weights_crc32() == simulated.crc32
    for noise in ("DEPRECATED", "fraction_evaluate", "Traceback"):  # Flower's: --verbose
        assert noise not in out + command.stderr, command.stderr[-3000:]


def _wait_for(path, text, process, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        try:
            with open(path) as handle:
                if text in handle.read():
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def _superlink_port(log):
    with open(log) as handle:
        for line in handle:
            if "SuperLink on 127.0.0.1:" in line:
                return int(line.rsplit(":", 1)[1])
    return None


def test_the_command_stops_everything_on_ctrl_c_and_when_its_superlink_dies(digits,
                                                                           tmp_path):
    before = marked_processes()
    common = ["--model", digits["model"], "--data", digits["data"], "--clients", "2",
              "--split", "iid", "--seed", "1"]
    # Ctrl-C: the terminal signals the command's process group
    logs = str(tmp_path / "interrupted")
    command = subprocess.Popen([sys.executable, "-m", "microtrain", "fleet", "--deployment",
                                "--rounds", "100", "--logs", logs] + common,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    supervisor_log = os.path.join(logs, "supervisor.log")
    assert _wait_for(supervisor_log, "submitted", command), command.communicate()
    port = _superlink_port(supervisor_log)
    assert port in listening_ports() and len(marked_processes()) > len(before)
    os.killpg(command.pid, signal.SIGINT)
    out, err = command.communicate(timeout=120)
    assert command.returncode != 0 and "global weights" not in out
    assert set(marked_processes()) <= set(before), marked_processes()
    assert port not in listening_ports()
    with open(supervisor_log) as handle:
        assert "stopped by signal" in handle.read()
    # the SuperLink dies mid-run: a clear error, and the rest stopped too
    logs = str(tmp_path / "failed")
    outcome = {}

    def deploy():
        try:
            outcome["result"] = run_deployment(
                digits["model"], digits["data"], rounds=100, clients=2, split="iid",
                seed=1, logs=logs)
        except DeploymentError as error:
            outcome["error"] = str(error)

    thread = threading.Thread(target=deploy)
    thread.start()
    supervisor_log = os.path.join(logs, "supervisor.log")
    assert _wait_for(supervisor_log, "submitted", None)
    port = _superlink_port(supervisor_log)
    superlinks = [pid for pid, name in marked_processes().items()
                  if "flower-superlink" in name and pid not in before]
    assert len(superlinks) == 1
    os.kill(superlinks[0], signal.SIGKILL)
    thread.join(180)
    assert not thread.is_alive()
    assert "the SuperLink exited" in outcome.get("error", ""), outcome
    assert set(marked_processes()) <= set(before), marked_processes()
    assert port not in listening_ports()


def test_no_process_of_a_deployment_outlives_the_tests(marked_before_this_module):
    assert set(marked_processes()) <= set(marked_before_this_module), marked_processes()
