"""A fleet on Flower's deployment engine, on this machine: ``microtrain fleet --deployment``.

    microtrain fleet --deployment --clients 4 --rounds 3 --model M.mtm --data D.npz \\
        --seed 0 [--device-clients 0 --board mps2-an500] [--tls DIR]

    from microtrain.federated.deployment import run_deployment
    result = run_deployment("M.mtm", "D.npz", clients=4, rounds=3, seed=0,
                            device={"board": "mps2-an500", "partitions": [0]})

The same fleet as ``run_fleet`` (the same arguments, table and ``global weights crc32``
line), run the way a real one runs: a SuperLink (``flower-superlink``) and one SuperNode
per client (``flower-supernode --node-config 'partition-id=K num-partitions=N'``) as
processes talking HTTP on 127.0.0.1 (``--insecure``, or TLS with ``--tls DIR``: ca.crt,
server.crt for 127.0.0.1, server.key), and the Flower App (``flower_app``) submitted with
``flwr run``. A client of ``device["partitions"]`` is a gateway SuperNode
(``board="tcp:127.0.0.1:P"`` in its node config) whose board — QEMU running microtrain's
MicroPython firmware, its UART on a TCP socket on 127.0.0.1 (``board_emulator``) — trains
its rounds over the framed protocol of ``serial_protocol``. With the same seed and
partitions the global weights equal the simulation's bit for bit, round after round: the
clients compute the same steps and the server orders nodes and replies by partition id,
whatever ids the SuperLink gives the nodes and whenever their replies come.

A supervisor process (``python -m microtrain.federated.deployment --supervise``) starts
and owns everything (``processes``: a marker in every child's environment, a child
subreaper, a parent-death signal): it stops the boards, SuperNodes, SuperLink and the
processes they started when the run ends, fails, or is interrupted (Ctrl-C, SIGTERM), and
this process sweeps the marker once more after it. Faults for tests and demonstrations
(``faults``): the clients' (``FleetTask``'s: "nan", "die", "raise", and the hostile replies
"huge", "shape", "examples" the server's guard refuses), a gateway board's ("hang": it
stops answering; "reset": it resets mid-round) and "kill": that client's SuperNode (its
whole process group) is killed with SIGKILL when its first train message arrives.

Everything ``run_fleet`` checks is checked here too, before any process starts
(``fleet.check_arguments``, ``fleet.prepare``); the server guards every reply as the
simulation's does (``server``, ``guard``); the result is a ``FleetResult`` (its ``save``,
``apply``, ``crc32``: ``microtrain fleet --deployment --export OUT`` writes the global
model); and Flower's own notices are shown with ``verbose`` only.
"""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from ..errors import install_hint
from . import fleet as _fleet, processes
from .result import finish
from .task import BOARD_FAULTS

CONNECTION = "microtrain"
EXECUTABLES = ("flower-superlink", "flower-supernode", "flwr")
LOG_TAIL = 3000
STARTS = 3  # a server that exits at start (its port taken meanwhile) is started again
QUERY_BATCH = 8  # SuperNodes asked their partition at once (each answer is a process)


class DeploymentError(RuntimeError):
    """The deployment did not complete (a process failed to start, the run failed)."""


def _executable(name):
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(beside):
        return beside
    found = shutil.which(name)
    if found is None:
        raise DeploymentError("%s is not installed (it comes with Flower): %s"
                              % (name, install_hint("federated")))
    return found


def _tls_files(folder):
    files = {role: os.path.abspath(os.path.join(folder, name)) for role, name in
             (("ca", "ca.crt"), ("cert", "server.crt"), ("key", "server.key"))}
    missing = [path for path in files.values() if not os.path.isfile(path)]
    if missing:
        raise ValueError("--tls %s lacks %s (the folder holds ca.crt, the CA; server.crt, "
                         "its certificate for 127.0.0.1; server.key)"
                         % (folder, ", ".join(os.path.basename(p) for p in missing)))
    return files


