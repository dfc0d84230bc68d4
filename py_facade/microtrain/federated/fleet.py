"""A fleet of microtrain devices learning together on Flower: its simulation engine (Ray)
here, its deployment engine with ``--deployment`` (``microtrain.federated.deployment``).

    microtrain fleet --clients 100 --rounds 20 --model M.mtm --data D.npz \\
        --strategy fedavg --split dirichlet --alpha 0.5 --seed 0 [--export global.mtm] \\
        [--plot accuracy.png] [--deployment]

    from microtrain.federated.fleet import run_fleet
    result = run_fleet("M.mtm", "D.npz", clients=100, rounds=20, strategy="fedavg",
                       split="dirichlet", alpha=0.5, seed=0)
    print(result.table()); result.save("global.mtm")   # or result.apply(session)

Each virtual device is a microtrain ``ClientApp`` (``microtrain.federated.client``) with its
own session, laid out in an arena of exactly the size the device would declare (``--arena``
makes it a device limit: a client whose plan does not fit refuses), training on its own
non-IID part of the data (``--split dirichlet --alpha`` or ``--split label
--classes-per-client``, seeded). The server runs Flower's strategy; after every round the
global model is evaluated on the held-out rows (``x_eval``/``y_eval`` of the .npz, else the
training rows) and a table prints accuracy, loss, clients heard, clients dropped and the
bytes sent and received. ``--device-clients 0,3 --board mps2-an500`` trains those clients on
MicroPython firmware under QEMU instead. The same seed gives the same global weights, bit
for bit (``FleetResult.crc32``), on either engine.

Both engines share this module's checks and setup: ``check_arguments`` (before anything
starts), ``prepare`` (the task, checked, and the guarded strategy: the deployment's
ServerApp and ClientApps build theirs with it too), ``describe`` (the line before the
table) and ``result.finish`` (the table and the last line); ``main(engine=)`` is the command
line of both. Ray gets ``--cpus`` CPUs (default 2) and each client ``--client-cpus`` of them,
so as many clients train at once as that allows; the simulation shuts Ray down when it ends.
"""

import argparse
import contextlib
import logging
import os
import sys
import time

import numpy as np

from .. import _arguments, _files, config as _config, losses as _losses
from .. import optimizers as _optimizers
from ..errors import install_hint
from ..micropython_runner.romfs import RunnerError
from . import partition as _partition
from .result import FleetResult, finish  # noqa: F401 - FleetResult: what run_fleet returns
from .strategy_names import STRATEGIES
from .task import BOARD_FAULTS, FleetTask

