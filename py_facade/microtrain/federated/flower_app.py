"""The Flower App of a microtrain fleet: its ``serverapp`` and ``clientapp``, configured by
the run config, for ``flwr run`` on either of Flower's engines.

    flwr run examples/flower_app <connection> --run-config 'model="/abs/digits.mtm"
        data="/abs/digits.npz" clients=4 rounds=3'

``examples/flower_app/pyproject.toml`` (written by ``write_app``) declares the app:
``[tool.flwr.app.components]`` points at ``microtrain.federated.flower_app:serverapp`` and
``:clientapp``, and ``[tool.flwr.app.config]`` lists every key of ``RUN_CONFIG`` with its
default. The keys are ``microtrain fleet``'s options: the ServerApp and each ClientApp
build the same ``FleetTask`` and strategy from them (``fleet.prepare``), so the app is
the simulated fleet, whatever runs it: Flower's simulation runtime (its SuperNodes get
``partition-id`` from it) or real SuperNodes started with ``--node-config
'partition-id=K num-partitions=N'`` — plus ``board="tcp:HOST:PORT"`` (or a serial
device) for a gateway SuperNode whose board trains (``microtrain.federated.gateway``).

``results``: a folder the ServerApp writes what it saw to when the run ends
(``summary.json``, ``server.summarize``'s record with string keys, and ``weights.npz``, the
final global trained tensors ``t<index>`` in session order; ``error.txt`` instead when it
failed); ``microtrain fleet --deployment`` reads them back.
"""

import json
import os
import traceback

import numpy as np

from flwr.serverapp import ServerApp

from .. import _files, trainable as _trainable
from . import client as _client, fleet as _fleet, server as _server

# key: default. Numbers < 0 (proximal-mu, server-lr) and 0 (arena, query-batch) mean
# "unset"; the strings "" (faults, device-clients, results, num-trainable-ops) mean none.
# trainable: --trainable's text (all, bias, N, [3,4], [dense_1]); num-trainable-ops: onert's
# count of ops instead (an integer, or "" for none).
RUN_CONFIG = (
    ("model", ""), ("data", ""), ("clients", 10), ("rounds", 3), ("strategy", "fedavg"),
    ("split", "dirichlet"), ("alpha", 0.5), ("classes-per-client", 2), ("seed", 0),
    ("fraction", 1.0), ("epochs", 1), ("batch-size", 16), ("optimizer", "sgd"),
    ("learning-rate", _fleet.DEFAULT_LEARNING_RATE), ("loss", "categorical_crossentropy"),
    ("trainable", "all"), ("num-trainable-ops", ""), ("proximal-mu", -1.0),
    ("server-lr", -1.0), ("arena", 0), ("isolate", False), ("faults", ""),
    ("device-clients", ""), ("board", "mps2-an500"), ("round-timeout", 600.0),
    ("query-batch", 0), ("results", ""), ("verbose", False))
DEFAULTS = dict(RUN_CONFIG)
APP_NAME = "microtrain-fleet"
PUBLISHER = "microtrain"


def parse_faults(text):
    """{partition: fault} of "2:nan,5:die" (``FleetTask``'s faults)."""
    faults = {}
    for item in str(text).split(","):
        if item.strip():
            partition, sep, fault = item.partition(":")
            if not sep or not partition.strip().isdigit() or not fault.strip():
                raise ValueError("faults %r: write PARTITION:FAULT,... (e.g. 2:nan,5:die)"
                                 % text)
            faults[int(partition)] = fault.strip()
    return faults


def format_faults(faults):
    return ",".join("%d:%s" % (int(p), f) for p, f in sorted((faults or {}).items()))


