"""A float layer trained inside an int8 model, the int8 operators after it frozen and the
gradient passing through them (``convert(..., train_from=X, int8_after=True)``; the core's
int8 backward, docs/model_format.md "Gradients through int8 ops"):

* against PyTorch: a hand-built int8 graph (QUANTIZE, Conv2D, DepthwiseConv2D with a fused
  ReLU, Add, AveragePool, FullyConnected, DEQUANTIZE) whose Conv2D trains; PyTorch runs the
  same layers fake-quantized (``torch.fake_quantize_per_tensor_affine`` on every int8
  activation, with the clamp range of the op's fused activation, and the weights as
  ``scale · W_q``) and its autograd gives the trained weight's gradient, which equals the
  core's within float rounding (the sums' orders differ);
* MLPerf Tiny's keyword spotter trained from its third pointwise Conv2D (op 4 of the file):
  the two depthwise-separable blocks, pool, Flatten and FullyConnected after it stay int8,
  the loss falls.
"""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.convert import ConversionError
from microtrain.nn import image as _image
from microtrain.tools import arena

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from gradient_buffers import trained_gradients  # noqa: E402

pytest.importorskip("tflite")

KWS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "models", "mlperf_tiny",
                   "kws_ref_model.tflite")
FLOAT32, INT32, INT8 = 0, 2, 9


def op_types(model):
    return [op.op_type for op in _image.read_image(model._image).ops]


# ---------------------------------------------------------------- the hand-built graph

# per-tensor (scale, zero point) of the activations; the depthwise's ReLU clamps at its zero point
Q_IN, Q_CONV, Q_DW, Q_ADD, Q_FC = (0.05, 3), (0.06, -2), (0.05, -20), (0.07, 4), (0.08, 5)
CONV_SAME = {"Padding": 0, "StrideH": 1, "StrideW": 1, "DilationHFactor": 1, "DilationWFactor": 1}
POOL_2X2 = {"Padding": 1, "StrideH": 2, "StrideW": 2, "FilterHeight": 2, "FilterWidth": 2,
            "FusedActivationFunction": 0}


def quantized_conv(g, p, rng, size):
    """The graphs' start: x f32 [1, size, size, 2] -> QUANTIZE -> Conv2D 3x3 SAME (3
    channels) -> c1; its weights drawn from rng into p (w1, s1, b1); returns (x, c1)."""
    p["w1"] = rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    p["s1"] = rng.uniform(0.004, 0.008, 3).astype(np.float32)
    p["b1"] = rng.integers(-300, 300, 3).astype(np.int32)
    x = g.tensor((1, size, size, 2), FLOAT32)
    q = g.tensor((1, size, size, 2), INT8, scale=Q_IN[0], zero_point=Q_IN[1])
    g.op("QUANTIZE", [x], [q])
    w1 = g.tensor((3, 3, 3, 2), INT8, data=p["w1"], scale=p["s1"], axis=0)
    b1 = g.tensor((3,), INT32, data=p["b1"], scale=p["s1"] * np.float32(Q_IN[0]), axis=0)
    c1 = g.tensor((1, size, size, 3), INT8, scale=Q_CONV[0], zero_point=Q_CONV[1])
    g.op("CONV_2D", [q, w1, b1], [c1],
         ("Conv2DOptions", dict(CONV_SAME, FusedActivationFunction=0)))
    return x, c1


def fully_connected_head(g, p, rng, x, features, n, q_features):
    """The graphs' end: features int8 (n values, quantized as q_features) -> FullyConnected
    (4) -> DEQUANTIZE -> y; its weights drawn from rng into p (w3 [4, n], s3, b3); returns
    the finished graph of input x."""
    p["w3"] = rng.integers(-127, 128, (4, n)).astype(np.int8)
    p["s3"] = np.float32(0.01)
    p["b3"] = rng.integers(-300, 300, 4).astype(np.int32)
    w3 = g.tensor((4, n), INT8, data=p["w3"], scale=p["s3"])
    b3 = g.tensor((4,), INT32, data=p["b3"], scale=p["s3"] * np.float32(q_features[0]))
    f1 = g.tensor((1, 4), INT8, scale=Q_FC[0], zero_point=Q_FC[1])
    g.op("FULLY_CONNECTED", [features, w3, b3], [f1], ("FullyConnectedOptions", {}))
    y = g.tensor((1, 4), FLOAT32)
    g.op("DEQUANTIZE", [f1], [y])
    return g.finish([x], [y])


