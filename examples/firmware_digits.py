"""Fine-tune a digits MLP on an emulated Cortex-M board and check it against the host.

    python examples/firmware_digits.py [--board mps2-an386] [--out build/firmware-demo]

The story of on-device fine-tuning, small enough for a demo:

1. On the host, pretrain 64 -> 16 relu -> 10 softmax for a few epochs on part of
   scikit-learn's bundled 8x8 digits and save it as a model image (digits.mtm).
2. Save rows the model has not seen as the device's dataset (digits.npz: x, y for
   fine-tuning, x_eval, y_eval for the per-epoch accuracy).
3. ``microtrain firmware ... --run``: build firmware that embeds both, fine-tunes the last
   Dense layer (and its Softmax) on the device under QEMU, with the first layer frozen in
   flash, and replay the same steps on the host: both weight CRCs are printed and must match.

``make_example()`` and ``package_example()`` are also what the board tests, the size table
(tools/size_table.py) and the cost benchmark (benchmarks/arm_cost.py) build on.
"""

import argparse
import os
import sys

import numpy as np

import microtrain
from microtrain import layers, optimizers
from microtrain.tools import firmware
from microtrain.tools.firmware_training import TrainingSpec

TRAIN_ROWS = 150    # 9 full batches of 16 and a partial one of 6
EVAL_ROWS = 80
PRETRAIN_ROWS = 400


def _digits():
    from sklearn.datasets import load_digits  # bundled with scikit-learn: no download
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[digits.target]
    order = np.random.default_rng(0).permutation(len(x))
    return x[order], y[order]


def _pretrain(x, y, epochs, seed):
    """A host-trained starting point: the model a device would ship with."""
    model = microtrain.Sequential(
        [layers.Dense(16, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(64,), seed=seed)
    if epochs == 0:
        return model
    with microtrain.TrainSession(model) as session:
        session.compile(optimizer=optimizers.Adam(learning_rate=0.01),
                        loss="categorical_crossentropy", batch_size=32)
        for _ in range(epochs):
            for first in range(0, len(x), 32):
                session.train_step(x[first:first + 32], y[first:first + 32])
        w1, b1, w2, b2 = session.get_weights()
    return microtrain.Sequential(
        [layers.Dense(16, activation="relu", weight=w1, bias=b1),
         layers.Dense(10, weight=w2, bias=b2), layers.Softmax()], input_shape=(64,))


def make_example(out_dir, pretrain_epochs=2, seed=0):
    """Write digits.mtm and digits.npz into ``out_dir``; return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    x, y = _digits()
    model = _pretrain(x[:PRETRAIN_ROWS], y[:PRETRAIN_ROWS], pretrain_epochs, seed)
    model_path = os.path.join(out_dir, "digits.mtm")
    data_path = os.path.join(out_dir, "digits.npz")
    model.save(model_path)
    first = PRETRAIN_ROWS
    np.savez(data_path,
             x=x[first:first + TRAIN_ROWS], y=y[first:first + TRAIN_ROWS],
             x_eval=x[first + TRAIN_ROWS:first + TRAIN_ROWS + EVAL_ROWS],
             y_eval=y[first + TRAIN_ROWS:first + TRAIN_ROWS + EVAL_ROWS])
    return model_path, data_path


def package_example(out_dir, **spec):
    """make_example() into ``out_dir``, then ``firmware.package`` it with ``spec``
    (TrainingSpec keywords). Returns (firmware.json record, folder of the C sources)."""
    model_path, data_path = make_example(out_dir)
    record = firmware.package(model_path, data_path, TrainingSpec(**spec), out_dir)
    return record, os.path.join(out_dir, "data")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="mps2-an386")
    parser.add_argument("--out", default=os.path.join("build", "firmware-demo"))
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)

    model_path, data_path = make_example(args.out)
    print("pretrained on the host: %s; fine-tuning data: %s" % (model_path, data_path))
    return firmware.main(["--board", args.board, "--model", model_path, "--data", data_path,
                          "--epochs", str(args.epochs), "--out", args.out,
                          "--trainable", "1", "--optimizer", "adam", "--loss", "cce",
                          "--learning-rate", "0.01", "--run"])


if __name__ == "__main__":
    sys.exit(main())
