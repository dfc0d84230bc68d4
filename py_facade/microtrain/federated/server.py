"""The server of a microtrain fleet: a Flower ``ServerApp`` running Flower's own strategies.

Aggregation is Flower's (``flwr.serverapp.strategy``); this module adds only what makes a
fleet of exact clients reproducible and safe, around any strategy:

* **Ordered nodes and replies.** Flower's simulation gives nodes random ids and replies
  arrive in whatever order the workers finish; floating-point sums depend on that order.
  Before the first round the server asks every node its partition id (a *query* message),
  then ``OrderedGrid`` lists nodes and returns replies sorted by partition, and Python's
  ``random`` (Flower's node sampling) is seeded before each round's sampling: a seeded
  fleet gives the same global weights run after run, on either engine, bit for bit.
* **Guarded replies.** A client that failed (its update refused by the core's numeric guard,
  its process or emulator dead, an exception) replies with an error, which Flower's
  strategies leave out; its reason is the client's own exception text
  (``guard.client_reason``). ``guarded(...)`` strategies also check every other reply
  against the global model before aggregating (``guard.checked_content``: exactly its
  tensors, shapes and float32 dtype, finite after the cast; the metrics a client sends;
  ``num-examples`` from 1 to the client's rows) and drop one that fails, whoever sent it;
  an aggregate that is not finite is not taken. Each drop is logged with its reason
  (logger ``microtrain.federated``) and counted per round; the round completes with the
  others, and nothing non-finite or mis-shaped is ever aggregated.
* **Traffic.** ``OrderedGrid`` adds up the bytes of the arrays sent to and received from the
  clients, per round.
"""

import logging
import random
import time

from flwr.app import ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import ServerApp
from flwr.serverapp import strategy as _strategies

from ..errors import MicrotrainError
from . import client as _client, guard as _guard
from .result import weights_crc32
from .strategy_names import STRATEGIES

LOG = logging.getLogger("microtrain.federated")


def _array_bytes(content):
    return sum(len(array.data) for record in content.array_records.values()
               for array in record.values())


def _round_of(message):
    config = message.content.get(_client.CONFIG) if message.has_content() else None
    return int(config["server-round"]) if config and "server-round" in config else 0


class FleetLog:
    """What the server saw, per round: bytes down and up, clients, drops (with reasons)."""

    def __init__(self):
        self.bytes_down = {}
        self.bytes_up = {}
        self.replies = {}
        self.dropped = {}
        self.reasons = []
        self.notes = []

    def drop(self, server_round, partition, reason):
        self.dropped[server_round] = self.dropped.get(server_round, 0) + 1
        self.reasons.append((server_round, partition, reason))
        LOG.warning("round %d: client %s dropped: %s", server_round, partition, reason)

    def note(self, server_round, text):
        """Something about the round as a whole (an aggregate refused, an evaluation)."""
        self.notes.append((server_round, text))
        LOG.warning("round %d: %s", server_round, text)


class OrderedGrid:
    """A Flower ``Grid`` whose nodes and replies come in partition order; counts traffic."""

    def __init__(self, grid, partitions, fleet_log):
        self._grid = grid
        self.partitions = dict(partitions)
        self.log = fleet_log

    def _key(self, node):
        return (self.partitions.get(node, 1 << 62), node)

    def get_node_ids(self):
        return sorted(self._grid.get_node_ids(), key=self._key)

    def send_and_receive(self, messages, timeout=None):
        messages = list(messages)
        for message in messages:
            server_round = _round_of(message)
            self.log.bytes_down[server_round] = self.log.bytes_down.get(server_round, 0) + \
                _array_bytes(message.content)
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        replies.sort(key=lambda m: self._key(m.metadata.src_node_id))
        # Flower gives each message its id as it sends it (on these very objects)
        round_of = {m.metadata.message_id: _round_of(m) for m in messages}
        node_of = {m.metadata.message_id: m.metadata.dst_node_id for m in messages}
        answered = set(reply.metadata.reply_to_message_id for reply in replies)
        for message in messages:  # silent past the timeout: its node died or hangs
            if message.metadata.message_id not in answered:
                server_round = _round_of(message)
                if message.metadata.message_type == MessageType.TRAIN:
                    self.log.replies[server_round] = self.log.replies.get(server_round,
                                                                          0) + 1
                self.log.drop(server_round, self.partitions.get(message.metadata.dst_node_id),
                              "no reply within the round's timeout (%g s)" % timeout)
        for reply in replies:
            server_round = round_of.get(reply.metadata.reply_to_message_id,
                                        max(round_of.values() or [0]))
            if reply.metadata.message_type == MessageType.TRAIN:
                self.log.replies[server_round] = self.log.replies.get(server_round, 0) + 1
            if reply.has_error():  # the SuperLink's own (node unavailable) come from it
                node = node_of.get(reply.metadata.reply_to_message_id,
                                   reply.metadata.src_node_id)
                self.log.drop(server_round, self.partitions.get(node),
                              _guard.client_reason(reply.error.reason))
            elif reply.has_content():
                self.log.bytes_up[server_round] = self.log.bytes_up.get(server_round, 0) + \
                    _array_bytes(reply.content)
        return replies

    def __getattr__(self, name):
        return getattr(self._grid, name)