def run_deployment(model, data, clients=100, rounds=20, strategy="fedavg", split="dirichlet",
                   alpha=0.5, classes_per_client=2, seed=0, epochs=1, batch_size=16,
                   optimizer="sgd", learning_rate=_fleet.DEFAULT_LEARNING_RATE,
                   loss="categorical_crossentropy", trainable="all", proximal_mu=None,
                   fraction=1.0, strategy_options=None, arena_bytes=None, faults=None,
                   device=None, isolate=False, round_timeout=600.0, board_timeout=300.0,
                   frame_timeout=5.0, tls=None, logs=None, startup_timeout=300.0,
                   firmware=None, runtime="deployment", count_traffic=False, verbose=False,
                   stream=None, num_trainable_ops=None):
    """Run a fleet through Flower's deployment engine; returns a ``FleetResult`` (its
    ``deployment`` attribute: {"listening": [(pid, command, address, port)] of every
    socket the deployment listened on, "processes": how many it ran at its peak,
    "startup_seconds": until the run was submitted, "id": its marker; with
    ``count_traffic``, "fleet_traffic_at_start" and "fleet_traffic": {"to_server",
    "to_clients", "connections"}, the bytes between the SuperNodes and the SuperLink on
    the wire when the run was submitted and when it ended, counted by a relay,
    ``traffic.CountingRelay``, the SuperNodes connect through).

    Arguments as ``run_fleet``'s; ``device``: {"board", "partitions", "firmware"} whose
    clients are gateway SuperNodes with an emulated board; ``round_timeout``: how long a
    round waits for its replies; ``board_timeout``/``frame_timeout``: a board's round
    and frame deadlines; ``tls``: a folder with ca.crt, server.crt and server.key (None:
    plain HTTP on loopback); ``logs``: a folder to keep every process's log in (None: a
    temporary one, shown in part when something fails); ``runtime``: "deployment", or
    "simulation": the same app through ``flwr run`` on a SuperLink of Flower's simulation
    runtime (``flower-superlink --simulation``: virtual SuperNodes, no processes of their
    own; device clients then train on their board through ``microtrain.federated.device``,
    an emulator per round)."""
    _fleet.require_flower()
    from . import flower_app  # Flower: after require_flower said how to install it
    if runtime not in ("deployment", "simulation"):
        raise ValueError("runtime %r: choose deployment or simulation" % (runtime,))
    _fleet.check_arguments(clients, rounds, fraction, 0.0, device, arena_bytes)
    faults = dict(faults or {})
    killed = sorted(int(p) for p, fault in faults.items() if fault == "kill")
    client_faults = {int(p): f for p, f in faults.items() if f != "kill"}
    boards = []
    if device and runtime == "deployment":
        from .board_emulator import emulated_boards
        board = device.get("board", "mps2-an500")
        if board not in emulated_boards():
            raise ValueError("board %r: a gateway's emulated board is one of %s"
                             % (board, ", ".join(emulated_boards())))
        boards = [{"partition": int(partition), "board": board,
                   "firmware": device.get("firmware", firmware)}
                  for partition in device.get("partitions", ())]
    gateways = [entry["partition"] for entry in boards]
    for partition, fault in sorted(client_faults.items()):
        if fault in BOARD_FAULTS and partition not in gateways:
            raise ValueError("fault %s: client %d is no gateway board (the device clients "
                             "of a deployment are: %s)" % (fault, partition, gateways))
    for partition in killed:
        if not 0 <= partition < int(clients):
            raise ValueError("fault kill: client %d is not one of the %d" % (partition,
                                                                            clients))
    for name, value in (("round_timeout", round_timeout), ("board_timeout", board_timeout),
                        ("frame_timeout", frame_timeout)):
        if not float(value) > 0:
            raise ValueError("%s must be positive, got %r" % (name, value))
    arguments = dict(model=model, data=data, clients=clients, strategy=strategy, split=split,
                     alpha=alpha, classes_per_client=classes_per_client, seed=seed,
                     epochs=epochs, batch_size=batch_size, optimizer=optimizer,
                     learning_rate=learning_rate, loss=loss, trainable=trainable,
                     num_trainable_ops=num_trainable_ops, proximal_mu=proximal_mu,
                     fraction=fraction, strategy_options=strategy_options,
                     arena_bytes=arena_bytes, faults=client_faults, isolate=isolate)
    with _fleet.flower_quiet(verbose):  # the strategy's notices
        task, strategy_object = _fleet.prepare(**arguments)  # every argument checked here
    from ..micropython_runner.run import ensure_firmware  # built once, here, if missing
    for entry in boards:
        entry["firmware"] = ensure_firmware(entry["board"], entry["firmware"])
    if device and runtime == "simulation":  # its clients run the default firmware
        ensure_firmware(device.get("board", "mps2-an500"))
    certificates = _tls_files(tls) if tls else None
    executables = {name: _executable(name) for name in EXECUTABLES}
    work = tempfile.mkdtemp(prefix="microtrain-deployment-")
    try:
        log_dir = os.path.abspath(logs) if logs else os.path.join(work, "logs")
        os.makedirs(log_dir, exist_ok=True)
        deployment_id = uuid.uuid4().hex
        spec = {"id": deployment_id, "work": work, "logs": log_dir, "clients": int(clients),
                "rounds": int(rounds), "boards": boards, "killed": killed, "runtime": runtime,
                "count_traffic": bool(count_traffic),
                "tls": certificates, "executables": executables,
                "board_timeout": float(board_timeout), "frame_timeout": float(frame_timeout),
                "startup_timeout": float(startup_timeout),
                "run_timeout": float(startup_timeout)
                + int(rounds) * (float(round_timeout) + 60),
                "run_config": flower_app.run_config_of(
                    dict(arguments, device=None if runtime == "deployment" else device),
                    rounds, round_timeout, os.path.join(work, "results"), verbose,
                    QUERY_BATCH if runtime == "deployment" else 0),
                "verbose": bool(verbose)}
        spec_path = os.path.join(work, "spec.json")
        with open(spec_path, "w") as handle:
            json.dump(spec, handle)
        if stream is not None:
            where = "SuperLink and %d SuperNodes" % clients if runtime == "deployment" else \
                "a simulation-runtime SuperLink"
            stream.write("deployment: %s; %s on 127.0.0.1 (%s)%s\n"
                         % (_fleet.describe(task, strategy_object, rounds), where,
                            "TLS" if certificates else "insecure",
                            "; boards: %s" % ", ".join("client %d on %s" % (b["partition"],
                                                                            b["board"])
                                                       for b in boards) if boards else ""))
            stream.flush()
        environment = dict(os.environ, **{processes.MARKER: deployment_id})
        supervisor_log = os.path.join(log_dir, "supervisor.log")
        start = time.perf_counter()
        with open(supervisor_log, "ab") as log:
            supervisor = subprocess.Popen(
                [sys.executable, "-m", "microtrain.federated.deployment", "--supervise",
                 spec_path], env=environment, stdin=subprocess.DEVNULL,
                stdout=None if verbose else log, stderr=None if verbose else log)
        try:
            status = supervisor.wait()
        except BaseException:  # Ctrl-C, or an error here: the supervisor stops it all
            supervisor.send_signal(signal.SIGTERM)
            try:
                supervisor.wait(timeout=60)
            except subprocess.TimeoutExpired:
                supervisor.kill()
                supervisor.wait()
            raise
        finally:
            left = processes.sweep(deployment_id)  # nothing should be left
            if left:
                sys.stderr.write("microtrain fleet: killed what the deployment left: %s\n"
                                 % sorted(left.values()))
        elapsed = time.perf_counter() - start
        results = os.path.join(work, "results")
        if status != 0 or not os.path.exists(os.path.join(results, "summary.json")):
            raise DeploymentError("the deployment failed (supervisor status %s)%s%s"
                                  % (status, _error_text(results),
                                     _log_tail(supervisor_log)))
        summary, weights = flower_app.read_results(results, task)
        with open(os.path.join(work, "deployment.json")) as handle:
            facts = json.load(handle)
        result = finish(task, summary, weights, elapsed, stream)
        result.deployment = dict(facts, id=deployment_id)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _error_text(results):
    path = os.path.join(results, "error.txt")
    if not os.path.exists(path):
        return ""
    with open(path) as handle:
        return ": the ServerApp failed:\n" + handle.read()[-LOG_TAIL:]


