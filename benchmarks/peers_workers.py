"""One framework training one prepared case, in a process of its own (benchmarks/peers.py
starts each as ``python benchmarks/peers_workers.py FRAMEWORK CASE_DIR OPTIMIZER STEPS
BLOCKS``) and printing one JSON line: the losses of the first steps, the milliseconds per
step of each timed block, the peak RSS and, for microtrain, the arena.

Every framework runs single-threaded (peers.py also sets OMP_NUM_THREADS=1 and friends),
through its Python API, one full step per call as a user would write it:
  microtrain  TrainSession.train_step(x, one_hot)                   (loss returned)
  torch       zero_grad; loss = CE(model(x), labels); backward; step; loss.item()
  ort         module(x, labels); optimizer.step(); module.lazy_reset_grad()
  onert       session.train_step([x], [one_hot])                    (loss returned)
"""

import json
import os
import resource
import sys
import time

import numpy as np

LOSS_STEPS = 3  # losses reported for the agreement check: the first steps, all frameworks
LEARNING_RATE = {"sgd": 0.01, "adam": 0.001}
ADAM_EPSILON = 1e-6  # ONNX Runtime AdamW's (generate_artifacts) default; every framework uses it


def load_case(case_dir):
    with open(os.path.join(case_dir, "case.json")) as handle:
        case = json.load(handle)
    data = np.load(os.path.join(case_dir, "data.npz"))
    return case, data["x"], data["onehot"], data["labels"]


def timed(step, batches, steps, blocks):
    """(losses of the first LOSS_STEPS steps, ms per step of each block). The untimed
    warm-up is the loss steps plus as many again."""
    losses = [float(step(k % batches)) for k in range(LOSS_STEPS)]
    for k in range(LOSS_STEPS):
        step(k % batches)
    per_block = []
    for _ in range(blocks):
        start = time.perf_counter()
        for k in range(steps):
            step(k % batches)
        per_block.append((time.perf_counter() - start) * 1e3 / steps)
    return losses, per_block


def run_microtrain(case_dir, optimizer, steps, blocks):
    import microtrain
    from microtrain import optimizers

    case, x, onehot, _ = load_case(case_dir)
    chosen = (optimizers.SGD(learning_rate=LEARNING_RATE["sgd"]) if optimizer == "sgd"
              else optimizers.Adam(learning_rate=LEARNING_RATE["adam"], epsilon=ADAM_EPSILON))
    session = microtrain.TrainSession(os.path.join(case_dir, "model.mtm"))
    session.compile(chosen, "categorical_crossentropy", batch_size=case["batch"])
    xs = [np.ascontiguousarray(b) for b in x]
    ys = [np.ascontiguousarray(b) for b in onehot]

    def step(k):
        return session.train_step(xs[k], ys[k])["loss"][0]

    losses, per_block = timed(step, len(xs), steps, blocks)
    return {"losses": losses, "ms": per_block, "arena": session.memory_plan()["total_bytes"]}


def run_torch(case_dir, optimizer, steps, blocks):
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import peers_models

    case, x, _, labels = load_case(case_dir)
    weights = list(np.load(os.path.join(case_dir, "weights.npz")).values())
    model = peers_models.torch_model(case["model"], weights)
    chosen = (torch.optim.SGD(model.parameters(), lr=LEARNING_RATE["sgd"]) if optimizer == "sgd"
              else torch.optim.Adam(model.parameters(), lr=LEARNING_RATE["adam"], eps=ADAM_EPSILON))
    loss_fn = torch.nn.CrossEntropyLoss()
    xs = [torch.from_numpy(np.ascontiguousarray(b.transpose(0, 3, 1, 2) if b.ndim == 4 else b))
          for b in x]
    ys = [torch.from_numpy(b) for b in labels]

    def step(k):
        chosen.zero_grad()
        loss = loss_fn(model(xs[k]), ys[k])
        loss.backward()
        chosen.step()
        return loss.item()

    losses, per_block = timed(step, len(xs), steps, blocks)
    return {"losses": losses, "ms": per_block}


def run_ort(case_dir, optimizer, steps, blocks):
    import onnxruntime
    from onnxruntime.training.api import CheckpointState, Module, Optimizer

    case, x, _, labels = load_case(case_dir)
    artifacts = os.path.join(case_dir, "ort-" + optimizer)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    state = CheckpointState.load_checkpoint(os.path.join(artifacts, "checkpoint"))
    module = Module(os.path.join(artifacts, "training_model.onnx"), state,
                    os.path.join(artifacts, "eval_model.onnx"), device="cpu",
                    session_options=options)
    chosen = Optimizer(os.path.join(artifacts, "optimizer_model.onnx"), module)
    chosen.set_learning_rate(LEARNING_RATE[optimizer])
    module.train()
    xs = [np.ascontiguousarray(b.transpose(0, 3, 1, 2) if b.ndim == 4 else b) for b in x]
    ys = [np.ascontiguousarray(b) for b in labels]

    def step(k):
        loss = module(xs[k], ys[k])
        chosen.step()
        module.lazy_reset_grad()
        return loss

    losses, per_block = timed(step, len(xs), steps, blocks)
    return {"losses": losses, "ms": per_block}


def run_onert(case_dir, optimizer, steps, blocks):
    import contextlib
    import io

    from onert.experimental.train import losses as onert_losses
    from onert.experimental.train import optimizer as onert_optimizers
    from onert.experimental.train import session

    case, x, onehot, _ = load_case(case_dir)
    trainer = session(os.path.join(case_dir, "model.tflite"))
    chosen = (onert_optimizers.SGD(learning_rate=LEARNING_RATE["sgd"]) if optimizer == "sgd"
              else onert_optimizers.Adam(learning_rate=LEARNING_RATE["adam"],
                                         epsilon=ADAM_EPSILON))
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.compile(optimizer=chosen, loss=onert_losses.CategoricalCrossentropy(),
                        batch_size=case["batch"])
    xs = [np.ascontiguousarray(b) for b in x]
    ys = [np.ascontiguousarray(b) for b in onehot]

    def step(k):
        return trainer.train_step([xs[k]], [ys[k]])["loss"][0]

    losses, per_block = timed(step, len(xs), steps, blocks)
    return {"losses": losses, "ms": per_block}


RUNNERS = {"microtrain": run_microtrain, "torch": run_torch, "ort": run_ort, "onert": run_onert}


def main(argv):
    framework, case_dir, optimizer, steps, blocks = argv
    result = RUNNERS[framework](case_dir, optimizer, int(steps), int(blocks))
    result["rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stdout.flush()
    print("PEERS-RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
