"""What a fleet run gives back, on either engine: ``FleetResult`` (the global model and
how its rounds went) and ``finish``, which makes it of a server's summary and prints the
table both ``microtrain fleet`` and ``microtrain fleet --deployment`` end with.
"""

import dataclasses

import numpy as np

from .. import _files
from ..errors import install_hint
from ..session_state import weights_crc32


@dataclasses.dataclass(eq=False, repr=False)
class FleetResult:
    """What ``run_fleet`` returns: the global model and how the rounds went.

        result.save("global.mtm")      # or .tflite/.onnx: the model for inference
        result.apply(session)          # into a session of the same model
        result.crc32 == session.weights_crc32()

    Attributes:
        rounds:  [{"round", "clients", "dropped", "accuracy", "loss", "train_loss",
                   "bytes_down", "bytes_up", "seconds", "crc32"}] for rounds 0 (the initial
                   model: evaluation only) to R; crc32: of that round's whole global model,
                   as ``crc32`` (the last round's is the result's)
        weights: every weight tensor of the final global model (numpy float32, in
                 ``get_weights()`` order): the trained ones as the fleet left them, the
                 frozen ones as the model image holds them
        trained_weights: the trained tensors alone (what travelled), in that order
        keys:    their ArrayRecord keys ("t<tensor index>")
        model:   the model image (bytes) every client started from
        dropped: [(round, partition, reason)] of every dropped reply (the reason: what the
                 client raised, or why the server's guard refused its reply)
        notes:   [(round, text)] about whole rounds: an aggregate that was not taken, a
                 global model whose evaluation the core refused
        arena_bytes: the arena of one client (the plan's total_bytes)
        seconds: wall time of the whole run (simulation or deployment)
    """

    rounds: list
    trained_weights: list
    keys: list
    dropped: list
    arena_bytes: int
    seconds: float
    settings: object
    notes: list = ()
    model: bytes = None

    def __post_init__(self):
        self.notes = list(self.notes)
        self._weights = None

    def _session(self):
        """A session of the fleet's model, compiled as its clients were."""
        from ..train_session import TrainSession
        from . import local_round
        if self.model is None:
            raise ValueError("this FleetResult holds no model image (model=None): only its "
                             "trained tensors")
        session = TrainSession(self.model)
        try:
            local_round.compile_session(session, self.settings)
        except BaseException:
            session.close()
            raise
        return session

    @property
    def weights(self):
        if self._weights is None:
            with self._session() as session:
                session.set_weights(self.trained_weights)  # the trained subset, in order
                self._weights = session.get_weights()
        return self._weights

    @property
    def crc32(self):
        """zlib.crc32 over every weight of the global model (float32 little-endian, in
        get_weights() order): what ``weights_crc32()`` of a session holding it gives."""
        return weights_crc32(self.weights)

    def apply(self, session):
        """Put the global model's weights into ``session`` (a session of the same model,
        compiled or not)."""
        session.set_weights(self.weights)

    def save(self, path, format=None):
        """Write the global model for inference, atomically: an .mtm image, or by ``format``
        or the extension a .tflite / .circle / .onnx file
        (``Session.export_model_for_inference``)."""
        with self._session() as session:
            session.set_weights(self.trained_weights)
            session.export_model_for_inference(path, format)

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
            raise RuntimeError("plotting needs matplotlib: %s" % install_hint("plot"))
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
        try:
            _files.save_figure(figure, path)  # atomically, a regular file only
        finally:
            plt.close(figure)


def _by_round(values):
    """{round: value} of a summary's mapping, whose keys JSON made strings."""
    return {int(server_round): value for server_round, value in values.items()}


def finish(task, summary, trained_weights, elapsed, stream):
    """The ``FleetResult`` of a server's ``summary`` (``server.summarize``, or its JSON) and
    its final global trained tensors; prints its table, its drops and notes, and the last
    line (arena, crc32, seconds) to ``stream`` (None: nowhere)."""
    from ..train_session import TrainSession
    from . import client as _client, local_round
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
    with TrainSession(task.model) as session:
        local_round.compile_session(session, task.settings)
        arena = session.memory_plan()["total_bytes"]
    reasons = [(int(r), p, why) for r, p, why in summary["reasons"]]
    notes = [(int(r), text) for r, text in summary["notes"]]
    keys = [key for key, _ in _client.trained_layout(task)]
    fleet = FleetResult(rows, trained_weights, keys, reasons, arena, elapsed, task.settings,
                        notes, task.model)
    if stream is not None:
        stream.write(fleet.table() + "\n")
        for server_round, partition, reason in fleet.dropped:
            stream.write("dropped in round %d: client %s: %s\n" % (server_round, partition,
                                                                   reason))
        for server_round, text in fleet.notes:
            stream.write("round %d: %s\n" % (server_round, text))
        stream.write("arena per client: %d bytes; global weights crc32 0x%08x; %.1f s\n"
                     % (arena, fleet.crc32, elapsed))
        stream.flush()
    return fleet
