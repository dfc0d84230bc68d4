"""MaxPool2D, AveragePool2D and GlobalAveragePool (ops/pooling.c) against PyTorch through
their layers: SAME, VALID and explicit pads, forward and the input gradient; the layers'
refusals of pads the core cannot run."""

import os
import sys

import math

import pytest
import torch
import torch.nn.functional as F

import microtrain
from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, pair, sample, to_nchw, to_nhwc, torch_pool  # noqa: E402


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
