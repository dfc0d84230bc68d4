"""Fleet benchmark: Flower's deployment engine on loopback beside its simulation engine.

    python benchmarks/fleet_deployment.py [--clients 10 50] [--sampled 10] [--rounds 3]
        [--markdown]

The same fleet on both engines: scikit-learn's digits (1500 rows to train, 297 held out),
the 64 -> 32 relu -> 10 softmax model, a seeded Dirichlet(0.5) split, FedAvg, SGD 0.2,
batch 16, one local epoch, evaluation on the server after every round; at most
``--sampled`` clients (10) train in a round (Flower's fraction_train = sampled / clients).

* simulation: ``microtrain fleet`` (``run_fleet``: Flower's Ray engine, 2 CPUs, one client
  per CPU);
* deployment: ``microtrain fleet --deployment`` (``run_deployment``): a SuperLink and one
  SuperNode per client as processes on 127.0.0.1 (plain HTTP), the Flower App submitted
  with ``flwr run``; each message runs in a ClientApp process of its own, as Flower's
  subprocess isolation does.

Measured per fleet size and engine:
  * rounds per minute: 60 / the mean of the server's seconds per round (rounds 1..R);
  * start s: deployment only, from nothing to the run submitted (SuperLink healthy, every
    SuperNode started);
  * payload per round: the bytes of the tensors sent to and received from the clients in
    a round (the server's count; the same on both engines);
  * wire bytes per round: deployment only, the bytes between the SuperNodes and the
    SuperLink in both directions, counted on the wire by a relay the SuperNodes connect
    through (``microtrain.federated.traffic``: HTTP, protobuf, the nodes' polling and
    heartbeats), from the run's submission to its end, divided by the rounds (so the
    partition query every run starts with is spread over them);
  * the global weights' crc32, which must be the same on both engines.

A deployment costs about 190 MiB a SuperNode (its SuperNode and SuperExec processes, PSS)
and 100 MiB a client training in the round (its ClientApp process): the benchmark refuses
to start one that would not fit in the memory available, and marks its processes the
first the OOM killer takes. Why at most 10 train at once: every message of a deployment
starts a ClientApp process (Python, Flower, numpy, microtrain: about 2 s of CPU each
here), which must claim its task within Flower's 30 s; 50 starting at once on 2 cores
did not, and their retries piled up (385 ClientApp processes) until memory ran out.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "py_facade"))
from fleet import prepare, print_table  # noqa: E402 (the digits task, the table)

LEARNING_RATE = 0.2
BATCH = 16


def fleet_arguments(image, data, clients, sampled):
    return dict(model=image, data=data, clients=clients, split="dirichlet", alpha=0.5,
                seed=0, learning_rate=LEARNING_RATE, batch_size=BATCH,
                fraction=min(1.0, float(sampled) / clients))


# A deployment's memory (PSS measured here): a SuperNode and its SuperExec, 96 + 90 MiB;
# a ClientApp process, 96 MiB; the SuperLink and the ServerApp, 100 MiB each
MIB_PER_SUPERNODE = 190
MIB_PER_CLIENT = 100


def _available_mib():
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return None


def measure(engine, image, data, clients, sampled, rounds):
    from microtrain.federated.deployment import run_deployment
    from microtrain.federated.fleet import run_fleet
    start = time.perf_counter()
    if engine == "simulation":
        result = run_fleet(rounds=rounds, **fleet_arguments(image, data, clients, sampled))
    else:
        result = run_deployment(rounds=rounds, round_timeout=1800, count_traffic=True,
                                **fleet_arguments(image, data, clients, sampled))
    total = time.perf_counter() - start
    per_round = float(np.mean([row["seconds"] for row in result.rounds[1:]]))
    payload = float(np.mean([row["bytes_down"] + row["bytes_up"]
                             for row in result.rounds[1:]]))
    row = {"engine": engine, "clients": clients, "sampled": min(sampled, clients),
           "rounds_per_minute": 60.0 / per_round,
           "round_s": per_round, "total_s": total, "payload": payload,
           "crc32": result.crc32, "start_s": None, "wire": None}
    facts = getattr(result, "deployment", None)
    if facts:
        row["start_s"] = facts["startup_seconds"]
        start, end = facts["fleet_traffic_at_start"], facts["fleet_traffic"]
        row["wire"] = (end["to_server"] + end["to_clients"] - start["to_server"]
                       - start["to_clients"]) / float(rounds)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--sampled", type=int, default=10,
                        help="clients that train in a round, at most")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("simulation", "deployment"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # Should memory run out, the kernel takes this benchmark's processes (they inherit it)
    # before anything else on the machine.
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")
    need = max(args.clients) * MIB_PER_SUPERNODE + args.sampled * MIB_PER_CLIENT + 200
    available = _available_mib()
    if args.only != "simulation" and available is not None and available < need * 1.2:
        sys.exit("fleet_deployment: %d SuperNodes need about %d MiB, %d are available"
                 % (max(args.clients), need, available))
    rows = []
    with tempfile.TemporaryDirectory(prefix="fleet-deployment-bench-") as folder:
        image, data, _ = prepare(folder)
        for clients in args.clients:
            for engine in ("simulation", "deployment"):
                if args.only and engine != args.only:
                    continue
                row = measure(engine, image, data, clients, args.sampled, args.rounds)
                rows.append(row)
                print("# %s" % row, file=sys.stderr, flush=True)
    header = ("engine", "SuperNodes", "trained / round", "rounds / min", "s / round",
              "start s", "total s", "payload / round, B", "wire / round, B", "crc32")
    lines = []
    for row in rows:
        lines.append((row["engine"], row["clients"], row["sampled"],
                      "%.1f" % row["rounds_per_minute"],
                      "%.1f" % row["round_s"],
                      "-" if row["start_s"] is None else "%.0f" % row["start_s"],
                      "%.0f" % row["total_s"], "%.0f" % row["payload"],
                      "-" if row["wire"] is None else "%.0f" % row["wire"],
                      "0x%08x" % row["crc32"]))
    print_table(header, lines, args.markdown)


if __name__ == "__main__":
    main()