def build_graph(seed=0):
    """x f32 [5, 5, 2] -> QUANTIZE -> Conv2D 3x3 (3) -> Depthwise 3x3 + ReLU -> Add(dw, conv)
    -> AveragePool 2x2 -> FullyConnected (4) -> DEQUANTIZE; the int8 weights and int32 biases
    with their scales (per channel, per tensor for the FullyConnected)."""
    from tflite_int8_builder import Graph

    rng = np.random.default_rng(seed)
    g, p = Graph(), {}
    x, c1 = quantized_conv(g, p, rng, 5)
    p["w2"] = rng.integers(-127, 128, (1, 3, 3, 3)).astype(np.int8)
    p["s2"] = rng.uniform(0.006, 0.012, 3).astype(np.float32)
    p["b2"] = rng.integers(-300, 300, 3).astype(np.int32)
    w2 = g.tensor((1, 3, 3, 3), INT8, data=p["w2"], scale=p["s2"], axis=3)
    b2 = g.tensor((3,), INT32, data=p["b2"], scale=p["s2"] * np.float32(Q_CONV[0]), axis=0)
    d1 = g.tensor((1, 5, 5, 3), INT8, scale=Q_DW[0], zero_point=Q_DW[1])
    g.op("DEPTHWISE_CONV_2D", [c1, w2, b2], [d1],
         ("DepthwiseConv2DOptions", dict(CONV_SAME, DepthMultiplier=1,
                                         FusedActivationFunction=1)))  # SAME, ReLU
    a1 = g.tensor((1, 5, 5, 3), INT8, scale=Q_ADD[0], zero_point=Q_ADD[1])
    g.op("ADD", [d1, c1], [a1], ("AddOptions", {"FusedActivationFunction": 0}))
    p1 = g.tensor((1, 2, 2, 3), INT8, scale=Q_ADD[0], zero_point=Q_ADD[1])
    g.op("AVERAGE_POOL_2D", [a1], [p1], ("Pool2DOptions", POOL_2X2))
    return fully_connected_head(g, p, rng, x, p1, 12, Q_ADD), p


def fake_quantizer():
    """(fq, cut): fq(v, (scale, zero point), lo, hi) fake-quantizes v in PyTorch as the int8
    op's requantization does, and appends to cut how many values its clamp cut (their
    gradient: 0)."""
    import torch

    cut = []

    def fq(v, q, lo=-128, hi=127):
        level = torch.round(v.detach() / q[0]) + q[1]
        cut.append(int(((level < lo) | (level > hi)).sum()))
        return torch.fake_quantize_per_tensor_affine(v, q[0], q[1], lo, hi)
    return fq, cut


def dequantized(w, s, axis):
    """int8 weights w times their scales s (one per index of ``axis``), a torch tensor."""
    import torch

    shape = [1] * w.ndim
    shape[axis] = -1
    scales = torch.tensor(np.asarray(s, np.float32)).reshape(shape)
    return torch.tensor(w.astype(np.float32)) * scales


def trained_conv(p):
    """The trained Conv2D's dequantized weight (OIHW, requiring its gradient) and bias."""
    import torch

    w1 = dequantized(p["w1"], p["s1"], 0).permute(0, 3, 1, 2).clone().requires_grad_(True)
    return w1, torch.tensor(p["b1"].astype(np.float32) * (p["s1"] * np.float32(Q_IN[0])))


