"""A simulated fleet of microtrain devices on Flower's simulation engine (Ray).

    microtrain fleet --clients 100 --rounds 20 --model M.mtm --data D.npz \\
        --strategy fedavg --split dirichlet --alpha 0.5 --seed 0 [--plot accuracy.png]

    from microtrain.federated.fleet import run_fleet
    result = run_fleet("M.mtm", "D.npz", clients=100, rounds=20, strategy="fedavg",
                       split="dirichlet", alpha=0.5, seed=0)
    print(result.table()); result.weights   # the final global trained tensors

Each virtual device is a microtrain ``ClientApp`` (``microtrain.federated.client``) with its
own session, laid out in an arena of exactly the size the device would declare (``--arena``
makes it a device limit: a client whose plan does not fit refuses), training on its own
non-IID part of the data (``--split dirichlet --alpha`` or ``--split label
--classes-per-client``, seeded). The server runs Flower's strategy; after every round the
global model is evaluated on the held-out rows (``x_eval``/``y_eval`` of the .npz, else the
training rows) and a table prints accuracy, loss, clients heard, clients dropped and the
bytes sent and received. ``--device-clients 0,3 --board mps2-an500`` trains those clients on
MicroPython firmware under QEMU instead. The same seed gives the same global weights, bit
for bit (``FleetResult.crc32``).

Ray gets ``--cpus`` CPUs (default 2) and each client ``--client-cpus`` of them, so as many
clients train at once as that allows; the simulation shuts Ray down when it ends.
"""

import argparse
import logging
import os
import sys
import time

import numpy as np

from .. import config as _config, losses as _losses, optimizers as _optimizers
from . import partition as _partition
from .task import FleetTask

