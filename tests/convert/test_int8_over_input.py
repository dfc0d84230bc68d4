"""Frozen int8 convolutions laid over the inputs they consume (plan_lifetimes.c,
``mt_plan_over_input``): a hand-built int8 graph whose stride-2 Conv2D writes its output
before its input, whose stride-1 depthwise runs in place with a band of rows, whose stride-2
depthwise (its shape changes) falls back to a buffer of its own, and whose 1x1 projection
lies over that one. The session's outputs equal LiteRT's reference kernels'
bit for bit at batch 1 and 3; at batch 3 (at batch 1 the float part is the peak, the bytes
tie and the planner keeps the plain layout) the plan says which output lies over which
input, its int8 bytes are the hand-computed union, and no two groups' buffers share bytes
while live.
MobileNetV2-w0.35's figures are tests/convert/test_int8.py's."""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain.tools import arena

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

pytest.importorskip("tflite")
FLOAT32, INT32, INT8 = 0, 2, 9
Q_IN, Q_C1, Q_DW, Q_PW, Q_V, Q_FC = (0.05, 3), (0.06, -2), (0.05, -20), (0.07, 4), (0.06, 1), \
    (0.08, 5)
SAME, VALID = 0, 1


def conv_options(padding, stride, depthwise=False):
    options = {"Padding": padding, "StrideH": stride, "StrideW": stride,
               "DilationHFactor": 1, "DilationWFactor": 1, "FusedActivationFunction": 0}
    if depthwise:
        options["DepthMultiplier"] = 1
        return ("DepthwiseConv2DOptions", options)
    return ("Conv2DOptions", options)


def weighted(g, rng, shape, axis, q_in):
    """int8 weights of ``shape`` (per channel along ``axis``) and their int32 bias"""
    channels = shape[axis]
    scales = rng.uniform(0.004, 0.01, channels).astype(np.float32)
    w = g.tensor(shape, INT8, data=rng.integers(-127, 128, shape).astype(np.int8),
                 scale=scales, axis=axis)
    b = g.tensor((channels,), INT32, data=rng.integers(-300, 300, channels).astype(np.int32),
                 scale=scales * np.float32(q_in[0]), axis=0)
    return w, b


def build(seed=0):
    """x f32 [10, 8, 2] -> QUANTIZE -> Conv2D 3x3 stride 2 SAME (8) -> depthwise 3x3 SAME ->
    depthwise 3x3 stride 2 SAME -> Conv2D 1x1 (4) -> FullyConnected (4) -> DEQUANTIZE"""
    from tflite_int8_builder import Graph
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.tensor((1, 10, 8, 2), FLOAT32)
    q = g.tensor((1, 10, 8, 2), INT8, scale=Q_IN[0], zero_point=Q_IN[1])
    g.op("QUANTIZE", [x], [q])
    w, b = weighted(g, rng, (8, 3, 3, 2), 0, Q_IN)
    c1 = g.tensor((1, 5, 4, 8), INT8, scale=Q_C1[0], zero_point=Q_C1[1])
    g.op("CONV_2D", [q, w, b], [c1], conv_options(SAME, 2))
    w, b = weighted(g, rng, (1, 3, 3, 8), 3, Q_C1)
    d1 = g.tensor((1, 5, 4, 8), INT8, scale=Q_DW[0], zero_point=Q_DW[1])
    g.op("DEPTHWISE_CONV_2D", [c1, w, b], [d1], conv_options(SAME, 1, True))
    w, b = weighted(g, rng, (1, 3, 3, 8), 3, Q_DW)
    e1 = g.tensor((1, 3, 2, 8), INT8, scale=Q_V[0], zero_point=Q_V[1])
    g.op("DEPTHWISE_CONV_2D", [d1, w, b], [e1], conv_options(SAME, 2, True))
    w, b = weighted(g, rng, (4, 1, 1, 8), 0, Q_V)
    p1 = g.tensor((1, 3, 2, 4), INT8, scale=Q_PW[0], zero_point=Q_PW[1])
    g.op("CONV_2D", [e1, w, b], [p1], conv_options(SAME, 1))
    w3 = g.tensor((4, 24), INT8, data=rng.integers(-127, 128, (4, 24)).astype(np.int8),
                  scale=np.float32(0.01))
    b3 = g.tensor((4,), INT32, data=rng.integers(-300, 300, 4).astype(np.int32),
                  scale=np.float32(0.01 * Q_PW[0]))
    f1 = g.tensor((1, 4), INT8, scale=Q_FC[0], zero_point=Q_FC[1])
    g.op("FULLY_CONNECTED", [p1, w3, b3], [f1], ("FullyConnectedOptions", {}))
    y = g.tensor((1, 4), FLOAT32)
    g.op("DEQUANTIZE", [f1], [y])
    return g.finish([x], [y])


