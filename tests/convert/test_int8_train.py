"""Int8 layers trained in place (``convert(..., train_from=X, int8_train=True)``): the int8
weights and int32 biases of the Conv2D, DepthwiseConv2D and FullyConnected operators from X on
stay int8 in the arena and are updated with quantization-aware scaling (ops/qas.c,
docs/guides/int8.md "Training int8 layers in place"):

* the gradients of the real weights sw[c]·W_q and biases sx·sw[c]·b_q against PyTorch's
  autograd of the same layers fake-quantized (tests/convert/test_int8_backward.py's graph),
  within float rounding (the sums' orders differ; bit for bit against the float ops' reference
  backward: tests/ops/test_conv_s8.c, test_dense_s8.c);
* the QAS step against NumPy, bit for bit, from the core's own gradients: plain SGD and
  momentum over two steps, accumulated and applied (optimizer_step) as well as fused into
  the backward (train_step), which give the same bits;
* the trained model exported to .tflite, run by LiteRT's reference kernels to the session's
  outputs exactly; the refusals (Adam, weight decay, an option without train_from).
Checkpoints of such a session: tests/convert/test_int8_state.py.
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
from test_int8_backward import (KWS, Q_ADD, Q_CONV, Q_DW, Q_FC, Q_IN,  # noqa: E402
                                build_graph, dequantized, fake_quantizer, keyword_batch,
                                litert_rows)

pytest.importorskip("tflite")

TRAINED_OPS = (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8, _ops.DENSE_S8)


def trained_layers(model):
    """[(op, weight tensor, bias tensor)] of the int8 ops whose weights train in place"""
    image = _image.read_image(model._image)
    return [(op, op.inputs[1], op.inputs[2]) for op in image.ops
            if op.op_type in TRAINED_OPS and
            image.tensors[op.inputs[1]].flags & _image.FLAG_TRAINABLE]


def arena_tensor(session, tensor, kind, dtype, count, which=0):
    """A copy of ``tensor``'s buffer of ``kind`` ("weight", "gradient", "optimizer") in the
    session's arena, ``count`` values of ``dtype`` from its start; ``which``: the second
    buffer of that kind (an int8 weight's float master copy, which follows the weight)."""
    offset = [b["offset"] for b in arena.plan_buffers(session)
              if b["kind"] == kind and b["tensor"] == tensor][which]
    size = np.dtype(dtype).itemsize * count
    return session._backend._arena[offset:offset + size].view(dtype).copy()


def rows(seed, n=4):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-4.0, 4.0, (n, 5, 5, 2)).astype(np.float32),
            rng.uniform(-2.0, 2.0, (n, 4)).astype(np.float32))


# ---------------------------------------------------------------- gradients against PyTorch

def torch_gradients(p, x, dy):
    """PyTorch's gradients of sum(dy · y) in the three weighted layers' dequantized weights
    and real biases, every int8 activation fake-quantized (test_int8_backward's graph)."""
    import torch
    import torch.nn.functional as F

    fq, _ = fake_quantizer()

    def leaf(value):
        return value.clone().requires_grad_(True)

    w1 = leaf(dequantized(p["w1"], p["s1"], 0).permute(0, 3, 1, 2))
    b1 = leaf(torch.tensor(p["b1"].astype(np.float32) * (p["s1"] * np.float32(Q_IN[0]))))
    w2 = leaf(dequantized(p["w2"], p["s2"], 3).permute(3, 0, 1, 2))
    b2 = leaf(torch.tensor(p["b2"].astype(np.float32) * (p["s2"] * np.float32(Q_CONV[0]))))
    w3 = leaf(dequantized(p["w3"], np.atleast_1d(p["s3"]), 0))
    b3 = leaf(torch.tensor(p["b3"].astype(np.float32) * (p["s3"] * np.float32(Q_ADD[0]))))
    xq = fq(torch.tensor(x).permute(0, 3, 1, 2), Q_IN)
    c1 = fq(F.conv2d(xq, w1, b1, padding=1), Q_CONV)
    d1 = fq(F.conv2d(c1, w2, b2, padding=1, groups=3), Q_DW, Q_DW[1], 127)
    a1 = fq(d1 + c1, Q_ADD)
    p1 = litert_average_pool(a1, Q_ADD)
    y = fq(p1.permute(0, 2, 3, 1).reshape(len(x), -1) @ w3.T + b3, Q_FC)
    (y * torch.tensor(dy)).sum().backward()
    return [w1.grad.permute(0, 2, 3, 1).numpy(), b1.grad.numpy(),
            w2.grad.permute(1, 2, 3, 0).numpy(), b2.grad.numpy(), w3.grad.numpy(),
            b3.grad.numpy()]


