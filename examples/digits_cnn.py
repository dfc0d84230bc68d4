"""Train a small CNN on scikit-learn's bundled 8x8 digits with the microtrain C core.

    python examples/digits_cnn.py [--epochs 30] [--batch-size 16] [--learning-rate 0.01]

The model (one sample is an 8x8x1 NHWC image):

    Conv 3x3x8 same relu -> MaxPool 2 -> Conv 3x3x32 relu -> GlobalAveragePool
    -> Dense 10 -> Softmax

trained with Adam (cosine learning-rate decay) on sparse categorical cross-entropy
through ``TrainSession.train`` and a shuffling ``DataLoader``, in the fixed arena whose exact size the core plans up
front (printed with the planner's lower bound). Exits with status 1 if the final
validation accuracy is below 0.95.
"""

import argparse
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import microtrain
from microtrain import layers, optimizers
from microtrain.tools import arena

REQUIRED_ACCURACY = 0.95


def load_data(seed):
    """(x_train, x_val, y_train, y_val): images [n, 8, 8, 1] in 0..1, int32 labels."""
    digits = load_digits()  # bundled with scikit-learn: no download
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int32)
    return train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)


def build_model(seed, classes=10):
    return microtrain.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu"),
        layers.MaxPool2D(2),
        layers.Conv2D(32, 3, activation="relu"),
        layers.GlobalAveragePool(),
        layers.Dense(classes),
        layers.Softmax(),
    ], input_shape=(8, 8, 1), seed=seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    x_train, x_val, y_train, y_val = load_data(args.seed)
    model = build_model(args.seed)
    with microtrain.TrainSession(model) as session:
        session.compile(optimizer=optimizers.Adam(learning_rate=args.learning_rate),
                        loss="sparse_categorical_crossentropy",
                        metrics=["sparse_categorical_accuracy"], batch_size=args.batch_size)
        plan = arena.summary(session.memory_plan())
        print("model image: %d bytes; arena: %d bytes, lower bound %d (ratio %.3f, %s "
              "updates)" % (len(model.to_bytes()), plan["total"], plan["lower_bound"],
                            plan["ratio"], plan["update"]))
        print("train %d samples, validate %d; batch %d"
              % (len(x_train), len(x_val), args.batch_size))
        loader = microtrain.DataLoader(x_train, y_train, batch_size=args.batch_size,
                                       shuffle=True, seed=args.seed)
        steps = args.epochs * len(loader)
        history = session.train(loader, epochs=args.epochs, validation_data=(x_val, y_val),
                                verbose=2, scheduler=microtrain.CosineLRScheduler(
                                    0, steps, min_lr=args.learning_rate * 0.02))
    accuracy = history["val_sparse_categorical_accuracy"][-1]
    print("final validation accuracy: %.4f (required %.2f); %.1f s"
          % (accuracy, REQUIRED_ACCURACY, history.timings["total_ms"] / 1000.0))
    return 0 if accuracy >= REQUIRED_ACCURACY else 1


if __name__ == "__main__":
    sys.exit(main())
