"""BatchNorm folding and CNN training against PyTorch (CPU, float32): whole models, their
losses after each step and their weights at the end. One op against PyTorch: tests/ops/
(test_<source>.py over tests/ops/op_parity.py, whose helpers these tests share).
"""

import os
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import microtrain
from microtrain import layers, optimizers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops"))
from op_parity import ATOL, RTOL, sample, to_nchw, to_nhwc, torch_conv, torch_pool  # noqa: E402


# ---------------------------------------------------------------- BatchNorm folding


def random_batch_norm(channels, seed):
    rng = np.random.default_rng(seed)
    return dict(gamma=rng.uniform(0.5, 1.5, channels).astype(np.float32),
                beta=rng.standard_normal(channels).astype(np.float32),
                mean=rng.standard_normal(channels).astype(np.float32),
                var=rng.uniform(0.2, 2.0, channels).astype(np.float32))


def infer(model, x):
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "mse", batch_size=len(x), trainable=0)
        return session.infer(x)[0]


@pytest.mark.parametrize("kind", ["conv", "depthwise", "dense"])
def test_batch_norm_folding_equals_torch_eval_mode(kind):
    torch.manual_seed(0)
    x = sample((4, 6, 6, 3))
    eps = 1e-3
    if kind == "conv":
        module = torch.nn.Conv2d(3, 5, 3, padding=1)
        norm = torch.nn.BatchNorm2d(5, eps=eps)
        layer = layers.Conv2D(5, 3, padding="same",
                              weight=module.weight.detach().permute(0, 2, 3, 1).numpy(),
                              bias=module.bias.detach().numpy())
    elif kind == "depthwise":
        module = torch.nn.Conv2d(3, 3, 3, groups=3)
        norm = torch.nn.BatchNorm2d(3, eps=eps)
        layer = layers.DepthwiseConv2D(3, weight=module.weight.detach().permute(1, 2, 3, 0)
                                       .numpy(), bias=module.bias.detach().numpy())
    else:
        module = torch.nn.Linear(108, 7)
        norm = torch.nn.BatchNorm1d(7, eps=eps)
        layer = layers.Dense(7, weight=module.weight.detach().numpy(),
                             bias=module.bias.detach().numpy())
    stats = random_batch_norm(norm.num_features, 5)
    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(stats["gamma"]))
        norm.bias.copy_(torch.from_numpy(stats["beta"]))
        norm.running_mean.copy_(torch.from_numpy(stats["mean"]))
        norm.running_var.copy_(torch.from_numpy(stats["var"]))
    norm.eval()
    with torch.no_grad():
        if kind == "dense":
            expected = norm(module(torch.from_numpy(x).reshape(4, -1))).numpy()
        else:
            expected = to_nhwc(norm(module(to_nchw(torch.from_numpy(x))))).numpy()

    stack = [layer, layers.BatchNorm(eps=eps, **stats)]
    model = microtrain.Sequential(stack, input_shape=(6, 6, 3), seed=0)
    assert model.layer_ops[1] == []           # folded: no op of its own
    assert len(model.get_weights()) == 2      # one weight and one bias
    np.testing.assert_allclose(infer(model, x), expected, rtol=1e-5, atol=1e-5)


def test_batch_norm_gives_a_bias_to_a_layer_without_one():
    stats = random_batch_norm(4, 1)
    model = microtrain.Sequential([layers.Conv2D(4, 1, use_bias=False),
                                   layers.BatchNorm(**stats)], input_shape=(3, 3, 2), seed=0)
    weight, bias = model.get_weights()
    scale = stats["gamma"] / np.sqrt(stats["var"] + 1e-5)
    np.testing.assert_allclose(bias, -stats["mean"] * scale + stats["beta"], rtol=1e-6)


# ---------------------------------------------------------------- CNN training parity

STEPS = 20
BATCH_SIZE = 8
NUM_SAMPLES = 44  # 5 full batches and one of 4 rows per epoch


def batches():
    starts = list(range(0, NUM_SAMPLES, BATCH_SIZE))
    for step in range(STEPS):
        start = starts[step % len(starts)]
        yield start, min(start + BATCH_SIZE, NUM_SAMPLES)


