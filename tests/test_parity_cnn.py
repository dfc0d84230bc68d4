"""Convolutional ops and CNN training against PyTorch (CPU, float32).

Layouts: microtrain is NHWC with OHWI conv weights ([out, kh, kw, in]) and
[1, kh, kw, C] depthwise weights; torch is NCHW with OIHW weights and groups=C for
depthwise. TFLite's SAME padding puts the odd element after (bottom/right), which
torch's symmetric ``padding=`` cannot express, so the reference pads explicitly
with F.pad (-inf for max pooling: padded positions never win; average pooling
divides by the in-bounds count, computed by pooling a padded tensor of ones).

Op tests read gradients straight from the arena: with accumulate_gradients the
core keeps every weight gradient in its own buffer (located with
``microtrain.tools.arena.plan_buffers``) after ``train_step(..., update=False)``. The
op's input comes from a bias-free Dense on a one-hot input (x_i = W[:, i] exactly),
so the gradient of that Dense weight is the gradient of the op's input.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import microtrain
from microtrain import layers, losses, optimizers
from microtrain.tools import arena

RTOL = 1e-5
ATOL = 1e-6


# ---------------------------------------------------------------- torch reference ops


def to_nchw(x):
    return x.permute(0, 3, 1, 2)


def to_nhwc(x):
    return x.permute(0, 2, 3, 1)


def conv_weight_to_torch(weight, depthwise):
    """OHWI -> OIHW; depthwise [1, kh, kw, C] -> [C, 1, kh, kw]."""
    return weight.permute(3, 0, 1, 2) if depthwise else weight.permute(0, 3, 1, 2)


def same_padding(size, kernel, stride):
    """TFLite SAME: (before, after) with the odd element after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def pad_nchw(x, kernel, strides, padding, value=0.0):
    if padding == "valid":
        return x
    top, bottom = same_padding(x.shape[2], kernel[0], strides[0])
    left, right = same_padding(x.shape[3], kernel[1], strides[1])
    return F.pad(x, (left, right, top, bottom), value=value)


def pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def torch_activation(x, activation, alpha=None):
    if activation == "relu":
        return F.relu(x)
    if activation == "relu6":
        return torch.clamp(x, 0.0, 6.0)
    if activation == "leaky":
        return F.leaky_relu(x, alpha)
    return x


def torch_conv(x, weight, bias, strides, padding, activation, depthwise):
    """NCHW in and out; ``weight`` in microtrain's layout."""
    w = conv_weight_to_torch(weight, depthwise)
    kernel = tuple(w.shape[2:])
    xp = pad_nchw(x, kernel, strides, padding)
    y = F.conv2d(xp, w, bias, stride=strides, groups=x.shape[1] if depthwise else 1)
    return torch_activation(y, activation)


def torch_pool(x, kind, pool, strides, padding):
    if kind == "max":
        return F.max_pool2d(pad_nchw(x, pool, strides, padding, -math.inf), pool, strides)
    sums = F.avg_pool2d(pad_nchw(x, pool, strides, padding), pool, strides, divisor_override=1)
    ones = torch.ones_like(x[:1, :1])
    counts = F.avg_pool2d(pad_nchw(ones, pool, strides, padding), pool, strides,
                          divisor_override=1)
    return sums / counts


# ---------------------------------------------------------------- one op, core side


def core_op_gradients(build, inputs, target, trainable_count):
    """Forward output and gradients of the sum-reduced MSE loss from the core.

    ``build(feeds)`` applies the op under test to symbolic tensors shaped like
    ``inputs`` (numpy [n, ...] arrays). Returns (output, input grads, grads of the
    op's own weights)."""
    n = len(inputs[0])
    u = microtrain.Input((n,))
    feeds = []
    for array in inputs:
        sample = array.shape[1:]
        dense = layers.Dense(int(np.prod(sample)), use_bias=False,
                             weight=array.reshape(n, -1).T)
        feeds.append(layers.Reshape(sample)(dense(u)))
    model = microtrain.Model(u, build(feeds), seed=0)
    with microtrain.TrainSession(model) as session:
        session.compile(optimizers.SGD(learning_rate=1.0), losses.MeanSquaredError("sum"),
                        batch_size=n, accumulate_gradients=True)
        session.train_step(np.eye(n, dtype=np.float32), target, update=False)
        output = session.output_buffer()[:n].copy()
        weights = session.get_weights()
        trained = session.trained_tensors()
        gradient_buffers = {b["tensor"]: b for b in arena.plan_buffers(session)
                            if b["kind"] == "gradient" and b["tensor"] in trained}
        grads = []
        for tensor, weight in zip(trained, weights):
            buffer = gradient_buffers[tensor]
            raw = session._backend._arena[buffer["offset"]:buffer["offset"] + 4 * weight.size]
            grads.append(raw.view(np.float32).reshape(weight.shape).copy())
    input_grads = [g.T.reshape(a.shape) for g, a in zip(grads[:len(inputs)], inputs)]
    own = grads[len(inputs):]
    assert len(own) == trainable_count
    return output, input_grads, own


