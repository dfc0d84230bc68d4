"""Write digits.mtm and digits.npz for `microtrain fleet` (the README's fleet section).

    python examples/fleet_digits_data.py [FOLDER]

digits.mtm: a 64 -> 32 relu -> 10 softmax MLP (seed 0); digits.npz: scikit-learn's bundled
digits scaled to [0, 1], shuffled with seed 0, one-hot targets: 1500 rows to train on (x, y)
and 297 held out (x_eval, y_eval) for the server's evaluation.
"""

import os
import sys

import numpy as np
from sklearn.datasets import load_digits

import microtrain
from microtrain import layers

folder = sys.argv[1] if len(sys.argv) > 1 else "."
data = load_digits()
x = (data.data / 16.0).astype(np.float32)
y = np.eye(10, dtype=np.float32)[data.target]
order = np.random.default_rng(0).permutation(len(x))
x, y = x[order], y[order]
np.savez(os.path.join(folder, "digits.npz"), x=x[:1500], y=y[:1500], x_eval=x[1500:],
         y_eval=y[1500:])
microtrain.Sequential([layers.Dense(32, activation="relu"), layers.Dense(10),
                       layers.Softmax()], input_shape=(64,), seed=0).save(
    os.path.join(folder, "digits.mtm"))
print("wrote digits.mtm and digits.npz in %s" % os.path.abspath(folder))
