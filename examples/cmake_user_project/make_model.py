"""A model and a dataset for the firmware template: stand-ins for your own.

    python examples/cmake_user_project/make_model.py OUT_DIR

Writes OUT_DIR/model.mtm, a digits classifier (8x8 images, 64 -> 16 relu -> 10 softmax)
pretrained on the host (10 epochs over 400 rows), and OUT_DIR/data.npz with x [60, 64] and
y [60, 10] (one-hot): rows it has not seen, for the device to fine-tune on (three batches of
16 and a partial one of 12). scikit-learn ships the digits, so nothing is downloaded.
"""

import os
import sys

import numpy as np
from sklearn.datasets import load_digits

import microtrain
from microtrain import layers, optimizers

PRETRAIN_ROWS = 400
DEVICE_ROWS = 60
PRETRAIN_EPOCHS = 10


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[digits.target]

    microtrain.set_seed(0)
    model = microtrain.Sequential(
        [layers.Dense(16, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(64,))
    with microtrain.TrainSession(model) as session:
        session.compile(optimizers.Adam(learning_rate=0.01), "categorical_crossentropy",
                        batch_size=32)
        for _ in range(PRETRAIN_EPOCHS):
            for first in range(0, PRETRAIN_ROWS, 32):
                session.train_step(x[first:first + 32], y[first:first + 32])
        session.export_model_for_inference(os.path.join(out_dir, "model.mtm"))

    rows = slice(PRETRAIN_ROWS, PRETRAIN_ROWS + DEVICE_ROWS)
    np.savez(os.path.join(out_dir, "data.npz"), x=x[rows], y=y[rows])
    print("wrote %s and %s" % (os.path.join(out_dir, "model.mtm"),
                               os.path.join(out_dir, "data.npz")))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