def torch_op_gradients(forward, inputs, params, target):
    """forward(list of NHWC tensors, list of param tensors) -> NHWC output."""
    xs = [torch.tensor(a, requires_grad=True) for a in inputs]
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    y = forward(xs, ps)
    loss = ((y - torch.from_numpy(target)) ** 2).flatten(1).mean(dim=1).sum()
    loss.backward()
    return (y.detach().numpy(), [x.grad.numpy() for x in xs], [p.grad.numpy() for p in ps])


def check_op(build, forward, inputs, params=(), seed=0):
    rng = np.random.default_rng(seed)
    expected_y, expected_dx, expected_dp = torch_op_gradients(forward, inputs, params,
                                                              np.zeros(1, np.float32))
    target = rng.standard_normal(expected_y.shape).astype(np.float32)
    expected_y, expected_dx, expected_dp = torch_op_gradients(forward, inputs, params, target)
    y, dx, dp = core_op_gradients(build, inputs, target, len(params))
    np.testing.assert_allclose(y, expected_y, rtol=RTOL, atol=ATOL, err_msg="forward")
    for position, (got, want) in enumerate(zip(dx, expected_dx)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                                   err_msg="input %d gradient" % position)
    for position, (got, want) in enumerate(zip(dp, expected_dp)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                                   err_msg="weight %d gradient" % position)
    assert any(np.abs(g).max() > 1e-3 for g in dx), "the test must exercise the backward"


