"""Transpose (ops/transpose.c) against PyTorch through layers.Permute."""

import os
import sys

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


def test_permute_matches_torch():
    x = sample((2, 3, 4, 2))
    check_op(lambda feeds: layers.Permute((3, 1, 2))(feeds[0]),
             lambda xs, ps: xs[0].permute(0, 3, 1, 2), [x])
    check_op(lambda feeds: layers.Permute((2, 1))(feeds[0]),
             lambda xs, ps: xs[0].permute(0, 2, 1), [sample((3, 4, 5))])
