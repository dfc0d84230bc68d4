"""DENSE_S8 (ops/dense_s8.c, TFLite's FULLY_CONNECTED) against LiteRT's reference kernel at
exact ties (int8_rules.py): one rounding of the double product, the scale as LiteRT computes
it, x86-64's overflow; and the scale tables the core refuses."""

import math
import os
import platform
import sys
from fractions import Fraction

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_rules import (  # noqa: E402
    ALL_INT8, check_fully_connected, fc_scale, fully_connected_model, half_away, litert_rows, q)


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