# Flower's simulation engine reads these before it starts Ray.
_QUIET_ENV = {"RAY_DEDUP_LOGS": "0", "RAY_LOG_TO_STDERR": "0", "RAY_DISABLE_IMPORT_WARNING": "1",
              "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}

DEFAULT_LEARNING_RATE = 0.05
# Ray's shared object store. Its default (30% of RAM, 7 GB here) is mapped at start-up,
# which fails under an address-space limit (docs/hostile_input.md runs fleets under 4 GiB)
# and is far more than a fleet's messages need: a round moves each client's trained
# tensors twice (1.4 MB for the digits MLP's 100 clients).
RAY_OBJECT_STORE_BYTES = 256 << 20


class FlowerMissing(ImportError):
    """Flower (the ``federated`` extra) is not installed."""


def require_flower():
    """Import Flower's logger (it sets itself to DEBUG on import, so it must be imported
    before its level is lowered; the simulation engine itself is imported after the
    checks), or raise FlowerMissing saying how to install Flower."""
    try:
        import flwr.common.logger  # noqa: F401
    except ImportError as error:
        raise FlowerMissing("microtrain fleet needs Flower (%s): %s"
                            % (error, install_hint("federated")))


def _model_bytes(model):
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if hasattr(model, "to_bytes"):
        return model.to_bytes()
    return _files.read_file(model, "a model image")  # a regular file only


def make_settings(optimizer=_config.DEFAULT_OPTIMIZER, learning_rate=None,
                  loss="categorical_crossentropy", batch_size=_config.DEFAULT_BATCH_SIZE,
                  trainable="all", epochs=1, proximal_mu=0.0, seed=0, num_trainable_ops=None):
    """The local-round settings (``local_round.SETTING_NAMES``), names checked. What trains
    is compile()'s ``trainable`` (all, bias, the last N layers with weights, layers by
    position or name) or onert's ``num_trainable_ops`` (the last N ops), one of them."""
    optimizer = _optimizers.get(optimizer).name
    loss = _losses.get(loss).name
    rate = _optimizers.get(optimizer).get_config()["learning_rate"] if learning_rate is None \
        else float(learning_rate)
    if num_trainable_ops is not None and trainable not in (None, "all"):
        raise ValueError("give trainable or num_trainable_ops, not both")
    settings = {"optimizer": optimizer, "learning_rate": rate, "loss": loss,
                "batch_size": int(batch_size),
                "trainable": "all" if trainable is None else trainable, "epochs": int(epochs),
                "proximal_mu": float(proximal_mu), "seed": int(seed)}
    if num_trainable_ops is not None:
        settings["num_trainable_ops"] = int(num_trainable_ops)
    return settings


def run_fleet(model, data, clients=100, rounds=20, strategy="fedavg", split="dirichlet",
              alpha=0.5, classes_per_client=2, seed=0, epochs=1, batch_size=16,
              optimizer="sgd", learning_rate=DEFAULT_LEARNING_RATE,
              loss="categorical_crossentropy", trainable="all", proximal_mu=None, fraction=1.0,
              fraction_evaluate=0.0, strategy_options=None, arena_bytes=None, faults=None,
              device=None, isolate=False, cpus=2, client_cpus=1.0, verbose=False,
              stream=None, num_trainable_ops=None):
    """Run a simulated fleet; returns a ``FleetResult`` (see the module doc). What the
    clients train, and send: ``trainable`` as compile() takes it (all, bias, the last N
    layers with weights, layers by position or name) or onert's ``num_trainable_ops`` (the
    last N ops). ``strategy``: a name of ``STRATEGIES`` (strategy_names.py) or a Flower
    strategy class; ``proximal_mu`` (FedProx, default 0.01 there) goes to the strategy,
    which sends it to the clients; ``strategy_options``: more keyword arguments of the
    strategy (FedAdam's eta, ...); ``faults``/``device``/``isolate``: see ``FleetTask``
    (a board's faults, "hang" and "reset", are a deployment's: ``run_deployment``);
    ``stream``: where rounds are printed as they end (None: nowhere). Flower's own notices
    (its INFO lines, the deprecation of run_simulation, "fraction_evaluate is set to 0.0":
    this fleet evaluates on the server on purpose) are shown with ``verbose`` only; the
    fleet's own warnings (dropped clients, logger ``microtrain.federated``) always are."""
    require_flower()
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    with flower_quiet(verbose):
        return _run(model, data, clients, rounds, strategy, split, alpha, classes_per_client,
                    seed, epochs, batch_size, optimizer, learning_rate, loss, trainable,
                    proximal_mu, fraction, fraction_evaluate, strategy_options, arena_bytes,
                    faults, device, isolate, cpus, client_cpus, verbose, stream,
                    num_trainable_ops)


@contextlib.contextmanager
def flower_quiet(verbose=False):
    """``with flower_quiet(verbose):`` Flower's logger shows errors only inside (unless
    ``verbose``), its level restored after. Flower sets it to DEBUG on import: import
    Flower first (``require_flower``)."""
    logger = logging.getLogger("flwr")
    level = logger.level
    if not verbose:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def strategy_defaults(name, options=None, proximal_mu=None, learning_rate=None):
    """The keyword arguments a strategy gets beside ``options``: FedProx's mu (0.01 unless
    given), and what QFedAvg needs of the fleet (the clients' learning rate, and the name of
    the loss metric a microtrain client sends)."""
    options = dict(options or {})
    if name == "fedprox":
        options.setdefault("proximal_mu", 0.01 if proximal_mu is None else float(proximal_mu))
    elif proximal_mu:
        raise ValueError("proximal_mu is FedProx's: use strategy='fedprox'")
    if name == "qfedavg":
        options.setdefault("client_learning_rate", float(learning_rate))
        options.setdefault("train_loss_key", "train-loss")
    return options


def check_arguments(clients, rounds, fraction=1.0, fraction_evaluate=0.0, device=None,
                    arena_bytes=None, cpus=2, client_cpus=1.0):
    """Refuse (ValueError) what would make a simulation hang or lie before Ray starts: a
    fraction outside (0, 1] (Flower would wait for more clients than there are), fewer
    CPUs than a client needs (Ray would never schedule it), device clients that are not
    clients, an unknown board, a non-positive arena or round count."""
    from . import device as _device

    def whole(value, name, low):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError("%s must be an integer >= %d, got %r" % (name, low, value))

    whole(clients, "clients", 1)
    whole(rounds, "rounds", 1)
    whole(cpus, "cpus", 1)
    if arena_bytes is not None:
        whole(arena_bytes, "arena_bytes", 1)
    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError("fraction must be in (0, 1] (the share of clients sampled per "
                         "round), got %r" % (fraction,))
    if not 0.0 <= float(fraction_evaluate) <= 1.0:
        raise ValueError("fraction_evaluate must be in [0, 1], got %r" % (fraction_evaluate,))
    if not 0.0 < float(client_cpus) <= cpus:
        raise ValueError("client_cpus must be in (0, cpus = %d]: a client needing %r CPUs "
                         "would never be scheduled" % (cpus, client_cpus))
    if device:
        board = device.get("board", "mps2-an500")
        if board not in _device.boards():
            raise ValueError("unknown board %r for the device clients; the boards are %s"
                             % (board, ", ".join(_device.boards())))
        for partition in device.get("partitions", ()):
            if isinstance(partition, bool) or not isinstance(partition, (int, np.integer)) \
                    or not 0 <= partition < clients:
                raise ValueError("device client %r is not a client: there are %d, numbered "
                                 "0 to %d" % (partition, clients, clients - 1))


def prepare(model, data, clients, strategy="fedavg", split="dirichlet", alpha=0.5,
            classes_per_client=2, seed=0, epochs=1, batch_size=16, optimizer="sgd",
            learning_rate=DEFAULT_LEARNING_RATE, loss="categorical_crossentropy",
            trainable="all", proximal_mu=None, fraction=1.0, fraction_evaluate=0.0,
            strategy_options=None, arena_bytes=None, faults=None, device=None, isolate=False,
            num_trainable_ops=None):
    """(task, strategy) of a fleet: its ``FleetTask``, checked (the model, settings, data
    shapes and split: ``FleetTask.check``), and its guarded Flower strategy with its
    defaults (``strategy_defaults``), before an engine starts. Both engines use it:
    ``run_fleet`` (simulation) and ``microtrain.federated.deployment`` (its ServerApp and
    ClientApps build theirs from the run config with it). ``check_arguments`` is the
    caller's, as is building a device's firmware (once, not in every client)."""
    image = _model_bytes(model)
    strategy_name = strategy.lower() if isinstance(strategy, str) else strategy
    settings = make_settings(optimizer, learning_rate, loss, batch_size, trainable, epochs,
                             0.0, seed, num_trainable_ops)
    options = strategy_defaults(strategy_name, strategy_options, proximal_mu,
                                settings["learning_rate"])
    task = FleetTask(image, data, clients, settings, split, alpha, classes_per_client, seed,
                     arena_bytes, faults, device, isolate)
    task.check()  # the model, settings and data shapes, before an engine starts
    task.parts()  # and the split
    from . import server as _server  # Flower's strategies: after the checks
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
         client_cpus, verbose, stream, num_trainable_ops):
    check_arguments(clients, rounds, fraction, fraction_evaluate, device, arena_bytes, cpus,
                    client_cpus)
    boards = sorted(p for p, kind in (faults or {}).items() if kind in BOARD_FAULTS)
    if boards:
        raise ValueError("the faults %s of clients %s are a gateway board's: they need "
                         "run_deployment and those clients as device clients"
                         % ("/".join(BOARD_FAULTS), boards))
    task, fleet_strategy = prepare(model, data, clients, strategy, split, alpha,
                                   classes_per_client, seed, epochs, batch_size, optimizer,
                                   learning_rate, loss, trainable, proximal_mu, fraction,
                                   fraction_evaluate, strategy_options, arena_bytes, faults,
                                   device, isolate, num_trainable_ops)
    if task.device:  # its firmware, built now if missing (not by the clients, in parallel)
        from ..micropython_runner.run import ensure_firmware
        ensure_firmware(task.device.get("board", "mps2-an500"))
    from flwr.simulation import run_simulation  # imports Ray: after the checks
    from . import client as _client, server as _server
    recorder = {}
    app = _server.server_app(task, fleet_strategy, int(rounds), seed=seed, recorder=recorder,
                             quiet=not verbose)
    backend_config = {"client_resources": {"num_cpus": float(client_cpus), "num_gpus": 0.0},
                      "init_args": {"num_cpus": int(cpus), "num_gpus": 0,
                                    "object_store_memory": RAY_OBJECT_STORE_BYTES,
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


# ------------------------------------------------------------------ command line


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))
        raise SystemExit(2)