class _GuardedReplies:
    """Mixed in before a Flower strategy: every reply is checked against the global model
    (``guard.checked_content``: one array record of exactly the model's tensors, shapes and
    float32 dtype, finite after the cast; the metrics a client sends; num-examples bounded
    by the client's rows) and replaced by its checked float32 content, or dropped with its
    reason, before the strategy aggregates; an aggregate that is not finite is not taken
    (the global model stays the round's)."""

    fleet_log = None
    partitions = None  # node id -> partition id
    layout = None      # [(key, shape)] of the global model's trained tensors
    rows = None        # partition id -> rows it holds (num-examples' bound)

    def _screen(self, server_round, replies, train):
        kept = []
        for reply in replies:
            if reply.has_error():
                kept.append(reply)  # the strategy leaves it out; OrderedGrid logged it
                continue
            partition = (self.partitions or {}).get(reply.metadata.src_node_id)
            try:
                reply.content = _guard.checked_content(
                    reply, self.layout or [], (self.rows or {}).get(partition), train)
            except _guard.Refused as refused:
                if self.fleet_log is not None:
                    self.fleet_log.drop(server_round, partition, str(refused))
                continue
            kept.append(reply)
        return kept

    def aggregate_train(self, server_round, replies):
        arrays, metrics = super().aggregate_train(
            server_round, self._screen(server_round, replies, train=True))
        problem = _guard.aggregate_problem(arrays, self.layout or [])
        if problem is not None:
            if self.fleet_log is not None:
                self.fleet_log.note(server_round, problem + "; the global model stays as "
                                    "it was")
            return None, metrics
        return arrays, metrics

    def aggregate_evaluate(self, server_round, replies):
        return super().aggregate_evaluate(server_round,
                                          self._screen(server_round, replies, train=False))


class _SeededSampling:
    """Mixed in before a Flower strategy: the nodes of round r are sampled right after
    seeding Python's ``random`` (Flower's sampler: ``random.sample`` of the nodes, which
    OrderedGrid lists in partition order) with (seed, r, phase). Flower's own code draws
    from the same ``random`` between rounds (its HTTP retries' jitter in a deployment's
    ServerApp, its simulation's threads), so one seed at the start would sample other
    nodes on another engine, or on a busier host."""

    sampling_seed = 0

    def configure_train(self, server_round, arrays, config, grid):
        random.seed("%d/%d/train" % (self.sampling_seed, server_round))
        return super().configure_train(server_round, arrays, config, grid)

    def configure_evaluate(self, server_round, arrays, config, grid):
        random.seed("%d/%d/evaluate" % (self.sampling_seed, server_round))
        return super().configure_evaluate(server_round, arrays, config, grid)


def guarded(strategy_class):
    """The Flower strategy class with every reply checked against the global model first
    (``_GuardedReplies``) and its node sampling seeded per round (``_SeededSampling``)."""
    return type("Guarded" + strategy_class.__name__,
                (_GuardedReplies, _SeededSampling, strategy_class), {})


def make_strategy(name, fraction_train=1.0, fraction_evaluate=0.0, min_nodes=2, **options):
    """A guarded Flower strategy by name (``STRATEGIES``) or class."""
    if isinstance(name, str):
        if name.lower() not in STRATEGIES:
            raise ValueError("unknown strategy %r; choose %s" % (name, ", ".join(STRATEGIES)))
        name = getattr(_strategies, STRATEGIES[name.lower()])
    return guarded(name)(fraction_train=fraction_train, fraction_evaluate=fraction_evaluate,
                         min_train_nodes=min_nodes, min_evaluate_nodes=min(min_nodes, 1)
                         if fraction_evaluate == 0.0 else min_nodes,
                         min_available_nodes=min_nodes, **options)


def discover_partitions(grid, clients, timeout=600.0, batch=None):
    """{node id: partition id} of every node, asked with a query message; ``batch``:
    how many nodes to ask at once (None: all). A node whose answer is not a partition of
    the fleet, or names one another node holds, is left out (``guard.partition_id``): its
    replies come last, bounded as a stranger's. On a deployment every message starts a
    ClientApp process, and a few dozen starting at once on a small host can each take
    longer than Flower's 30 s task claim: asking in batches keeps that herd small."""
    deadline = time.monotonic() + timeout
    while len(list(grid.get_node_ids())) < clients and time.monotonic() < deadline:
        time.sleep(0.2)
    nodes = sorted(grid.get_node_ids())
    size = int(batch) if batch else max(1, len(nodes))
    partitions = {}
    for start in range(0, len(nodes), size):
        messages = [Message(RecordDict(), dst_node_id=node, message_type=MessageType.QUERY)
                    for node in nodes[start:start + size]]
        for reply in grid.send_and_receive(messages, timeout=timeout):
            partition = _guard.partition_id(reply, clients)
            if partition is not None and partition not in partitions.values():
                partitions[reply.metadata.src_node_id] = partition
    return partitions


