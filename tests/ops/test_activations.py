"""The activations of ops/activations.c (ReLU, Sigmoid, Tanh, ReLU6, LeakyReLU) against
PyTorch through their layers: forward and the input gradient."""

import os
import sys

import pytest
import torch
import torch.nn.functional as F

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402

TORCH_FUNCTIONS = {"relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}
LAYERS = {"relu": layers.ReLU, "sigmoid": layers.Sigmoid, "tanh": layers.Tanh}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_relu_sigmoid_tanh_match_torch(name):
    x = sample((3, 10), scale=3.0)
    check_op(lambda feeds: LAYERS[name]()(feeds[0]),
             lambda xs, ps: TORCH_FUNCTIONS[name](xs[0]), [x])


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
