"""QUANTIZE (ops/quantize.c) against LiteRT's reference kernel at exact ties
(int8_rules.py): round(float32(x / scale)) + zp, ties away from zero."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_rules import (  # noqa: E402
    ALL_INT8, FLOAT32, INT8, assert_core_matches, clamp, Graph, half_away, run_reference)


def test_quantize_rounds_the_float_quotient_half_away_from_zero():
    """QUANTIZE float -> int8: x = (k + 1/2)·scale exactly (scale 1/2) and near-ties of 0.1"""
    for scale, zp in ((0.5, 3), (0.1, -7)):
        g = Graph()
        x = g.tensor((1, 256), FLOAT32)
        y = g.tensor((1, 256), INT8, scale=scale, zero_point=zp)
        g.op("QUANTIZE", [x], [y])
        data = g.finish([x], [y])
        values = ((ALL_INT8 + 0.5) * np.float32(scale)).astype(np.float32)[None]
        theirs = run_reference(data, [values])[0].reshape(-1).astype(np.int64)
        quotients = values[0] / np.float32(scale)  # float32 division, as TFLite's
        rule = [clamp(half_away(float(v)) + zp) for v in quotients]
        np.testing.assert_array_equal(theirs, rule)
        assert_core_matches(data, values)


def test_dequantize_is_the_scaled_difference_bit_for_bit():
    """DEQUANTIZE int8 -> float: scale · (q - zp) in float32, every int8 value, the float
    output's bits against LiteRT's"""
    for scale, zp in ((0.5, 3), (0.1, -128), (3e-3, 127)):
        g = Graph()
        x = g.tensor((1, 256), INT8, scale=scale, zero_point=zp)
        y = g.tensor((1, 256), FLOAT32)
        g.op("DEQUANTIZE", [x], [y])
        data = g.finish([x], [y])
        values = ALL_INT8.astype(np.int8)[None]
        theirs = run_reference(data, [values])[0].reshape(-1)
        rule = np.float32(scale) * (ALL_INT8 - zp).astype(np.float32)
        np.testing.assert_array_equal(theirs.view(np.uint32), rule.view(np.uint32))
        assert_core_matches(data, values)
