"""Dense (ops/dense.c) against PyTorch's linear map through layers.Dense: forward, the
input gradient and the weight and bias gradients; without a bias too."""

import os
import sys

import pytest

from microtrain import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import check_op, sample  # noqa: E402


@pytest.mark.parametrize("use_bias", [True, False], ids=["bias", "no_bias"])
def test_dense_matches_torch(use_bias):
    x, weight, bias = sample((5, 6)), sample((4, 6), seed=2, scale=0.5), sample((4,), seed=3)
    params = [weight, bias] if use_bias else [weight]
    check_op(lambda feeds: layers.Dense(4, weight=weight, bias=bias if use_bias else None,
                                        use_bias=use_bias)(feeds[0]),
             lambda xs, ps: xs[0] @ ps[0].T + (ps[1] if use_bias else 0.0), [x], params)