# Flower's simulation engine reads these before it starts Ray.
_QUIET_ENV = {"RAY_DEDUP_LOGS": "0", "RAY_LOG_TO_STDERR": "0", "RAY_DISABLE_IMPORT_WARNING": "1",
              "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}

DEFAULT_LEARNING_RATE = 0.05


class FleetResult:
    """What ``run_fleet`` returns.

    Attributes:
        rounds:  [{"round", "clients", "dropped", "accuracy", "loss", "train_loss",
                   "bytes_down", "bytes_up", "seconds", "crc32"}] for rounds 0 (the initial
                   model: evaluation only) to R; crc32: of that round's global weights
        weights: the final global trained tensors (numpy float32, session order)
        keys:    their ArrayRecord keys ("t<tensor index>")
        dropped: [(round, partition, reason)] of every dropped reply
        arena_bytes: the arena of one client (the plan's total_bytes)
        seconds: wall time of the whole simulation
    """

    def __init__(self, rounds, weights, keys, dropped, arena_bytes, seconds, settings):
        self.rounds = rounds
        self.weights = weights
        self.keys = keys
        self.dropped = dropped
        self.arena_bytes = arena_bytes
        self.seconds = seconds
        self.settings = settings

    @property
    def crc32(self):
        """zlib.crc32 of the final global trained tensors (float32 little-endian)."""
        from .server import weights_crc32
        return weights_crc32(self.weights)

    @property
    def accuracy(self):
        return self.rounds[-1]["accuracy"]

    def table(self):
        """The per-round table the command prints."""
        head = ("round", "clients", "dropped", "accuracy", "loss", "train loss",
                "bytes down", "bytes up", "seconds")
        lines = ["%5s %7s %7s %8s %7s %10s %11s %11s %8s" % head]
        for row in self.rounds:
            train = "-" if row["train_loss"] is None else "%.4f" % row["train_loss"]
            lines.append("%5d %7d %7d %8.4f %7.4f %10s %11d %11d %8.2f" % (
                row["round"], row["clients"], row["dropped"], row["accuracy"], row["loss"],
                train, row["bytes_down"], row["bytes_up"], row["seconds"]))
        return "\n".join(lines)

    def plot(self, path, title=None):
        """Accuracy (and loss) per round as a PNG (needs matplotlib)."""
        try:
            import matplotlib
        except ImportError:
            raise RuntimeError("plotting needs matplotlib: pip install microtrain[plot]")
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        rounds = [row["round"] for row in self.rounds]
        figure, left = plt.subplots(figsize=(6, 3.4), dpi=100)
        left.plot(rounds, [row["accuracy"] for row in self.rounds], "o-", color="tab:blue",
                  label="accuracy")
        left.set_xlabel("round")
        left.set_ylabel("accuracy (held-out rows)", color="tab:blue")
        left.set_ylim(0, 1)
        right = left.twinx()
        right.plot(rounds, [row["loss"] for row in self.rounds], "s--", color="tab:red",
                   label="loss", markersize=3)
        right.set_ylabel("loss", color="tab:red")
        left.set_title(title or "microtrain fleet")
        left.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(path)
        plt.close(figure)


def _model_bytes(model):
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if hasattr(model, "to_bytes"):
        return model.to_bytes()
    with open(model, "rb") as handle:
        return handle.read()


def make_settings(optimizer=_config.DEFAULT_OPTIMIZER, learning_rate=None,
                  loss="categorical_crossentropy", batch_size=_config.DEFAULT_BATCH_SIZE,
                  trainable=-1, epochs=1, proximal_mu=0.0, seed=0):
    """The local-round settings (``local_round.SETTING_NAMES``), names checked."""
    optimizer = _optimizers.get(optimizer).name
    loss = _losses.get(loss).name
    rate = _optimizers.get(optimizer).get_config()["learning_rate"] if learning_rate is None \
        else float(learning_rate)
    return {"optimizer": optimizer, "learning_rate": rate, "loss": loss,
            "batch_size": int(batch_size), "trainable": int(trainable), "epochs": int(epochs),
            "proximal_mu": float(proximal_mu), "seed": int(seed)}


def run_fleet(model, data, clients=100, rounds=20, strategy="fedavg", split="dirichlet",
              alpha=0.5, classes_per_client=2, seed=0, epochs=1, batch_size=16,
              optimizer="sgd", learning_rate=DEFAULT_LEARNING_RATE,
              loss="categorical_crossentropy", trainable=-1, proximal_mu=None, fraction=1.0,
              fraction_evaluate=0.0, strategy_options=None, arena_bytes=None, faults=None,
              device=None, isolate=False, cpus=2, client_cpus=1.0, verbose=False,
              stream=None):
    """Run a simulated fleet; returns a ``FleetResult`` (see the module doc). ``strategy``:
    a name of ``server.STRATEGIES`` or a Flower strategy class; ``proximal_mu`` (FedProx,
    default 0.01 there) goes to the strategy, which sends it to the clients;
    ``strategy_options``: more keyword arguments of the strategy (FedAdam's eta, ...);
    ``faults``/``device``/``isolate``: see ``FleetTask``; ``stream``: where rounds are printed as they
    end (None: nowhere)."""
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    flower_log = logging.getLogger("flwr")
    level = flower_log.level
    if not verbose:  # Flower's INFO lines and its deprecation notice of run_simulation
        flower_log.setLevel(logging.ERROR)
    try:
        return _run(model, data, clients, rounds, strategy, split, alpha, classes_per_client,
                    seed, epochs, batch_size, optimizer, learning_rate, loss, trainable,
                    proximal_mu, fraction, fraction_evaluate, strategy_options, arena_bytes,
                    faults, device, isolate, cpus, client_cpus, verbose, stream)
    finally:
        flower_log.setLevel(level)


def prepare(model, data, clients, strategy="fedavg", split="dirichlet", alpha=0.5,
            classes_per_client=2, seed=0, epochs=1, batch_size=16, optimizer="sgd",
            learning_rate=DEFAULT_LEARNING_RATE, loss="categorical_crossentropy", trainable=-1,
            proximal_mu=None, fraction=1.0, fraction_evaluate=0.0, strategy_options=None,
            arena_bytes=None, faults=None, device=None, isolate=False):
    """(task, strategy) of a fleet: its ``FleetTask`` and guarded Flower strategy, every
    argument checked (the split computed) before an engine starts. Both engines use it:
    ``run_fleet`` (simulation) and ``microtrain.federated.deployment`` (its ServerApp and
    ClientApps build theirs from the run config with it)."""
    from . import server as _server
    image = _model_bytes(model)
    strategy_name = strategy.lower() if isinstance(strategy, str) else strategy
    options = dict(strategy_options or {})
    if strategy_name == "fedprox":
        options.setdefault("proximal_mu", 0.01 if proximal_mu is None else float(proximal_mu))
    elif proximal_mu:
        raise ValueError("proximal_mu is FedProx's: use strategy='fedprox'")
    settings = make_settings(optimizer, learning_rate, loss, batch_size, trainable, epochs,
                             0.0, seed)
    task = FleetTask(image, data, clients, settings, split, alpha, classes_per_client, seed,
                     arena_bytes, faults, device, isolate)
    task.parts()  # checks the split here, before an engine starts
    min_nodes = max(1, min(2, int(clients)))
    fleet_strategy = _server.make_strategy(strategy_name, fraction_train=float(fraction),
                                           fraction_evaluate=float(fraction_evaluate),
                                           min_nodes=min_nodes, **options)
    return task, fleet_strategy


def describe(task, strategy, rounds):
    """The fleet's line before its table: clients, split, strategy, rounds, seed."""
    sizes, held = _partition.describe(task.parts(), task.arrays()["y"])
    return ("%d clients (%s split, %d to %d rows, %.1f classes each on average), %s, %d "
            "rounds, seed %d" % (task.clients, task.split, min(sizes), max(sizes),
                                 float(np.mean(held)),
                                 strategy.__class__.__name__[len("Guarded"):], rounds,
                                 task.split_seed))


def _run(model, data, clients, rounds, strategy, split, alpha, classes_per_client, seed,
         epochs, batch_size, optimizer, learning_rate, loss, trainable, proximal_mu, fraction,
         fraction_evaluate, strategy_options, arena_bytes, faults, device, isolate, cpus,
         client_cpus, verbose, stream):
    from flwr.simulation import run_simulation
    from . import client as _client, server as _server
    task, fleet_strategy = prepare(model, data, clients, strategy, split, alpha,
                                   classes_per_client, seed, epochs, batch_size, optimizer,
                                   learning_rate, loss, trainable, proximal_mu, fraction,
                                   fraction_evaluate, strategy_options, arena_bytes, faults,
                                   device, isolate)
    recorder = {}
    app = _server.server_app(task, fleet_strategy, int(rounds), seed=seed, recorder=recorder,
                             quiet=not verbose)
    backend_config = {"client_resources": {"num_cpus": float(client_cpus), "num_gpus": 0.0},
                      "init_args": {"num_cpus": int(cpus), "num_gpus": 0,
                                    "include_dashboard": False, "log_to_driver": verbose,
                                    "logging_level": logging.INFO if verbose else
                                    logging.ERROR}}
    if stream is not None:
        stream.write("fleet: %s\n" % describe(task, fleet_strategy, rounds))
        stream.flush()
    start = time.perf_counter()
    run_simulation(server_app=app, client_app=_client.client_app(task),
                   num_supernodes=int(clients), backend_config=backend_config,
                   verbose_logging=bool(verbose))
    elapsed = time.perf_counter() - start
    if "result" not in recorder:
        raise RuntimeError("the simulation ended before the server finished (see Flower's "
                           "log above; run with verbose=True for more)")
    result = recorder["result"]
    layout = _client.trained_layout(task)
    weights = _client.from_record(result.arrays, layout) if len(result.arrays) else \
        _client.from_record(_server.initial_arrays(task), layout)
    return finish(task, _server.summarize(recorder), weights, elapsed, stream)


def _by_round(values):
    return {int(server_round): value for server_round, value in values.items()}


def finish(task, summary, weights, elapsed, stream):
    """The ``FleetResult`` of a server's ``summary`` (``server.summarize``, or its JSON)
    and final weights; prints its table and last line to ``stream``."""
    from . import client as _client
    from ..train_session import TrainSession
    from . import local_round
    evaluations, times = _by_round(summary["evaluations"]), _by_round(summary["times"])
    crcs, losses = _by_round(summary["crcs"]), _by_round(summary["train_losses"])
    replies, dropped = _by_round(summary["replies"]), _by_round(summary["dropped"])
    down, up = _by_round(summary["bytes_down"]), _by_round(summary["bytes_up"])
    rows = []
    previous = 0.0
    for server_round in sorted(evaluations):
        seconds = times.get(server_round, 0.0)
        rows.append({"round": server_round,
                     "clients": replies.get(server_round, 0) - dropped.get(server_round, 0),
                     "dropped": dropped.get(server_round, 0),
                     "accuracy": evaluations[server_round]["accuracy"],
                     "loss": evaluations[server_round]["loss"],
                     "train_loss": losses.get(server_round),
                     "bytes_down": down.get(server_round, 0),
                     "bytes_up": up.get(server_round, 0), "seconds": seconds - previous,
                     "crc32": crcs.get(server_round)})
        previous = seconds
    layout = _client.trained_layout(task)
    with TrainSession(task.model) as session:
        local_round.compile_session(session, task.settings)
        arena = session.memory_plan()["total_bytes"]
    reasons = [(int(r), p, why) for r, p, why in summary["reasons"]]
    fleet = FleetResult(rows, weights, [key for key, _ in layout], reasons, arena, elapsed,
                        task.settings)
    if stream is not None:
        stream.write(fleet.table() + "\n")
        for server_round, partition, reason in fleet.dropped:
            stream.write("dropped in round %d: client %s: %s\n" % (server_round, partition,
                                                                   reason))
        stream.write("arena per client: %d bytes; global weights crc32 0x%08x; %.1f s\n"
                     % (arena, fleet.crc32, elapsed))
        stream.flush()
    return fleet


# ------------------------------------------------------------------ command line


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))
        raise SystemExit(2)


