"""The int8 layout ops (ops/shape_s8.c): PAD_S8 (the zero point in the border), CONCATENATION_S8
and RESHAPE_S8, against LiteRT's reference kernels byte for byte (int8_rules.py): a hand-built
.tflite, x int8 [4, 4, 2] -> PAD -> CONCATENATION(y, y, x-shaped branch) -> RESHAPE, every
activation compared."""

import os
import sys

import numpy as np

from microtrain import ops
from microtrain.convert import tflite_int8

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_rules import INT32, INT8, Graph, assert_core_matches, image_of_every_int8  # noqa: E402


def shape_ops_model(scale, zero_point, pads):
    """x [1, 4, 4, 2] -> PAD(pads) -> y; CONCATENATION(y, y) on channels -> z; RESHAPE -> [1, N]"""
    (top, bottom), (left, right) = pads
    h, w = 4 + top + bottom, 4 + left + right
    g = Graph()
    x = g.tensor((1, 4, 4, 2), INT8, scale=scale, zero_point=zero_point)
    borders = np.int32([[0, 0], [top, bottom], [left, right], [0, 0]])
    paddings = g.tensor((4, 2), INT32, data=borders)
    y = g.tensor((1, h, w, 2), INT8, scale=scale, zero_point=zero_point)
    g.op("PAD", [x, paddings], [y])
    z = g.tensor((1, h, w, 4), INT8, scale=scale, zero_point=zero_point)
    g.op("CONCATENATION", [y, y], [z], ("ConcatenationOptions",
                                        {"Axis": 3, "FusedActivationFunction": 0}))
    shape = g.tensor((2,), INT32, data=np.int32([1, h * w * 4]))
    flat = g.tensor((1, h * w * 4), INT8, scale=scale, zero_point=zero_point)
    g.op("RESHAPE", [z, shape], [flat])
    return g.finish([x], [flat])


def test_pad_concatenation_and_reshape_match_litert_byte_for_byte():
    rows = image_of_every_int8(2, seed=5).reshape(16, 4, 4, 2)  # every int8 value, 16 samples
    for scale, zero_point, pads in ((0.5, 3, ((1, 0), (0, 2))), (0.1, -128, ((2, 2), (1, 1))),
                                    (2.0, 127, ((0, 0), (0, 0)))):
        data = shape_ops_model(scale, zero_point, pads)
        builder, _, _ = tflite_int8.read(data, float_part=False)
        assert [op.op_type for op in builder.ops] == [ops.PAD_S8, ops.CONCATENATION_S8,
                                                      ops.RESHAPE_S8, ops.DEQUANTIZE]
        assert_core_matches(data, rows)
