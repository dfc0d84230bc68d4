"""``convert(..., new_head=N, int8_head=True)``: the new head as an int8 FullyConnected trained
in place (QAS, ops/qas.c) on the int8 mean's output, so that it trains where the float head's
weight and gradient do not fit (MobileNetV2 at 128 KiB: docs/memory.md, "Sparse update").

On the int8 digits backbone (tests/convert/fixtures/int8): the head's int8 weight is the float
head's Glorot weight (same head_seed) quantized per output channel; its weight and bias
gradients are the softmax cross-entropy's, (p - y) and (p - y) x^T with x the pooled features
(read from the float head's gradient of the same rows); it learns; sparse_update picks it
whole under a budget the float head does not fit; the refusals name the option or the layer.
The DENSE_S8 forward and backward themselves are tests/convert/test_int8_backward.py's
(against PyTorch with fake-quantized weights), the QAS update tests/ops' and
tests/test_sparse_update.py's.
"""

import os

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.convert import ConversionError
from microtrain.nn import image as _image

pytest.importorskip("tflite", reason="converting .tflite needs microtrain[convert]")

DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "int8",
                      "digits_backbone_int8.tflite")
CLASSES, BATCH = 5, 4


def model(int8_head, seed=0):
    return microtrain.convert(DIGITS, new_head=CLASSES, train_from="dw", int8_train=True,
                              head_seed=seed, int8_head=int8_head)


def head_layer(session):
    return max(layer for layer, ops in enumerate(session._layer_ops)
               if any(session._op_facts[op][3] for op in ops))


def rows(count=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 16.0, (count, 8, 8, 1)).astype(np.float32)
    return x, np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, count)]


def arena_floats(session, tensor, kind, count):
    from microtrain.tools import arena
    offset = [b["offset"] for b in arena.plan_buffers(session)
              if b["kind"] == kind and b["tensor"] == tensor][0]
    return session._backend._arena[offset:offset + 4 * count].view(np.float32).copy()


def test_the_head_is_the_float_heads_weight_quantized_per_channel():
    parsed = _image.read_image(model(True)._image)
    dense = [op for op in parsed.ops if op.op_type == _ops.DENSE_S8]
    assert len(dense) == 1 and not any(op.op_type == _ops.DENSE for op in parsed.ops)
    w, b = (parsed.tensors[i] for i in dense[0].inputs[1:3])
    assert w.dtype == _image.DTYPE_I8 and b.dtype == _image.DTYPE_I32
    assert w.flags & _image.FLAG_TRAINABLE and b.flags & _image.FLAG_TRAINABLE
    q = np.asarray(parsed.tensor_data(dense[0].inputs[1]))
    scales = np.asarray(w.quant.scales, np.float32)
    float_parsed = _image.read_image(model(False)._image)
    head = [op for op in float_parsed.ops if op.op_type == _ops.DENSE][0]
    weight = np.asarray(float_parsed.tensor_data(head.inputs[1]))
    assert q.shape == weight.shape == (CLASSES, 32)
    assert np.all(np.abs(q * scales[:, None] - weight) <= scales[:, None] * 0.5 + 1e-9)
    assert np.all(np.max(np.abs(q), axis=1) == 127)  # each channel's scale is its max / 127
    assert not np.any(np.asarray(parsed.tensor_data(dense[0].inputs[2])))
    # its output: int8 logits at scale 1/8, then DEQUANTIZE and Softmax
    out = parsed.tensors[dense[0].outputs[0]]
    assert out.dtype == _image.DTYPE_I8 and list(out.quant.scales) == [0.125]


def test_the_heads_gradients_are_the_cross_entropys():
    """Batch 1, gradients accumulated (no update): the int8 head's bias gradient is p - y and
    its weight's (p - y) x^T, x the pooled features, which the float head's weight gradient of
    the same row gives (its own (p_f - y) x^T): the DEQUANTIZE passes the gradient straight
    through, the DENSE_S8 backward computes dW in real units (QAS divides it by the scales at
    the update)."""
    x, y = rows(1, seed=2)
    found = {}
    for int8_head in (False, True):
        with microtrain.TrainSession(model(int8_head)) as session:
            head = head_layer(session)
            session.compile("sgd", "cce", batch_size=1, trainable={head: "all"},
                            accumulate_gradients=True)
            p = session.infer(x)[0][0]
            session.train_step(x, y, update=False)
            weight, bias = session._op_facts[session._layer_ops[head][0]][3]
            found[int8_head] = (p, arena_floats(session, weight, "gradient", CLASSES * 32),
                                arena_floats(session, bias, "gradient", CLASSES))
    p_f, g_f, _ = found[False]
    u = int(np.argmax(np.abs(p_f - y[0])))
    features = g_f.reshape(CLASSES, 32)[u] / (p_f - y[0])[u]
    assert np.all(features >= 0) and np.any(features > 0)  # a mean of ReLU outputs
    p, g, db = found[True]
    assert np.allclose(db, p - y[0], rtol=1e-5, atol=1e-7)
    assert np.allclose(g.reshape(CLASSES, 32), np.outer(p - y[0], features), rtol=1e-4,
                       atol=1e-6)


