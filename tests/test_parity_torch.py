"""Training parity with PyTorch (CPU, float32).

The same initial weights and data, trained for 50 steps by microtrain and by a
torch reference written with the core's loss conventions (Keras/onert):

    per-sample loss:  MSE/MAE/BCE mean over features, (sparse) CCE sum over classes
    reduction:        "mean" = mean over the step's samples, "sum" = sum over them

must give per-step losses and final weights equal within rtol 1e-5. The data
set size is not a multiple of the batch size, so every epoch ends in a partial
batch, which must behave exactly like a batch of that smaller size.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import microtrain
from microtrain import layers, losses, optimizers

STEPS = 50
BATCH_SIZE = 8
NUM_SAMPLES = 44  # 5 full batches and one of 4 rows per epoch
RTOL = 1e-5
ATOL = 1e-6

TORCH_ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh,
                     "sigmoid": torch.nn.Sigmoid, "softmax": lambda: torch.nn.Softmax(dim=1)}

# name -> (layer sizes, hidden/output activations, target kind)
ARCHITECTURES = {
    # 20 -> 16 relu -> 8 tanh -> 4 softmax
    "classifier": ((20, 16, 8, 4), ("relu", "tanh", "softmax"), "classes"),
    # 12 -> 10 relu -> 3 sigmoid (multi-label)
    "multilabel": ((12, 10, 3), ("relu", "sigmoid"), "binary"),
    # 6 -> 16 tanh -> 2 linear
    "regression": ((6, 16, 2), ("tanh", None), "values"),
}


def make_torch_model(sizes, activations):
    torch.manual_seed(0)
    modules = []
    for in_features, units, activation in zip(sizes[:-1], sizes[1:], activations):
        modules.append(torch.nn.Linear(in_features, units))
        if activation is not None:
            modules.append(TORCH_ACTIVATIONS[activation]())
    return torch.nn.Sequential(*modules)


def make_microtrain_model(sizes, activations, torch_model):
    linears = [m for m in torch_model if isinstance(m, torch.nn.Linear)]
    dense_layers = [
        layers.Dense(linear.out_features, activation=activation,
                     weight=linear.weight.detach().numpy().copy(),
                     bias=linear.bias.detach().numpy().copy())
        for linear, activation in zip(linears, activations)
    ]
    return microtrain.Sequential(dense_layers, input_shape=(sizes[0],))


def make_data(sizes, target_kind):
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((NUM_SAMPLES, sizes[0])).astype(np.float32)
    outputs = sizes[-1]
    if target_kind == "classes":
        labels = rng.integers(0, outputs, NUM_SAMPLES).astype(np.int32)
        return x, labels
    if target_kind == "binary":
        return x, rng.integers(0, 2, (NUM_SAMPLES, outputs)).astype(np.float32)
    mixing = rng.standard_normal((sizes[0], outputs)).astype(np.float32)
    return x, (np.sin(x @ mixing) + 0.1 * rng.standard_normal((NUM_SAMPLES, outputs))).astype(
        np.float32)


def batches():
    """(start, stop) row ranges of STEPS consecutive steps, epoch after epoch."""
    starts = list(range(0, NUM_SAMPLES, BATCH_SIZE))
    for step in range(STEPS):
        start = starts[step % len(starts)]
        yield start, min(start + BATCH_SIZE, NUM_SAMPLES)


def torch_loss(loss_name, reduction, model, x, target):
    """The core's loss conventions written with torch ops.

    Softmax + (sparse) CCE and Sigmoid + BCE work from the logits, as the core fuses them."""
    if loss_name in ("categorical_crossentropy", "sparse_categorical_crossentropy"):
        log_probabilities = F.log_softmax(model[:-1](x), dim=1)
        if loss_name == "sparse_categorical_crossentropy":
            per_sample = -log_probabilities.gather(1, target.long()[:, None])[:, 0]
        else:
            per_sample = -(target * log_probabilities).sum(dim=1)
    elif loss_name == "binary_crossentropy":
        logits = model[:-1](x)
        per_sample = F.binary_cross_entropy_with_logits(logits, target,
                                                        reduction="none").mean(dim=1)
    elif loss_name == "mse":
        per_sample = ((model(x) - target) ** 2).mean(dim=1)
    elif loss_name == "mae":
        per_sample = (model(x) - target).abs().mean(dim=1)
    else:
        raise AssertionError("no torch reference for loss %r" % loss_name)
    return per_sample.mean() if reduction == "mean" else per_sample.sum()


def torch_optimizer(optimizer, parameters):
    config = optimizer.get_config()
    if optimizer.name == "sgd":
        return torch.optim.SGD(parameters, lr=config["learning_rate"],
                               momentum=config["momentum"], weight_decay=config["weight_decay"])
    torch_class = torch.optim.Adam if optimizer.name == "adam" else torch.optim.AdamW
    return torch_class(parameters, lr=config["learning_rate"],
                       betas=(config["beta1"], config["beta2"]), eps=config["epsilon"],
                       weight_decay=config["weight_decay"], foreach=False)


def train_torch(model, loss_name, reduction, optimizer, x, target, trained_parameters):
    torch_opt = torch_optimizer(optimizer, trained_parameters)
    x_all = torch.from_numpy(x)
    target_all = torch.from_numpy(target)
    step_losses = []
    for start, stop in batches():
        torch_opt.zero_grad()
        loss = torch_loss(loss_name, reduction, model, x_all[start:stop],
                          target_all[start:stop])
        loss.backward()
        torch_opt.step()
        step_losses.append(loss.item())
    weights = []
    for module in model:
        if isinstance(module, torch.nn.Linear):
            weights += [module.weight.detach().numpy(), module.bias.detach().numpy()]
    return np.array(step_losses), weights


def train_microtrain(mt_model, loss, optimizer, x, target, num_trainable_ops=-1):
    with microtrain.TrainSession(mt_model) as session:
        session.compile(optimizer=optimizer, loss=loss, batch_size=BATCH_SIZE,
                        num_trainable_ops=num_trainable_ops)
        step_losses = []
        for start, stop in batches():
            result = session.train_step(x[start:stop], target[start:stop])
            step_losses.append(result["loss"][0])
        return np.array(step_losses), session.get_weights()


def targets_for(loss_name, raw_target, outputs):
    if loss_name == "categorical_crossentropy":
        return np.eye(outputs, dtype=np.float32)[raw_target]
    return raw_target


CASES = [
    # (architecture, loss, reduction, optimizer)
    ("classifier", "categorical_crossentropy", "mean", optimizers.SGD(learning_rate=0.1)),
    ("classifier", "categorical_crossentropy", "sum",
     optimizers.SGD(learning_rate=0.01, momentum=0.9)),
    ("classifier", "categorical_crossentropy", "mean", optimizers.Adam(learning_rate=0.01)),
    ("classifier", "sparse_categorical_crossentropy", "mean",
     optimizers.SGD(learning_rate=0.05, momentum=0.5, weight_decay=0.01)),
    ("classifier", "sparse_categorical_crossentropy", "sum",
     optimizers.Adam(learning_rate=0.005, beta1=0.8, beta2=0.99, epsilon=1e-6,
                     weight_decay=0.001)),
    ("classifier", "categorical_crossentropy", "mean",
     optimizers.AdamW(learning_rate=0.01, weight_decay=0.05)),
    ("multilabel", "binary_crossentropy", "mean", optimizers.SGD(learning_rate=0.2)),
    ("multilabel", "binary_crossentropy", "sum",
     optimizers.SGD(learning_rate=0.02, momentum=0.9, weight_decay=0.001)),
    ("multilabel", "binary_crossentropy", "mean", optimizers.Adam(learning_rate=0.01)),
    ("regression", "mse", "mean", optimizers.SGD(learning_rate=0.1)),
    ("regression", "mse", "sum", optimizers.SGD(learning_rate=0.01, momentum=0.9)),
    ("regression", "mse", "mean", optimizers.Adam(learning_rate=0.01, weight_decay=0.01)),
    ("regression", "mae", "mean", optimizers.SGD(learning_rate=0.05)),
    ("regression", "mae", "sum", optimizers.Adam(learning_rate=0.01)),
]


def case_id(case):
    architecture, loss_name, reduction, optimizer = case
    return "%s-%s-%s-%s" % (architecture, loss_name, reduction, type(optimizer).__name__
                            + ("_momentum" if getattr(optimizer, "momentum", 0) else ""))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_training_matches_torch(case):
    architecture, loss_name, reduction, optimizer = case
    sizes, activations, target_kind = ARCHITECTURES[architecture]
    torch_model = make_torch_model(sizes, activations)
    mt_model = make_microtrain_model(sizes, activations, torch_model)
    x, raw_target = make_data(sizes, target_kind)
    target = targets_for(loss_name, raw_target, sizes[-1])

    mt_losses, mt_weights = train_microtrain(
        mt_model, losses.get(loss_name).__class__(reduction=reduction), optimizer, x, target)
    torch_losses, torch_weights = train_torch(torch_model, loss_name, reduction, optimizer,
                                              x, target, list(torch_model.parameters()))

    np.testing.assert_allclose(mt_losses, torch_losses, rtol=RTOL, atol=ATOL)
    assert len(mt_weights) == len(torch_weights)
    for position, (mt_weight, torch_weight) in enumerate(zip(mt_weights, torch_weights)):
        np.testing.assert_allclose(mt_weight, torch_weight, rtol=RTOL, atol=ATOL,
                                   err_msg="weight tensor %d" % position)
    # Training did something: the losses moved.
    assert abs(mt_losses[-1] - mt_losses[0]) > 1e-3


def test_training_only_the_last_ops_matches_torch_with_frozen_layers():
    """num_trainable_ops=2 trains the last Dense (and the Softmax after it) only."""
    sizes, activations, target_kind = ARCHITECTURES["classifier"]
    torch_model = make_torch_model(sizes, activations)
    mt_model = make_microtrain_model(sizes, activations, torch_model)
    x, labels = make_data(sizes, target_kind)
    initial = mt_model.get_weights()
    optimizer = optimizers.SGD(learning_rate=0.1, momentum=0.9)

    mt_losses, mt_weights = train_microtrain(mt_model, "sparse_categorical_crossentropy",
                                             optimizer, x, labels, num_trainable_ops=2)
    last_linear = torch_model[-2]
    torch_losses, torch_weights = train_torch(
        torch_model, "sparse_categorical_crossentropy", "mean", optimizer, x, labels,
        [last_linear.weight, last_linear.bias])

    np.testing.assert_allclose(mt_losses, torch_losses, rtol=RTOL, atol=ATOL)
    for position in range(4):  # frozen: bit-identical to the start
        np.testing.assert_array_equal(mt_weights[position], initial[position])
    for position in (4, 5):
        np.testing.assert_allclose(mt_weights[position], torch_weights[position], rtol=RTOL,
                                   atol=ATOL)
        assert not np.array_equal(mt_weights[position], initial[position])
