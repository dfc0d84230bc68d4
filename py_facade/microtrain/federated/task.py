"""What every client of a fleet shares: the model, the data, the split and the settings.

A ``FleetTask`` is small and picklable (the model image and a path, no arrays): the
simulation ships it to its worker processes, where ``rows(partition)`` loads the data set
once per process and recomputes the seeded split, so a fleet of 1,000 clients costs one
copy of the data per worker, not per client.

Data: an ``.npz`` with ``x`` [N, *input shape] and ``y`` (one-hot rows, targets, or [N]
integer labels for sparse categorical cross-entropy), and optionally ``x_eval``/``y_eval``,
the held-out rows the server evaluates the global model on (else ``x``/``y``) — the format
``microtrain firmware`` reads.
"""

import os

import numpy as np

from .. import _array_files
from . import local_round, partition as _partition

_CACHE = {}
# a gateway board's faults (a deployment's device clients: ``gateway.board_round``)
BOARD_FAULTS = ("hang", "reset")
FAULTS = ("nan", "die", "raise", "huge", "shape", "examples") + BOARD_FAULTS


def _load(path):
    """The arrays of the .npz ``path``, read once per process (``_array_files.load_npz``:
    a regular file, no pickles, sizes checked before anything is decompressed)."""
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        arrays = _array_files.load_npz(path, "a fleet data set", required=("x", "y"))
        _CACHE.clear()
        _CACHE[key] = arrays
    return _CACHE[key]


def _refuse_int8_trained(plan):
    """Clients send, and the strategies average, float32 tensors (client.to_record, the
    guard's cast): an int8 layer trained in place (``convert(..., int8_train=True)``) has
    int8 weights and int32 biases, whose average is not a weight of that layer. Refused
    before any client starts, naming the layers (``plan``: the session's memory_plan())."""
    layers = plan.get("int8_trained_layers")
    if layers:
        raise ValueError(
            "layer%s %s train%s int8 weights in place: fleets average float32 weights only; "
            "convert the model without int8_train=True (its float layers train and travel) or "
            "leave those layers frozen (trainable=)" % (
                "s" if len(layers) > 1 else "", ", ".join(str(layer) for layer in layers),
                "s" if len(layers) == 1 else ""))