def fleet_arguments(config):
    """``fleet.prepare``'s keyword arguments from a run config (missing keys: DEFAULTS)."""
    value = dict(DEFAULTS)
    value.update(config)
    for name in ("model", "data"):
        if not value[name]:
            raise ValueError("the run config needs %s (a path on the machines that run the "
                             "app), e.g. --run-config '%s=\"/abs/path\"'" % (name, name))
    device = None
    if value["device-clients"]:
        device = {"board": value["board"], "partitions": [
            int(p) for p in str(value["device-clients"]).split(",") if p.strip()]}
    mu, server_lr = float(value["proximal-mu"]), float(value["server-lr"])
    ops = str(value["num-trainable-ops"]).strip()
    return dict(model=value["model"], data=value["data"], clients=int(value["clients"]),
                strategy=value["strategy"], split=value["split"], alpha=float(value["alpha"]),
                classes_per_client=int(value["classes-per-client"]), seed=int(value["seed"]),
                epochs=int(value["epochs"]), batch_size=int(value["batch-size"]),
                optimizer=value["optimizer"], learning_rate=float(value["learning-rate"]),
                loss=value["loss"], trainable=_trainable.parse_spec(value["trainable"]),
                num_trainable_ops=int(ops) if ops else None,
                proximal_mu=mu if mu >= 0 else None, fraction=float(value["fraction"]),
                strategy_options=_fleet.strategy_options(
                    value["strategy"], server_lr if server_lr >= 0 else None),
                arena_bytes=int(value["arena"]) or None, faults=parse_faults(value["faults"]),
                device=device, isolate=bool(value["isolate"]))


def run_config_of(arguments, rounds, round_timeout=600.0, results="", verbose=False,
                  query_batch=0):
    """The run config of ``fleet.fleet_arguments``-style keyword arguments (the inverse of
    ``fleet_arguments``)."""
    device = arguments.get("device") or {}
    options = arguments.get("strategy_options") or {}
    server_lr = options.get("eta", options.get("server_learning_rate", -1.0))
    mu = arguments.get("proximal_mu")
    model = arguments["model"]
    if not isinstance(model, str):
        raise ValueError("a deployment's model is a path (the SuperNodes read it)")
    return {"model": os.path.abspath(model), "data": os.path.abspath(arguments["data"]),
            "clients": int(arguments["clients"]), "rounds": int(rounds),
            "strategy": str(arguments.get("strategy", "fedavg")).lower(),
            "split": arguments.get("split", "dirichlet"),
            "alpha": float(arguments.get("alpha", 0.5)),
            "classes-per-client": int(arguments.get("classes_per_client", 2)),
            "seed": int(arguments.get("seed", 0)),
            "fraction": float(arguments.get("fraction", 1.0)),
            "epochs": int(arguments.get("epochs", 1)),
            "batch-size": int(arguments.get("batch_size", 16)),
            "optimizer": arguments.get("optimizer", "sgd"),
            "learning-rate": float(arguments.get("learning_rate",
                                                 _fleet.DEFAULT_LEARNING_RATE)),
            "loss": arguments.get("loss", "categorical_crossentropy"),
            "trainable": _trainable.spec_text(
                "all" if arguments.get("trainable") is None else arguments["trainable"]),
            "num-trainable-ops": "" if arguments.get("num_trainable_ops") is None
            else str(int(arguments["num_trainable_ops"])),
            "proximal-mu": -1.0 if mu is None else float(mu),
            "server-lr": float(server_lr), "arena": int(arguments.get("arena_bytes") or 0),
            "isolate": bool(arguments.get("isolate", False)),
            "faults": format_faults(arguments.get("faults")),
            "device-clients": ",".join(str(int(p)) for p in device.get("partitions", ())),
            "board": device.get("board", "mps2-an500"),
            "round-timeout": float(round_timeout), "query-batch": int(query_batch),
            "results": results, "verbose": bool(verbose)}


_TASKS = {}


def task_for(config):
    """The run's ``(FleetTask, strategy)``, built once per process and run config."""
    key = tuple(sorted((name, str(value)) for name, value in dict(config).items()))
    if key not in _TASKS:
        _TASKS.clear()
        _TASKS[key] = _fleet.prepare(**fleet_arguments(config))
    return _TASKS[key]


clientapp = _client.client_app(lambda context: task_for(context.run_config)[0])

serverapp = ServerApp()