def litert_average_pool(a, q):
    """A 2x2 average pool of the fake-quantized a as LiteRT's int8 kernel rounds it (the
    sum of the int8 values, then half away from zero), its gradient the float pool's (the
    straight-through estimator): the FullyConnected after it reads these values, so its
    weight gradient needs them exact, where fake quantization's half-to-even rounding would
    differ at every tie."""
    import torch
    import torch.nn.functional as F

    average = F.avg_pool2d(a, 2, 2)
    sums = np.rint(average.detach().double().numpy() * 4.0 / q[0]) + 4 * q[1]  # Σ q, exact
    levels = np.where(sums > 0, np.trunc((sums + 2) / 4), np.trunc((sums - 2) / 4))
    exact = torch.tensor(((levels - q[1]) * q[0]).astype(np.float32))
    return average + (exact - average).detach()


def test_int8_weights_get_pytorchs_fake_quantized_gradients():
    pytest.importorskip("torch")
    data, p = build_graph()
    model = microtrain.convert(data, train_from=1, int8_train=True)
    kinds = [op.op_type for op in _image.read_image(model._image).ops]
    assert kinds == [_ops.QUANTIZE, _ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8, _ops.ADD_S8,
                     _ops.AVERAGE_POOL2D_S8, _ops.DENSE_S8, _ops.DEQUANTIZE], kinds
    layers = trained_layers(model)
    assert len(layers) == 3
    x, target = rows(5)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(1.0), microtrain.losses.MeanSquaredError("sum"),
                        batch_size=4, accumulate_gradients=True)
        plan = session.memory_plan()
        assert plan["num_trained_params"] == 6 and plan["first_trained_op"] == 1
        print("layers trained in int8:", plan["int8_trained_layers"])
        assert len(plan["int8_trained_layers"]) == 3
        session.train_step(x, target, update=False)
        y = session.output_buffer()[:4].copy()
        image = _image.read_image(model._image)
        core = []
        for _, w, b in layers:
            for t in (w, b):
                dims = image.tensors[t].dims
                core.append(arena_tensor(session, t, "gradient", np.float32,
                                         int(np.prod(dims))).reshape(dims))
    expected = torch_gradients(p, x, 2.0 * (y - target) / 4)  # MSE: 2(y - t) / D, D = 4
    for name, got, want in zip(("w1", "b1", "w2", "b2", "w3", "b3"), core, expected):
        assert np.any(got != 0), name
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.max(np.abs(want)),
                                   err_msg=name)


# ---------------------------------------------------------------- the QAS step against NumPy