def test_the_int8_head_learns():
    """The digits backbone's new int8 head alone, SGD with QAS: the int8 weights move and the
    loss on the training rows falls."""
    x, y = rows(64, seed=1)
    y = np.eye(CLASSES, dtype=np.float32)[(x.reshape(64, -1).mean(1) > 8).astype(int) * 3]
    with microtrain.TrainSession(model(True)) as session:
        head = head_layer(session)
        session.compile(microtrain.optimizers.SGD(0.2), "cce", batch_size=BATCH,
                        trainable={head: "all"})
        def head_weight():
            return [np.array(w) for w in session.get_weights() if np.shape(w) == (CLASSES, 32)]
        before = head_weight()
        first = np.mean([session.train_step(x[i:i + BATCH], y[i:i + BATCH])["loss"][0]
                         for i in range(0, 64, BATCH)])
        for _ in range(4):
            last = np.mean([session.train_step(x[i:i + BATCH], y[i:i + BATCH])["loss"][0]
                            for i in range(0, 64, BATCH)])
        after = head_weight()
    assert len(before) == 1 and before[0].dtype == np.int8
    assert np.count_nonzero(before[0] != after[0]) > 0
    assert last < first * 0.8, (first, last)


def test_sparse_update_trains_the_int8_head_where_the_float_one_does_not_fit():
    with microtrain.TrainSession(model(False)) as session:
        head = head_layer(session)
        float_whole = session.plan_memory("sgd", "cce", 1, {head: "all"})["total_bytes"]
    with microtrain.TrainSession(model(True)) as session:
        int8_whole = session.plan_memory("sgd", "cce", 1, {head_layer(session): "all"})[
            "total_bytes"]
    assert int8_whole < float_whole
    budget = int8_whole
    float_scheme = microtrain.sparse_update(model(False), budget, 1, "sgd", "cce")
    assert (head, "all") not in float_scheme.items()
    scheme = microtrain.sparse_update(model(True), budget, 1, "sgd", "cce")
    assert (head, "all") in scheme.items()
    with microtrain.TrainSession(model(True)) as session:
        session.compile("sgd", "cce", batch_size=1, trainable=scheme)
        plan = session.memory_plan()
        assert plan["total_bytes"] == scheme.total_bytes <= budget
        rows_ = [row for row in plan["layers"] if row["layer"] == head]
        assert rows_ and rows_[0]["trains"] == "all"
        x, y = rows(1)
        assert np.isfinite(session.train_step(x, y)["loss"][0])


def test_int8_head_needs_a_new_head():
    with pytest.raises(ConversionError, match="int8_head.*needs new_head"):
        microtrain.convert(DIGITS, train_from="dw", int8_train=True, int8_head=True)


def test_the_int8_head_refuses_adam_naming_it():
    """The int8 head trains in place with QAS: SGD only, as every int8 layer trained in place;
    compile's refusal names its tensor."""
    with microtrain.TrainSession(model(True)) as session:
        head = head_layer(session)
        with pytest.raises(ValueError, match="int8 weights in place.*SGD"):
            session.compile("adam", "cce", batch_size=1, trainable={head: "all"})


def test_the_int8_head_exports_as_mtm_and_is_refused_as_tflite(tmp_path):
    """A trained int8 head goes into an .mtm image (its int8 weight as trained); a .tflite file
    would need TFLite's int8 FULLY_CONNECTED written from the image, which export does not do:
    refused, naming the op."""
    x, y = rows(BATCH)
    with microtrain.TrainSession(model(True)) as session:
        session.compile(microtrain.optimizers.SGD(0.5), "cce", batch_size=BATCH,
                        trainable={head_layer(session): "all"})
        for _ in range(3):
            session.train_step(x, y)
        trained = [np.array(w) for w in session.get_weights() if np.shape(w) == (CLASSES, 32)]
        session.export_model_for_inference(str(tmp_path / "head.mtm"))
        with pytest.raises(ConversionError, match="Dense int8.*no TFLite writer"):
            session.export_model_for_inference(str(tmp_path / "head.tflite"))
    parsed = _image.read_image(open(str(tmp_path / "head.mtm"), "rb").read())
    dense = [op for op in parsed.ops if op.op_type == _ops.DENSE_S8][0]
    assert np.array_equal(np.asarray(parsed.tensor_data(dense.inputs[1])), trained[0])
