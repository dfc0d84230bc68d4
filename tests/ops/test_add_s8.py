"""ADD_S8 (ops/add_s8.c) against LiteRT's reference kernel at exact ties (int8_rules.py):
the inputs' and the sum's rescaling, each gemmlowp's two roundings."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_rules import (  # noqa: E402
    INT8, clamp, gemmlowp, Graph, image_of_every_int8, q, run_reference)


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