def qas_numpy(q, g, scales, channel_of, lr, momentum, grad_scale, buf, master=None):
    """ops/qas.c's step in NumPy: d = g·grad_scale; momentum: buf = μ·buf + d, d = buf;
    q <- sat(round_half_even(double(q) - double(lr·(d / s)))), each float op in float32;
    with a master copy m: m <- clip(m - lr·(d / s), -127, 127) in float32, q <- rint(m).
    Returns (q, buf, m)."""
    f32 = np.float32
    d = (g.reshape(-1) * f32(grad_scale)).astype(f32)
    if momentum > 0:
        buf = (f32(momentum) * buf + d).astype(f32)
        d = buf
    step = (f32(lr) * (d / scales[channel_of]).astype(f32)).astype(f32)
    if master is not None:
        master = np.clip((master - step).astype(f32), f32(-127), f32(127))
        return np.rint(master).astype(np.int8).reshape(q.shape), buf, master
    value = np.rint(q.reshape(-1).astype(np.float64) - step.astype(np.float64))
    info = np.iinfo(q.dtype)
    low = -127 if q.dtype == np.int8 else info.min
    return np.clip(value, low, info.max).astype(q.dtype).reshape(q.shape), buf, None


def channels_of(op_type, dims, bias):
    """The scale index of each element (ops/qas.c: mt_qas_tensor_of)"""
    count = int(np.prod(dims))
    if bias:
        return np.arange(count)
    if op_type == _ops.DEPTHWISE_CONV2D_S8:
        return np.arange(count) % dims[3]
    return np.arange(count) // (count // dims[0])


def record_scales(image, op, tensor, bias):
    """A trained tensor's scales: the weight's sw[c], the bias's sx·sw[c] (as the file holds
    them), a per-tensor scale repeated"""
    t = image.tensors[tensor]
    channels = len(channels_of(op.op_type, t.dims, True)) if bias else \
        (t.dims[3] if op.op_type == _ops.DEPTHWISE_CONV2D_S8 else t.dims[0])
    return np.broadcast_to(np.asarray(t.quant.scales, np.float32), (channels,)).copy()


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_the_qas_step_is_numpys_bit_for_bit(momentum):
    data, _ = build_graph()
    model = microtrain.convert(data, train_from=1, int8_train=True)
    image = _image.read_image(model._image)
    layers = trained_layers(model)
    lr = 0.05
    tensors = [(op, t, k == 1) for op, w, b in layers for k, t in enumerate((w, b))]
    with microtrain.TrainSession(model) as session, \
            microtrain.TrainSession(model) as fused:
        session.compile(microtrain.optimizers.SGD(lr, momentum=momentum), "mse", batch_size=4,
                        accumulate_gradients=True)
        fused.compile(microtrain.optimizers.SGD(lr, momentum=momentum), "mse", batch_size=4)
        assert fused.memory_plan()["fused_update"] == 1
        bufs = {t: np.zeros(int(np.prod(image.tensors[t].dims)), np.float32)
                for _, t, _ in tensors}
        changed = 0
        for step in range(2):
            x, target = rows(10 + step)
            session.train_step(x, target, update=False)
            before, grads = {}, {}
            for op, t, bias in tensors:
                dims, count = image.tensors[t].dims, int(np.prod(image.tensors[t].dims))
                dtype = np.int32 if bias else np.int8
                before[t] = arena_tensor(session, t, "weight", dtype, count).reshape(dims)
                grads[t] = arena_tensor(session, t, "gradient", np.float32, count)
            session.optimizer_step()
            session.lazy_reset_grad()  # the next step accumulates from 0
            fused.train_step(x, target)
            for op, t, bias in tensors:
                dims, count = image.tensors[t].dims, int(np.prod(image.tensors[t].dims))
                dtype = np.int32 if bias else np.int8
                after = arena_tensor(session, t, "weight", dtype, count).reshape(dims)
                want, bufs[t], _ = qas_numpy(before[t], grads[t], record_scales(image, op, t, bias),
                                             channels_of(op.op_type, dims, bias), lr, momentum,
                                             np.float32(1.0) / np.float32(4), bufs[t])
                np.testing.assert_array_equal(after, want, err_msg="tensor %d, step %d" % (t, step))
                np.testing.assert_array_equal(
                    arena_tensor(fused, t, "weight", dtype, count).reshape(dims), after)
                changed += int(np.count_nonzero(after != before[t]))
        assert changed > 20  # the steps move weights: the comparison is of updates


