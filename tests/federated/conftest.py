"""What the fleet tests share: the digits task of every fleet (tests/federated/test_fleet.py,
test_deployment.py), written once per module: 1500 training rows, 297 to evaluate, and the
MLP the fleets train (64 -> Dense 32 ReLU -> Dense 10 -> Softmax)."""

import numpy as np
import pytest

from machine_wide import fleet_exclusive


@pytest.fixture(scope="module", autouse=True)
def one_fleet_module_at_a_time():
    """These modules check machine-wide that no fleet process is left: one at a time, before
    their own module fixtures take that census (tests/machine_wide.py)."""
    with fleet_exclusive():
        yield


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    from sklearn.datasets import load_digits
    import microtrain
    from microtrain import layers
    folder = tmp_path_factory.mktemp("digits")
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[data.target]
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    path = str(folder / "digits.npz")
    np.savez(path, x=x[:1500], y=y[:1500], x_eval=x[1500:], y_eval=y[1500:])
    model = microtrain.Sequential([layers.Dense(32, activation="relu"), layers.Dense(10),
                                   layers.Softmax()], input_shape=(64,), seed=0)
    image = str(folder / "digits.mtm")
    model.save(image)
    return {"data": path, "model": image, "folder": folder}
