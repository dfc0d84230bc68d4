"""``microtrain.federated``: microtrain clients for Flower, and simulated fleets of them.

CPython only (the ``federated`` extra, ``pip install '.[federated]'`` in microtrain's source
tree: Flower with its Ray simulation engine);
nothing in the core, the session or MicroPython needs it. Aggregation is Flower's: its own
strategies (FedAvg, FedAvgM, FedProx, FedAdam, FedMedian, ...) run on the server, and
microtrain never grows a server of its own.

    from microtrain.federated import run_fleet
    result = run_fleet("digits.mtm", "digits.npz", clients=100, rounds=20,
                       strategy="fedavg", split="dirichlet", alpha=0.5, seed=0)
    print(result.table())

* ``client``: the ``ClientApp`` around a ``TrainSession`` (one local round per message,
  device-sized batch and arena, replies with the trained tensors only);
* ``local_round``: the round every client runs, MicroPython-safe, so an emulated board runs
  the same file (``device``: MicroPython firmware under QEMU) and sends the same bits;
* ``server``: the ``ServerApp`` over Flower's strategies, with seeded, ordered replies (the
  same global weights run after run) and a guard that drops non-finite updates;
* ``partition``: seeded non-IID splits (by label, by Dirichlet α);
* ``fleet``: ``run_fleet`` and the ``microtrain fleet`` command on Flower's simulation engine;
* ``flower_app``: the same fleet as a Flower App (``examples/flower_app``, ``flwr run``);
* ``deployment``: ``run_deployment`` and ``microtrain fleet --deployment`` on Flower's
  deployment engine (a SuperLink and SuperNodes on 127.0.0.1; ``processes`` owns them);
* ``serial_protocol``, ``gateway``, ``board_agent``, ``board_emulator``: a board on a
  serial line behind a gateway SuperNode — the frames, the gateway's round, the board's
  side (MicroPython), and a QEMU board with its UART on a TCP socket.
"""

from .task import FleetTask


def run_fleet(*args, **kwargs):
    """``microtrain.federated.fleet.run_fleet`` (imported on first use: it imports Ray)."""
    from .fleet import run_fleet as run
    return run(*args, **kwargs)


__all__ = ["FleetTask", "run_fleet"]
