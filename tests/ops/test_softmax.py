"""Softmax (ops/softmax.c) over the last dimension against PyTorch through layers.Softmax:
forward and the input gradient, logits large enough that the row maximum matters."""

import os
import sys

import torch

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


def test_softmax_matches_torch():
    check_op(lambda feeds: layers.Softmax()(feeds[0]),
             lambda xs, ps: torch.softmax(xs[0], dim=-1), [sample((4, 7), scale=4.0)])