def _parser():
    from .server import STRATEGIES
    parser = _Parser(prog="microtrain fleet",
                     description="Simulate a fleet of microtrain devices learning together "
                                 "with Flower (its simulation engine and strategies), or "
                                 "deploy it on this machine (--deployment).")
    parser.add_argument("--model", required=True, help="the .mtm model image every client "
                                                       "starts from")
    parser.add_argument("--data", required=True,
                        help=".npz with x, y (and x_eval, y_eval for the server's evaluation)")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--strategy", default="fedavg", choices=sorted(STRATEGIES))
    parser.add_argument("--split", default="dirichlet", choices=_partition.METHODS)
    parser.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration")
    parser.add_argument("--classes-per-client", type=int, default=2,
                        help="classes each client holds with --split label")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="fraction of clients sampled per round")
    parser.add_argument("--epochs", type=int, default=1, help="local epochs per round")
    parser.add_argument("--batch-size", type=int, default=_config.DEFAULT_BATCH_SIZE)
    parser.add_argument("--optimizer", default=_config.DEFAULT_OPTIMIZER,
                        choices=sorted(_optimizers.ALIASES))
    parser.add_argument("--learning-rate", type=float, default=DEFAULT_LEARNING_RATE)
    parser.add_argument("--loss", default="categorical_crossentropy",
                        choices=sorted(_losses.ALIASES))
    parser.add_argument("--trainable", type=int, default=-1,
                        help="train the last N ops on the clients (-1: all)")
    parser.add_argument("--proximal-mu", type=float, default=None,
                        help="FedProx's mu (with --strategy fedprox; default 0.01)")
    parser.add_argument("--server-lr", type=float, default=None,
                        help="the server's learning rate (FedAdam/FedAdagrad/FedYogi eta, "
                             "FedAvgM server_learning_rate)")
    parser.add_argument("--arena", type=int, default=None,
                        help="the device's arena in bytes (clients whose plan needs more "
                             "refuse)")
    parser.add_argument("--device-clients", default="",
                        help="comma-separated clients that train on an emulated board")
    parser.add_argument("--board", default="mps2-an500",
                        help="their board (microtrain micropython's: mps2-an500, "
                             "mps2-an385, unix)")
    parser.add_argument("--isolate", action="store_true",
                        help="run each client's round in a process of its own (a client "
                             "whose process dies is dropped, the others go on)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs Ray may use")
    parser.add_argument("--client-cpus", type=float, default=1.0,
                        help="CPUs per simulated client (fractions run more at once)")
    parser.add_argument("--plot", help="write accuracy and loss per round to this PNG "
                                       "(needs matplotlib)")
    parser.add_argument("--verbose", action="store_true", help="Flower's and Ray's logs too")
    deployment = parser.add_argument_group(
        "deployment", "Flower's deployment engine instead of its simulation: a SuperLink and "
        "one SuperNode per client as processes on 127.0.0.1, the app run with `flwr run` "
        "(microtrain.federated.deployment); --device-clients then become gateway "
        "SuperNodes, each talking to its emulated board over the board's UART")
    deployment.add_argument("--deployment", action="store_true",
                            help="run the fleet through Flower's deployment engine")
    deployment.add_argument("--round-timeout", type=float, default=600.0,
                            help="seconds a round waits for replies (a silent SuperNode is "
                                 "dropped)")
    deployment.add_argument("--board-timeout", type=float, default=300.0,
                            help="seconds a board has for its whole round")
    deployment.add_argument("--frame-timeout", type=float, default=5.0,
                            help="seconds a frame on a board's link has to arrive whole")
    deployment.add_argument("--tls", metavar="DIR",
                            help="TLS: DIR holds ca.crt, server.crt (for 127.0.0.1) and "
                                 "server.key (default: --insecure, plain HTTP on loopback)")
    deployment.add_argument("--logs", metavar="DIR",
                            help="keep the SuperLink's, SuperNodes' and boards' logs in DIR")
    return parser