# ---------------------------------------------------------------- export and refusals

def test_a_model_trained_in_place_exports_to_litert_bit_for_bit(tmp_path):
    data, _ = build_graph()
    model = microtrain.convert(data, train_from=1, int8_train=True)
    x, target = rows(7)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.05), "mse", batch_size=4)
        before = session.infer(x)[0]
        for _ in range(3):
            session.train_step(x, target)
        outputs = session.infer(x)[0]
        assert np.any(outputs != before)
        session.export_model_for_inference(str(tmp_path / "trained.tflite"))
    np.testing.assert_array_equal(litert_rows(str(tmp_path / "trained.tflite"), x), outputs)


def test_int8_training_refuses_what_qas_does_not_compute():
    data, _ = build_graph()
    model = microtrain.convert(data, train_from=1, int8_train=True)
    with microtrain.TrainSession(model) as session:
        with pytest.raises(ValueError, match="int8 weights in place.*SGD"):
            session.compile("adam", "mse", batch_size=2)
        with pytest.raises(ValueError, match="weight_decay 0.01"):
            session.compile(microtrain.optimizers.SGD(0.1, weight_decay=0.01), "mse",
                            batch_size=2)
        with pytest.raises(ValueError, match="proximal_mu"):
            session.compile("sgd", "mse", batch_size=2, proximal_mu=0.1)
        session.compile("sgd", "mse", batch_size=2)  # what it supports
    with pytest.raises(ConversionError, match="int8_train"):
        microtrain.convert(data, int8_train=True)
    with pytest.raises(ConversionError, match="int8_train"):
        microtrain.convert(data, train_from=1, int8_train=True, int8_after=True)


def test_the_core_refuses_what_the_facade_would():
    """The planner's own refusal (plan_qas.c), for a caller that is not the facade: Adam
    on an int8 layer trained in place is MT_ERR_UNSUPPORTED naming that layer's op."""
    from microtrain import config as _config, losses, optimizers
    from microtrain.backend import ctypes_backend
    data, _ = build_graph()
    image = microtrain.convert(data, train_from=1, int8_train=True)._image
    backend = ctypes_backend.Backend()
    adam = _config.make_config(optimizers.Adam(), losses.MeanSquaredError(), 2)
    with pytest.raises(microtrain.MicrotrainError, match=r"op 1 \(conv2d_s8\)") as refused:
        backend.plan(image, adam)
    assert refused.value.status == -5 and refused.value.op_index == 1  # MT_ERR_UNSUPPORTED
    sgd = _config.make_config(optimizers.SGD(), losses.MeanSquaredError(), 2)
    assert backend.plan(image, sgd)["num_trained_params"] == 6


def test_keyword_spotter_trains_its_last_layers_in_int8():
    """MLPerf Tiny's keyword spotter from its last pointwise Conv2D: the Conv2D and the
    FullyConnected train in int8 (1 byte a weight), the loss falls."""
    model = microtrain.convert(KWS, train_from="conv2d_4", int8_train=True)
    assert "trained in place" in model.source.notes[0]
    x, y = keyword_batch(3, 8)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.002), "cce", batch_size=8)
        assert session.memory_plan()["int8_trained_layers"] == ["conv2d_4", "dense"]
        losses = [float(session.train_step(x, y)["loss"][0]) for _ in range(6)]
    assert losses[-1] < losses[0], losses


