"""microtrain against its peers, one train step at a time, in one run.

    python benchmarks/peers.py [--rounds 5] [--steps N] [--models a,b] [--optimizers sgd,adam]
                               [--frameworks microtrain,torch,ort,onert] [--markdown]

The same models (benchmarks/peers_models.py), initial weights (microtrain's, seed 0), data,
batch sizes, loss (softmax + categorical cross-entropy) and optimizers (SGD lr 0.01; Adam lr
0.001, eps 1e-6, ONNX Runtime's AdamW default) train in
  - microtrain through its Python facade (TrainSession.train_step), the core built Release;
  - PyTorch 2.13 on the CPU;
  - ONNX Runtime training 1.19.2, on artifacts generated from the same PyTorch model
    (torch.onnx.export, then onnxruntime.training.artifacts.generate_artifacts; its Adam is
    AdamW with weight decay 0, which is Adam);
  - onert (onert.experimental.train), on the .tflite microtrain exports of the same model
    (session.export_model_for_inference), batch-1 model, batch size given at compile.
Every framework runs single-threaded, each case in a fresh process, and the processes are
interleaved: round r runs every framework once on every case (in a rotating order) before
round r+1 starts. A process warms up, then times --blocks blocks of --steps steps; its figure
is the median block, and the table shows the median over rounds (ms per step), microtrain's
speed-up over each peer (the median over rounds of peer ms / microtrain ms of the same round,
whose two processes ran seconds apart: a slow period of a shared machine, which lasts minutes,
slows both sides of a round's ratio, where it may hit one side's median alone; > 1: microtrain
is faster), GFLOP/s
(2 x the MACs of peers_models.macs_per_step per second), each process's peak RSS in MiB and
microtrain's arena (mt_plan's total bytes: weights, gradients, optimizer state, activations).

Agreement: every framework's losses of the first three steps (same weights, same batches)
must equal microtrain's within a relative LOSS_RTOL (SGD) or ADAM_LOSS_RTOL (Adam), so a
fast but wrong kernel cannot win; a framework that disagrees is marked and the command exits
1. The numbers are wall-clock on a shared machine: compare within one run.

Set-up: bash benchmarks/setup_peers.sh (a separate venv, build/bench-venv: ONNX Runtime
training needs onnx<=1.17, which must not meet the test venv's onnx). Not run by the tests.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peers_models  # noqa: E402

FRAMEWORKS = ("microtrain", "torch", "ort", "onert")
LABELS = {"microtrain": "microtrain", "torch": "PyTorch", "ort": "ORT training", "onert": "onert"}
LOSS_RTOL = 1e-4       # SGD: every framework's first three losses, relative to microtrain's
ADAM_LOSS_RTOL = 1e-3  # Adam: onert's Adam departs from PyTorch's formula by up to ~1e-4
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "NUM_THREADS": "1"}  # NUM_THREADS: onert's config
DEFAULT_STEPS = {"tiny-mlp-b1": 2000, "tiny-mlp-b32": 1000, "mlp-784-128-10": 100,
                 "cnn-28x28": 20, "depthwise-stack": 20, "digits-mlp": 1000, "digits-cnn": 200}


# ---------------------------------------------------------------- preparing the cases

def prepare(work, names, optimizers):
    """Write each case's files under work/<model>/: model.mtm, model.tflite, weights.npz,
    data.npz, case.json and ORT's artifacts (ort-sgd/, ort-adam/). Runs in the bench venv."""
    import numpy as np
    import torch

    import microtrain

    for name in names:
        directory = os.path.join(work, name)
        os.makedirs(directory, exist_ok=True)
        shape, _, batch = peers_models.MODELS[name]
        model = peers_models.microtrain_model(name)
        model.save(os.path.join(directory, "model.mtm"))
        weights = model.get_weights()
        np.savez(os.path.join(directory, "weights.npz"), *weights)
        x, onehot, labels = peers_models.dataset(name)
        np.savez(os.path.join(directory, "data.npz"), x=x, onehot=onehot, labels=labels)
        with microtrain.TrainSession(os.path.join(directory, "model.mtm")) as session:
            session.compile("sgd", "categorical_crossentropy", batch_size=1)
            session.export_model_for_inference(os.path.join(directory, "model.tflite"))
        torch_model = peers_models.torch_model(name, weights)
        sample = torch.from_numpy(np.ascontiguousarray(
            x[0].transpose(0, 3, 1, 2) if x.ndim == 5 else x[0]))
        onnx_path = os.path.join(directory, "model.onnx")
        torch.onnx.export(torch_model, sample, onnx_path, input_names=["input"],
                          output_names=["logits"], export_params=True, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, opset_version=17,
                          dynamo=False)
        for optimizer in optimizers:
            ort_artifacts(onnx_path, os.path.join(directory, "ort-" + optimizer), optimizer)
        with open(os.path.join(directory, "case.json"), "w") as handle:
            json.dump({"model": name, "batch": batch, "shape": list(shape),
                       "macs": peers_models.macs_per_step(name, batch)}, handle)


