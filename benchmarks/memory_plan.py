"""Arena bytes against the planner's lower bound on a small model zoo.

    python benchmarks/memory_plan.py [--batch-size 16] [--plot docs/memory_plan.png]

For every model (digits MLP, digits CNN, a residual DAG CNN, a keyword-spotting
style CNN over a 49x10 MFCC "image", a MobileNet-style stack of depthwise-separable
blocks) and every training choice (all layers, the last N layers, biases only; fused
updates or accumulated gradients), prints the arena the core plans, its lower bound
(the most bytes live at once over the train step's schedule), their ratio, and the
breakdown by role. Exits with status 1 if any ratio exceeds 1.10 (issue 4's target).
A plan only: nothing is trained, so it runs in about a second. ``--plot`` draws each fused
plan's bytes by role as stacked bars (matplotlib; the docs' memory page shows it).
"""

import argparse
import sys

import microtrain
from microtrain import layers
from microtrain.tools import arena

TARGET_RATIO = 1.10


def digits_mlp():
    return microtrain.Sequential([layers.Dense(32, activation="relu"), layers.Dense(10),
                                  layers.Softmax()], input_shape=(64,), seed=0)


def digits_cnn():
    return microtrain.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu"), layers.MaxPool2D(2),
        layers.Conv2D(32, 3, activation="relu"), layers.GlobalAveragePool(),
        layers.Dense(10), layers.Softmax()], input_shape=(8, 8, 1), seed=0)


def residual_cnn():
    x = microtrain.Input((16, 16, 3))
    y = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    branch = layers.DepthwiseConv2D(3, padding="same", activation="relu6")(y)
    y = layers.Add()([y, layers.Conv2D(8, 1)(branch)])
    y = layers.MaxPool2D(2)(y)
    z = layers.Conv2D(8, 3, padding="same", activation="relu")(y)
    y = layers.Concatenate()([y, z])
    y = layers.LeakyReLU(0.1)(layers.Conv2D(16, 3, strides=2, padding="same")(y))
    out = layers.Softmax()(layers.Dense(4)(layers.GlobalAveragePool()(y)))
    return microtrain.Model(x, out, seed=0)


def keyword_spotting_cnn():
    """49 frames x 10 MFCCs as a 49x10x1 image (the DS-CNN / TinyML KWS shape)."""
    return microtrain.Sequential([
        layers.Conv2D(16, (10, 4), strides=(2, 2), padding="same", activation="relu"),
        layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        layers.Conv2D(16, 1, activation="relu"),
        layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        layers.Conv2D(16, 1, activation="relu"),
        layers.AveragePool2D((25, 5)), layers.Flatten(),
        layers.Dense(12), layers.Softmax()], input_shape=(49, 10, 1), seed=0)


def mobilenet_blocks():
    """Depthwise-separable blocks with folded BatchNorm and ReLU6 (MobileNet v1 style)."""
    stack = [layers.Conv2D(8, 3, strides=2, padding="same"), layers.BatchNorm(),
             layers.ReLU6()]
    for filters, stride in ((16, 1), (24, 2), (24, 1), (32, 2)):
        stack += [layers.DepthwiseConv2D(3, strides=stride, padding="same"),
                  layers.BatchNorm(), layers.ReLU6(),
                  layers.Conv2D(filters, 1), layers.BatchNorm(), layers.ReLU6()]
    stack += [layers.GlobalAveragePool(), layers.Dense(5), layers.Softmax()]
    return microtrain.Sequential(stack, input_shape=(32, 32, 3), seed=0)


ZOO = [("digits MLP", digits_mlp), ("digits CNN", digits_cnn),
       ("residual DAG CNN", residual_cnn), ("keyword-spotting CNN", keyword_spotting_cnn),
       ("MobileNet-style blocks", mobilenet_blocks)]


def weighted_layers(model):
    return [i for i, ops in enumerate(model.layer_ops)
            if isinstance(model.layers[i], (layers.Dense, layers.Conv2D,
                                            layers.DepthwiseConv2D))]


