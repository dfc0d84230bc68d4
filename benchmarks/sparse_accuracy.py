"""What sparse update costs in accuracy: head only, ``sparse_update``'s schemes under several
budgets, and the same layers updated whole, on held-out rows of a shifted task
(docs/memory.md, "Sparse update: accuracy").

    python benchmarks/sparse_accuracy.py [--case digits|kws|resnet ...]
                                         [--seeds 3] [--calibrated] [--json FILE]
                                         [--from-json FILE] [--plot PNG]

Every case is an int8 model whose last layers train in place (``convert(..., train_from=X,
int8_train=True)``: int8 weights with QAS, SGD; the new float head of ``new_head`` classes),
fine-tuned at one learning rate for every scheme (the same rows, order, steps and head
initialisation), and scored on rows it never trained on:

* ``digits``: the digits CNN of the int8 guide (tests/convert/fixtures/int8/
  digits_backbone_int8.tflite, pretrained on scikit-learn's digits 0-4 and quantized on them)
  adapted to digits 5-9 (60 % train, 40 % held out, split by the seed), from its first
  convolution, batch 16. A real shift: classes the backbone never saw.
* ``kws``, ``resnet`` (MLPerf Tiny's int8 reference files, from benchmarks/mlperf_tiny.py's
  last block), batch 1:
  a synthetic 10-class task, *textures in noise*. Each class is a random 4x4 patch of int8
  values (uniform over -128..127, all input channels, drawn from the seed) tiled over the
  input; a row of class c is its texture with each input element independently replaced,
  with probability ``1 - KEEP``, by a fresh uniform int8 value. The backbone never saw such
  inputs (a shift of the input distribution and of the label space: speech or photos -> a
  new sensor's patterns), the task is learnable (the texture survives in KEEP of the
  elements, and a tiled texture's statistics survive the global pooling before the head,
  which a random image's layout does not), and held-out rows are fresh noise draws of the
  same textures. KEEP and the learning rate are set per model, once for every scheme, so
  that head-only learns and stays off its ceiling; the comparison between schemes is fair.
  VWW's MobileNetV1 is not a case: its head stays at chance (10 %) on these inputs at every
  rate tried (0.02 to 1.0, 4x4 and 16x16 textures), so it measures nothing. Nor is the
  MobileNetV2-w0.35 of benchmarks/sparse_update.py: the committed file has random weights
  (Keras, no ImageNet weights here), its pooled features are the same for every input to
  1e-4, and every scheme stays at chance.

For each case and seed: the head alone ("all" of the last layer); for each budget of
``budgets``, ``sparse_update``'s scheme (tiny-training's heuristic) and its dense counterpart
(every layer the scheme names trained whole, weights and bias); with ``--calibrated``, also the
scheme the contribution picker chooses (``sparse_update(..., calibration=...)``). Each row
records the scheme, the arena its plan takes (batch as trained) and the held-out accuracy.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import microtrain

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import digits_int8  # noqa: E402
import mlperf_tiny as table  # noqa: E402

DIGITS = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8",
                      "digits_backbone_int8.tflite")
LOSS = "categorical_crossentropy"
PATCH = 4  # a class's texture: a random PATCH x PATCH int8 patch tiled over the input


def kib(*values):
    return tuple(1024 * value for value in values)


# The budgets: where sparse_update's scheme changes (its picks step from one to the next at
# these arena sizes; between two, it picks the lower one's scheme).
# name -> (file, train_from, classes, batch, learning rate, epochs, train rows a class,
#          held-out rows a class, KEEP (synthetic tasks), budgets in bytes)
CASES = {
    "digits": (DIGITS, "conv_a", 5, 16, 0.1, 12, None, None, None,
               kib(28, 56, 76, 80, 106)),
    "kws": (table.path_of("kws_ref_model.tflite"), "depthwise_conv2d_3", 10, 1, 0.05, 4, 12, 20,
            0.8, kib(24, 48, 56, 84, 88, 96)),
    "resnet": (table.path_of("pretrainedResnet_quant.tflite"), "conv2d_6", 10, 1, 0.01, 4, 12,
               20, 0.6, kib(56, 60, 76, 80)),
}


def model_of(case, seed):
    path, train_from, classes = CASES[case][:3]
    return microtrain.convert(path, train_from=train_from, int8_train=True, new_head=classes,
                              head_seed=seed)


def as_input(case, q):
    """int8 values q as the model's input: an int8 input's values as float32, a float
    input's dequantized through the file's own QUANTIZE (benchmarks/mlperf_tiny.py's)."""
    name = os.path.basename(CASES[case][0])
    int8_input, scale, zero_point = table.input_quantization(table.data_of(name))
    if int8_input:
        return q.astype(np.float32)
    return ((q.astype(np.float32) - zero_point) * scale).astype(np.float32)


def noise_task(case, shape, seed):
    """The structured-noise task (the module doc): (x, y, x_held, y_held)."""
    classes, _, _, _, train_rows, held_rows, keep = CASES[case][2:9]
    rng = np.random.default_rng(1000 + seed)
    patches = rng.integers(-128, 128, (classes, PATCH, PATCH, shape[-1]))
    reps = (1, -(-shape[0] // PATCH), -(-shape[1] // PATCH), 1)
    prototypes = np.tile(patches, reps)[:, :shape[0], :shape[1], :]

    def rows(per_class):
        labels = np.repeat(np.arange(classes), per_class)
        rng.shuffle(labels)
        noise = rng.integers(-128, 128, (len(labels),) + shape)
        kept = rng.random((len(labels),) + shape) < keep
        q = np.where(kept, prototypes[labels], noise)
        return as_input(case, q), np.eye(classes, dtype=np.float32)[labels]

    x, y = rows(train_rows)
    x_held, y_held = rows(held_rows)
    return x, y, x_held, y_held


def task(case, model, seed):
    if case == "digits":
        return digits_int8.digits_5_to_9(seed)  # the int8 guide's split
    return noise_task(case, tuple(model.input_shapes[0]), seed)


def dense_counterpart(scheme):
    """The same layers, each trained whole."""
    return {layer: "all" for layer, _ in scheme.items()}


def fine_tune(model, trainable, data, case, seed):
    """Train ``trainable`` with SGD (the case's rate, batch, epochs; rows in a seeded order);
    (held-out accuracy, arena bytes)."""
    batch, rate, epochs = CASES[case][3:6]
    x, y, x_held, y_held = data
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(rate), LOSS, batch_size=batch,
                        trainable=trainable)
        arena = session.memory_plan()["total_bytes"]
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            order = rng.permutation(len(x))
            for first in range(0, len(x) - batch + 1, batch):
                rows = order[first:first + batch]
                session.train_step(x[rows], y[rows])
        predicted = np.concatenate([session.infer(x_held[k:k + batch])[0].argmax(1)
                                    for k in range(0, len(x_held) - batch + 1, batch)])
        count = len(predicted)
    return float(np.mean(predicted == y_held[:count].argmax(1))), arena


def schemes(case, model, calibration=None):
    """[(label, budget, trainable)]: head only, then per budget sparse_update's scheme and
    its dense counterpart (and the calibrated picker's, given calibration rows)."""
    batch = CASES[case][3]
    with microtrain.TrainSession(model) as session:
        head = max(layer for layer, ops in enumerate(session._layer_ops)
                   if any(session._op_facts[op][3] for op in ops))
    found = [("head", None, {head: "all"})]
    for budget in CASES[case][9]:
        try:
            scheme = microtrain.sparse_update(model, budget, batch, "sgd", LOSS)
        except ValueError as error:
            print("  %s, budget %d: %s" % (case, budget, error))
            continue
        found.append(("sparse", budget, scheme))
        found.append(("full", budget, dense_counterpart(scheme)))
        if calibration is not None:
            picked = microtrain.sparse_update(model, budget, batch,
                                              microtrain.optimizers.SGD(CASES[case][4]), LOSS,
                                              calibration=calibration)
            found.append(("calibrated", budget, picked))
    return found


def describe(trainable):
    items = trainable.items()
    return ", ".join("%s:%s" % (layer, value) for layer, value in items)


def run_case(case, seeds, calibrated):
    rows = []
    for seed in range(seeds):
        model = model_of(case, seed)
        data = task(case, model, seed)
        calibration = None
        if calibrated:  # the picker measures on a split of the training rows, never held-out
            split = len(data[0]) * 3 // 4
            calibration = (data[0][split:], data[1][split:])
        for label, budget, trainable in schemes(case, model, calibration):
            start = time.time()
            accuracy, arena = fine_tune(model, trainable, data, case, seed)
            row = {"case": case, "seed": seed, "scheme": label, "budget": budget,
                   "trainable": describe(trainable), "arena": arena, "accuracy": accuracy}
            rows.append(row)
            print("  %-7s seed %d %-10s budget %-7s arena %7d  accuracy %.3f  [%s] %.0f s"
                  % (case, seed, label, budget, arena, accuracy, row["trainable"],
                     time.time() - start))
            sys.stdout.flush()
    return rows


def _means(rows):
    """{(case, scheme, budget): (mean accuracy over the seeds, arena, the trainable text of
    the first seed)}"""
    found = {}
    for row in rows:
        found.setdefault((row["case"], row["scheme"], row["budget"]), []).append(row)
    return dict((key, (float(np.mean([r["accuracy"] for r in group])), group[0]["arena"],
                       group[0]["trainable"])) for key, group in found.items())


def summary(rows):
    """Markdown, per case and budget: the mean accuracy of each scheme over the seeds, and
    sparse's difference to the same layers whole (the target: within 1 point) and its margin
    over head-only."""
    means = _means(rows)
    lines = ["| case | budget | sparse_update's scheme | arena | accuracy | same layers whole: "
             "arena, accuracy | sparse - whole | sparse - head only | calibrated scheme "
             "(seed 0's) | arena | accuracy |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for case in [c for c in CASES if any(key[0] == c for key in means)]:
        head, head_arena, _ = means[(case, "head", None)]
        seeds = len(set(r["seed"] for r in rows if r["case"] == case))
        lines.append("| %s, %d seeds | head only | %s | %s | %.1f %% | | | | | | |"
                     % (case, seeds, "the head whole", "{:,}".format(head_arena), 100 * head))
        for budget in sorted(set(key[2] for key in means if key[0] == case and key[2])):
            sparse, arena, scheme = means[(case, "sparse", budget)]
            full, full_arena, _ = means[(case, "full", budget)]
            cells = ["", "{:,}".format(budget), scheme, "{:,}".format(arena),
                     "%.1f %%" % (100 * sparse), "%s, %.1f %%" % ("{:,}".format(full_arena),
                                                                 100 * full),
                     "%+.1f" % (100 * (sparse - full)), "%+.1f" % (100 * (sparse - head))]
            if (case, "calibrated", budget) in means:
                picked, picked_arena, picked_scheme = means[(case, "calibrated", budget)]
                cells += [picked_scheme, "{:,}".format(picked_arena), "%.1f %%" % (100 * picked)]
            else:
                cells += ["", "", ""]
            lines.append("| %s |" % " | ".join(cells))
    return "\n".join(lines)


LABELS = {"digits": "digits CNN, int8 (0-4 -> 5-9), batch 16",
          "kws": "MLPerf Tiny KWS DS-CNN, int8 (textures in noise), batch 1",
          "resnet": "MLPerf Tiny IC ResNet-8, int8 (textures in noise), batch 1"}
SERIES = [("sparse", "sparse_update's scheme (heuristic)", "o-", "C0"),
          ("calibrated", "sparse_update(calibration=...)", "s--", "C2"),
          ("full", "the same layers updated whole", "^:", "C1")]
# tiny-training's published figure (Lin et al., "On-Device Training Under 256KB Memory",
# NeurIPS 2022, as issue 40 and docs/memory.md quote it): MobileNetV2-w0.35's sparse update
# on an STM32F746 in 141 KB of peak SRAM. Its accuracies are on VWW and transfer data sets,
# not these tasks, so it is marked as a memory line only.
TINY_TRAINING_KB = 141


def plot(rows, path):
    """Accuracy (mean over the seeds, the bar from the lowest to the highest) against the
    arena, one panel per case, tiny-training's published memory marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cases = [case for case in LABELS if any(row["case"] == case for row in rows)]
    figure, axes = plt.subplots(1, len(cases), figsize=(5.2 * len(cases), 4.2), squeeze=False)
    for axis, case in zip(axes[0], cases):
        mine = [row for row in rows if row["case"] == case]
        for label, legend, style, colour in [("head", "head only", "*", "k")] + SERIES:
            groups = {}
            for row in mine:
                if row["scheme"] == label:
                    groups.setdefault((row["arena"], row["trainable"]), []).append(
                        100 * row["accuracy"])
            if not groups:
                continue
            points = sorted((arena / 1024.0, np.mean(v), np.min(v), np.max(v))
                            for (arena, _), v in groups.items())
            x, y, low, high = (np.array(column) for column in zip(*points))
            axis.errorbar(x, y, yerr=[y - low, high - y], fmt=style, color=colour,
                          label=legend, capsize=3, markersize=9 if label == "head" else 6)
        axis.axvline(TINY_TRAINING_KB * 1000 / 1024.0, color="C3", linestyle="-.",
                     label="tiny-training, MobileNetV2-w0.35: 141 KB peak SRAM\n"
                           "(Lin et al. 2022; its accuracy is on other data)")
        axis.set_title(LABELS[case], fontsize=9)
        axis.set_xlabel("arena KiB (the core's plan)")
        axis.set_ylabel("held-out accuracy %")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--calibrated", action="store_true",
                        help="also the contribution picker's scheme (sparse_update(calibration=))")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--from-json", help="read the rows from here instead of measuring")
    parser.add_argument("--plot", help="draw accuracy against the arena into this PNG")
    args = parser.parse_args(argv)
    if args.from_json:
        with open(args.from_json) as handle:
            rows = json.load(handle)
    else:
        rows = []
        for case in args.case or ["digits", "kws", "resnet"]:
            rows += run_case(case, args.seeds, args.calibrated)
    print(summary(rows))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
