"""The small classifier several test files train: ``features -> hidden relu -> classes
softmax``, seeded, so every build of the same arguments is the same image.

The command-line tests (tests/test_cli.py), the MicroPython backend's
(tests/micropython/test_native_backend.py, test_hostile_buffers.py) and the bad-input tests
(tests/bad_input_setup.py) build it at their own sizes.
"""

import microtrain
from microtrain import layers


def classifier(hidden, classes=3, features=8, seed=0):
    """A ``features -> Dense(hidden, relu) -> Dense(classes) -> Softmax`` Sequential."""
    return microtrain.Sequential([layers.Dense(hidden, activation="relu"), layers.Dense(classes),
                                  layers.Softmax()], input_shape=(features,), seed=seed)


def saved_classifier(path, hidden, classes=3, features=8, seed=0):
    """``classifier(...)`` saved as a model image at ``path``; returns the path as a str."""
    classifier(hidden, classes, features, seed).save(str(path))
    return str(path)