def ort_artifacts(onnx_path, out_dir, optimizer):
    import onnx
    import onnxruntime
    from onnxruntime.training import artifacts

    onnxruntime.set_default_logger_severity(3)

    os.makedirs(out_dir, exist_ok=True)
    model = onnx.load(onnx_path)
    trained = [init.name for init in model.graph.initializer]
    artifacts.generate_artifacts(
        model, requires_grad=trained, frozen_params=[],
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.SGD if optimizer == "sgd" else artifacts.OptimType.AdamW,
        artifact_directory=out_dir)


# ---------------------------------------------------------------- running them

def worker_env(lib):
    env = dict(os.environ)
    env.update(THREAD_ENV)
    env["PYTHONPATH"] = os.path.join(REPO, "py_facade") + os.pathsep + env.get("PYTHONPATH", "")
    env["MICROTRAIN_LIB"] = lib
    return env


def run_worker(python, env, framework, case_dir, optimizer, steps, blocks):
    command = [python, os.path.join(HERE, "peers_workers.py"), framework, case_dir, optimizer,
               str(steps), str(blocks)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("PEERS-RESULT "):
            result = json.loads(line[len("PEERS-RESULT "):])
            result["ms_median"] = statistics.median(result["ms"])
            return result
    return {"error": (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]}


def measure(args, python, env):
    cases = [(name, opt) for name in args.models for opt in args.optimizers]
    results = {(name, opt, fw): [] for name, opt in cases for fw in args.frameworks}
    for round_index in range(args.rounds):
        for case_index, (name, opt) in enumerate(cases):
            shift = (round_index + case_index) % len(args.frameworks)
            order = args.frameworks[shift:] + args.frameworks[:shift]
            for framework in order:
                steps = args.steps or DEFAULT_STEPS[name]
                result = run_worker(python, env, framework, os.path.join(args.work, name), opt,
                                    steps, args.blocks)
                results[(name, opt, framework)].append(result)
                if args.verbose:
                    print("round %d %s %s %s: %s" % (round_index + 1, name, opt, framework,
                                                     result.get("ms_median", result.get("error"))),
                          file=sys.stderr)
    return cases, results


def summarize(cases, results, frameworks):
    rows, failures = [], []
    for name, opt in cases:
        case = json.load(open(os.path.join(ARGS.work, name, "case.json")))
        row = {"model": name, "optimizer": opt, "batch": case["batch"], "macs": case["macs"]}
        reference = None
        for framework in frameworks:
            runs = [r for r in results[(name, opt, framework)] if "error" not in r]
            if not runs:
                errors = [r["error"] for r in results[(name, opt, framework)]]
                row[framework] = {"error": errors[0] if errors else "not run"}
                continue
            ms = statistics.median(r["ms_median"] for r in runs)
            entry = {"ms": ms, "rss_mib": max(r["rss_kib"] for r in runs) / 1024.0,
                     "gflops": 2.0 * case["macs"] / (ms * 1e-3) / 1e9, "losses": runs[0]["losses"],
                     "arena": runs[0].get("arena")}
            if framework == "microtrain":
                reference = entry["losses"]
            row[framework] = entry
        mt_runs = results[(name, opt, "microtrain")]  # main() keeps microtrain in the frameworks
        for framework in frameworks:  # each round's ratio (the lists are indexed by round)
            if framework == "microtrain" or "error" in row[framework]:
                continue
            ratios = [peer["ms_median"] / mt["ms_median"]
                      for peer, mt in zip(results[(name, opt, framework)], mt_runs)
                      if "error" not in peer and "error" not in mt]
            if ratios:
                row[framework]["speedup"] = statistics.median(ratios)
        tolerance = LOSS_RTOL if opt == "sgd" else ADAM_LOSS_RTOL
        for framework in frameworks:
            entry = row[framework]
            if "error" in entry or reference is None:
                continue
            worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(entry["losses"], reference))
            entry["agree"] = worst <= tolerance
            entry["loss_rtol"] = worst
            if not entry["agree"]:
                failures.append("%s %s %s: losses %s, microtrain %s (relative %.1e > %.0e)"
                                % (name, opt, framework, entry["losses"], reference, worst,
                                   tolerance))
        rows.append(row)
    return rows, failures


