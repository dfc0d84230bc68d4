"""Transfer learning on the bundled digits: pre-train on 0-4, fine-tune on 5-9.

    python examples/transfer_digits.py [--pretrain-epochs 20] [--finetune-epochs 30]

The CNN of examples/digits_cnn.py (layers 0 Conv, 1 MaxPool, 2 Conv, 3 GAP,
4 Dense 10, 5 Softmax) is pre-trained with every layer on digits 0-4 only. Then,
from those weights, it is fine-tuned on digits 5-9 (classes the head has never
been trained to output) with three choices of ``trainable``:

    last Dense       [4]        the backbone stays frozen in the image (flash)
    last Conv+Dense  [2, 4]
    all              "all"

and a table reports, for each, the validation accuracy on 5-9 and the arena the
core plans: its total, the lower bound (most bytes live at once over the step)
and what the trained weights, gradients, optimizer state and activations take.
Frozen weights cost no arena bytes and backward stops at the first trained op, so
training the last layer only needs a fraction of full training's memory.
"""

import argparse
import os
import sys

import microtrain
from microtrain import optimizers
from microtrain.tools import arena

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from digits_cnn import build_model, load_data  # noqa: E402

CHOICES = [("last Dense", [4]), ("last Conv+Dense", [2, 4]), ("all", "all")]


def subset(x, y, low, high):
    keep = (y >= low) & (y <= high)
    return x[keep], y[keep]


def fit(session, x, y, x_val, y_val, epochs, batch_size, learning_rate, seed):
    loader = microtrain.DataLoader(x, y, batch_size=batch_size, shuffle=True, seed=seed)
    schedule = microtrain.CosineLRScheduler(0, epochs * len(loader),
                                            min_lr=learning_rate * 0.02)
    history = session.train(loader, epochs=epochs, validation_data=(x_val, y_val), verbose=0,
                            scheduler=schedule)
    return history["val_sparse_categorical_accuracy"][-1]


def compile_for(session, trainable, args, learning_rate):
    session.compile(optimizers.Adam(learning_rate=learning_rate),
                    "sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"],
                    batch_size=args.batch_size, trainable=trainable)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pretrain-epochs", type=int, default=20)
    parser.add_argument("--finetune-epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.01, help="pre-training")
    parser.add_argument("--finetune-learning-rate", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    x_train, x_val, y_train, y_val = load_data(args.seed)
    model = build_model(args.seed)
    old = subset(x_train, y_train, 0, 4), subset(x_val, y_val, 0, 4)
    new = subset(x_train, y_train, 5, 9), subset(x_val, y_val, 5, 9)

    with microtrain.TrainSession(model) as session:
        compile_for(session, "all", args, args.learning_rate)
        accuracy = fit(session, *old[0], *old[1], args.pretrain_epochs, args.batch_size,
                       args.learning_rate, args.seed)
        pretrained = session.get_weights()
        before = session.evaluate(microtrain.DataLoader(*new[1], batch_size=args.batch_size))
    print("pre-trained on digits 0-4 (%d samples): validation accuracy %.4f; on 5-9 before "
          "fine-tuning: %.4f" % (len(old[0][0]), accuracy,
                                 before["sparse_categorical_accuracy"]))

    rows = []
    for name, trainable in CHOICES:
        with microtrain.TrainSession(model) as session:
            session.set_weights(pretrained)
            compile_for(session, trainable, args, args.finetune_learning_rate)
            plan = session.memory_plan()
            accuracy = fit(session, *new[0], *new[1], args.finetune_epochs, args.batch_size,
                           args.finetune_learning_rate, args.seed)
        summary = arena.summary(plan)
        rows.append((name, str(trainable), "%.4f" % accuracy, summary["total"],
                     summary["lower_bound"], "%.3f" % summary["ratio"], plan["weight_bytes"],
                     plan["gradient_bytes"], plan["optimizer_bytes"],
                     plan["activation_bytes"] + plan["activation_grad_bytes"],
                     plan["first_trained_op"]))

    print("\nfine-tuned on digits 5-9 (%d samples, %d epochs, batch %d, Adam):"
          % (len(new[0][0]), args.finetune_epochs, args.batch_size))
    headers = ("trainable", "layers", "val_acc", "arena", "lower_bound", "ratio", "weights",
               "gradients", "optimizer", "activations", "backward_stops_at_op")
    widths = [max(len(str(v)) for v in column) for column in zip(headers, *rows)]
    for row in [headers] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
    full = rows[-1][3]
    for row in rows:
        print("RESULT trainable=%s val_acc=%s arena=%d lower_bound=%d fraction_of_all=%.3f"
              % (row[0].replace(" ", "_"), row[2], row[3], row[4], row[3] / full))
    return 0


if __name__ == "__main__":
    sys.exit(main())
