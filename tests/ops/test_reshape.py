"""Reshape (ops/reshape.c) against PyTorch through layers.Flatten and layers.Reshape."""

import os
import sys

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


def test_flatten_and_reshape_match_torch():
    check_op(lambda feeds: layers.Flatten()(feeds[0]),
             lambda xs, ps: xs[0].reshape(xs[0].shape[0], -1), [sample((2, 3, 4, 2))])
    check_op(lambda feeds: layers.Reshape((6, 4))(feeds[0]),
             lambda xs, ps: xs[0].reshape(xs[0].shape[0], 6, 4), [sample((2, 3, 4, 2))])