def _parser():
    from . import device
    values = _arguments
    parser = _Parser(prog="microtrain fleet",
                     description="Simulate a fleet of microtrain devices learning together "
                                 "with Flower (its simulation engine and strategies), or "
                                 "deploy it on this machine (--deployment).")
    parser.add_argument("--model", required=True, help="the .mtm model image every client "
                                                       "starts from")
    parser.add_argument("--data", required=True,
                        help=".npz with x, y (and x_eval, y_eval for the server's evaluation)")
    parser.add_argument("--clients", type=values.positive_int, default=100)
    parser.add_argument("--rounds", type=values.positive_int, default=20)
    parser.add_argument("--strategy", default="fedavg", choices=sorted(STRATEGIES),
                        help="Flower's strategy (default fedavg; fedmedian, fedtrimmedavg, "
                             "krum, multikrum or bulyan resist clients that lie)")
    parser.add_argument("--split", default="dirichlet", choices=_partition.METHODS)
    parser.add_argument("--alpha", type=values.positive_float, default=0.5,
                        help="Dirichlet concentration")
    parser.add_argument("--classes-per-client", type=values.positive_int, default=2,
                        help="classes each client holds with --split label")
    parser.add_argument("--seed", type=values.non_negative_int, default=0)
    parser.add_argument("--fraction", type=values.share, default=1.0,
                        help="fraction of clients sampled per round, in (0, 1]")
    parser.add_argument("--epochs", type=values.positive_int, default=1,
                        help="local epochs per round")
    parser.add_argument("--batch-size", type=values.positive_int,
                        default=_config.DEFAULT_BATCH_SIZE)
    parser.add_argument("--optimizer", default=_config.DEFAULT_OPTIMIZER,
                        choices=sorted(_optimizers.ALIASES))
    parser.add_argument("--learning-rate", type=values.positive_float,
                        default=DEFAULT_LEARNING_RATE)
    parser.add_argument("--loss", default="categorical_crossentropy",
                        choices=sorted(_losses.ALIASES))
    values.add_trainable(parser)  # what the clients train (and send)
    parser.add_argument("--proximal-mu", type=values.non_negative_float, default=None,
                        help="FedProx's mu (with --strategy fedprox; default 0.01)")
    parser.add_argument("--server-lr", type=values.positive_float, default=None,
                        help="the server's learning rate (FedAdam/FedAdagrad/FedYogi eta, "
                             "FedAvgM server_learning_rate)")
    parser.add_argument("--arena", type=values.positive_int, default=None,
                        help="the device's arena in bytes (clients whose plan needs more "
                             "refuse)")
    parser.add_argument("--device-clients", type=values.index_list, default=[],
                        help="comma-separated clients (0 to --clients - 1) that train on an "
                             "emulated board")
    parser.add_argument("--board", default="mps2-an500", choices=device.boards(),
                        help="their board (microtrain micropython's)")
    parser.add_argument("--isolate", action="store_true",
                        help="run each client's round in a process of its own (a client "
                             "whose process dies is dropped, the others go on)")
    parser.add_argument("--cpus", type=values.positive_int, default=2, help="CPUs Ray may use")
    parser.add_argument("--client-cpus", type=values.positive_float, default=1.0,
                        help="CPUs per simulated client, at most --cpus (fractions run more "
                             "at once)")
    parser.add_argument("--export", metavar="OUT",
                        help="write the global model there for inference: an .mtm image, or "
                             "a .tflite/.circle/.onnx file by its extension")
    parser.add_argument("--plot", help="write accuracy and loss per round to this PNG "
                                       "(needs matplotlib)")
    parser.add_argument("--verbose", action="store_true",
                        help="Flower's and Ray's logs too (their notices included)")
    deployment = parser.add_argument_group(
        "deployment", "Flower's deployment engine instead of its simulation: a SuperLink and "
        "one SuperNode per client as processes on 127.0.0.1, the app run with `flwr run` "
        "(microtrain.federated.deployment); --device-clients then become gateway "
        "SuperNodes, each talking to its emulated board over the board's UART")
    deployment.add_argument("--deployment", action="store_true",
                            help="run the fleet through Flower's deployment engine")
    deployment.add_argument("--round-timeout", type=values.positive_float, default=600.0,
                            help="seconds a round waits for replies (a silent SuperNode is "
                                 "dropped)")
    deployment.add_argument("--board-timeout", type=values.positive_float, default=300.0,
                            help="seconds a board has for its whole round")
    deployment.add_argument("--frame-timeout", type=values.positive_float, default=5.0,
                            help="seconds a frame on a board's link has to arrive whole")
    deployment.add_argument("--tls", metavar="DIR",
                            help="TLS: DIR holds ca.crt, server.crt (for 127.0.0.1) and "
                                 "server.key (default: --insecure, plain HTTP on loopback)")
    deployment.add_argument("--logs", metavar="DIR",
                            help="keep the SuperLink's, SuperNodes' and boards' logs in DIR")
    return parser


