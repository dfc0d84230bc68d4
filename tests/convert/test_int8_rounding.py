"""The rounding rule of each int8 op, checked against LiteRT's reference kernels (BUILTIN_REF)
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
import platform
import sys
from fractions import Fraction

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
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


def test_fully_connected_rounds_the_double_product_once_ties_away_from_zero():
    """Dyadic scales: exact ties, which LiteRT rounds away from zero once (Conv2D's rule,
    gemmlowp's two roundings, differs on the same rows)"""
    rows = ALL_INT8[:, None]  # 256 rows of one input: every sum from -255 to 255 (zx 0, 127)
    # per tensor, E = 1/2: every odd sum a tie, both signs (gemmlowp: -1.5 -> -1, here -2)
    check_fully_connected(1.0, 0, 0.5, [[1], [1], [3]], [0, 1, -7], 1.0, 0, rows)
    check_fully_connected(0.5, 127, 0.25, [[1], [-3]], [3, 0], 0.25, -3, rows)
    # per unit: E = 1/2, 1/4, 3/8, 1/8, 5/16 (one rounding: 0.25 -> 0, gemmlowp's two give 1)
    check_fully_connected(1.0, 0, [0.5, 0.25, 0.375, 0.125, 0.3125], [[1]] * 5,
                          [0, 2, 1, 4, -3], 1.0, 0, rows)
    # a 3-D input with keep_num_dims (LiteRT's batches are all but the last dimension)
    check_fully_connected(1.0, 0, 0.5, [[1], [3]], [0, 1], 1.0, 2, rows, keep_num_dims=True)


def test_fully_connected_scale_is_the_double_quotient_of_the_float_scales():
    """Sums next to a tie of a non-dyadic scale, where the quantized multiplier (31 bits, as
    Conv2D's) or the float32 product of sx and sw (the per-tensor multiplier before) rounds
    to the other side: E is double(sx)·double(sw)/double(sy)."""
    rng = np.random.default_rng(38)
    found = None
    for _ in range(200):
        sx, sw, sy = (float(np.float32(v)) for v in (rng.uniform(0.01, 0.1),
                                                    rng.uniform(0.001, 0.01),
                                                    rng.uniform(0.05, 0.5)))
        e = fc_scale(sx, sw, sy)
        e32 = float(np.float32(sx) * np.float32(sw)) / float(np.float32(sy))
        multiplier, shift = q.quantize_multiplier(e)
        sums = []
        for k in range(-120, 120):
            for acc in (math.floor((k + 0.5) / e), math.ceil((k + 0.5) / e)):
                ours = half_away(acc * e)
                one_rounding = half_away(Fraction(abs(acc) * multiplier, 2 ** (31 - shift)))
                if ours != half_away(acc * e32) or ours != math.copysign(one_rounding, acc):
                    sums.append(acc)
        if len(sums) >= 4:
            found = sx, sw, sy, sums[:64]
            break
    assert found is not None
    sx, sw, sy, sums = found
    # the sums are the biases (weights 0), the rows anything
    check_fully_connected(sx, 0, sw, [[0]] * len(sums), sums, sy, 0, ALL_INT8[:3, None],
                          differs_from_gemmlowp=None)


def test_fully_connected_rounds_the_product_to_double_first():
    """sx, sw, sy and a sum (found by s8_fc_window's construction, boards/app/siblings_s8_fc.c)
    whose exact product 125.4999999999999999996... is 125.5 in double: LiteRT gives 126, so
    the product is rounded to double before round(); sums beside it and the negatives too."""
    sx, sw, sy, acc = 0.0008894163183867931, 9.238199709216133e-05, 0.5641224980354309, 861637727
    e = fc_scale(sx, sw, sy)
    assert Fraction(acc) * Fraction(e) < Fraction(251, 2) and float(acc) * e == 125.5
    rows = np.arange(-4, 5)[:, None]  # sums acc - 4 .. acc + 4
    check_fully_connected(sx, 0, sw, [[1], [-1]], [acc, -acc], sy, 0, rows,
                          differs_from_gemmlowp=None)
    theirs = litert_rows(fully_connected_model(sx, 0, sw, [[1]], [acc], sy, 0), [[0]])
    assert theirs[0, 0] == 126


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="int32(v) of a double beyond int32 is undefined in LiteRT's C++: "
                    "x86-64 gives INT32_MIN (the core's choice), ARM saturates")
def test_fully_connected_overflow_is_x86_64s_int32_min_and_zy_wraps():
    """E = 4: 4·(2^29 + x) passes 2^31 at x = 0; int32() gives INT32_MIN there and + zy wraps
    (zy = -5: INT32_MIN - 5 is INT32_MAX - 4, so 127; zy = 5: 2^31 - 4 + 5 wraps to -128)"""
    rows = np.arange(-3, 4)[:, None]
    for zy in (0, 5, -5):
        check_fully_connected(1.0, 0, 4.0, [[1], [1]], [2 ** 29, -2 ** 29], 1.0, zy, rows,
                              differs_from_gemmlowp=None)


# ------------------------------------------------------------------ the ops that round twice

def image_of_every_int8(channels=1, seed=0):
    """[1, 16, 16, C]: each channel every int8 value once (channel c in its own order)"""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(ALL_INT8) for _ in range(channels)], -1).reshape(
        1, 16, 16, channels).astype(np.int8)


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


