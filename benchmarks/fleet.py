"""Fleet benchmark: microtrain clients against Flower's own PyTorch client, same everything.

    python benchmarks/fleet.py [--clients 10 100 1000] [--rounds 3] [--markdown]

Both fleets run on Flower's simulation engine (Ray, 2 CPUs, one client per CPU), with
Flower's FedAvg, the same model (64 -> 32 relu -> 10 softmax, the same initial weights),
the same data (scikit-learn's digits, 1500 rows to train, 297 held out), the same seeded
Dirichlet(0.5) split (microtrain.federated.partition), the same local training (SGD
lr 0.2, batch 16, one epoch, seeded shuffles) and the same centralised evaluation after
every round. The PyTorch client is the one of Flower's quickstart: a torch.nn module,
torch.optim.SGD, a DataLoader, state_dict arrays in an ArrayRecord (torch 2.13 CPU, one
thread per client).

Measured per fleet size:
  * seconds per round: the server's wall time of a round (train on every client,
    aggregate, evaluate), mean over the rounds after the first;
  * peak memory of the whole simulation: the largest sum, sampled every 0.2 s, of the
    resident set (RSS) of this process and every process under it (Ray's GCS, raylet,
    workers), less this process's RSS before the fleet started;
  * memory per client: what one client's round costs a process that already has the
    runtime imported: microtrain, the arena of mt_plan (the device's RAM) and the peak
    RSS growth of a fresh process running one round; PyTorch, the peak RSS growth of a
    fresh process running one round after `import torch` (tensors, autograd graph,
    optimizer, DataLoader);
  * final accuracy on the held-out rows.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "py_facade"))

LEARNING_RATE = 0.2
BATCH = 16
_PAGE = os.sysconf("SC_PAGE_SIZE")


# ------------------------------------------------------------------ memory of a process tree


def _children():
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                parents.setdefault(int(fields[1]), []).append(int(name))
            except OSError:
                continue
    return parents


def tree_rss(root):
    """Bytes resident in ``root`` and every process under it."""
    parents, total, stack = _children(), 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open("/proc/%d/statm" % pid) as handle:
                total += int(handle.read().split()[1]) * _PAGE
        except OSError:
            pass
        stack.extend(parents.get(pid, ()))
    return total


class PeakSampler(threading.Thread):
    def __init__(self):
        threading.Thread.__init__(self, daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, tree_rss(os.getpid()))
            self.stop.wait(0.2)


# ------------------------------------------------------------------ data and model


def prepare(folder):
    from sklearn.datasets import load_digits
    import microtrain
    from microtrain import layers
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[data.target]
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    path = os.path.join(folder, "digits.npz")
    np.savez(path, x=x[:1500], y=y[:1500], x_eval=x[1500:], y_eval=y[1500:])
    model = microtrain.Sequential([layers.Dense(32, activation="relu"), layers.Dense(10),
                                   layers.Softmax()], input_shape=(64,), seed=0)
    image = os.path.join(folder, "digits.mtm")
    model.save(image)
    return image, path, [np.asarray(w) for w in model.get_weights()]


# ------------------------------------------------------------------ the PyTorch fleet


def torch_fleet(data_path, weights, clients, rounds, seed=0):
    """Flower's quickstart-style PyTorch ClientApp; returns (seconds per round, accuracy)."""
    import random
    import torch
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.serverapp.strategy import FedAvg
    from flwr.simulation import run_simulation
    from microtrain.federated.partition import split_labels

    def net():
        model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 10))
        with torch.no_grad():
            for parameter, value in zip(model.parameters(), weights):
                parameter.copy_(torch.from_numpy(value))
        return model

    cache = {}

    def partition_rows(partition):
        if "parts" not in cache:
            arrays = np.load(data_path)
            cache["x"], cache["y"] = arrays["x"], arrays["y"].argmax(1)
            cache["parts"] = split_labels(cache["y"], clients, "dirichlet", 0.5, seed=seed)
        index = cache["parts"][partition]
        return torch.from_numpy(cache["x"][index]), torch.from_numpy(cache["y"][index])

    app = ClientApp()

    @app.train()
    def train(message, context):
        torch.set_num_threads(1)
        partition = int(context.node_config["partition-id"])
        model = net()
        model.load_state_dict(message.content["arrays"].to_torch_state_dict())
        x, y = partition_rows(partition)
        generator = torch.Generator().manual_seed(seed * 100003 + partition)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                             batch_size=BATCH, shuffle=True,
                                             generator=generator)
        optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
        total = 0.0
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
        content = RecordDict({"arrays": ArrayRecord(model.state_dict()),
                              "metrics": MetricRecord({"num-examples": len(x),
                                                       "train-loss": total / len(x)})})
        return Message(content=content, reply_to=message)

    times, accuracy = {}, {}
    server = ServerApp()

    @server.main()
    def main(grid, context):
        random.seed(seed)
        arrays = np.load(data_path)
        x_eval = torch.from_numpy(arrays["x_eval"])
        y_eval = arrays["y_eval"].argmax(1)
        start = time.perf_counter()

        def evaluate(server_round, record):
            times[server_round] = time.perf_counter() - start
            model = net()
            model.load_state_dict(record.to_torch_state_dict())
            with torch.no_grad():
                accuracy[server_round] = float(np.mean(
                    model(x_eval).argmax(1).numpy() == y_eval))
            return MetricRecord({"accuracy": accuracy[server_round]})

        FedAvg(fraction_evaluate=0.0, min_available_nodes=clients).start(
            grid=grid, initial_arrays=ArrayRecord(net().state_dict()), num_rounds=rounds,
            evaluate_fn=evaluate)

    run_simulation(server_app=server, client_app=app, num_supernodes=clients,
                   backend_config={"client_resources": {"num_cpus": 1.0, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": 2, "num_gpus": 0,
                                                 "include_dashboard": False}})
    per_round = [times[r] - times[r - 1] for r in range(2, rounds + 1)]
    return float(np.mean(per_round)), accuracy[rounds]