def digits_cnn():
    """Conv 3x3x8 relu -> MaxPool 2 -> Conv 3x3x16 relu -> GAP -> Dense 10 -> Softmax."""
    model = microtrain.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu"), layers.MaxPool2D(2),
        layers.Conv2D(16, 3, activation="relu"), layers.GlobalAveragePool(),
        layers.Dense(10), layers.Softmax()], input_shape=(8, 8, 1), seed=3)

    def forward(p, x):
        y = torch_conv(x, p[0], p[1], (1, 1), "same", "relu", False)
        y = F.max_pool2d(y, 2)
        y = torch_conv(y, p[2], p[3], (1, 1), "valid", "relu", False)
        return y.mean(dim=(2, 3)) @ p[4].T + p[5]
    return model, forward, (8, 8, 1), 10


def residual_cnn():
    """Conv relu -> y1; Depthwise relu6 -> y2; Add(y1, y2); Concat(.., y1); strided Conv;
    LeakyReLU; AveragePool SAME; Flatten; Dense 5; Softmax."""
    x = microtrain.Input((8, 8, 2))
    y1 = layers.Conv2D(4, 3, padding="same", activation="relu")(x)
    y2 = layers.DepthwiseConv2D(3, padding="same", activation="relu6")(y1)
    y3 = layers.Add()([y1, y2])
    y4 = layers.Concatenate()([y3, y1])
    y5 = layers.LeakyReLU(0.1)(layers.Conv2D(6, 3, strides=2, padding="same")(y4))
    y6 = layers.Flatten()(layers.AveragePool2D(3, strides=2, padding="same")(y5))
    out = layers.Softmax()(layers.Dense(5)(y6))
    model = microtrain.Model(x, out, seed=4)

    def forward(p, x):
        y1 = torch_conv(x, p[0], p[1], (1, 1), "same", "relu", False)
        y2 = torch_conv(y1, p[2], p[3], (1, 1), "same", "relu6", True)
        y4 = torch.cat([y1 + y2, y1], dim=1)
        y5 = F.leaky_relu(torch_conv(y4, p[4], p[5], (2, 2), "same", None, False), 0.1)
        y6 = to_nhwc(torch_pool(y5, "average", (3, 3), (2, 2), "same")).reshape(len(x), -1)
        return y6 @ p[6].T + p[7]
    return model, forward, (8, 8, 2), 5


def train_both(make, optimizer):
    model, forward, shape, classes = make()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((NUM_SAMPLES,) + shape).astype(np.float32)
    labels = rng.integers(0, classes, NUM_SAMPLES).astype(np.int32)

    with microtrain.TrainSession(model) as session:
        session.compile(optimizer, "sparse_categorical_crossentropy", batch_size=BATCH_SIZE)
        mt_losses = [session.train_step(x[a:b], labels[a:b])["loss"][0] for a, b in batches()]
        mt_weights = session.get_weights()

    params = [torch.tensor(w, requires_grad=True) for w in model.get_weights()]
    config = optimizer.get_config()
    if optimizer.name == "sgd":
        torch_opt = torch.optim.SGD(params, lr=config["learning_rate"],
                                    momentum=config["momentum"])
    else:
        torch_opt = torch.optim.Adam(params, lr=config["learning_rate"],
                                     betas=(config["beta1"], config["beta2"]),
                                     eps=config["epsilon"], foreach=False)
    torch_losses = []
    for a, b in batches():
        torch_opt.zero_grad()
        logits = forward(params, to_nchw(torch.from_numpy(x[a:b])))
        loss = F.cross_entropy(logits, torch.from_numpy(labels[a:b]).long())
        loss.backward()
        torch_opt.step()
        torch_losses.append(loss.item())
    return (np.array(mt_losses), mt_weights, np.array(torch_losses),
            [p.detach().numpy() for p in params])


@pytest.mark.parametrize("make", [digits_cnn, residual_cnn], ids=["digits_cnn", "residual"])
@pytest.mark.parametrize("optimizer", [optimizers.SGD(learning_rate=0.05, momentum=0.9),
                                       optimizers.Adam(learning_rate=0.01)],
                         ids=["sgd_momentum", "adam"])
def test_cnn_training_matches_torch(make, optimizer):
    mt_losses, mt_weights, torch_losses, torch_weights = train_both(make, optimizer)
    np.testing.assert_allclose(mt_losses, torch_losses, rtol=RTOL, atol=ATOL)
    assert len(mt_weights) == len(torch_weights)
    for position, (got, want) in enumerate(zip(mt_weights, torch_weights)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                                   err_msg="weight tensor %d" % position)
    assert abs(mt_losses[-1] - mt_losses[0]) > 1e-3  # training moved