@pytest.mark.parametrize("master", [False, True])
def test_tiled_int8_updates_are_the_whole_gradients_bits(master):
    """A Conv2D of 64 x 64 int8 weights (MLPerf Tiny's keyword spotter's last pointwise one)
    trained in place with fused updates is updated in tiles of output channels (its f32
    gradient is never whole): the same bits as the accumulated step's whole gradient, with
    float master copies too."""
    model = microtrain.convert(KWS, train_from="conv2d_4", int8_train=True,
                              int8_master_weights=master)
    image = _image.read_image(model._image)
    conv = [w for op, w, _ in trained_layers(model) if op.op_type == _ops.CONV2D_S8][0]
    count = int(np.prod(image.tensors[conv].dims))
    x, y = keyword_batch(4, 2)
    with microtrain.TrainSession(model) as tiled, microtrain.TrainSession(model) as whole:
        for session, accumulate in ((tiled, False), (whole, True)):
            session.compile(microtrain.optimizers.SGD(0.01, momentum=0.5),
                            "categorical_crossentropy", batch_size=2,
                            accumulate_gradients=accumulate)
        plan = tiled.memory_plan()
        assert plan["tiled_updates"] >= 1 and plan["gradient_bytes"] < 4 * count
        start = arena_tensor(tiled, conv, "weight", np.int8, count)
        for _ in range(2):
            tiled.train_step(x, y)
            whole.train_step(x, y)
            np.testing.assert_array_equal(arena_tensor(tiled, conv, "weight", np.int8, count),
                                          arena_tensor(whole, conv, "weight", np.int8, count))
        assert np.count_nonzero(arena_tensor(tiled, conv, "weight", np.int8, count) != start) > 100


def test_digits_backbone_learns_a_domain_shift_in_int8_in_place():
    """The digits CNN pretrained on digits 0-4 (int8), adapted to digits 5-9 (60 % train,
    40 % test; benchmarks/digits_int8.py's split), 20 epochs of SGD at batch 16: its depthwise
    and pointwise convolutions in int8 in place with a new float head, against the same
    layers in float and against the head alone, and with float master copies at a learning
    rate where most int8 steps round away. Measured (docs/guides/int8.md): at 0.5, head alone
    74.4 %, float 94.7 %, int8 in place 92.5 %; at 0.05, int8 in place 80.2 %, with master
    copies 87.5 % (float 87.7 %). Asserted with margins that show it learns."""
    pytest.importorskip("sklearn")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "benchmarks"))
    from digits_int8 import digits_5_to_9
    backbone = os.path.join(HERE, "fixtures", "int8", "digits_backbone_int8.tflite")
    x, y, x_test, y_test = digits_5_to_9()

    def accuracy(lr, **options):
        with microtrain.TrainSession(microtrain.convert(backbone, new_head=5, **options)) \
                as session:
            session.compile(microtrain.optimizers.SGD(lr), "categorical_crossentropy",
                            batch_size=16)
            session.train(x, y, epochs=20, verbose=0)
            predicted = session.predict(x_test)
        return float(np.mean(np.argmax(predicted, 1) == np.argmax(y_test, 1)))

    head = accuracy(0.5)
    in_float = accuracy(0.5, train_from="dw")
    in_place = accuracy(0.5, train_from="dw", int8_train=True)
    small_steps = accuracy(0.05, train_from="dw", int8_train=True)
    with_master = accuracy(0.05, train_from="dw", int8_train=True, int8_master_weights=True)
    print("digits 5-9: head alone %.3f, dw + conv_b in float %.3f, in int8 in place %.3f; "
          "at lr 0.05 in int8 %.3f, with master copies %.3f"
          % (head, in_float, in_place, small_steps, with_master))
    assert in_place > head + 0.08 and in_place > in_float - 0.08
    assert with_master > small_steps + 0.02


