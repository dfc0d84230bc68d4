"""What sparse update costs in accuracy: head only, ``sparse_update``'s schemes under several
budgets, and the same layers updated whole, on held-out rows of a shifted task
(docs/memory.md, "Sparse update: accuracy").

    python benchmarks/sparse_accuracy.py [--case digits|kws|resnet|vww|ad|mbv2 ...]
                                         [--seeds 3] [--calibrated] [--json FILE]
                                         [--from-json FILE] [--update-json FILE] [--plot PNG]

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
  VWW's MobileNetV1 is not a textures case: its head stays at chance (10 %) on these inputs
  at every rate tried (0.02 to 1.0, 4x4 and 16x16 textures), so it measures nothing.
* ``vww``: MLPerf Tiny's VWW MobileNetV1 (int8, from its last block), batch 1, on its own
  kind of task, *object present*: half the 96x96 images hold a grating (any of the 10 target
  classes of ``mbv2``'s gratings, in an ellipse) over the background, half the background and
  noise alone (sigma 0.2). Three one-seed pilots set the rate and noise so that head-only
  learns: at SGD 0.01 (sigma 0.5, 2 epochs) every scheme stayed at chance, the head's input features
  barely moving between images; at 0.5 head-only reached 59.5 % and the int8 layers trained
  whole fell to chance; at 0.2 with sigma 0.2, 4 epochs of 120 rows, head-only 78.5 %.
* ``ad``: MLPerf Tiny's anomaly-detection autoencoder (int8, from ``dense_8``, its own output,
  MSE), batch 1, a new machine (``spectra``): trained on its normal rows, scored by the
  reconstruction error's AUC on held-out normal and anomalous rows (stored and printed in the
  accuracy column, x 100 in the table).
* ``mbv2``: MobileNetV2-w0.35 at 128x128x3, int8, from block 16 (benchmarks/sparse_update.py's
  model and budgets), batch 1, but with *trained* weights: the committed
  mbv2_035_128.tflite has random ones (no ImageNet weights here; its pooled features are the
  same for every input to 1e-4 and every scheme stays at chance), so
  benchmarks/make_mbv2_trained.py pretrains it on the source classes of
  benchmarks/synthetic_images.py's gratings in blobs (12 orientation x frequency classes in
  ellipses) and this case adapts it to the 10 target classes (orientations and frequencies
  between the source's, in rectangles, noisier): new classes and a shifted domain. The
  images go in as the int8 frames the file's input quantization makes of them. At a budget
  whose arena does not hold the float head whole (120 and 128 KiB) its new head is int8,
  trained in place (``int8_head``: sparse_update.py's ``mbv2_model``), and a "head int8" row
  trains that head alone.

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
import sparse_update as sparse_bench  # noqa: E402
import synthetic_images  # noqa: E402

INT8_FIXTURES = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8")
DIGITS = os.path.join(INT8_FIXTURES, "digits_backbone_int8.tflite")
# MobileNetV2-w0.35 pretrained on the gratings' source classes (benchmarks/make_mbv2_trained.py)
MBV2 = os.path.join(INT8_FIXTURES, "mbv2_035_128_gratings.tflite")
LOSS = "categorical_crossentropy"
PATCH = 4  # a class's texture: a random PATCH x PATCH int8 patch tiled over the input
# MobileNetV2's gratings task: SGD rate, epochs, train and held-out rows a class, noise sigma
MBV2_RATE, MBV2_EPOCHS, MBV2_TRAIN, MBV2_HELD, MBV2_SIGMA = 0.01, 2, 20, 30, 0.4
# the autoencoder's machine: SGD rate, epochs, normal train rows, held-out rows of each kind
# (normal, anomalous), the spectra's noise in dB
AD_RATE, AD_EPOCHS, AD_TRAIN, AD_HELD, AD_SIGMA = 0.01, 2, 100, 100, 3.0
AUTOENCODERS = ("ad",)
# VWW's "object present" task: the same, two classes
VWW_RATE, VWW_EPOCHS, VWW_TRAIN, VWW_HELD, VWW_SIGMA = 0.2, 4, 60, 100, 0.2


def kib(*values):
    return tuple(1024 * value for value in values)


# The budgets: where sparse_update's scheme changes (its picks step from one to the next at
# these arena sizes; between two, it picks the lower one's scheme).
# name -> (file, train_from, classes, batch, learning rate, epochs, train rows a class,
#          held-out rows a class, the synthetic task's noise: KEEP (textures in noise) or
#          sigma (gratings), budgets in bytes)
CASES = {
    "digits": (DIGITS, "conv_a", 5, 16, 0.1, 12, None, None, None,
               kib(28, 56, 76, 80, 106)),
    "kws": (table.path_of("kws_ref_model.tflite"), "depthwise_conv2d_3", 10, 1, 0.05, 4, 12, 20,
            0.8, kib(24, 48, 56, 84, 88, 96)),
    "resnet": (table.path_of("pretrainedResnet_quant.tflite"), "conv2d_6", 10, 1, 0.01, 4, 12,
               20, 0.6, kib(56, 60, 76, 80)),
    "vww": (table.path_of("vww_96_int8.tflite"), "depthwise_conv2d_12", 2, 1, VWW_RATE,
            VWW_EPOCHS, VWW_TRAIN, VWW_HELD, VWW_SIGMA, kib(64, 128, 256)),
    # classes: 2, normal and anomalous (the score is the reconstruction error's AUC)
    "ad": (table.path_of("ad01_int8.tflite"), "dense_8", 2, 1, AD_RATE, AD_EPOCHS, AD_TRAIN,
           AD_HELD, AD_SIGMA, kib(64, 128, 256)),
    # the budgets of benchmarks/sparse_update.py's MobileNetV2 rows (docs/memory.md)
    "mbv2": (MBV2, "block_16", 10, 1, MBV2_RATE, MBV2_EPOCHS, MBV2_TRAIN, MBV2_HELD, MBV2_SIGMA,
             kib(120, 128, 240, 256)),
}
# convert()'s options beyond the shared ones: MobileNetV2 takes the camera's int8 frame as it
# is (benchmarks/sparse_update.py's model)
CONVERT_OPTIONS = {"mbv2": {"int8_input": True}}


def model_of(case, seed, int8_head=False):
    path, train_from, classes = CASES[case][:3]
    options = dict(CONVERT_OPTIONS.get(case, {}), **({"int8_head": True} if int8_head else {}))
    if case not in AUTOENCODERS:  # a new head of the task's classes; an autoencoder keeps its
        options.update(new_head=classes, head_seed=seed)
    return microtrain.convert(path, train_from=train_from, int8_train=True, **options)


def loss_of(case):
    return "mse" if case in AUTOENCODERS else LOSS


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


def gratings_task(case, seed):
    """The shifted gratings task (benchmarks/synthetic_images.py): the 10 target classes
    (orientations and frequencies the backbone never saw as classes) in rectangles instead of
    the source's ellipses, each image its int8 frame through the file's input quantization:
    (x, y, x_held, y_held)."""
    classes, _, _, _, train_rows, held_rows, sigma = CASES[case][2:9]
    targets = synthetic_images.target_classes()
    with open(CASES[case][0], "rb") as handle:
        _, scale, zero_point = table.input_quantization(handle.read())

    def rows(per_class, offset):
        labels = synthetic_images.balanced_labels(classes, per_class, 2000 + 10 * seed + offset)
        x = synthetic_images.images(targets, labels, 3000 + 10 * seed + offset, sigma,
                                    shape="rectangle")
        q = np.clip(np.round(x / scale) + zero_point, -128, 127)
        return q.astype(np.float32), np.eye(classes, dtype=np.float32)[labels]

    return rows(train_rows, 0) + rows(held_rows, 1)


def object_task(case, model, seed):
    """VWW's binary task on gratings (benchmarks/synthetic_images.py) at the model's input
    size: class 1 an image with a grating (any of the 10 target classes, in an ellipse),
    class 0 the background and noise alone, each drawn the same way otherwise; [-1, 1]
    mapped linearly onto the int8 range, as a camera's 0..255 frame would be:
    (x, y, x_held, y_held)."""
    _, _, _, _, train_rows, held_rows, sigma = CASES[case][2:9]
    size = tuple(model.input_shapes[0])[0]
    targets = synthetic_images.target_classes()

    def rows(per_class, offset):
        labels = synthetic_images.balanced_labels(2, per_class, 4000 + 10 * seed + offset)
        kinds = np.random.default_rng(5000 + 10 * seed + offset).integers(0, len(targets),
                                                                          len(labels))
        x = synthetic_images.images(targets, kinds, 6000 + 10 * seed + offset, sigma,
                                    size=size, present=labels == 1)
        q = np.clip(np.round((x + 1.0) * 127.5) - 128, -128, 127)
        return as_input(case, q), np.eye(2, dtype=np.float32)[labels]

    return rows(train_rows, 0) + rows(held_rows, 1)


def spectra(count, seed, sigma, anomalous):
    """Machine-sound-like log-mel rows for the autoencoder (5 frames x 128 bins, dB): a
    harmonic machine, peaks of 6 to 12 dB at the harmonics of a fundamental near bin 9.0
    (jitter 0.15 bin, each harmonic's level +-2 dB per row) over a -50 dB floor sloping down
    10 dB across the bins, noise N(0, sigma^2); an anomalous row's fundamental is 3 % higher
    and it has an extra non-harmonic 5 dB peak (a bearing's) at a random bin of 20..100."""
    rng = np.random.default_rng(seed)
    bins = np.arange(128, dtype=np.float64)
    f0 = 9.0 * (1.03 if anomalous else 1.0) + rng.normal(0, 0.15, (count, 1, 1))
    rows = np.broadcast_to(-50.0 - 10.0 * bins / 127, (count, 5, 128)).copy()
    for h in range(1, 13):
        level = 6.0 + 6.0 * (h % 3) / 2 + rng.normal(0, 2.0, (count, 1, 1))
        rows += level * np.exp(-0.5 * ((bins - h * f0) / 1.2) ** 2)
    if anomalous:
        where = rng.uniform(20, 100, (count, 1, 1))
        rows += 5.0 * np.exp(-0.5 * ((bins - where) / 1.5) ** 2)
    rows += rng.normal(0, sigma, rows.shape)
    return rows.reshape(count, 640)


def spectra_task(case, seed):
    """The autoencoder's new machine: normal rows to train on; held out, as many normal as
    anomalous rows. Each dB value as the file's int8 input quantizes it; targets the
    dequantized input (what the autoencoder reconstructs): (x, x_targets, x_held,
    (x_held_targets, anomalous))."""
    _, _, _, _, train_rows, held_rows, sigma = CASES[case][2:9]
    _, scale, zero_point = table.input_quantization(table.data_of("ad01_int8.tflite"))

    def frames(values):
        q = np.clip(np.round(values / scale) + zero_point, -128, 127)
        return q.astype(np.float32), ((q - zero_point) * scale).astype(np.float32)

    x, target = frames(spectra(train_rows, 7000 + seed, sigma, False))
    held = np.concatenate([spectra(held_rows, 8000 + seed, sigma, False),
                           spectra(held_rows, 9000 + seed, sigma, True)])
    order = np.random.default_rng(10000 + seed).permutation(len(held))
    x_held, held_target = frames(held[order])
    anomalous = (np.arange(2 * held_rows) >= held_rows)[order]
    return x, target, x_held, (held_target, anomalous)


def task(case, model, seed):
    if case == "ad":
        return spectra_task(case, seed)
    if case == "vww":
        return object_task(case, model, seed)
    if case == "digits":
        return digits_int8.digits_5_to_9(seed)  # the int8 guide's split
    if case == "mbv2":
        return gratings_task(case, seed)
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
        session.compile(microtrain.optimizers.SGD(rate), loss_of(case), batch_size=batch,
                        trainable=trainable)
        arena = session.memory_plan()["total_bytes"]
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            order = rng.permutation(len(x))
            for first in range(0, len(x) - batch + 1, batch):
                rows = order[first:first + batch]
                session.train_step(x[rows], y[rows])
        outputs = np.concatenate([session.infer(x_held[k:k + batch])[0]
                                  for k in range(0, len(x_held) - batch + 1, batch)])
    count = len(outputs)
    if case in AUTOENCODERS:  # y_held: (the inputs' values, 1 for an anomaly)
        targets, anomalous = y_held
        errors = np.mean((outputs - targets[:count]) ** 2, axis=1)
        return auc(errors, anomalous[:count]), arena
    return float(np.mean(outputs.argmax(1) == y_held[:count].argmax(1))), arena


def auc(scores, positive):
    """The area under the ROC curve of ``scores`` for the ``positive`` rows: the chance that an
    anomalous row scores above a normal one (Mann-Whitney U / (n_pos n_neg), ties half)."""
    scores, positive = np.asarray(scores, np.float64), np.asarray(positive, bool)
    above = scores[positive][:, None] - scores[~positive][None, :]
    return float(np.mean((above > 0) + 0.5 * (above == 0)))


def budget_model(case, model, budget, seed):
    """The model a budget's schemes train: ``model``, or for MobileNetV2 the one
    benchmarks/sparse_update.py measures at that budget (its new head int8, trained in place,
    where the float head does not train whole within it); (model, its text in the table)."""
    if case != "mbv2":
        return model, ""
    found, int8_head = sparse_bench.mbv2_model(budget, path=CASES[case][0], head_seed=seed)
    return found, " (int8 head)" if int8_head else ""


def schemes(case, model, calibration=None, seed=0, budgets=None):
    """[(label, budget, trainable, model, its text)]: head only, then per budget
    sparse_update's scheme and its dense counterpart (and the calibrated picker's, given
    calibration rows)."""
    batch = CASES[case][3]
    with microtrain.TrainSession(model) as session:
        head = max(layer for layer, ops in enumerate(session._layer_ops)
                   if any(session._op_facts[op][3] for op in ops))
    found = [("head", None, {head: "all"}, model, "")]
    for budget in [b for b in CASES[case][9] if budgets is None or b in budgets]:
        model, note = budget_model(case, found[0][3], budget, seed)
        try:
            scheme = microtrain.sparse_update(model, budget, batch, "sgd", loss_of(case))
        except ValueError as error:
            print("  %s, budget %d: %s" % (case, budget, error))
            continue
        found.append(("sparse", budget, scheme, model, note))
        found.append(("full", budget, dense_counterpart(scheme), model, note))
        if calibration is not None:
            picked = microtrain.sparse_update(model, budget, batch,
                                              microtrain.optimizers.SGD(CASES[case][4]),
                                              loss_of(case),
                                              calibration=calibration)
            found.append(("calibrated", budget, picked, model, note))
    if case == "mbv2":  # the int8 head alone, as the budgets that need it train it
        found.insert(1, ("head int8", None, {head: "all"}, model_of(case, seed, int8_head=True),
                         " (int8 head)"))
    return found


def describe(trainable):
    items = trainable.items()
    return ", ".join("%s:%s" % (layer, value) for layer, value in items)


def run_case(case, seeds, calibrated, budgets=None):
    rows = []
    for seed in range(seeds):
        model = model_of(case, seed)
        data = task(case, model, seed)
        calibration = None
        if calibrated:  # the picker measures on a split of the training rows, never held-out
            split = len(data[0]) * 3 // 4
            calibration = (data[0][split:], data[1][split:])
        for label, budget, trainable, trained, note in schemes(case, model, calibration, seed,
                                                                budgets):
            start = time.time()
            accuracy, arena = fine_tune(trained, trainable, data, case, seed)
            row = {"case": case, "seed": seed, "scheme": label, "budget": budget,
                   "trainable": describe(trainable) + note, "arena": arena,
                   "accuracy": accuracy}
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
        name = case + (" (its column: AUC x 100)" if case in AUTOENCODERS else "")
        lines.append("| %s, %d seeds | head only | %s | %s | %.1f %% | | | | | | |"
                     % (name, seeds, "the head whole", "{:,}".format(head_arena), 100 * head))
        if (case, "head int8", None) in means:
            int8_head, int8_arena, _ = means[(case, "head int8", None)]
            lines.append("| | head only | the int8 head whole (int8_head) | %s | %.1f %% | | | "
                         "| | | |" % ("{:,}".format(int8_arena), 100 * int8_head))
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
          "resnet": "MLPerf Tiny IC ResNet-8, int8 (textures in noise), batch 1",
          "vww": "MLPerf Tiny VWW MobileNetV1, int8 (object present), batch 1",
          "ad": "MLPerf Tiny AD autoencoder, int8 (a new machine): AUC x 100, batch 1",
          "mbv2": "MobileNetV2-w0.35 128x128, int8, trained here (gratings, shifted), batch 1"}
SERIES = [("sparse", "sparse_update's scheme (heuristic)", "o-", "C0"),
          ("calibrated", "sparse_update(calibration=...)", "s--", "C2"),
          ("full", "the same layers updated whole", "^:", "C1")]
# tiny-training's published figure (Lin et al., "On-Device Training Under 256KB Memory",
# NeurIPS 2022, as issue 40 and docs/memory.md quote it): MobileNetV2-w0.35's sparse update
# on an STM32F746 in 141 KB of peak SRAM, marked on every panel as a memory line.
TINY_TRAINING_KB = 141
# and its accuracy against memory for MobileNetV2-w0.35: panel (c) "MbV2-w0.35 Results" of
# figures/sparse_update.png in mit-han-lab/tiny-training (the paper's sparse-update figure),
# read off the image here (about +-0.1 point, +-3 KB): (extra memory KB, accuracy %) of each
# marker. Their x is the training's *extra* memory by their analytic count, their y the
# accuracy of an ImageNet-pretrained model on their transfer data sets: another model's
# weights, other data and another memory measure than this benchmark's, so they are drawn
# hollow on the MobileNetV2 panel, for the shape of the curves, never as a comparison of
# figures. Their "upper bound" (every layer updated) is about 70.1 % at 545 KB.
TINY_TRAINING_MBV2 = [
    ("sparse update", "D", [(49, 67.4), (73, 70.4), (99, 71.4), (122, 71.8), (138, 72.0)]),
    ("last k layers", "v", [(74, 64.6), (130, 66.7), (185, 68.1), (223, 69.0), (267, 69.6)]),
    ("last k biases", "P", [(54, 64.2), (83, 64.5), (114, 64.3), (134, 64.3)]),
]


def plot(rows, path):
    """Accuracy (mean over the seeds, the bar from the lowest to the highest) against the
    arena, one panel per case, tiny-training's published memory marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cases = [case for case in LABELS if any(row["case"] == case for row in rows)]
    columns = min(2, len(cases))
    grid = -(-len(cases) // columns)
    figure, axes = plt.subplots(grid, columns, figsize=(6.2 * columns, 4.6 * grid),
                                squeeze=False)
    for axis in axes.flat[len(cases):]:
        axis.set_visible(False)
    for axis, case in zip(axes.flat, cases):
        mine = [row for row in rows if row["case"] == case]
        heads = [("head", "head only", "*", "k"), ("head int8", "head only, int8 (int8_head)",
                                                   "P", "C5")]
        for label, legend, style, colour in heads + SERIES:
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
                          label=legend, capsize=3,
                          markersize=9 if label.startswith("head") else 6)
        axis.axvline(TINY_TRAINING_KB * 1000 / 1024.0, color="C3", linestyle="-.",
                     label="tiny-training, MobileNetV2-w0.35: 141 KB peak SRAM\n"
                           "(Lin et al. 2022; its accuracy is on other data)")
        if case == "mbv2":
            for legend, marker, points in TINY_TRAINING_MBV2:
                x, y = zip(*points)
                axis.plot(np.array(x) * 1000 / 1024.0, y, marker=marker, color="C4",
                          linestyle="-", linewidth=0.8, fillstyle="none", alpha=0.8,
                          label="tiny-training, published: %s\n(x: their extra memory, "
                                "y: their transfer sets)" % legend)
        axis.set_title(LABELS[case], fontsize=9)
        axis.set_xlabel("arena KiB (the core's plan)")
        axis.set_ylabel("held-out accuracy %")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6.5, loc="best")
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
    parser.add_argument("--update-json", metavar="FILE",
                        help="replace the rows of the measured cases in FILE (the others kept) "
                             "and print the table of all of them")
    parser.add_argument("--plot", help="draw accuracy against the arena into this PNG")
    parser.add_argument("--budget", type=int, action="append",
                        help="these budgets of the cases only (the head-only rows always); "
                             "with --update-json, the measured cases' rows of other budgets "
                             "are kept")
    args = parser.parse_args(argv)
    if args.from_json:
        with open(args.from_json) as handle:
            rows = json.load(handle)
    else:
        rows = []
        measured = args.case or ["digits", "kws", "resnet", "vww", "ad", "mbv2"]
        for case in measured:
            rows += run_case(case, args.seeds, args.calibrated, args.budget)
        if args.update_json:
            with open(args.update_json) as handle:
                kept = [row for row in json.load(handle) if row["case"] not in measured or (
                    args.budget and row["budget"] is not None and
                    row["budget"] not in args.budget)]
            rows = kept + rows
            with open(args.update_json, "w") as handle:
                json.dump(rows, handle, indent=1)
    print(summary(rows))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
