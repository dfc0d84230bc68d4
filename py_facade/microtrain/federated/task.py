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
FAULTS = ("nan", "die", "raise", "huge", "shape", "examples")


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


class FleetTask:
    """The shared definition of a fleet's clients.

    Args:
        model:     the .mtm image (bytes) every client starts from
        data:      path of the .npz data set
        clients:   number of clients (partitions)
        settings:  ``local_round`` settings (optimizer, learning_rate, loss, batch_size,
                   trainable, epochs, proximal_mu, seed)
        split, alpha, classes_per_client, split_seed: the partition (``partition.split_labels``)
        arena_bytes: the device's arena (None: exactly what the plan needs); a client whose
                   plan does not fit refuses to train
        faults:    {partition: kind} clients made to fail, for tests and demonstrations:
                   "nan" scales the client's inputs to 1e30 so that its steps overflow (the
                   numeric guard refuses them); "die" ends the process of the client's round
                   (its forked process, or its board's emulator) in the middle of the
                   round; "raise" makes its round raise ZeroDivisionError; and hostile
                   replies the server's guard must refuse (``guard.py``): "huge" sends its
                   first tensor as float64 1e300, "shape" its last tensor with shape (1,),
                   "examples" num-examples 1e308
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
        return _load(self.data)

    def parts(self):
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