class FleetTask:
    """The shared definition of a fleet's clients.

    Args:
        model:     the .mtm image (bytes) every client starts from
        data:      path of the .npz data set
        clients:   number of clients (partitions)
        settings:  ``local_round`` settings (optimizer, learning_rate, loss, batch_size,
                   trainable, epochs, proximal_mu, seed)
        split:     how the rows are partitioned (``partition.split_labels``): "dirichlet"
                   or "label"
        alpha:     the Dirichlet concentration of a "dirichlet" split
        classes_per_client: the classes each client holds in a "label" split
        split_seed: the seed of the partition
        arena_bytes: the device's arena (None: exactly what the plan needs); a client whose
                   plan does not fit refuses to train
        faults:    {partition: kind} clients made to fail, for tests and demonstrations:
                   "nan" scales the client's inputs to 1e30 so that its steps overflow (the
                   numeric guard refuses them); "die" ends the process of the client's round
                   (its forked process, or its board's emulator) in the middle of the
                   round; "raise" makes its round raise ZeroDivisionError; and hostile
                   replies the server's guard must refuse (``guard.py``): "huge" sends its
                   first tensor as float64 1e300, "shape" its last tensor with shape (1,),
                   "examples" num-examples 1e308; a gateway board's (a deployment's device
                   clients): "hang" (it stops answering) and "reset" (it resets mid-round)
        isolate:   run every simulated client's round in a forked process of its own, so
                   that a client whose process dies (a crash, a kill) is dropped from the
                   round and its simulation worker carries on. Without it a dying worker
                   is Flower's to handle: its Ray actor goes back to the pool dead, and
                   the clients given to it later fail too.
        device:    None, or {"board": "mps2-an500", "partitions": [0, ...], "timeout": s}:
                   those clients train on MicroPython firmware under QEMU
                   (``microtrain.federated.device``)
    """

    def __init__(self, model, data, clients, settings, split="dirichlet", alpha=0.5,
                 classes_per_client=2, split_seed=0, arena_bytes=None, faults=None,
                 device=None, isolate=False):
        self.model = bytes(model)
        self.data = os.path.abspath(data)
        self.clients = int(clients)
        self.settings = dict(settings)
        for name in local_round.SETTING_NAMES:
            if name not in self.settings:
                raise ValueError("settings lack %r" % name)
        self.split = split
        self.alpha = float(alpha)
        self.classes_per_client = int(classes_per_client)
        self.split_seed = int(split_seed)
        self.arena_bytes = arena_bytes
        self.faults = dict(faults or {})
        for partition, kind in self.faults.items():
            if kind not in FAULTS:
                raise ValueError("fault %r of client %r: the faults are %s"
                                 % (kind, partition, ", ".join(FAULTS)))
        self.device = dict(device) if device else None
        self.isolate = bool(isolate)

    def arrays(self):
        """The data set's arrays (``x``, ``y`` and the optional ``x_eval``, ``y_eval``), read once
        per process and checked as ``microtrain._array_files`` reads every .npz.
        """
        return _load(self.data)

    def check(self):
        """Refuse (ValueError, MicrotrainError) before any simulation starts what would make
        every client fail: a model the core refuses with these settings, an arena too small
        for its plan, rows or targets not shaped for it, x_eval without y_eval. Returns the
        memory plan of one client."""
        from ..train_session import TrainSession
        arrays = self.arrays()
        if ("x_eval" in arrays) != ("y_eval" in arrays):
            raise ValueError("%s has only one of x_eval and y_eval" % self.data)
        with TrainSession(self.model) as session:
            local_round.compile_session(session, self.settings)
            sample = tuple(session.get_inputs_tensorinfo()[0]["shape"][1:])
            target = tuple(session.get_outputs_tensorinfo()[0]["shape"][1:])
            sparse = session.loss.sparse_labels
            plan = session.memory_plan()
            _refuse_int8_trained(plan)
        if self.arena_bytes is not None and plan["total_bytes"] > int(self.arena_bytes):
            raise ValueError("the device's arena of %d bytes cannot hold a client's plan of %d "
                             "bytes (every client would refuse to train)"
                             % (int(self.arena_bytes), plan["total_bytes"]))
        for x_name, y_name in (("x", "y"), ("x_eval", "y_eval")):
            if x_name not in arrays:
                continue
            x, y = arrays[x_name], arrays[y_name]
            if x.dtype.kind not in "fiub" or tuple(x.shape[1:]) != sample or len(x) == 0:
                raise ValueError("%s: %s is %s %s; the model takes rows of shape %s (N >= 1)"
                                 % (self.data, x_name, x.dtype, x.shape, sample))
            wanted = (len(x),) if sparse else (len(x),) + target
            if y.dtype.kind not in "fiub" or tuple(y.shape) != wanted or \
                    (sparse and y.dtype.kind not in "iu"):
                raise ValueError("%s: %s is %s %s; the model's %s needs %s%s"
                                 % (self.data, y_name, y.dtype, y.shape,
                                    "sparse labels" if sparse else "output", wanted,
                                    " integers" if sparse else ""))
        return plan

    def parts(self):
        """Every client's row indices into ``x``: the seeded split (``split``, ``alpha``,
        ``classes_per_client``), the same in every process for the same settings.
        """
        key = ("parts", self.data, self.clients, self.split, self.alpha,
               self.classes_per_client, self.split_seed)
        if key not in _CACHE:
            _CACHE[key] = _partition.split_labels(
                self.arrays()["y"], self.clients, self.split, self.alpha,
                self.classes_per_client, self.split_seed)
        return _CACHE[key]

    def rows(self, partition):
        """(x, y) of one client, float32 rows and float32 targets or int32 labels."""
        arrays = self.arrays()
        index = self.parts()[int(partition)]
        x = np.ascontiguousarray(arrays["x"][index], dtype=np.float32)
        y = arrays["y"][index]
        y = y.astype(np.int32) if y.ndim == 1 and y.dtype.kind in "iu" else \
            np.ascontiguousarray(y, dtype=np.float32)
        return x, y

    def eval_rows(self):
        """(x, y) the server evaluates the global model on: ``x_eval``/``y_eval`` if the data set
        holds them, else every row; float32 rows, float32 targets or int32 labels.
        """
        arrays = self.arrays()
        x = arrays.get("x_eval", arrays["x"])
        y = arrays.get("y_eval", arrays["y"])
        y = y.astype(np.int32) if y.ndim == 1 and y.dtype.kind in "iu" else \
            np.ascontiguousarray(y, dtype=np.float32)
        return np.ascontiguousarray(x, dtype=np.float32), y

    def device_for(self, partition):
        """The board a client trains on, or None (simulated on the host)."""
        if self.device and int(partition) in [int(p) for p in self.device.get("partitions",
                                                                             ())]:
            return self.device.get("board", "mps2-an500")
        return None
