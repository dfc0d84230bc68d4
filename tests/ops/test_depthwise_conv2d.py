"""DepthwiseConv2D (ops/depthwise_conv2d.c) against PyTorch (groups = C) through
layers.DepthwiseConv2D: forward and every gradient."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_parity import CONV_CASES, check_convolution  # noqa: E402


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_convolution_forward_and_backward_match_torch(case):
    check_convolution(case, depthwise=True)
