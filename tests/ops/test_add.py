"""Add (ops/add.c) of two and three branches against PyTorch through layers.Add."""

import os
import sys

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


def test_add_of_two_and_three_branches_matches_torch():
    a, b, c = sample((2, 3, 4, 2), 1), sample((2, 3, 4, 2), 2), sample((2, 3, 4, 2), 3)
    check_op(lambda feeds: layers.Add()(feeds), lambda xs, ps: xs[0] + xs[1], [a, b])
    check_op(lambda feeds: layers.Add()(feeds), lambda xs, ps: xs[0] + xs[1] + xs[2],
             [a, b, c])
