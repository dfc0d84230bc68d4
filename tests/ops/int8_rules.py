"""What the int8 ops' Python tests (tests/ops/test_<source>.py) share: the rounding rule of
each int8 op, checked against LiteRT's reference kernels (BUILTIN_REF)
where rules differ: at exact ties. Each case is a hand-built .tflite (tflite_int8_builder.py)
whose scales, weights and biases put many sums on a tie (x.5 of the output scale), negative
and positive. For each, LiteRT's output equals (1) the rule written out below, the rule
docs/importers.md ("Rounding") states, and (2) microtrain's core, every byte (the importer and
the int8 kernels, through int8_compare.py). For FULLY_CONNECTED and the convolutions, where
the other rule (one rounding instead of gemmlowp's two, or the reverse) would round
differently, the case asserts that it does, so the inputs really tell the rules apart.

    FULLY_CONNECTED   clamp(int32(round(double(acc) * E)) + zy), E = double(sx)*double(sw)/
                      double(sy): one rounding of the double product, ties away from zero
    CONV_2D, DEPTHWISE_CONV_2D, ADD, MEAN
                      gemmlowp's MultiplyByQuantizedMultiplier: the doubling high multiply
                      (ties up), then the rounding shift (ties away from zero)
    AVERAGE_POOL_2D   (sum +- count/2) / count truncated: ties away from zero
    QUANTIZE          round(float32(x / scale)) + zp: ties away from zero
"""

import math
import os
import sys
from fractions import Fraction

import numpy as np
import pytest

# the importers' int8 tools: LiteRT's reference run, the .tflite writer, the core's comparison
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "convert"))
import int8_compare  # noqa: E402

pytest.importorskip("ai_edge_litert")
pytest.importorskip("tflite")
from tflite_int8_builder import FLOAT32, INT32, INT8, Graph, run_reference  # noqa: E402

from microtrain.convert import int8_quant as q  # noqa: E402

ALL_INT8 = np.arange(-128, 128)


# ------------------------------------------------------------------ the rules, written out

def wrap32(v):
    return (int(v) + 2 ** 31) % 2 ** 32 - 2 ** 31


def clamp(v, lo=-128, hi=127):
    return max(lo, min(hi, int(v)))


def half_away(value):
    """round() of a float or Fraction: to nearest, ties away from zero, exactly"""
    value = Fraction(value)
    half = Fraction(1, 2)
    return math.floor(value + half) if value >= 0 else -math.floor(-value + half)


def fc_scale(sx, sw, sy):
    """LiteRT's effective_output_scale: the float scales' product in double, then divided"""
    return float(np.float32(sx)) * float(np.float32(sw)) / float(np.float32(sy))


def fully_connected_rule(acc, e, zy):
    """int32(round(double(acc) * e)) (x86-64's INT32_MIN where it does not fit), + zy wrapping"""
    r = half_away(float(acc) * e)  # Python's float product: one IEEE double rounding
    if not -2 ** 31 <= r < 2 ** 31:
        r = -2 ** 31
    return clamp(wrap32(r + zy))


def gemmlowp(acc, multiplier, shift):
    """MultiplyByQuantizedMultiplier(int32): SaturatingRoundingDoublingHighMul of the
    left-shifted sum, then RoundingDivideByPOT"""
    a = wrap32(acc << max(shift, 0))
    right = max(-shift, 0)
    product = a * multiplier
    nudged = product + (2 ** 30 if product >= 0 else 1 - 2 ** 30)
    high = abs(nudged) // 2 ** 31 * (1 if nudged >= 0 else -1)  # truncated toward zero
    mask = (1 << right) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if (high & mask) > threshold else 0)


def conv_rule(acc, sx, sw, sy, zy):
    multiplier, shift = q.quantize_multiplier(fc_scale(sx, sw, sy))
    return clamp(gemmlowp(acc, multiplier, shift) + zy)


# ------------------------------------------------------------------ running the cases

def fully_connected_model(sx, zx, sw, weights, biases, sy, zy, keep_num_dims=False):
    """x int8 [1, D] (or [1, 1, D] with keep_num_dims) -> FULLY_CONNECTED -> y int8"""
    weights = np.asarray(weights, np.int8)
    units, depth = weights.shape
    g = Graph()
    lead = (1, 1) if keep_num_dims else (1,)
    x = g.tensor(lead + (depth,), INT8, scale=sx, zero_point=zx)
    sw = np.asarray(sw, np.float32)
    w = g.tensor((units, depth), INT8, data=weights, scale=sw)
    b = g.tensor((units,), INT32, data=biases, scale=np.float32(sx) * sw)
    y = g.tensor(lead + (units,), INT8, scale=sy, zero_point=zy)
    g.op("FULLY_CONNECTED", [x, w, b], [y], ("FullyConnectedOptions",
                                                {"KeepNumDims": keep_num_dims}))
    return g.finish([x], [y])


def litert_rows(data, rows):
    """LiteRT's output for each row, the rows as one batch (batch > 1)"""
    return run_reference(data, [np.asarray(rows)])[0].reshape(len(rows), -1).astype(np.int64)


def assert_core_matches(data, rows):
    output_equal, report = int8_compare.compare(data, np.asarray(rows))
    assert [r for r in report if not r[1]] == [] and output_equal, report


def check_fully_connected(sx, zx, sw, weights, biases, sy, zy, rows, differs_from_gemmlowp=True,
                          keep_num_dims=False):
    data = fully_connected_model(sx, zx, sw, weights, biases, sy, zy, keep_num_dims)
    rows = np.asarray(rows, np.int8).reshape(len(rows), *((1,) if keep_num_dims else ()), -1)
    theirs = litert_rows(data, rows)
    weights = np.asarray(weights, np.int64)
    sws = np.broadcast_to(np.asarray(sw, np.float32), (len(weights),))
    accs = (rows.reshape(len(rows), -1).astype(np.int64) - zx) @ weights.T + np.asarray(biases)
    rule = np.array([[fully_connected_rule(wrap32(a), fc_scale(sx, s, sy), zy)
                      for a, s in zip(row, sws)] for row in accs])
    np.testing.assert_array_equal(theirs, rule)
    old = np.array([[conv_rule(wrap32(a), sx, s, sy, zy) for a, s in zip(row, sws)]
                    for row in accs])
    if differs_from_gemmlowp is not None:  # the rows tell the FC rule from Conv2D's
        assert np.any(old != theirs) == differs_from_gemmlowp
    assert_core_matches(data, rows)


# ------------------------------------------------------------------ images

def image_of_every_int8(channels=1, seed=0):
    """[1, 16, 16, C]: each channel every int8 value once (channel c in its own order)"""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(ALL_INT8) for _ in range(channels)], -1).reshape(
        1, 16, 16, channels).astype(np.int8)