def _image_weights(task):
    """(every weight of the task's model image in get_weights() order, the positions of
    the trained ones among them)."""
    from ..train_session import TrainSession
    from . import local_round
    with TrainSession(task.model) as session:
        local_round.compile_session(session, task.settings)
        return session.get_weights(), local_round.trained_positions(session)


def initial_arrays(task):
    """The trained tensors of the task's model image: round 1's global model."""
    weights, positions = _image_weights(task)
    layout = _client.trained_layout(task)
    return _client.to_record([key for key, _ in layout], [weights[p] for p in positions])


def run_server(grid, task, strategy, rounds, seed=0, recorder=None, evaluate=True,
               timeout=3600.0, train_config=None, quiet=False, query_batch=None):
    """The server's work on ``grid``: ``strategy`` (a guarded Flower strategy) for
    ``rounds`` rounds, the global model evaluated on the task's held-out rows before round
    1 and after each (a global model whose evaluation the core refuses is noted, its loss
    and accuracy NaN). ``timeout``: how long a round waits for replies (a client silent
    past it is dropped). ``recorder`` (a dict) receives "result" (Flower's Result), "log"
    (FleetLog), "evaluations" {round: {loss, accuracy}}, "times" {round: seconds since
    start}, "crcs" {round: crc32 of the whole global model, as ``FleetResult.crc32``} and
    "partitions". ``quiet``: Flower's own log shows errors only (drops are logged by this
    module); ``query_batch``: ``discover_partitions``' batch."""
    recorder = {} if recorder is None else recorder
    random.seed(seed)  # Flower samples nodes with Python's random
    if quiet:  # the simulation engine has set Flower's log level by now
        logging.getLogger("flwr").setLevel(logging.ERROR)
    fleet_log = FleetLog()
    partitions = discover_partitions(grid, task.clients, timeout, query_batch)
    ordered = OrderedGrid(grid, partitions, fleet_log)
    layout = _client.trained_layout(task)
    strategy.fleet_log, strategy.partitions, strategy.layout = fleet_log, partitions, layout
    strategy.rows = {part: len(rows) for part, rows in enumerate(task.parts())}
    strategy.sampling_seed = int(seed)
    x_eval, y_eval = task.eval_rows()
    model_weights, positions = _image_weights(task)
    evaluations, times, crcs = {}, {}, {}
    start = time.perf_counter()

    def evaluate_fn(server_round, arrays):
        times[server_round] = time.perf_counter() - start
        weights = _client.from_record(arrays, layout)
        whole = list(model_weights)  # the frozen tensors stay the image's
        for position, weight in zip(positions, weights):
            whole[position] = weight
        crcs[server_round] = weights_crc32(whole)
        if not evaluate:
            return None
        try:
            result = _client.evaluate_weights(task, weights, x_eval, y_eval)
        except (MicrotrainError, ValueError) as error:  # a finite but wild global model
            fleet_log.note(server_round, "the global model's evaluation was refused: %s"
                           % error)
            result = {"loss": float("nan"), "accuracy": float("nan")}
        evaluations[server_round] = result
        return MetricRecord(result)

    recorder.update({"log": fleet_log, "evaluations": evaluations, "times": times,
                     "crcs": crcs, "partitions": partitions})
    config = ConfigRecord(dict(train_config or {}))
    recorder["result"] = strategy.start(grid=ordered, initial_arrays=initial_arrays(task),
                                        num_rounds=rounds, timeout=timeout,
                                        train_config=config, evaluate_fn=evaluate_fn)
    return recorder


def server_app(task, strategy, rounds, seed=0, recorder=None, evaluate=True,
               timeout=3600.0, train_config=None, quiet=False):
    """The ``ServerApp`` of ``run_server`` (see there) over the grid Flower gives it."""
    recorder = {} if recorder is None else recorder
    app = ServerApp()

    @app.main()
    def main(grid, context):
        run_server(grid, task, strategy, rounds, seed, recorder, evaluate, timeout,
                   train_config, quiet)

    return app


def summarize(recorder):
    """What a server run recorded, as plain data (JSON-able once its int keys become
    strings): evaluations, times, crcs, train_losses {round: ...}; replies, dropped,
    bytes_down, bytes_up {round: count}; reasons [[round, partition, reason]]; notes
    [[round, text]]."""
    fleet_log, result = recorder["log"], recorder.get("result")
    train_losses = {}
    if result is not None:
        for server_round, metrics in result.train_metrics_clientapp.items():
            if "train-loss" in metrics:
                train_losses[int(server_round)] = float(metrics["train-loss"])
    return {"evaluations": dict(recorder["evaluations"]), "times": dict(recorder["times"]),
            "crcs": dict(recorder["crcs"]), "train_losses": train_losses,
            "replies": dict(fleet_log.replies), "dropped": dict(fleet_log.dropped),
            "bytes_down": dict(fleet_log.bytes_down), "bytes_up": dict(fleet_log.bytes_up),
            "reasons": [list(reason) for reason in fleet_log.reasons],
            "notes": [list(note) for note in fleet_log.notes]}