def strategy_options(strategy, server_lr=None):
    """The strategy's keyword arguments of ``--server-lr``."""
    options = {}
    if server_lr is not None:
        if strategy in ("fedadam", "fedadagrad", "fedyogi"):
            options["eta"] = server_lr
        elif strategy == "fedavgm":
            options["server_learning_rate"] = server_lr
        else:
            raise ValueError("--server-lr is for fedadam, fedadagrad, fedyogi and fedavgm")
    return options


def fleet_arguments(args):
    """The keyword arguments of ``run_fleet`` (and ``prepare``) that the command's options
    give, common to both engines."""
    device = None
    if args.device_clients:
        device = {"board": args.board,
                  "partitions": [int(p) for p in args.device_clients.split(",") if p]}
    return dict(model=args.model, data=args.data, clients=args.clients, rounds=args.rounds,
                strategy=args.strategy, split=args.split, alpha=args.alpha,
                classes_per_client=args.classes_per_client, seed=args.seed,
                epochs=args.epochs, batch_size=args.batch_size, optimizer=args.optimizer,
                learning_rate=args.learning_rate, loss=args.loss, trainable=args.trainable,
                proximal_mu=args.proximal_mu, fraction=args.fraction,
                strategy_options=strategy_options(args.strategy, args.server_lr),
                arena_bytes=args.arena, device=device, isolate=args.isolate)


def _simulation(args, arguments):
    return run_fleet(cpus=args.cpus, client_cpus=args.client_cpus, verbose=args.verbose,
                     stream=sys.stdout, **arguments)


def main(argv=None, engine=None):
    """``microtrain fleet ...``; returns the exit status. ``engine(args, arguments)``
    runs the fleet (``arguments``: ``fleet_arguments(args)``) and returns its
    ``FleetResult``: Flower's simulation engine by default; ``microtrain fleet
    --deployment`` passes its deployment engine (``microtrain.federated.deployment``)."""
    args = _parser().parse_args(argv)
    if args.deployment and engine is None:
        sys.stderr.write("microtrain fleet: error: --deployment runs as `microtrain fleet "
                         "--deployment` (microtrain.federated.deployment.main)\n")
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("microtrain.federated").addHandler(handler)
    try:
        result = (engine or _simulation)(args, fleet_arguments(args))
        if args.plot:
            result.plot(args.plot, "%d clients, %s, %s split" % (args.clients, args.strategy,
                                                                  args.split))
            print("plot: %s" % args.plot)
    except (ValueError, OSError, RuntimeError) as error:
        sys.stderr.write("microtrain fleet: error: %s\n" % error)
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("microtrain fleet: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
