"""Mul and Sub (ops/arithmetic.c) against PyTorch through layers.Multiply and
layers.Subtract: two activations, one twice, a constant per channel or one value."""

import os
import sys

import numpy as np
import torch

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


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
