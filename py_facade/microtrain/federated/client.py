"""The microtrain client of a Flower fleet: a ``ClientApp`` around a ``TrainSession``.

    app = client_app(task)            # task: microtrain.federated.FleetTask

On a *train* message it receives the round's global model (an ``ArrayRecord`` of the
trained tensors, keyed ``t<tensor index>``), loads it into a session compiled as the device
would be (its batch size, what trains, its arena), trains ``epochs`` local epochs on the
client's partition (``local_round.train_round``) and replies with the trained tensors only
(frozen ones never change, so they never travel), the number of examples
(``num-examples``, the weight Flower's strategies use) and the training loss. FedProx's
``proximal-mu`` in the message's config turns on the core's proximal term. A client whose
partition is on an emulated board trains there (``microtrain.federated.device``), and a
gateway SuperNode's (``board=...`` in its node config) on its board over a serial line
(``microtrain.federated.gateway``); the reply is the same, bit for bit.

On an *evaluate* message it evaluates the global model on its own rows (loss, accuracy,
num-examples). On a *query* message it tells its partition id (the server orders nodes and
replies by it, so that a seeded fleet is reproducible).

A client that cannot produce a finite update — the core's numeric guard refused a step —
replies with an error naming the reason, and sends no weights; Flower's strategies leave
error replies out of the round (``microtrain.federated.server`` also drops any reply whose
arrays are not finite).
"""

import os
import pickle

import numpy as np

from flwr.app import Array, ArrayRecord, Error, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import ErrorCode

from ..errors import MicrotrainError
from ..train_session import TrainSession
from . import gateway, local_round
from .partition import class_ids

ARRAYS = "arrays"
METRICS = "metrics"
CONFIG = "config"
# the metrics a reply holds, exactly (the server's guard checks them: federated/guard.py)
TRAIN_METRICS = ("num-examples", "train-loss")
EVALUATE_METRICS = ("num-examples", "eval-loss", "eval-accuracy")


def tensor_key(tensor):
    return "t%d" % tensor


def trained_layout(task):
    """[(key, shape)] of the tensors a client trains, in get_weights() order."""
    with TrainSession(task.model) as session:
        local_round.compile_session(session, task.settings)
        params = session.model_description()["params"]
        return [(tensor_key(params[p][0]), tuple(params[p][1]))
                for p in local_round.trained_positions(session)]


def to_record(keys, weights):
    return ArrayRecord({key: Array(np.ascontiguousarray(w, dtype=np.float32))
                        for key, w in zip(keys, weights)})


def from_record(record, layout):
    """Trained weights in session order from an ArrayRecord, shapes checked."""
    weights = []
    for key, shape in layout:
        if key not in record:
            raise ValueError("the global model has no tensor %s" % key)
        value = record[key].numpy()
        if tuple(value.shape) != shape:
            raise ValueError("tensor %s has shape %s, the model needs %s"
                             % (key, value.shape, shape))
        weights.append(value)
    return weights


def settings_for(task, config):
    settings = dict(task.settings)
    if config is not None and "proximal-mu" in config:  # Flower's FedProx
        settings["proximal_mu"] = float(config["proximal-mu"])
    if config is not None and "local-epochs" in config:
        settings["epochs"] = int(config["local-epochs"])
    return settings


def _check_arena(task, session, partition):
    need = session.memory_plan()["total_bytes"]
    if task.arena_bytes is not None and need > int(task.arena_bytes):
        raise MemoryError("client %d: the plan needs an arena of %d bytes, the device has %d"
                          % (partition, need, task.arena_bytes))


def simulated_round(task, partition, trained_weights, server_round, settings=None):
    """One local round on the host: (update, logs, num_examples)."""
    settings = settings or task.settings
    x, y = task.rows(partition)
    if task.faults.get(partition) == "nan":
        x = x * np.float32(1e30)
    if task.faults.get(partition) == "die":
        os._exit(71)  # the client's process ends mid-round (run in_child), a power cut
    if task.faults.get(partition) == "raise":
        raise ZeroDivisionError("client %d divides by zero (fault 'raise')" % partition)
    with TrainSession(task.model) as session:
        local_round.compile_session(session, settings)
        _check_arena(task, session, partition)
        update, logs = local_round.train_round(session, trained_weights, x, y, settings,
                                               server_round, partition)
    return [np.asarray(w) for w in update], logs, len(x)


def device_round(task, partition, trained_weights, server_round, settings=None):
    """The same round on the client's emulated board: (update, logs, num_examples)."""
    from . import device
    settings = settings or task.settings
    x, y = task.rows(partition)
    options = task.device or {}
    update, logs = device.run_round(task.device_for(partition), task.model, settings,
                                    trained_weights, x, y, server_round, partition,
                                    timeout=float(options.get("timeout", 300)),
                                    die=task.faults.get(partition) == "die")
    return update, logs, len(x)


class ClientDied(RuntimeError):
    """The process running a client's round ended without an update."""