def test_master_weights_accumulate_the_steps_rounding_drops():
    """int8_master_weights=True: each int8 weight keeps a float copy m (4 bytes more, counted
    as trained weights) that takes the step, the weight m's rounding: NumPy's bits over three
    steps of a learning rate small enough that most steps are under half a quantization step
    (without the copy, those weights never move)."""
    data, _ = build_graph()
    plain = microtrain.convert(data, train_from=1, int8_train=True)
    model = microtrain.convert(data, train_from=1, int8_train=True, int8_master_weights=True)
    image = _image.read_image(model._image)
    weights = [(op, w) for op, w, _ in trained_layers(model)]
    assert all(image.tensors[w].flags & _image.FLAG_MASTER for _, w in weights)
    lr = 0.0005
    with microtrain.TrainSession(model) as session, microtrain.TrainSession(plain) as without:
        session.compile(microtrain.optimizers.SGD(lr), "mse", batch_size=4,
                        accumulate_gradients=True)
        without.compile(microtrain.optimizers.SGD(lr), "mse", batch_size=4)
        extra = session.memory_plan()["weight_bytes"] - without.memory_plan()["weight_bytes"]
        assert extra >= 4 * sum(int(np.prod(image.tensors[w].dims)) for _, w in weights)
        moved, moved_without = 0, 0
        for step in range(3):
            x, target = rows(20 + step)
            session.train_step(x, target, update=False)
            state = {}
            for op, w in weights:
                dims, count = image.tensors[w].dims, int(np.prod(image.tensors[w].dims))
                state[w] = (arena_tensor(session, w, "weight", np.int8, count).reshape(dims),
                            arena_tensor(session, w, "gradient", np.float32, count),
                            arena_tensor(session, w, "weight", np.float32, count, which=1))
            session.optimizer_step()
            session.lazy_reset_grad()
            without.train_step(x, target)
            for op, w in weights:
                dims, count = image.tensors[w].dims, int(np.prod(image.tensors[w].dims))
                q, g, m = state[w]
                want, _, want_m = qas_numpy(q, g, record_scales(image, op, w, False),
                                            channels_of(op.op_type, dims, False), lr, 0.0,
                                            np.float32(1.0) / np.float32(4), None, m)
                np.testing.assert_array_equal(
                    arena_tensor(session, w, "weight", np.float32, count, which=1), want_m)
                after = arena_tensor(session, w, "weight", np.int8, count).reshape(dims)
                np.testing.assert_array_equal(after, want)
                moved += int(np.count_nonzero(after != q))
        for op, w in weights:
            count = int(np.prod(image.tensors[w].dims))
            start = image.tensor_data(w).reshape(-1)
            moved_without += int(np.count_nonzero(
                arena_tensor(without, w, "weight", np.int8, count) != start))
        print("weights moved over 3 steps: %d with master copies, %d without"
              % (moved, moved_without))
        assert moved > moved_without


def round16(n):
    return (n + 15) // 16 * 16


@pytest.mark.parametrize("momentum,master", [(0.0, False), (0.9, True)])
def test_the_plan_counts_a_byte_a_weight(momentum, master):
    """Each int8 weight trained in place takes round16(count) bytes of the arena (a bias
    4 a value), its float master copy 4 a weight, a weight's record (its scales, then sx; a
    bias keeps none: its scales are read in the image) plus momentum's 4 a value under
    optimizer state: buffer by buffer, as
    ``memory_plan()`` adds them up."""
    data, _ = build_graph()
    model = microtrain.convert(data, train_from=1, int8_train=True, int8_master_weights=master)
    image = _image.read_image(model._image)
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.1, momentum=momentum), "mse", batch_size=2)
        plan = session.memory_plan()
        buffers = arena.plan_buffers(session)
    weight_bytes, optimizer_bytes = 0, 0
    for op, w, b in trained_layers(model):
        channels = image.tensors[b].dims[0]
        for t, width, record in ((w, 1, channels + 1), (b, 4, 0)):
            count = int(np.prod(image.tensors[t].dims))
            sizes = [x["bytes"] for x in buffers if x["tensor"] == t and x["kind"] == "weight"]
            want = [round16(width * count)] + ([round16(4 * count)] if master and width == 1
                                               else [])
            assert sizes == want, (t, sizes, want)
            weight_bytes += sum(want)
            optimizer_bytes += round16(4 * record + (4 * count if momentum else 0))
    assert plan["weight_bytes"] == weight_bytes
    assert plan["optimizer_bytes"] == optimizer_bytes