def torch_fake_quantized(p, x, dy):
    """The graph's float reading, every int8 activation fake-quantized, in PyTorch: the
    gradient of sum(dy · y) with respect to the Conv2D's dequantized weight."""
    import torch
    import torch.nn.functional as F

    fq, cut = fake_quantizer()
    w1, b1 = trained_conv(p)
    w2 = dequantized(p["w2"], p["s2"], 3).permute(3, 0, 1, 2)
    b2 = torch.tensor(p["b2"].astype(np.float32) * (p["s2"] * np.float32(Q_CONV[0])))
    w3 = dequantized(p["w3"], np.atleast_1d(p["s3"]), 0)
    b3 = torch.tensor(p["b3"].astype(np.float32) * (p["s3"] * np.float32(Q_ADD[0])))
    xq = fq(torch.tensor(x).permute(0, 3, 1, 2), Q_IN)
    c1 = fq(F.conv2d(F.pad(xq, (0, 0, 0, 0)), w1, b1, padding=1), Q_CONV)
    d1 = fq(F.conv2d(c1, w2, b2, padding=1, groups=3), Q_DW, Q_DW[1], 127)  # ReLU: the clamp
    a1 = fq(d1 + c1, Q_ADD)
    p1 = fq(F.avg_pool2d(a1, 2, 2), Q_ADD)
    flat = p1.permute(0, 2, 3, 1).reshape(len(x), -1)
    y = fq(flat @ w3.T + b3, Q_FC)
    (y * torch.tensor(dy)).sum().backward()
    return y.detach().numpy(), w1.grad.permute(0, 2, 3, 1).numpy(), cut