def sample(shape, seed=1, scale=1.0):
    return (scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


# ---------------------------------------------------------------- op cases

CONV_CASES = [
    # (input [n, H, W, C], filters, kernel, strides, padding, activation, use_bias)
    ((3, 7, 6, 3), 4, 3, 1, "valid", None, True),
    ((2, 7, 6, 3), 4, 3, 2, "same", "relu", True),
    ((2, 8, 8, 2), 3, (3, 2), (2, 1), "same", "relu6", False),
    ((2, 5, 5, 1), 2, 1, 1, "valid", None, True),
    ((2, 6, 7, 2), 5, 4, 2, "same", None, True),
    ((1, 9, 9, 2), 3, 3, 3, "valid", "relu", True),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_convolution_forward_and_backward_match_torch(case, depthwise):
    shape, filters, kernel, strides, padding, activation, use_bias = case
    kh, kw = pair(kernel)
    channels = shape[3]
    scale = 4.0 if activation == "relu6" else 1.0  # reach both ends of the clip
    x = sample(shape, scale=scale)
    w_shape = (1, kh, kw, channels) if depthwise else (filters, kh, kw, channels)
    weight = sample(w_shape, seed=2, scale=0.5)
    out_channels = channels if depthwise else filters
    params = [weight] + ([sample((out_channels,), seed=3)] if use_bias else [])

    def build(feeds):
        if depthwise:
            layer = layers.DepthwiseConv2D(kernel, strides, padding, activation, weight=weight,
                                           bias=params[1] if use_bias else None,
                                           use_bias=use_bias)
        else:
            layer = layers.Conv2D(filters, kernel, strides, padding, activation, weight=weight,
                                  bias=params[1] if use_bias else None, use_bias=use_bias)
        return layer(feeds[0])

    def forward(xs, ps):
        bias = ps[1] if use_bias else None
        return to_nhwc(torch_conv(to_nchw(xs[0]), ps[0], bias, pair(strides), padding,
                                  activation, depthwise))

    check_op(build, forward, [x], params)


POOL_CASES = [
    # (input, pool, strides, padding)
    ((2, 7, 6, 3), 2, None, "valid"),
    ((2, 7, 6, 3), 3, 2, "same"),
    ((2, 5, 5, 2), 3, 1, "same"),
    ((2, 5, 6, 2), 2, 1, "valid"),
    ((1, 6, 7, 2), (2, 3), (2, 2), "same"),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pooling_forward_and_backward_match_torch(case, kind):
    shape, pool, strides, padding = case
    x = sample(shape)
    layer_class = layers.MaxPool2D if kind == "max" else layers.AveragePool2D
    torch_strides = pair(pool) if strides is None else pair(strides)
    check_op(lambda feeds: layer_class(pool, strides, padding)(feeds[0]),
             lambda xs, ps: to_nhwc(torch_pool(to_nchw(xs[0]), kind, pair(pool), torch_strides,
                                               padding)),
             [x])


EXPLICIT_POOL_CASES = [
    # (input, pool, strides, padding as the layer takes it, torch's pads (left, right, top,
    # bottom)); the max pool's torch reference is F.max_pool2d's own padding where it has it
    ((2, 8, 8, 3), 3, 2, 1, (1, 1, 1, 1)),                      # ResNet's stem pool
    ((2, 7, 6, 2), 3, 2, ((0, 1), (0, 1)), (0, 1, 0, 1)),       # ceil_mode's last window
    ((1, 6, 7, 2), (3, 2), (1, 2), ((2, 0), (1, 1)), (1, 1, 2, 0)),  # more before than after
]


@pytest.mark.parametrize("case", EXPLICIT_POOL_CASES,
                         ids=[str(i) for i in range(len(EXPLICIT_POOL_CASES))])
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pooling_with_explicit_pads_matches_torch(case, kind):
    """Explicit pads (PyTorch's padding=, ONNX's pads): padded positions never win the
    maximum, never count in the average, and get no gradient."""
    shape, pool, strides, padding, torch_pads = case
    x = sample(shape, seed=4)
    layer_class = layers.MaxPool2D if kind == "max" else layers.AveragePool2D
    kernel, stride = pair(pool), pair(strides)

    def forward(xs, ps):
        nchw = to_nchw(xs[0])
        if kind == "max" and isinstance(padding, int):
            return to_nhwc(F.max_pool2d(nchw, kernel, stride, padding=padding))
        if kind == "max":
            return to_nhwc(F.max_pool2d(F.pad(nchw, torch_pads, value=-math.inf), kernel,
                                        stride))
        if isinstance(padding, int):
            return to_nhwc(F.avg_pool2d(nchw, kernel, stride, padding=padding,
                                        count_include_pad=False))
        sums = F.avg_pool2d(F.pad(nchw, torch_pads), kernel, stride, divisor_override=1)
        ones = F.pad(torch.ones_like(nchw[:1, :1]), torch_pads)
        return to_nhwc(sums / F.avg_pool2d(ones, kernel, stride, divisor_override=1))

    check_op(lambda feeds: layer_class(pool, strides, padding)(feeds[0]), forward, [x])


def test_pool_padding_refusals_name_the_rule():
    with pytest.raises(ValueError, match="0..255"):
        layers.MaxPool2D(3, 2, padding=256)
    with pytest.raises(ValueError, match="padding must be"):
        layers.MaxPool2D(3, 2, padding=(1, 2, 3))
    with pytest.raises(ValueError, match="padding must be"):
        layers.AveragePool2D(3, 2, padding=-1)
    x = microtrain.Input((4, 4, 1))
    with pytest.raises(ValueError, match="first window lies in the padding"):
        layers.MaxPool2D(3, 1, padding=((3, 0), (0, 0)))(x)
    with pytest.raises(ValueError, match="last window starts in the padding"):
        layers.MaxPool2D(1, 2, padding=((0, 2), (0, 0)))(x)


def test_global_average_pool_matches_torch():
    check_op(lambda feeds: layers.GlobalAveragePool()(feeds[0]),
             lambda xs, ps: xs[0].mean(dim=(1, 2)), [sample((3, 4, 5, 3))])


def test_flatten_and_reshape_match_torch():
    check_op(lambda feeds: layers.Flatten()(feeds[0]),
             lambda xs, ps: xs[0].reshape(xs[0].shape[0], -1), [sample((2, 3, 4, 2))])
    check_op(lambda feeds: layers.Reshape((6, 4))(feeds[0]),
             lambda xs, ps: xs[0].reshape(xs[0].shape[0], 6, 4), [sample((2, 3, 4, 2))])


@pytest.mark.parametrize("name", ["relu6", "leaky_0.2", "leaky_0"])
def test_activations_match_torch(name):
    x = sample((3, 4, 4, 2), scale=5.0)
    if name == "relu6":
        check_op(lambda feeds: layers.ReLU6()(feeds[0]),
                 lambda xs, ps: torch.clamp(xs[0], 0.0, 6.0), [x])
    else:
        alpha = float(name.split("_")[1])
        check_op(lambda feeds: layers.LeakyReLU(alpha)(feeds[0]),
                 lambda xs, ps: F.leaky_relu(xs[0], alpha), [x])


def test_add_of_two_and_three_branches_matches_torch():
    a, b, c = sample((2, 3, 4, 2), 1), sample((2, 3, 4, 2), 2), sample((2, 3, 4, 2), 3)
    check_op(lambda feeds: layers.Add()(feeds), lambda xs, ps: xs[0] + xs[1], [a, b])
    check_op(lambda feeds: layers.Add()(feeds), lambda xs, ps: xs[0] + xs[1] + xs[2],
             [a, b, c])


def test_concatenate_matches_torch():
    a, b, c = sample((2, 3, 4, 2), 1), sample((2, 3, 4, 3), 2), sample((2, 3, 4, 1), 3)
    check_op(lambda feeds: layers.Concatenate()(feeds), lambda xs, ps: torch.cat(xs, dim=3),
             [a, b])
    check_op(lambda feeds: layers.Concatenate()(feeds), lambda xs, ps: torch.cat(xs, dim=3),
             [a, b, c])


def test_zero_padding_and_permute_match_torch():
    x = sample((2, 3, 4, 2))
    check_op(lambda feeds: layers.ZeroPadding2D(((1, 2), (0, 3)))(feeds[0]),
             lambda xs, ps: to_nhwc(F.pad(to_nchw(xs[0]), (0, 3, 1, 2))), [x])
    check_op(lambda feeds: layers.ZeroPadding2D(1)(feeds[0]),
             lambda xs, ps: to_nhwc(F.pad(to_nchw(xs[0]), (1, 1, 1, 1))), [x])
    check_op(lambda feeds: layers.Permute((3, 1, 2))(feeds[0]),
             lambda xs, ps: xs[0].permute(0, 3, 1, 2), [x])
    check_op(lambda feeds: layers.Permute((2, 1))(feeds[0]),
             lambda xs, ps: xs[0].permute(0, 2, 1), [sample((3, 4, 5))])


def test_multiply_and_subtract_match_torch():
    a, b = sample((2, 3, 4, 3), 1), sample((2, 3, 4, 3), 2)
    scale, mean = np.float32([0.5, -2.0, 1.5]), np.float32([0.1, -0.3, 0.7])
    check_op(lambda feeds: layers.Multiply()(feeds), lambda xs, ps: xs[0] * xs[1], [a, b])
    check_op(lambda feeds: layers.Multiply()([feeds[0], feeds[0]]),
             lambda xs, ps: xs[0] * xs[0], [a])
    check_op(lambda feeds: layers.Subtract()(feeds), lambda xs, ps: xs[0] - xs[1], [a, b])
    check_op(lambda feeds: layers.Multiply(constant=scale)(feeds[0]),
             lambda xs, ps: xs[0] * torch.from_numpy(scale), [a])
    check_op(lambda feeds: layers.Multiply(constant=2.5)(feeds[0]),
             lambda xs, ps: xs[0] * 2.5, [a])
    check_op(lambda feeds: layers.Subtract(constant=mean)(feeds[0]),
             lambda xs, ps: xs[0] - torch.from_numpy(mean), [a])


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
