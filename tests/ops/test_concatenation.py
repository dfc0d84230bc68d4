"""Concatenation (ops/concatenation.c) of two and three inputs against PyTorch through
layers.Concatenate."""

import os
import sys

import torch

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


def test_concatenate_matches_torch():
    a, b, c = sample((2, 3, 4, 2), 1), sample((2, 3, 4, 3), 2), sample((2, 3, 4, 1), 3)
    check_op(lambda feeds: layers.Concatenate()(feeds), lambda xs, ps: torch.cat(xs, dim=3),
             [a, b])
    check_op(lambda feeds: layers.Concatenate()(feeds), lambda xs, ps: torch.cat(xs, dim=3),
             [a, b, c])