def core_gradient_step(model, seed, size, n=4):
    """n random rows x [n, size, size, 2] and targets [n, 4] (from ``seed``), one step of MSE
    "sum" accumulated, not applied: (x, the core's outputs y, its trained gradients, dy: the
    loss's gradient at y, as the step averages its rows, the memory plan)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4.0, 4.0, (n, size, size, 2)).astype(np.float32)
    target = rng.uniform(-2.0, 2.0, (n, 4)).astype(np.float32)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(1.0), microtrain.losses.MeanSquaredError("sum"),
                        batch_size=n, accumulate_gradients=True)
        plan = session.memory_plan()
        session.train_step(x, target, update=False)
        y = session.output_buffer()[:n].copy()
        grads = trained_gradients(session)
    return x, y, grads, 2.0 * (y - target) / n, plan


def assert_core_matches_torch(y, core_w, torch_y, torch_w):
    """The forwards agree within two LSBs of the output (integer requantization against float
    rounding, layer after layer), the trained weight's gradients within the float sums'
    rounding (their orders differ)."""
    assert np.max(np.abs(torch_y - y)) <= 2.01 * Q_FC[0]
    assert np.any(core_w != 0)
    np.testing.assert_allclose(core_w, torch_w, rtol=1e-4, atol=1e-5 * np.max(np.abs(torch_w)))


def test_the_trained_conv_gets_pytorchs_fake_quantized_gradient_through_the_int8_ops():
    pytest.importorskip("torch")
    data, p = build_graph()
    model = microtrain.convert(data, train_from=1, int8_after=True)
    kinds = op_types(model)
    assert kinds == [_ops.QUANTIZE, _ops.DEQUANTIZE, _ops.CONV2D, _ops.QUANTIZE,
                     _ops.DEPTHWISE_CONV2D_S8, _ops.ADD_S8, _ops.AVERAGE_POOL2D_S8,
                     _ops.DENSE_S8, _ops.DEQUANTIZE], kinds
    x, y, (core_w, core_b), dy, plan = core_gradient_step(model, 5, 5)
    assert plan["first_trained_op"] == 2
    torch_y, torch_w, cut = torch_fake_quantized(p, x, dy)
    # the clamps cut values on the way (the masks matter): QUANTIZE, Conv2D, the ReLU, Add
    print("values cut by each fake quantization:", cut)
    assert cut[2] > 0 and sum(cut) > cut[2]
    assert_core_matches_torch(y, core_w, torch_y, torch_w)


Q_MEAN = (0.03, 1)  # a finer scale than the pool's: half the means saturate


def build_pool_graph(seed=1):
    """x f32 [6, 6, 2] -> QUANTIZE -> Conv2D 3x3 (3) -> MaxPool 2x2 -> Mean over H, W ->
    FullyConnected (4) -> DEQUANTIZE."""
    from tflite_int8_builder import Graph

    rng = np.random.default_rng(seed)
    g, p = Graph(), {}
    x, c1 = quantized_conv(g, p, rng, 6)
    m1 = g.tensor((1, 3, 3, 3), INT8, scale=Q_CONV[0], zero_point=Q_CONV[1])
    g.op("MAX_POOL_2D", [c1], [m1], ("Pool2DOptions", POOL_2X2))
    axes = g.tensor((2,), INT32, data=[1, 2])
    mean = g.tensor((1, 3), INT8, scale=Q_MEAN[0], zero_point=Q_MEAN[1])
    g.op("MEAN", [m1, axes], [mean], ("ReducerOptions", {"KeepDims": False}))
    return fully_connected_head(g, p, rng, x, mean, 3, Q_MEAN), p


def torch_pool_graph(p, x, dy):
    import torch
    import torch.nn.functional as F

    fq, cut = fake_quantizer()
    w1, b1 = trained_conv(p)
    w3 = dequantized(p["w3"], np.atleast_1d(p["s3"]), 0)
    b3 = torch.tensor(p["b3"].astype(np.float32) * (p["s3"] * np.float32(Q_MEAN[0])))
    xq = fq(torch.tensor(x).permute(0, 3, 1, 2), Q_IN)
    c1 = fq(F.conv2d(xq, w1, b1, padding=1), Q_CONV)
    m1 = F.max_pool2d(c1, 2, 2)  # a maximum of quantized values is one: nothing to round
    mean = fq(m1.mean(dim=(2, 3)), Q_MEAN)
    y = fq(mean @ w3.T + b3, Q_FC)
    (y * torch.tensor(dy)).sum().backward()
    return y.detach().numpy(), w1.grad.permute(0, 2, 3, 1).numpy(), cut


def test_max_pool_and_mean_pass_pytorchs_gradient_too():
    """The same with MaxPool (the gradient to each window's first maximum) and Mean (dy / HW
    where its requantized value was not cut) between the trained Conv2D and the head.
    The core's mask is its forward's own (LiteRT's integer requantization); PyTorch's rounds
    in float, so the two can disagree on a value within an LSB of a clamp bound (at a mean
    scale of 0.04 one lies at 127.49999 in float, 128 in LiteRT's integers): the cases here
    have none."""
    pytest.importorskip("torch")
    data, p = build_pool_graph()
    model = microtrain.convert(data, train_from=1, int8_after=True)
    assert op_types(model)[4:] == [_ops.MAX_POOL2D_S8, _ops.MEAN_S8, _ops.DENSE_S8,
                                   _ops.DEQUANTIZE]
    x, y, grads, dy, _ = core_gradient_step(model, 6, 6)
    torch_y, torch_w, cut = torch_pool_graph(p, x, dy)
    print("values cut by each fake quantization:", cut)
    assert cut[2] > 0  # the mean's clamp
    assert_core_matches_torch(y, grads[0], torch_y, torch_w)


# ---------------------------------------------------------------- MLPerf Tiny's keyword spotter


def test_keyword_spotter_trains_a_conv_inside_its_int8_backbone(tmp_path):
    """Trained from its third pointwise Conv2D (op 4 of the file): two depthwise-separable
    blocks, the pool, Flatten and FullyConnected after it stay int8. The planner streams a
    frozen pointwise Conv2D into the depthwise after it (a ring of KH rows), but not one
    the gradient passes through: that depthwise's backward reads the whole expansion. The
    fine-tuned model exports to a .tflite LiteRT runs to the session's outputs."""
    model = microtrain.convert(KWS, train_from=4, int8_after=True)
    kinds = op_types(model)
    float_at = kinds.index(_ops.CONV2D)
    assert kinds[float_at - 1] == _ops.DEQUANTIZE and kinds[float_at + 1] == _ops.QUANTIZE
    assert kinds[float_at + 2:] == [_ops.DEPTHWISE_CONV2D_S8, _ops.CONV2D_S8,
                                    _ops.DEPTHWISE_CONV2D_S8, _ops.CONV2D_S8,
                                    _ops.AVERAGE_POOL2D_S8, _ops.RESHAPE_S8, _ops.DENSE_S8,
                                    _ops.DEQUANTIZE, _ops.SOFTMAX]
    assert any("stay int8" in note for note in model.source.notes)
    image = _image.read_image(model._image)
    ops = image.ops
    expansions = [(k, ops[k].outputs[0]) for k in range(len(ops) - 1)  # pointwise -> depthwise
                  if ops[k].op_type == _ops.CONV2D_S8 and
                  tuple(image.tensors[ops[k].inputs[1]].dims[1:3]) == (1, 1) and
                  ops[k + 1].op_type == _ops.DEPTHWISE_CONV2D_S8]
    x, y = keyword_batch(3, 4)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.Adam(0.001), "categorical_crossentropy",
                        batch_size=4)
        plan = session.memory_plan()
        print("keyword spotter, trained from op 4 of the file at batch 4: %d bytes "
              "(%d of activations' gradients, %d of int8 activations)"
              % (plan["total_bytes"], plan["activation_grad_bytes"],
                 plan["int8_activation_bytes"]))
        assert plan["num_trained_params"] == 2 and plan["first_trained_op"] == float_at
        sizes = {b["tensor"]: b["bytes"] for b in arena.plan_buffers(session)
                 if b["kind"] == "activation"}
        streamed = [sizes[t] < 4 * 25 * 5 * 64 for k, t in expansions]
        assert streamed == [k < float_at for k, t in expansions] and True in streamed
        before = session.infer(x)[0]
        losses = [float(session.train_step(x, y)["loss"][0]) for _ in range(5)]
        outputs = session.infer(x)[0]
        assert np.max(np.abs(outputs - before)) > 1e-3  # what the export must carry
        session.export_model_for_inference(str(tmp_path / "kws.tflite"))
    # LiteRT's reference kernels run the export: the file's int8 operators, the trained
    # Conv2D in float between them, its output quantized into the file's int8 tensor
    rows = litert_rows(str(tmp_path / "kws.tflite"), x)
    np.testing.assert_allclose(rows, outputs, rtol=1e-5, atol=1e-6)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def keyword_batch(seed, n):
    """n random int8 rows of the keyword spotter's input (49 x 10 x 1) and one-hot targets
    of its 12 classes, drawn from ``seed``"""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, 49, 10, 1)).astype(np.int8)
    return x, np.eye(12, dtype=np.float32)[rng.integers(0, 12, n)]