def choices(model):
    """(name, compile keyword arguments) of the training choices to plan."""
    weighted = weighted_layers(model)
    result = [("all", {"trainable": "all"})]
    for count in (1, 2):
        if count < len(weighted):
            result.append(("last %d" % count, {"trainable": weighted[-count:]}))
    result.append(("bias only", {"trainable": "bias"}))
    return [(name + ", " + mode, dict(kwargs, accumulate_gradients=accumulate))
            for name, kwargs in result
            for mode, accumulate in (("fused", False), ("accumulate", True))]


def plan_zoo(batch_size):
    rows = []
    for model_name, make in ZOO:
        model = make()
        for choice, kwargs in choices(model):
            with microtrain.TrainSession(model) as session:
                session.compile("adam", "sparse_categorical_crossentropy",
                                batch_size=batch_size, **kwargs)
                plan = session.memory_plan()
            summary = arena.summary(plan)
            rows.append((model_name, choice, summary["total"], summary["lower_bound"],
                         summary["ratio"], plan["weight_bytes"], plan["gradient_bytes"],
                         plan["optimizer_bytes"], plan["activation_bytes"],
                         plan["activation_grad_bytes"], summary["reuse"]))
    return rows


ROLES = (("weights", 5), ("gradients", 6), ("optimizer state", 7), ("activations", 8),
         ("activation gradients", 9))


def plot(rows, path, batch_size):
    """One panel per model: each training choice's fused plan as bars stacked by role, what
    sharing lifetimes saves drawn below zero, and the arena as a mark."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = [name for name, _ in ZOO]
    figure, panels = plt.subplots(1, len(models), figsize=(3.0 * len(models), 4.2))
    for axes, model in zip(panels, models):
        fused = [r for r in rows if r[0] == model and r[1].endswith("fused")]
        bottom = [0.0] * len(fused)
        for name, column in ROLES:
            values = [r[column] / 1024 for r in fused]
            axes.bar(range(len(fused)), values, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
        axes.bar(range(len(fused)), [-r[10] / 1024 for r in fused], color="0.75",
                 label="shared lifetimes (saved)")
        axes.plot(range(len(fused)), [r[2] / 1024 for r in fused], "k_", markersize=16,
                  label="arena")
        axes.axhline(0, color="k", linewidth=0.5)
        axes.set_xticks(range(len(fused)))
        axes.set_xticklabels([r[1].split(",")[0] for r in fused], rotation=45, ha="right",
                             fontsize=8)
        axes.set_title(model, fontsize=9)
    panels[0].set_ylabel("KiB")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    figure.suptitle("Arena by role (Adam, batch %d, fused updates)" % batch_size, fontsize=10)
    figure.tight_layout(rect=(0, 0.07, 1, 0.95))
    figure.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--plot", metavar="PNG", help="draw the plans by role into this file")
    args = parser.parse_args(argv)
    if args.plot:
        import matplotlib  # noqa: F401  (fail now, not after planning: pip install '.[plot]')
    rows = plan_zoo(args.batch_size)
    if args.plot:
        plot(rows, args.plot, args.batch_size)
    headers = ("model", "trainable, update", "arena", "lower_bound", "ratio", "weights",
               "gradients", "optimizer", "activations", "act_grads", "reuse")
    text = [tuple(str(v) if not isinstance(v, float) else "%.3f" % v for v in row)
            for row in rows]
    widths = [max(len(v) for v in column) for column in zip(headers, *text)]
    print("Adam, sparse categorical cross-entropy, batch %d" % args.batch_size)
    for row in [headers] + text:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    worst = max(rows, key=lambda r: r[4])
    print("worst ratio %.3f (%s, %s); target <= %.2f"
          % (worst[4], worst[0], worst[1], TARGET_RATIO))
    if worst[4] > TARGET_RATIO:
        print("FAIL: an arena exceeds %.2f x its lower bound" % TARGET_RATIO)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