def _log_holds(path, text):
    try:
        with open(path, "rb") as handle:
            return text in handle.read()
    except OSError:
        return False


def _log_tail(path):
    try:
        with open(path, "rb") as handle:
            text = handle.read()[-LOG_TAIL:].decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n--- %s (end) ---\n%s" % (os.path.basename(path), text) if text.strip() else ""


# ------------------------------------------------------------------ the supervisor


class _Stopped(Exception):
    """A signal asked the supervisor to stop."""


def _say(text):
    sys.stderr.write("supervisor: %s\n" % text)
    sys.stderr.flush()


class Supervisor:
    """Starts the deployment's processes, runs the app, stops everything (see the module
    doc); ``spec``: the dict ``run_deployment`` writes."""

    def __init__(self, spec):
        self.spec = spec
        self.groups = []          # process-group leaders, in start order
        self.boards = []
        self.nodes = {}           # partition -> Popen
        self.peak = 0
        self.listening = []
        self.relay = None         # traffic.CountingRelay between SuperNodes and SuperLink

    # -- helpers

    def _environment(self):
        bin_dir = os.path.dirname(self.spec["executables"]["flwr"])
        return dict(os.environ, FLWR_HOME=os.path.join(self.spec["work"], "flwr-home"),
                    FLWR_DISABLE_UPDATE_CHECK="1", FLWR_TELEMETRY_ENABLED="0",
                    PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))

    def _start(self, name, command):
        log = open(os.path.join(self.spec["logs"], name + ".log"), "ab")
        try:
            process = subprocess.Popen(command, env=self.env, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        finally:
            log.close()
        self.groups.append(process.pid)
        return process

    def _tls_client_options(self):
        tls = self.spec["tls"]
        return ["--root-certificates", tls["ca"]] if tls else ["--insecure"]

    def _wait_until(self, check, timeout, what, process=None, log=None):
        deadline = time.monotonic() + timeout
        while not check():
            processes.reap()
            if process is not None and process.poll() is not None:
                raise DeploymentError("%s exited with status %s%s" % (
                    what, process.returncode, _log_tail(log) if log else ""))
            if time.monotonic() > deadline:
                raise DeploymentError("%s: not ready after %.0f s%s"
                                      % (what, timeout, _log_tail(log) if log else ""))
            time.sleep(0.2)

    # -- the pieces

    def start_boards(self):
        from . import flower_app
        from .board_emulator import EmulatedBoard
        if not self.spec["boards"]:
            return {}
        task, _ = flower_app.task_for(self.spec["run_config"])
        addresses = {}
        for entry in self.spec["boards"]:
            x, y = task.rows(entry["partition"])
            board = EmulatedBoard(entry["board"], x, y, firmware=entry.get("firmware"),
                                  frame_timeout=self.spec["frame_timeout"],
                                  log_path=os.path.join(self.spec["logs"], "board-%d.log"
                                                        % entry["partition"]),
                                  popen_options={"env": self.env,
                                                 "start_new_session": True})
            self.boards.append(board)
            addresses[entry["partition"]] = board.start(self.spec["startup_timeout"])
            self.groups.append(board.process.pid)
            _say("board of client %d (%s) at %s" % (entry["partition"], entry["board"],
                                                    board.address))
        return addresses

    def start_superlink(self):
        log = os.path.join(self.spec["logs"], "superlink.log")
        for attempt in range(1, STARTS + 1):
            self.port = processes.free_port()
            command = [self.spec["executables"]["flower-superlink"], "--host", "127.0.0.1",
                       "--port", str(self.port), "--isolation", "subprocess",
                       "--disable-runtime-dependency-installation"]
            if self.spec["runtime"] == "simulation":
                command.append("--simulation")
            tls = self.spec["tls"]
            command += ["--ssl-certfile", tls["cert"], "--ssl-keyfile", tls["key"],
                        "--ssl-ca-certfile", tls["ca"]] if tls else ["--insecure"]
            self.superlink = self._start("superlink", command)
            try:
                self._wait_until(self._superlink_healthy, self.spec["startup_timeout"],
                                 "the SuperLink", self.superlink, log)
            except DeploymentError:
                if attempt == STARTS or self.superlink.poll() is None:
                    raise
                _say("the SuperLink exited at start (port 127.0.0.1:%d taken?): again"
                     % self.port)
                continue
            _say("SuperLink on 127.0.0.1:%d" % self.port)
            return

    def _superlink_healthy(self):
        import ssl
        import urllib.request
        tls = self.spec["tls"]
        url = "%s://127.0.0.1:%d/health" % ("https" if tls else "http", self.port)
        handlers = [urllib.request.ProxyHandler({})]  # loopback: never through a proxy
        if tls:
            handlers.append(urllib.request.HTTPSHandler(
                context=ssl.create_default_context(cafile=tls["ca"])))
        try:
            with urllib.request.build_opener(*handlers).open(url, timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    def start_supernodes(self, boards):
        """One SuperNode per client; returns when each has its node id from the SuperLink
        (one that exits first, e.g. its port taken meanwhile, starts again)."""
        clients = self.spec["clients"]
        self.fleet_port = self.port
        if self.spec.get("count_traffic"):
            from .traffic import CountingRelay
            self.relay = CountingRelay(("127.0.0.1", self.port))
            self.relay.start()
            self.fleet_port = self.relay.port
        attempts = dict.fromkeys(range(clients), 0)
        for partition in range(clients):
            self._start_supernode(partition, boards, attempts)
        deadline = time.monotonic() + self.spec["startup_timeout"]
        waiting = set(range(clients))
        while waiting:
            processes.reap()
            for partition in sorted(waiting):
                log = os.path.join(self.spec["logs"], "supernode-%d.log" % partition)
                if _log_holds(log, b"SuperNode ID:"):
                    waiting.discard(partition)
                elif self.nodes[partition].poll() is not None:
                    if attempts[partition] >= STARTS:
                        raise DeploymentError("the SuperNode of client %d exited with status "
                                              "%s%s" % (partition,
                                                        self.nodes[partition].returncode,
                                                        _log_tail(log)))
                    self._start_supernode(partition, boards, attempts)
            if waiting and time.monotonic() > deadline:
                raise DeploymentError("SuperNodes of clients %s did not connect within %.0f s"
                                      % (sorted(waiting), self.spec["startup_timeout"]))
            time.sleep(0.2)
        _say("%d SuperNodes connected" % clients)

    def _start_supernode(self, partition, boards, attempts):
        clients = self.spec["clients"]
        config = "partition-id=%d num-partitions=%d" % (partition, clients)
        if partition in boards:
            config += ' board="%s" board-timeout=%r frame-timeout=%r' % (
                boards[partition], self.spec["board_timeout"], self.spec["frame_timeout"])
        command = [self.spec["executables"]["flower-supernode"], "--superlink",
                   "127.0.0.1:%d" % self.fleet_port, "--host", "127.0.0.1",
                   "--port", str(processes.free_port()), "--node-config", config]
        attempts[partition] += 1
        self.nodes[partition] = self._start("supernode-%d" % partition,
                                            command + self._tls_client_options())

    def write_flower_config(self):
        home = self.env["FLWR_HOME"]
        os.makedirs(home, exist_ok=True)
        tls = self.spec["tls"]
        security = 'root-certificates = "%s"' % tls["ca"] if tls else "insecure = true"
        with open(os.path.join(home, "config.toml"), "w") as handle:
            handle.write('[superlink]\ndefault = "%s"\n\n[superlink.%s]\naddress = '
                         '"127.0.0.1:%d"\n%s\n' % (CONNECTION, CONNECTION, self.port,
                                                   security))

    def submit(self):
        from . import flower_app
        app = flower_app.write_app(os.path.join(self.spec["work"], "app"))
        command = [self.spec["executables"]["flwr"], "run", app, CONNECTION, "--run-config",
                   flower_app.run_config_text(self.spec["run_config"]), "--format", "json"]
        if self.spec["runtime"] == "simulation":  # one CPU per virtual SuperNode
            command += ["--federation-config", "num-supernodes=%d client-resources-num-cpus=1"
                        % self.spec["clients"]]
        done = subprocess.run(command, env=self.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True,
                              timeout=self.spec["startup_timeout"])
        processes.reap()
        try:
            reply = json.loads(done.stdout[done.stdout.index("{"):])
        except ValueError:
            reply = {}
        if done.returncode != 0 or not reply.get("success"):
            raise DeploymentError("flwr run failed (status %d): %s%s"
                                  % (done.returncode, done.stdout[-LOG_TAIL:],
                                     done.stderr[-LOG_TAIL:]))
        self.run_id = reply["run-id"]
        _say("run %s submitted" % self.run_id)

    def wait_for_results(self):
        results = self.spec["run_config"]["results"]
        deadline = time.monotonic() + self.spec["run_timeout"]
        pending_kills = set(self.spec["killed"])
        while True:
            processes.reap()
            if os.path.exists(os.path.join(results, "summary.json")):
                return
            if os.path.exists(os.path.join(results, "error.txt")):
                raise DeploymentError("the ServerApp failed")
            if self.superlink.poll() is not None:
                raise DeploymentError("the SuperLink exited with status %s"
                                      % self.superlink.returncode)
            for partition in sorted(pending_kills):
                if self._received_train(partition):
                    processes.signal_group(self.nodes[partition].pid, signal.SIGKILL)
                    pending_kills.discard(partition)
                    _say("killed the SuperNode of client %d mid-round" % partition)
            self._observe()
            if time.monotonic() > deadline:
                raise DeploymentError("the run did not end within %.0f s"
                                      % self.spec["run_timeout"])
            time.sleep(0.5)

    def _received_train(self, partition):
        return _log_holds(os.path.join(self.spec["logs"], "supernode-%d.log" % partition),
                          b"Receiving: train message")

    def _observe(self):
        """The deployment's processes and listening sockets, as they come and go."""
        pids = processes.marked(self.spec["id"])
        self.peak = max(self.peak, len(pids))
        for entry in processes.listening_sockets(pids):
            if entry[2:] not in [seen[2:] for seen in self.listening]:
                self.listening.append(entry)

    # -- the whole run

    def run(self):
        self.env = self._environment()
        began = time.monotonic()
        facts = {}
        try:
            boards = self.start_boards()
            self.start_superlink()
            if self.spec["runtime"] == "deployment":
                self.start_supernodes(boards)
            self.write_flower_config()
            self.submit()
            facts["startup_seconds"] = time.monotonic() - began
            if self.relay is not None:
                facts["fleet_traffic_at_start"] = self.relay.totals()
            self._observe()
            self.wait_for_results()
            if self.relay is not None:
                facts["fleet_traffic"] = self.relay.totals()
            _say("the run ended")
            return 0
        finally:
            self._observe()
            facts.update(listening=self.listening, processes=self.peak)
            with open(os.path.join(self.spec["work"], "deployment.json"), "w") as handle:
                json.dump(facts, handle)
            killed = processes.stop(list(reversed(self.groups)), self.spec["id"],
                                    keep=[os.getpid()])
            for board in self.boards:
                board.stop()
            if self.relay is not None:
                self.relay.stop()
            if killed:
                _say("killed after the grace period: %s" % sorted(killed.values()))
            _say("stopped")


def _supervise(spec_path):
    with open(spec_path) as handle:
        spec = json.load(handle)
    if not spec["verbose"]:
        logging.getLogger("flwr").setLevel(logging.ERROR)
    parent = os.getppid()
    processes.become_subreaper()
    processes.die_with_parent(signal.SIGTERM)

    def stop(signal_number, frame):
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)  # let the cleanup finish
        raise _Stopped("signal %d" % signal_number)

    for signal_number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signal_number, stop)
    try:
        if os.getppid() != parent:  # it died before the signal was armed
            return 1
        return Supervisor(spec).run()
    except _Stopped as error:
        _say("stopped by %s" % error)
        return 130
    except (DeploymentError, OSError, ValueError, RuntimeError) as error:
        _say("error: %s" % error)
        return 1
    finally:
        if os.getppid() != parent:  # nobody is left to read or remove the folder
            shutil.rmtree(spec["work"], ignore_errors=True)


# ------------------------------------------------------------------ command line


def _interrupt(signal_number, frame):
    raise KeyboardInterrupt


def _engine(args, arguments):
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops it as Ctrl-C does
    rounds = arguments.pop("rounds")
    return run_deployment(rounds=rounds, round_timeout=args.round_timeout,
                          board_timeout=args.board_timeout, frame_timeout=args.frame_timeout,
                          tls=args.tls, logs=args.logs, verbose=args.verbose,
                          stream=sys.stdout, **arguments)


def main(argv=None):
    """``microtrain fleet --deployment ...``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return _fleet.main(argv, engine=_engine)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--supervise":
        sys.exit(_supervise(sys.argv[2]))
    sys.exit(main())