def litert_rows(path, x):
    """The .tflite file at ``path`` run by LiteRT's reference kernels on each row of x (one
    at a time): its first output, [rows, values]"""
    pytest.importorskip("ai_edge_litert")
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    interpreter = Interpreter(model_path=path,
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    given, got = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    rows = []
    for row in x:
        interpreter.set_tensor(given["index"], row[None])
        interpreter.invoke()
        rows.append(interpreter.get_tensor(got["index"]).reshape(-1))
    return np.array(rows)


def test_int8_after_needs_train_from_and_an_int8_model():
    with pytest.raises(ConversionError, match="int8_after"):
        microtrain.convert(KWS, int8_after=True)
    with pytest.raises(ConversionError, match=r"op 9 \(AVERAGE_POOL_2D .* has no weights"):
        microtrain.convert(KWS, train_from=9, int8_after=True)  # the one that would train
    with pytest.raises(ConversionError, match="int8_after"):
        microtrain.convert(os.path.join(HERE, "fixtures", "tf_mlp.tflite"), train_from=0,
                           int8_after=True)


def test_an_int8_op_without_backward_after_train_from_is_refused_by_name():
    """A PAD between the trained Conv2D and the output: the core's PAD_S8 passes no gradient,
    so the import stops there, naming that operator of the file and what is supported."""
    from tflite_int8_builder import Graph

    g = Graph()
    x = g.tensor((1, 4, 4, 2), FLOAT32)
    q = g.tensor((1, 4, 4, 2), INT8, scale=0.05, zero_point=3)
    g.op("QUANTIZE", [x], [q])
    w = g.tensor((2, 1, 1, 2), INT8, data=[[3, -4], [5, 6]], scale=[0.01, 0.02], axis=0)
    c = g.tensor((1, 4, 4, 2), INT8, scale=0.04, zero_point=-1)
    g.op("CONV_2D", [q, w, -1], [c], ("Conv2DOptions", {
        "Padding": 1, "StrideH": 1, "StrideW": 1, "DilationHFactor": 1, "DilationWFactor": 1}))
    pads = g.tensor((4, 2), INT32, data=[[0, 0], [1, 1], [1, 1], [0, 0]])
    p = g.tensor((1, 6, 6, 2), INT8, scale=0.04, zero_point=-1)
    g.op("PAD", [c, pads], [p])
    y = g.tensor((1, 6, 6, 2), FLOAT32)
    g.op("DEQUANTIZE", [p], [y])
    data = g.finish([x], [y])
    microtrain.convert(data, train_from=2)  # the float part from the PAD on: fine
    with pytest.raises(ConversionError) as error:
        microtrain.convert(data, train_from=1, int8_after=True)
    message = str(error.value)
    assert "op 2 (PAD" in message and "Pad int8 passes no gradient" in message, message
    assert "train from after that operator" in message, message


def _shared_weight_image(shared):
    """x f32 [8] -> Dense 8x8 (trained) -> QUANTIZE [1, 1, 8] -> a 1x1 Conv2D of one output
    channel and a 1x1 depthwise of eight, both reading the per-tensor int8 weight W [1, 1, 1, 8]
    (``shared``; else each its own copy) -> the depthwise's output dequantized is output 0."""
    rng = np.random.default_rng(2)
    qx, qy = _image.Quantization([0.05], [3]), _image.Quantization([0.02], [-4])
    w = rng.integers(-127, 128, (1, 1, 1, 8)).astype(np.int8)
    weight = _image.Quantization([0.01], [0])
    rq = np.array([[int(round(0.8 * 2 ** 31)), -5]], np.int32)  # sx·sw/sy = 0.025 = 0.8·2^-5
    packed = 3 | ((-4) & 0xFF) << 8 | 0x80 << 16 | 0x7F << 24
    tensors = [
        _image.TensorSpec((8,), flags=_image.FLAG_INPUT),
        _image.TensorSpec((8, 8), flags=_image.FLAG_CONST | _image.FLAG_TRAINABLE,
                          data=rng.standard_normal((8, 8)).astype(np.float32)),
        _image.TensorSpec((8,)),
        _image.TensorSpec((1, 1, 8), dtype=_image.DTYPE_I8, quant=qx),
        _image.TensorSpec((1, 1, 1, 8), flags=_image.FLAG_CONST, dtype=_image.DTYPE_I8,
                          data=w, quant=weight),
        _image.TensorSpec((1, 2), flags=_image.FLAG_CONST, dtype=_image.DTYPE_I32, data=rq),
        _image.TensorSpec((8, 2), flags=_image.FLAG_CONST, dtype=_image.DTYPE_I32,
                          data=np.repeat(rq, 8, 0)),
        _image.TensorSpec((1, 1, 1), dtype=_image.DTYPE_I8, quant=qy),
        _image.TensorSpec((1, 1, 8), dtype=_image.DTYPE_I8, quant=qy),
        _image.TensorSpec((8,), flags=_image.FLAG_OUTPUT),
        _image.TensorSpec((1, 1, 1, 8), flags=_image.FLAG_CONST, dtype=_image.DTYPE_I8,
                          data=w, quant=weight),
    ]
    conv = (packed, 1 | 1 << 16, 0, 0)
    ops = [_image.OpSpec(_ops.DENSE, [0, 1, None], [2]),
           _image.OpSpec(_ops.QUANTIZE, [2], [3], (_image.f32_bits(0.05), 3)),
           _image.OpSpec(_ops.CONV2D_S8, [3, 4, None, 5], [7], conv),
           _image.OpSpec(_ops.DEPTHWISE_CONV2D_S8, [3, 4 if shared else 10, None, 6], [8], conv),
           _image.OpSpec(_ops.DEQUANTIZE, [8], [9], (_image.f32_bits(0.02), (-4) & 0xFFFFFFFF))]
    return _image.write_image(tensors, ops, [0], [9])


def test_a_weight_two_int8_backwards_read_gets_the_channels_of_both():
    """The planner decodes an int8 weight's scales once, for the most channels any backward
    reading it indexes: the depthwise's gradient is the same whether it shares the Conv2D's
    per-tensor weight or has its own copy."""
    x = np.random.default_rng(4).uniform(-0.5, 0.5, (2, 8)).astype(np.float32)
    target = np.zeros((2, 8), np.float32)
    grads = []
    for shared in (True, False):
        with microtrain.TrainSession(_shared_weight_image(shared)) as session:
            session.compile(microtrain.optimizers.SGD(1.0), "mse", batch_size=2,
                            accumulate_gradients=True)
            session.train_step(x, target, update=False)
            grads.append(trained_gradients(session)[0])
    assert np.any(grads[1] != 0)
    np.testing.assert_array_equal(grads[0], grads[1])