def format_rows(rows, frameworks, markdown):
    peers = [f for f in frameworks if f != "microtrain"]
    header = ["model", "batch", "opt."] + ["%s ms" % LABELS[f] for f in frameworks]
    header += ["vs %s" % LABELS[f] for f in peers]
    header += ["%s GFLOP/s" % LABELS[f] for f in frameworks]
    header += ["%s RSS MiB" % LABELS[f] for f in frameworks] + ["microtrain arena bytes"]
    lines = []
    for row in rows:
        mt = row.get("microtrain", {})
        cells = [row["model"], str(row["batch"]), row["optimizer"]]
        for f in frameworks:
            e = row[f]
            cells.append("error" if "error" in e else
                         ("%.3f" % e["ms"]) + ("" if e.get("agree", True) else " (disagrees)"))
        for f in peers:
            e = row[f]
            cells.append("-" if "speedup" not in e else "%.2f×" % e["speedup"])
        for f in frameworks:
            e = row[f]
            cells.append("-" if "error" in e else "%.2f" % e["gflops"])
        for f in frameworks:
            e = row[f]
            cells.append("-" if "error" in e else "%.0f" % e["rss_mib"])
        cells.append("-" if "error" in mt else "{:,}".format(mt["arena"]))
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|---|---:|---|" + "---:|" * (len(header) - 3)]
        out += ["| " + " | ".join(c) + " |" for c in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(header)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths))
                     for line in [header] + lines)


def build_library(build_dir):
    subprocess.run(["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DMT_BUILD_TESTS=OFF"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(build_dir, "micro_core", "libmicrotrain.so")


def main(argv=None):
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(peers_models.MODELS))
    parser.add_argument("--optimizers", default="sgd,adam")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=0, help="steps per block (0: per model)")
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--python", default=None,
                        help="interpreter with torch, onnxruntime-training and onert "
                             "(default: build/bench-venv/bin/python)")
    parser.add_argument("--lib", default=None, help="libmicrotrain.so (default: a Release build "
                        "in build/peers-lib)")
    parser.add_argument("--work", default=os.path.join(REPO, "build", "peers"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)
    ARGS = args = parser.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.optimizers = [o for o in args.optimizers.split(",") if o]
    args.frameworks = [f for f in args.frameworks.split(",") if f]
    for name in args.models:
        if name not in peers_models.MODELS:
            parser.error("unknown model %s (known: %s)" % (name, ", ".join(peers_models.MODELS)))
    if "microtrain" not in args.frameworks:
        parser.error("microtrain is the reference of the table: keep it in --frameworks")
    lib = args.lib or build_library(os.path.join(REPO, "build", "peers-lib"))
    env = worker_env(lib)
    if args.prepare_only:
        prepare(args.work, args.models, args.optimizers)
        return 0
    python = args.python or os.path.join(REPO, "build", "bench-venv", "bin", "python")
    if not os.path.exists(python):
        parser.error("%s is missing: run bash benchmarks/setup_peers.sh" % python)
    subprocess.run([python, os.path.abspath(__file__), "--prepare-only", "--lib", lib,
                    "--work", args.work, "--models", ",".join(args.models),
                    "--optimizers", ",".join(args.optimizers)], env=env, check=True)
    cases, results = measure(args, python, env)
    rows, failures = summarize(cases, results, args.frameworks)
    print("ms per train step through each framework's Python API, single thread, median of "
          "%d rounds x %d blocks; vs X = median over rounds of X ms / microtrain ms"
          % (args.rounds, args.blocks))
    print(format_rows(rows, args.frameworks, args.markdown))
    for row in rows:
        for f in args.frameworks:
            if "error" in row[f]:
                print("%s %s %s: %s" % (row["model"], row["optimizer"], f, row[f]["error"]))
    if failures:
        print("LOSSES DISAGREE:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
