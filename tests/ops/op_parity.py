"""What the ops' Python tests (tests/ops/test_<source>.py) share: one op against PyTorch
(CPU, float32), forward and every gradient, through the layer that emits it.

Layouts: microtrain is NHWC with OHWI conv weights ([out, kh, kw, in]) and
[1, kh, kw, C] depthwise weights; torch is NCHW with OIHW weights and groups=C for
depthwise. TFLite's SAME padding puts the odd element after (bottom/right), which
torch's symmetric ``padding=`` cannot express, so the reference pads explicitly
with F.pad (-inf for max pooling: padded positions never win; average pooling
divides by the in-bounds count, computed by pooling a padded tensor of ones).

Op tests read gradients straight from the arena: with accumulate_gradients the
core keeps every weight gradient in its own buffer (located with
``microtrain.tools.arena.plan_buffers``; tests/gradient_buffers.py reads them) after
``train_step(..., update=False)``. The op's input comes from a bias-free Dense on a one-hot
input (x_i = W[:, i] exactly), so the gradient of that Dense weight is the gradient of the
op's input.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import microtrain
from microtrain import layers, losses, optimizers

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gradient_buffers import trained_gradients  # noqa: E402

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
        grads = trained_gradients(session)
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


# ---------------------------------------------------------------- Conv2D and DepthwiseConv2D

CONV_CASES = [
    # (input [n, H, W, C], filters, kernel, strides, padding, activation, use_bias)
    ((3, 7, 6, 3), 4, 3, 1, "valid", None, True),
    ((2, 7, 6, 3), 4, 3, 2, "same", "relu", True),
    ((2, 8, 8, 2), 3, (3, 2), (2, 1), "same", "relu6", False),
    ((2, 5, 5, 1), 2, 1, 1, "valid", None, True),
    ((2, 6, 7, 2), 5, 4, 2, "same", None, True),
    ((1, 9, 9, 2), 3, 3, 3, "valid", "relu", True),
]


def check_convolution(case, depthwise):
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