def in_child(function, *args):
    """``function(*args)`` in a forked child process: its result, or ClientDied when the
    child dies first (a crash, a kill, a power cut simulated with os._exit), so that the
    client's worker survives and can report it."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the pickled outcome, leave without cleanup
        os.close(read_end)
        try:
            outcome = pickle.dumps(("ok", function(*args)))
        except BaseException as error:  # noqa: B902 - sent to the parent
            outcome = pickle.dumps(("error", "%s: %s" % (type(error).__name__, error)))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(outcome)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data or status != 0:
        how = "was killed by signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) \
            else "exited with status %d" % os.WEXITSTATUS(status)
        raise ClientDied("its process %s before sending an update" % how)
    kind, value = pickle.loads(data)
    if kind == "error":
        raise RuntimeError(value)
    return value


def evaluate_weights(task, trained_weights, x, y):
    """Loss and accuracy (argmax) of a global model on rows x, y."""
    with TrainSession(task.model) as session:
        settings = dict(task.settings, proximal_mu=0.0)
        local_round.compile_session(session, settings)
        local_round.load_global(session, trained_weights)
        loss = session.evaluate((x, y))["loss"]
        outputs = np.asarray(session.predict(x))
    predicted = outputs.reshape(len(outputs), -1).argmax(axis=1)
    return {"loss": float(loss), "accuracy": float(np.mean(predicted == class_ids(y)))}


def _huge(arrays, metrics, keys):
    arrays[keys[0]] = Array(np.full(arrays[keys[0]].shape, 1e300, dtype=np.float64))


def _bad_shape(arrays, metrics, keys):
    arrays[keys[-1]] = Array(np.ones(1, dtype=np.float32))


def _many_examples(arrays, metrics, keys):
    metrics["num-examples"] = 1e308


# The faults "huge", "shape" and "examples" (FleetTask): replies the server must refuse.
_HOSTILE_REPLIES = {"huge": _huge, "shape": _bad_shape, "examples": _many_examples}


def _refuse(message, reason):
    return Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason),
                   reply_to=message)


def client_app(task):
    """The Flower ``ClientApp`` of a fleet's microtrain clients. ``task``: a ``FleetTask``,
    or a function of the message's ``Context`` returning one (a Flower App's clients
    build it from the run config: ``microtrain.federated.flower_app``). A node whose
    config names a board (``board="tcp:HOST:PORT"`` or a serial device: a gateway
    SuperNode) has the board train each round (``microtrain.federated.gateway``)."""
    app = ClientApp()
    layouts = {}

    def task_of(context):
        return task(context) if callable(task) else task

    def layout(current):
        if id(current) not in layouts:
            layouts[id(current)] = (current, trained_layout(current))
        return layouts[id(current)][1]

    @app.train()
    def train(message, context):
        partition = int(context.node_config["partition-id"])
        config = message.content.get(CONFIG)
        server_round = int(config["server-round"]) if config and "server-round" in config \
            else 0
        try:
            current = task_of(context)  # a Flower App's: checked as it is built
            keys = [key for key, _ in layout(current)]
            weights = from_record(message.content[ARRAYS], layout(current))
            settings = settings_for(current, config)
            board = gateway.node_board(context.node_config)
            if board is not None:
                address, frame_timeout, round_timeout = board
                update, logs, examples = gateway.board_round(
                    current, address, partition, weights, server_round, settings,
                    frame_timeout, round_timeout)
            elif current.device_for(partition):
                update, logs, examples = device_round(current, partition, weights,
                                                      server_round, settings)
            elif current.isolate or current.faults.get(partition) == "die":
                update, logs, examples = in_child(simulated_round, current, partition,
                                                  weights, server_round, settings)
            else:
                update, logs, examples = simulated_round(current, partition, weights,
                                                         server_round, settings)
            if not all(np.all(np.isfinite(w)) for w in update):
                raise ValueError("the update is not finite")
        except (MicrotrainError, ValueError, MemoryError, RuntimeError, OSError) as error:
            return _refuse(message, "client %d, round %d: %s" % (partition, server_round,
                                                                  error))
        except Exception as error:  # noqa: BLE001 - any failure is this client's, reported
            return _refuse(message, "client %d, round %d: %s: %s" % (
                partition, server_round, type(error).__name__, error))
        metrics = MetricRecord({"num-examples": int(examples),
                                "train-loss": float(logs.get("loss", float("nan")))})
        arrays = to_record(keys, update)
        hostile = current.faults.get(partition)
        if hostile in _HOSTILE_REPLIES:
            _HOSTILE_REPLIES[hostile](arrays, metrics, keys)
        return Message(RecordDict({ARRAYS: arrays, METRICS: metrics}), reply_to=message)

    @app.evaluate()
    def evaluate(message, context):
        partition = int(context.node_config["partition-id"])
        try:
            current = task_of(context)
            weights = from_record(message.content[ARRAYS], layout(current))
            x, y = current.rows(partition)
            result = evaluate_weights(current, weights, x, y)
        except (MicrotrainError, ValueError, RuntimeError) as error:
            return _refuse(message, "client %d: %s" % (partition, error))
        except Exception as error:  # noqa: BLE001 - any failure is this client's, reported
            return _refuse(message, "client %d: %s: %s" % (partition, type(error).__name__,
                                                           error))
        metrics = MetricRecord({"num-examples": len(x), "eval-loss": result["loss"],
                                "eval-accuracy": result["accuracy"]})
        return Message(RecordDict({METRICS: metrics}), reply_to=message)

    @app.query()
    def query(message, context):
        partition = int(context.node_config["partition-id"])
        return Message(RecordDict({METRICS: MetricRecord({"partition-id": partition})}),
                       reply_to=message)

    return app
