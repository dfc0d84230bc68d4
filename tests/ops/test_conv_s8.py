"""CONV2D_S8 and DEPTHWISE_CONV2D_S8 (ops/conv_s8.c) against LiteRT's reference kernels at
exact ties (int8_rules.py): gemmlowp's two roundings."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_rules import (  # noqa: E402
    INT32, INT8, assert_core_matches, conv_rule, fc_scale, fully_connected_rule, Graph,
    image_of_every_int8, run_reference)


def test_conv2d_and_depthwise_round_twice_as_gemmlowp():
    """1x1 Conv2D and DepthwiseConv2D with per-channel E = 1/2, 1/4, 3/8, 5/16: the doubling
    high multiply rounds x.5 up and the rounding shift away from zero (1/4 -> 1)"""
    sws = np.asarray([0.5, 0.25, 0.375, 0.3125], np.float32)
    weights, biases, zx, zy = np.asarray([1, 1, 3, 1]), [0, 1, 2, -3], 5, -2
    for depthwise in (False, True):
        g = Graph()
        channels = 4 if depthwise else 1
        x = g.tensor((1, 16, 16, channels), INT8, scale=1.0, zero_point=zx)
        shape = (1, 1, 1, 4) if depthwise else (4, 1, 1, 1)
        w = g.tensor(shape, INT8, data=weights.reshape(shape), scale=sws,
                     axis=3 if depthwise else 0)
        b = g.tensor((4,), INT32, data=biases, scale=sws, axis=0)
        y = g.tensor((1, 16, 16, 4), INT8, scale=1.0, zero_point=zy)
        options = {"Padding": 1, "StrideH": 1, "StrideW": 1, "DilationHFactor": 1,
                   "DilationWFactor": 1}
        if depthwise:
            options["DepthMultiplier"] = 1
        g.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, w, b], [y],
             ("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", options))
        data = g.finish([x], [y])
        image = image_of_every_int8(channels)
        theirs = run_reference(data, [image])[0].reshape(-1, 4).astype(np.int64)
        inputs = image.reshape(-1, channels).astype(np.int64) - zx
        accs = inputs * weights + biases if depthwise else inputs[:, :1] * weights + biases
        rule = [[conv_rule(a, 1.0, s, 1.0, zy) for a, s in zip(row, sws)] for row in accs]
        once = [[fully_connected_rule(a, fc_scale(1.0, s, 1.0), zy) for a, s in zip(row, sws)]
                for row in accs]
        np.testing.assert_array_equal(theirs, rule)
        assert np.any(theirs != np.asarray(once))  # one rounding would differ
        assert_core_matches(data, np.concatenate([image, image[:, ::-1]]))