def session_run(data, x):
    """(the session's outputs for rows x, its plan, its activation buffers by tensor), the
    model all int8 but its float head (FullyConnected), batch len(x)"""
    model = microtrain.convert(data, train_from=5, int8_train=True)  # all int8: LiteRT's bits
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "mse", batch_size=len(x))
        outputs = session.infer(x)[0]
        plan = session.memory_plan()
        buffers = [b for b in arena.plan_buffers(session)]
    return outputs, plan, buffers


def check_over_their_inputs(plan, buffers):
    """batch 3: which output lies over which input, and the int8 bytes by hand"""
    assert plan["over_inputs"] == 3  # the two Conv2D and the stride-1 depthwise
    acts = dict((b["tensor"], b) for b in buffers if b["kind"] == "activation")
    # the image's tensors: x, q, then each op's weights, bias, requantization, output
    q, c1, d1, e1, p1 = 1, 5, 9, 13, 17
    # c1 before q, d1 in place over c1: one group
    assert acts[c1]["in_place_of"] == -1
    assert acts[q]["in_place_of"] == acts[d1]["in_place_of"] == c1
    # the stride-2 depthwise changes the shape: not over d1, a buffer of its own (which
    # the 1x1 projection's output then lies before)
    assert acts[e1]["in_place_of"] == p1 and acts[p1]["in_place_of"] == -1
    assert not acts[c1]["offset"] <= acts[e1]["offset"] < acts[c1]["offset"] + acts[c1]["bytes"]
    # c1 (3 x 160 bytes) 32 before q (480), d1 in place over c1 with a band of 3 rows of
    # [4, 8] (96): 576, while e1 (3 x 48) is computed from d1
    assert plan["int8_activation_bytes"] == 576 + 144


@pytest.mark.parametrize("rows", [1, 3])
def test_int8_convolutions_over_their_inputs_give_litert_bits(rows):
    pytest.importorskip("ai_edge_litert")
    from tflite_int8_builder import run_reference
    data = build()
    x = np.random.default_rng(rows).uniform(-6.0, 6.0, (rows, 10, 8, 2)).astype(np.float32)
    outputs, plan, buffers = session_run(data, x)
    reference = run_reference(data, [x])[0]
    assert np.array_equal(outputs, reference)
    if rows == 1:
        # the float input and head are the arena's peak at batch 1: laid over their inputs
        # or not, the region has the same bytes, and a tie keeps the plain layout (its
        # kernels are not run a row at a time); its int8 peak: two 160-byte activations
        assert plan["over_inputs"] == 0 and plan["int8_activation_bytes"] == 160 + 160
    else:
        check_over_their_inputs(plan, buffers)
    # buffers of different groups never share bytes while both are live
    def root(b):
        return b["in_place_of"] if b["in_place_of"] >= 0 else b["tensor"]
    assert all(b["offset"] + b["bytes"] <= plan["total_bytes"] for b in buffers)  # in the arena
    shared = [b for b in buffers if b["kind"] in ("activation", "gradient")]
    for i, a in enumerate(shared):
        for b in shared[i + 1:]:
            if a["kind"] == b["kind"] == "activation" and root(a) == root(b):
                continue
            together = a["start"] <= b["end"] and b["start"] <= a["end"]
            overlap = a["offset"] < b["offset"] + b["bytes"] and \
                b["offset"] < a["offset"] + a["bytes"]
            assert not (together and overlap), (a, b)


def test_the_planner_keeps_them_only_where_the_arena_is_smaller():
    """MLPerf Tiny's VWW MobileNetV1 with its last block trained in place (batch 1, its sparse
    scheme of benchmarks/sparse_update.py): laid over their inputs, its convolutions' pairs
    are placed as blocks whose gaps the greedy placement cannot fill (135,984 bytes); without
    them it plans at its lower bound (124,320), so the planner keeps that and says so."""
    vww = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "models",
                       "mlperf_tiny", "vww_96_int8.tflite")
    model = microtrain.convert(vww, train_from="depthwise_conv2d_12", int8_train=True)
    with microtrain.TrainSession(model) as session:
        plan = session.plan_memory("sgd", "categorical_crossentropy", 1,
                                   {25: "bias", 29: "all", 26: "all"})
    assert plan["over_inputs"] == 0
    assert plan["total_bytes"] == plan["lower_bound_bytes"] == 124320