def microtrain_fleet(image, data_path, clients, rounds):
    from microtrain.federated.fleet import run_fleet
    result = run_fleet(image, data_path, clients=clients, rounds=rounds, split="dirichlet",
                       alpha=0.5, seed=0, learning_rate=LEARNING_RATE, batch_size=BATCH)
    per_round = [row["seconds"] for row in result.rounds[2:]]
    return float(np.mean(per_round)), result.accuracy, result.arena_bytes


# ------------------------------------------------------------------ one client's memory

_ONE_ROUND = {
    "microtrain": """
import resource, sys, numpy as np
sys.path.insert(0, %(py)r)
import microtrain
from microtrain.federated import local_round
x = np.load(%(data)r)["x"][:150]; y = np.load(%(data)r)["y"][:150]
settings = dict(optimizer="sgd", learning_rate=0.2, loss="categorical_crossentropy",
                batch_size=16, trainable=-1, epochs=1, proximal_mu=0.0, seed=0)
with microtrain.TrainSession(%(image)r) as s:  # warm the library
    local_round.compile_session(s, settings)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with microtrain.TrainSession(%(image)r) as s:
    local_round.compile_session(s, settings)
    w = s.get_weights()
    local_round.train_round(s, w, x, y, settings, 1, 0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
""",
    "torch": """
import resource, numpy as np, torch
torch.set_num_threads(1)
x = torch.from_numpy(np.load(%(data)r)["x"][:150]); y = torch.from_numpy(np.load(%(data)r)["y"][:150].argmax(1))
m0 = torch.nn.Sequential(torch.nn.Linear(4, 4)); m0(torch.zeros(1, 4)).sum().backward()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.2)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16,
                                     shuffle=True)
for a, b in loader:
    opt.zero_grad(); torch.nn.functional.cross_entropy(model(a), b).backward(); opt.step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
""",
}


def one_client_kib(kind, image, data_path):
    code = _ONE_ROUND[kind] % {"py": os.path.join(ROOT, "py_facade"), "data": data_path,
                               "image": image}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.split()[-1])


# ------------------------------------------------------------------ main


def measure(kind, image, data_path, weights, clients, rounds):
    base = tree_rss(os.getpid())
    sampler = PeakSampler()
    sampler.start()
    start = time.perf_counter()
    try:
        if kind == "microtrain":
            per_round, accuracy, _ = microtrain_fleet(image, data_path, clients, rounds)
        else:
            per_round, accuracy = torch_fleet(data_path, weights, clients, rounds)
    finally:
        sampler.stop.set()
        sampler.join()
    return {"client": kind, "clients": clients, "round_s": per_round,
            "total_s": time.perf_counter() - start, "peak_mib": (sampler.peak - base) / 2**20,
            "accuracy": accuracy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("microtrain", "torch"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as folder:
        image, data_path, weights = prepare(folder)
        from microtrain import TrainSession
        from microtrain.federated import local_round
        with TrainSession(image) as session:
            local_round.compile_session(session, dict(
                optimizer="sgd", learning_rate=LEARNING_RATE,
                loss="categorical_crossentropy", batch_size=BATCH, trainable=-1, epochs=1,
                proximal_mu=0.0, seed=0))
            arena = session.memory_plan()["total_bytes"]
        per_client = {"microtrain": one_client_kib("microtrain", image, data_path),
                      "torch": one_client_kib("torch", image, data_path)}
        rows = []
        for clients in args.clients:
            for kind in ("microtrain", "torch"):
                if args.only and kind != args.only:
                    continue
                row = measure(kind, image, data_path, weights, clients, args.rounds)
                row["client_kib"] = per_client[kind]
                rows.append(row)
                print("# %s" % row, file=sys.stderr, flush=True)
    header = ("client", "clients", "s / round", "total s", "peak MiB (simulation)",
              "one client's round, KiB", "accuracy")
    lines = []
    for row in rows:
        client_text = "%d (arena %d B)" % (row["client_kib"], arena) \
            if row["client"] == "microtrain" else "%d" % row["client_kib"]
        lines.append((row["client"], row["clients"], "%.2f" % row["round_s"],
                      "%.1f" % row["total_s"], "%.0f" % row["peak_mib"], client_text,
                      "%.3f" % row["accuracy"]))
    print_table(header, lines, args.markdown)


def print_table(header, lines, markdown):
    """The rows under their header: a Markdown table, or columns separated by two spaces"""
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(str(c) for c in line) + " |")
    else:
        for line in [header] + lines:
            print("  ".join(str(c) for c in line))


if __name__ == "__main__":
    main()