def test_add_rescales_twice_as_gemmlowp():
    """int8 ADD (left shift 20, three gemmlowp rescalings) on every pair of a 16x16 grid of
    inputs, with dyadic scale ratios (exact ties) and others"""
    a_image, b_image = image_of_every_int8(1, 1), image_of_every_int8(1, 2)
    for sa, sb, sy, za, zb, zy in ((0.5, 0.25, 0.5, 0, 3, -1), (0.5, 0.5, 2.0, 7, -7, 0),
                                   (0.1, 0.03, 0.07, -128, 127, 5)):
        g = Graph()
        a = g.tensor((1, 16, 16, 1), INT8, scale=sa, zero_point=za)
        b = g.tensor((1, 16, 16, 1), INT8, scale=sb, zero_point=zb)
        y = g.tensor((1, 16, 16, 1), INT8, scale=sy, zero_point=zy)
        g.op("ADD", [a, b], [y], ("AddOptions", {"FusedActivationFunction": 0}))
        data = g.finish([a, b], [y])
        interpreter_out = run_reference(data, [a_image, b_image])[0].reshape(-1).astype(np.int64)
        rq = q.add_requant(sa, sb, sy)
        rule = []
        for va, vb in zip(a_image.reshape(-1).astype(int), b_image.reshape(-1).astype(int)):
            ra = gemmlowp((va - za) << q.ADD_LEFT_SHIFT, int(rq[0, 0]), int(rq[0, 1]))
            rb = gemmlowp((vb - zb) << q.ADD_LEFT_SHIFT, int(rq[1, 0]), int(rq[1, 1]))
            rule.append(clamp(gemmlowp(ra + rb, int(rq[2, 0]), int(rq[2, 1])) + zy))
        np.testing.assert_array_equal(interpreter_out, rule)
        # the core: two inputs, so compared here rather than through int8_compare
        import microtrain
        from microtrain.convert import tflite_int8
        builder, _, _ = tflite_int8.read(data, float_part=False)
        from microtrain.nn import image as _image
        with microtrain.TrainSession(_image.write_image(builder.tensors, builder.ops,
                                                        builder.inputs, builder.outputs)) as s:
            ours = np.asarray(s.infer([a_image, b_image])[0]).reshape(-1)
        ours_q = np.round(ours / np.float32(sy)).astype(np.int64) + zy
        np.testing.assert_array_equal(ours_q, interpreter_out)


def test_average_pool_and_mean_round_half_away_from_zero():
    """AVERAGE_POOL_2D: (sum ± count/2) / count truncated, counts 4 (2x2 VALID) and 4, 6, 9
    (3x3 SAME); MEAN over H and W: gemmlowp with 1/P folded into the multiplier, P = 4"""
    image = image_of_every_int8(4, 3)
    for size, stride, padding in ((2, 2, 1), (3, 1, 0)):
        g = Graph()
        x = g.tensor((1, 16, 16, 4), INT8, scale=0.5, zero_point=-3)
        out = 8 if stride == 2 else 16
        y = g.tensor((1, out, out, 4), INT8, scale=0.5, zero_point=-3)
        g.op("AVERAGE_POOL_2D", [x], [y], ("Pool2DOptions", {
            "Padding": padding, "StrideH": stride, "StrideW": stride, "FilterHeight": size,
            "FilterWidth": size, "FusedActivationFunction": 0}))
        data = g.finish([x], [y])
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


# ------------------------------------------------------------------ what the image may hold

def test_dense_s8_refuses_tables_that_are_not_its_double_scales():
    """DENSE_S8's rq holds E's binary64 bits: the (multiplier, shift) pairs it held before, and
    a zero, subnormal, negative, infinite, NaN or too large E, are refused when the session
    plans (MT_ERR_BAD_MODEL, naming the op); the importer refuses E >= 2^20 itself."""
    import microtrain
    from microtrain.convert import ConversionError, tflite_int8
    from microtrain.errors import MicrotrainError
    from microtrain.nn import image as _image
    data = fully_connected_model(1.0, 0, 0.5, [[1], [1]], [0, 1], 1.0, 0)
    builder, _, _ = tflite_int8.read(data, float_part=False)
    op = next(op for op in builder.ops if op.inputs[3:])
    table = builder.tensors[op.inputs[3]]
    assert table.data.view("<f8").reshape(-1).tolist() == [0.5, 0.5]

    def image_with(rows):
        table.data = np.asarray(rows, np.uint64).view(np.int32).reshape(2, 2)
        return _image.write_image(builder.tensors, builder.ops, builder.inputs, builder.outputs)

    microtrain.TrainSession(image_with([0x3FE0000000000000] * 2)).close()  # 0.5 itself
    bad = {"pairs (0.5 was 2^30, 0)": [1 << 30, 1 << 30],
           "pairs with a right shift": [(2 ** 32 - 1) << 32 | 1 << 30] * 2,
           "zero": [0, 0], "subnormal": [1, 1], "negative": [0xBFE0000000000000] * 2,
           "infinite": [0x7FF0000000000000] * 2, "NaN": [0x7FF8000000000000] * 2,
           "2^20": [0x4130000000000000] * 2}
    for name, rows in bad.items():
        with pytest.raises(MicrotrainError) as error:
            microtrain.TrainSession(image_with(rows))
        assert error.value.status == -2 and "dense_s8" in str(error.value), name
    with pytest.raises(ConversionError, match=r"FULLY_CONNECTED.*rescale sx\*sw/sy of 2097152.0; "
                       r"supported: above 0 and below 2\^20"):
        tflite_int8.read(fully_connected_model(1.0, 0, 2.0 ** 21, [[1]], [0], 1.0, 0),
                         float_part=False)
