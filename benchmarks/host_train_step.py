"""Host cost of one train step: microtrain's C core against PyTorch, measured in the same run.

    python benchmarks/host_train_step.py [--steps 300] [--repeats 5] [--markdown]

For each MLP below, the same weights, batch, optimizer and loss go to
  - microtrain through TrainSession.train_step (numpy rows copied into the arena, one ctypes
    call, the result dict), and through the raw binding (_native.mt_session_train_step on
    rows already in the arena: the core's own cost plus one ctypes call);
  - PyTorch 2.13 on the CPU, single-threaded (torch.set_num_threads(1)) and with its default
    threads: zero_grad, forward, loss, backward, optimizer.step.
Each figure is the median over --repeats runs of --steps steps, in microseconds per step, and
the ratio column divides PyTorch single-threaded by microtrain's raw step (> 1: microtrain is
faster). The arena column is microtrain's whole training memory (weights, gradients, optimizer
state, activations) from mt_plan; PyTorch has no comparable figure. These are wall-clock times
on a shared machine: compare within a run, never across machines. Not run by the tests.
"""

import argparse
import ctypes
import statistics
import sys
import time

import numpy as np

import microtrain
from microtrain import layers, optimizers
from microtrain.backend import KIND_INPUT, _native

MODELS = (  # name, input features, hidden layers (units, activation), classes, batch
    ("digits 64-32-10", 64, ((32, "relu"),), 10, 16),
    ("mlp 256-128-64-10", 256, ((128, "relu"), (64, "tanh")), 10, 32),
    ("wide 784-256-10", 784, ((256, "relu"),), 10, 64),
)


def build(features, hidden, classes, seed=0):
    stack = [layers.Dense(units, activation=act) for units, act in hidden]
    stack += [layers.Dense(classes), layers.Softmax()]
    return microtrain.Sequential(stack, input_shape=(features,), seed=seed)


def median_us(run, steps, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        times.append((time.perf_counter() - start) / steps * 1e6)
    return statistics.median(times)


def microtrain_costs(model, x, y, steps, repeats):
    session = microtrain.TrainSession(model)
    session.compile(optimizer=optimizers.Adam(learning_rate=1e-3), loss="categorical_crossentropy",
                    batch_size=len(x))

    def facade(n):
        for _ in range(n):
            session.train_step(x, y)

    session.train_step(x, y)  # the targets now sit in the arena for the raw loop; train_step
    session._backend.write_rows(KIND_INPUT, 0, 0, x)  # reads x in place, so copy the rows
    handle, rows, loss = session._backend._session, len(x), ctypes.c_float()
    step = _native.mt_session_train_step

    def raw(n):
        for _ in range(n):
            step(handle, rows, ctypes.byref(loss))

    result = (median_us(facade, steps, repeats), median_us(raw, steps, repeats),
              session.memory_plan()["total_bytes"])
    session.close()
    return result


def torch_cost(model, x, y, steps, repeats, threads):
    import torch

    torch.set_num_threads(threads)
    weights = model.get_weights()
    modules = []
    for w, b, layer in zip(weights[0::2], weights[1::2], [l for l in model.layers if l.__class__.__name__ == "Dense"]):
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
        modules.append(linear)
        act = getattr(layer, "activation", None)
        if act == "relu":
            modules.append(torch.nn.ReLU())
        elif act == "tanh":
            modules.append(torch.nn.Tanh())
    net = torch.nn.Sequential(*modules)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()  # softmax + CE from logits, as microtrain fuses it
    tx, labels = torch.from_numpy(x), torch.from_numpy(y.argmax(1))

    def run(n):
        for _ in range(n):
            opt.zero_grad()
            loss_fn(net(tx), labels).backward()
            opt.step()

    run(10)
    return median_us(run, steps, repeats)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    import torch

    default_threads = torch.get_num_threads()
    rng = np.random.default_rng(0)
    header = ("model", "batch", "microtrain facade us", "microtrain core us", "torch 1 thread us",
              "torch %d threads us" % default_threads, "torch1 / core", "arena bytes")
    rows = []
    for name, features, hidden, classes, batch in MODELS:
        model = build(features, hidden, classes)
        x = rng.standard_normal((batch, features)).astype(np.float32)
        y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, batch)]
        facade, core, arena = microtrain_costs(model, x, y, args.steps, args.repeats)
        t1 = torch_cost(model, x, y, args.steps, args.repeats, 1)
        tn = torch_cost(model, x, y, args.steps, args.repeats, default_threads)
        rows.append((name, str(batch), "%.1f" % facade, "%.1f" % core, "%.1f" % t1, "%.1f" % tn,
                     "%.2f" % (t1 / core), str(arena)))
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        for row in rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
