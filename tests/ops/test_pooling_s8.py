"""MAX_POOL2D_S8, AVERAGE_POOL2D_S8 and MEAN_S8 (ops/pooling_s8.c) against LiteRT's reference
kernels (int8_rules.py): the window's maximum, and the averages at exact ties, half away from
zero."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_rules import (  # noqa: E402
    INT32, INT8, assert_core_matches, clamp, gemmlowp, Graph, image_of_every_int8, q, run_reference)


def pool_model(kind, size, stride, padding):
    """x int8 [1, 16, 16, 4] -> the pool ``kind`` (padding 1 VALID, 0 SAME) -> y, one scale and
    zero point; (the .tflite, y's height and width)"""
    g = Graph()
    x = g.tensor((1, 16, 16, 4), INT8, scale=0.5, zero_point=-3)
    out = -(-16 // stride)
    y = g.tensor((1, out, out, 4), INT8, scale=0.5, zero_point=-3)
    g.op(kind, [x], [y], ("Pool2DOptions", {
        "Padding": padding, "StrideH": stride, "StrideW": stride, "FilterHeight": size,
        "FilterWidth": size, "FusedActivationFunction": 0}))
    return g.finish([x], [y]), out


def test_average_pool_and_mean_round_half_away_from_zero():
    """AVERAGE_POOL_2D: (sum ± count/2) / count truncated, counts 4 (2x2 VALID) and 4, 6, 9
    (3x3 SAME); MEAN over H and W: gemmlowp with 1/P folded into the multiplier, P = 4"""
    image = image_of_every_int8(4, 3)
    for size, stride, padding in ((2, 2, 1), (3, 1, 0)):
        data, out = pool_model("AVERAGE_POOL_2D", size, stride, padding)
        theirs = run_reference(data, [image])[0].astype(np.int64)
        padded = np.pad(image[0].astype(np.int64), ((1, 1), (1, 1), (0, 0))) if padding == 0 \
            else image[0].astype(np.int64)
        inside = np.pad(np.ones((16, 16), np.int64), 1) if padding == 0 else np.ones((16, 16))
        rule = np.zeros_like(theirs[0])
        ties = 0
        for oh in range(out):
            for ow in range(out):
                window = padded[oh * stride:oh * stride + size, ow * stride:ow * stride + size]
                count = int(inside[oh * stride:oh * stride + size,
                                   ow * stride:ow * stride + size].sum())
                total = window.sum((0, 1))
                ties += int(np.count_nonzero(2 * (np.abs(total) % count) == count))
                rule[oh, ow] = [int((t + count // 2) / count) if t > 0 else
                                -int((-t + count // 2) / count) for t in total]
        np.testing.assert_array_equal(theirs[0], rule)
        assert ties > 10  # sums at x.5 of their count, both signs
        assert_core_matches(data, image)
    for sx, sy in ((1.0, 1.0), (0.5, 1.0)):
        g = Graph()
        x = g.tensor((1, 2, 2, 64), INT8, scale=sx, zero_point=5)
        axes = g.tensor((2,), INT32, data=[1, 2])
        y = g.tensor((1, 64), INT8, scale=sy, zero_point=-4)
        g.op("MEAN", [x, axes], [y], ("ReducerOptions", {"KeepDims": False}))
        data = g.finish([x], [y])
        pixels = image_of_every_int8(1, 4).reshape(1, 2, 2, 64)
        theirs = run_reference(data, [pixels])[0].reshape(-1).astype(np.int64)
        multiplier, shift = q.mean_requant(sx, sy)
        k = min(2, 32, 31 + shift)  # floor(log2(4))
        folded = (multiplier << k) // 4
        sums = pixels.reshape(4, 64).astype(np.int64).sum(0) - 5 * 4
        rule = [clamp(gemmlowp(int(t), folded, shift - k) - 4) for t in sums]
        np.testing.assert_array_equal(theirs, rule)
        assert np.count_nonzero(sums % 4 == 2) > 5  # ties of sum / 4 among them
        assert_core_matches(data, pixels)


def test_max_pool_is_the_windows_maximum():
    """MAX_POOL_2D 2x2 VALID and 3x3 SAME (padded positions never win), every int8 value"""
    image = image_of_every_int8(4, 6)
    for size, stride, padding in ((2, 2, 1), (3, 1, 0)):
        data, out = pool_model("MAX_POOL_2D", size, stride, padding)
        theirs = run_reference(data, [image])[0]
        padded = np.pad(image[0], ((1, 1), (1, 1), (0, 0)), constant_values=-128) \
            if padding == 0 else image[0]
        rule = np.array([[padded[oh * stride:oh * stride + size,
                                 ow * stride:ow * stride + size].max((0, 1))
                          for ow in range(out)] for oh in range(out)])
        np.testing.assert_array_equal(theirs[0], rule)
        assert_core_matches(data, image)
