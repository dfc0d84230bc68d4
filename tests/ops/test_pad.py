"""Pad (ops/pad.c) against PyTorch through layers.ZeroPadding2D."""

import os
import sys

import torch.nn.functional as F

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample, to_nchw, to_nhwc  # noqa: E402


def test_zero_padding_matches_torch():
    x = sample((2, 3, 4, 2))
    check_op(lambda feeds: layers.ZeroPadding2D(((1, 2), (0, 3)))(feeds[0]),
             lambda xs, ps: to_nhwc(F.pad(to_nchw(xs[0]), (0, 3, 1, 2))), [x])
    check_op(lambda feeds: layers.ZeroPadding2D(1)(feeds[0]),
             lambda xs, ps: to_nhwc(F.pad(to_nchw(xs[0]), (1, 1, 1, 1))), [x])