def _check_plot_and_export(args):
    """What --plot and --export need, checked before the simulation rather than after it:
    matplotlib, a known extension, writable files (microtrain._files)."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise RuntimeError("--plot needs matplotlib: %s" % install_hint("plot"))
        _files.check_writable(args.plot)
    if args.export:
        if not args.export.lower().endswith((".mtm", ".tflite", ".circle", ".onnx")):
            raise ValueError("--export %s: the global model is written as .mtm, .tflite, "
                             ".circle or .onnx (by its extension)" % args.export)
        _files.check_writable(args.export)


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
    """The keyword arguments of ``run_fleet`` (and ``prepare``, ``run_deployment``) that the
    command's options give, common to both engines; ValueError for options that cannot go
    together (--trainable with --num-of-trainable-ops, --server-lr with another strategy)."""
    trainable, num_trainable_ops = _arguments.trainable_choice(args.trainable,
                                                               args.num_trainable_ops)
    return dict(model=args.model, data=args.data, clients=args.clients, rounds=args.rounds,
                strategy=args.strategy, split=args.split, alpha=args.alpha,
                classes_per_client=args.classes_per_client, seed=args.seed,
                epochs=args.epochs, batch_size=args.batch_size, optimizer=args.optimizer,
                learning_rate=args.learning_rate, loss=args.loss, trainable=trainable,
                num_trainable_ops=num_trainable_ops, proximal_mu=args.proximal_mu,
                fraction=args.fraction,
                strategy_options=strategy_options(args.strategy, args.server_lr),
                arena_bytes=args.arena, device=_device(args), isolate=args.isolate)


def _device(args):
    """The device clients of --device-clients and --board (None: none)."""
    if not args.device_clients:
        return None
    return {"board": args.board, "partitions": list(args.device_clients)}


def _simulation(args, arguments):
    return run_fleet(cpus=args.cpus, client_cpus=args.client_cpus, verbose=args.verbose,
                     stream=sys.stdout, **arguments)


def main(argv=None, engine=None):
    """``microtrain fleet ...``; returns the exit status. ``engine(args, arguments)`` runs
    the fleet (``arguments``: ``fleet_arguments(args)``) and returns its ``FleetResult``:
    Flower's simulation engine by default; ``microtrain fleet --deployment`` passes its
    deployment engine (``microtrain.federated.deployment.main``). Either way the arguments
    are checked, and --plot and --export too, before it starts."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.deployment and engine is None:
        sys.stderr.write("microtrain fleet: error: --deployment runs as `microtrain fleet "
                         "--deployment` (microtrain.federated.deployment.main)\n")
        return 2
    device = _device(args)
    try:
        if args.deployment:  # no Ray: its CPU options do not apply
            check_arguments(args.clients, args.rounds, args.fraction, 0.0, device, args.arena)
        else:
            check_arguments(args.clients, args.rounds, args.fraction, 0.0, device, args.arena,
                            args.cpus, args.client_cpus)
    except ValueError as error:
        parser.error(str(error))
    try:  # refused now, not after the fleet ran
        _check_plot_and_export(args)
        arguments = fleet_arguments(args)
        require_flower()
    except OSError as error:  # an output that cannot be written: 1, as in every command
        sys.stderr.write("microtrain fleet: error: %s\n" % error)
        return 1
    except (FlowerMissing, RuntimeError, ValueError) as error:
        sys.stderr.write("microtrain fleet: error: %s\n" % error)
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("microtrain.federated").addHandler(handler)
    try:
        result = (engine or _simulation)(args, arguments)
        if args.export:
            result.save(args.export)
            print("global model: %s (weights crc32 0x%08x)" % (args.export, result.crc32))
        if args.plot:
            result.plot(args.plot, "%d clients, %s, %s split" % (args.clients, args.strategy,
                                                                  args.split))
            print("plot: %s" % args.plot)
    except (ValueError, OSError, RuntimeError, RunnerError) as error:
        sys.stderr.write("microtrain fleet: error: %s\n" % error)
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("microtrain fleet: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