@serverapp.main()
def _serve(grid, context):
    config = dict(DEFAULTS, **dict(context.run_config))
    results = str(config["results"])
    recorder = {}
    try:
        task, strategy = task_for(context.run_config)
        _server.run_server(grid, task, strategy, int(config["rounds"]),
                           seed=int(config["seed"]), recorder=recorder,
                           timeout=float(config["round-timeout"]),
                           quiet=not bool(config["verbose"]),
                           query_batch=int(config["query-batch"]) or None)
        if results:
            write_results(results, task, recorder)
    except BaseException:
        if results:
            _write_atomically(os.path.join(results, "error.txt"),
                              traceback.format_exc().encode())
        raise


def _write_atomically(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _files.write_bytes(path, data)


def write_results(folder, task, recorder):
    """``weights.npz`` and then ``summary.json`` (its presence: the run ended well)."""
    layout = _client.trained_layout(task)
    result = recorder["result"]
    record = result.arrays if len(result.arrays) else _server.initial_arrays(task)
    weights = _client.from_record(record, layout)
    os.makedirs(folder, exist_ok=True)
    part = os.path.join(folder, "weights.part.npz")
    np.savez(part, **{key: weight for (key, _), weight in zip(layout, weights)})
    os.replace(part, os.path.join(folder, "weights.npz"))
    summary = _server.summarize(recorder)
    summary["partitions"] = sorted(recorder["partitions"].values())
    _write_atomically(os.path.join(folder, "summary.json"),
                      json.dumps(summary, sort_keys=True).encode())


def read_results(folder, task):
    """(summary, weights) that ``write_results`` left in ``folder``."""
    with open(os.path.join(folder, "summary.json")) as handle:
        summary = json.load(handle)
    layout = _client.trained_layout(task)
    with np.load(os.path.join(folder, "weights.npz")) as archive:
        weights = [np.asarray(archive[key], dtype=np.float32) for key, _ in layout]
    return summary, weights


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for the ASCII the keys hold
    return repr(value)


def run_config_text(config):
    """``--run-config`` text of a config dict (``key=value`` in TOML, space separated)."""
    return " ".join("%s=%s" % (name, _toml_value(value)) for name, value in config.items())


def pyproject_text():
    """The Flower App's pyproject.toml (``examples/flower_app/pyproject.toml``)."""
    lines = [
        "# The Flower App of a microtrain fleet (written by",
        "# microtrain.federated.flower_app.pyproject_text; tests/federated checks it).",
        "#",
        "#   flwr run examples/flower_app <connection> --run-config 'model=\"/abs/M.mtm\""
        " data=\"/abs/D.npz\"'",
        "#",
        "# Its code is microtrain's, with its federated extra, where it runs",
        "# (pip install '.[federated]' in microtrain's source tree).",
        "[build-system]",
        "requires = [\"hatchling\"]",
        "build-backend = \"hatchling.build\"",
        "",
        "[project]",
        "name = \"%s\"" % APP_NAME,
        "version = \"1.0.0\"",
        "description = \"A fleet of microtrain clients: FedAvg and Flower's other strategies"
        " over exact on-device training\"",
        "license = \"Apache-2.0\"",
        "dependencies = []  # microtrain[federated], installed where the app runs",
        "",
        "[tool.flwr.app]",
        "publisher = \"%s\"" % PUBLISHER,
        "",
        "[tool.flwr.app.components]",
        "serverapp = \"microtrain.federated.flower_app:serverapp\"",
        "clientapp = \"microtrain.federated.flower_app:clientapp\"",
        "",
        "[tool.flwr.app.config]",
        "# microtrain fleet's options; numbers < 0 (proximal-mu, server-lr) or 0 (arena)",
        "# are unset; trainable: --trainable's text; num-trainable-ops: onert's count",
        "# of ops instead (\"\": none); query-batch: nodes asked their partition at once",
        "# (0: all); results: a folder for the ServerApp's summary (\"\": none)",
    ]
    lines += ["%s = %s" % (name, _toml_value(value)) for name, value in RUN_CONFIG]
    return "\n".join(lines) + "\n"


def write_app(folder):
    """Write the Flower App (its pyproject.toml) into ``folder``; returns the folder."""
    os.makedirs(folder, exist_ok=True)
    _files.write_bytes(os.path.join(folder, "pyproject.toml"), pyproject_text().encode())
    return folder
