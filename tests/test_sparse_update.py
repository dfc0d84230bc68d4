"""Sparse update from Python: ``compile(trainable={layer: "bias" | "all" | k | fraction})``
(microtrain.sparse_scheme) and ``microtrain.sparse_update`` (tools/sparse_update.py).

The core's bits (a part's channels equal a full update's, frozen ones unchanged, every
optimizer, tiles, checkpoints, refusals) are tests/core/test_sparse_update.c's; here: the
same through the facade on a small CNN (int8 layers trained in place:
tests/test_sparse_update_int8.py), the trained channels'
gradient against PyTorch, the picked scheme's plan against the planner and the budget, the
facade's refusals naming the layer, and the scheme's JSON. The command line's sparse flags are
tests/test_sparse_update_cli.py's.
"""

import json
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import microtrain
from microtrain import layers
from microtrain.sparse_scheme import SparseScheme

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops"))
from op_parity import to_nchw  # noqa: E402

BATCH = 3


def cnn():
    """x [6,6,3] -> Conv 3x3x8 same relu -> DepthwiseConv 3x3 same relu -> Conv 1x1x12 relu
    -> GlobalAveragePool -> Dense 5 -> Softmax; layers 0..5"""
    return microtrain.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu"),
        layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        layers.Conv2D(12, 1, activation="relu"), layers.GlobalAveragePool(), layers.Dense(5),
        layers.Softmax()], input_shape=(6, 6, 3), seed=3)


SCHEME = {0: "bias", 1: 0.5, 2: 5, 4: "all"}
# per weight (conv W, b, depthwise W, b, pointwise W, b, dense W, b): which elements train
TRAINS = [lambda w: np.zeros(w.shape, bool),                      # conv 0: bias only
          lambda w: np.ones(w.shape, bool),
          lambda w: np.arange(w.size).reshape(w.shape) % 8 < 4,   # depthwise: channels 0..3
          lambda w: np.ones(w.shape, bool),
          lambda w: np.arange(w.shape[0])[:, None, None, None] < 5 + 0 * w,  # rows 0..4
          lambda w: np.ones(w.shape, bool),
          lambda w: np.ones(w.shape, bool), lambda w: np.ones(w.shape, bool)]


def batch(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (BATCH, 6, 6, 3)).astype(np.float32)
    y = np.eye(5, dtype=np.float32)[rng.integers(0, 5, BATCH)]
    return x, y


def compiled(trainable, optimizer="sgd"):
    session = microtrain.TrainSession(cnn())
    session.compile(optimizer=optimizer, loss="cce", batch_size=BATCH, trainable=trainable)
    return session


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_scheme_step_equals_the_full_step_on_trained_channels(optimizer):
    """One step from the same weights: the trained channels' bits are those of the step
    training the same layers whole; the frozen channels keep their bits."""
    x, y = batch()
    with compiled(SCHEME, optimizer) as sparse, compiled([0, 1, 2, 4], optimizer) as full:
        before = sparse.get_weights()
        sparse.train_step([x], [y])
        full.train_step([x], [y])
        for trains, w0, ws, wf in zip(TRAINS, before, sparse.get_weights(), full.get_weights()):
            mask = trains(w0)
            assert np.array_equal(ws[mask].view(np.uint32), wf[mask].view(np.uint32))
            assert np.array_equal(ws[~mask].view(np.uint32), w0[~mask].view(np.uint32))
            assert not mask.any() or not np.array_equal(ws[mask], w0[mask])


@pytest.mark.parametrize("optimizer", [
    "sgd", microtrain.optimizers.SGD(learning_rate=0.05, momentum=0.9), "adam"])
def test_rows_in_the_arena_step_as_the_whole_weight(optimizer, tmp_path):
    """The pointwise Conv2D trains its first 5 of 12 rows: the arena holds those alone and the
    others are read from the image. Three steps give its trained rows (and every other trained
    element) the bits of a session training every weight whole whose frozen elements are put
    back after each step; get_weights, a checkpoint and the exported model see whole weights."""
    with compiled(SCHEME, optimizer) as sparse, compiled([0, 1, 2, 4], optimizer) as full:
        before = sparse.get_weights()
        masks = [trains(w) for trains, w in zip(TRAINS, before)]
        for seed in range(3):
            x, y = batch(seed)
            sparse.train_step([x], [y])
            full.train_step([x], [y])
            full.set_weights([np.where(mask, w, w0)
                              for mask, w, w0 in zip(masks, full.get_weights(), before)])
        after = sparse.get_weights()
        for mask, ws, wf in zip(masks, after, full.get_weights()):
            assert ws.shape == wf.shape
            assert np.array_equal(ws.view(np.uint32), wf.view(np.uint32))
        assert not np.array_equal(after[4][:5], before[4][:5])
        sparse.save_checkpoint(str(tmp_path / "sparse.ckpt"))
        sparse.export_model_for_inference(str(tmp_path / "sparse.mtm"))
        weights_crc = sparse.weights_crc32()
    with compiled(SCHEME, optimizer) as again:
        again.load_checkpoint(str(tmp_path / "sparse.ckpt"))
        for w, w1 in zip(again.get_weights(), after):
            assert np.array_equal(w.view(np.uint32), w1.view(np.uint32))
        assert again.weights_crc32() == weights_crc
    with microtrain.TrainSession(str(tmp_path / "sparse.mtm")) as exported:
        for w, w1 in zip(exported.get_weights(), after):
            assert np.array_equal(w.view(np.uint32), w1.view(np.uint32))


def test_a_checkpoint_moving_frozen_rows_is_refused(tmp_path):
    """A checkpoint of a session that trained every row has moved the rows the sparse session
    reads from the image, which it cannot write: refused, the session as it was."""
    x, y = batch()
    with compiled([0, 1, 2, 4]) as full, compiled(SCHEME) as sparse:
        full.train_step([x], [y])
        full.save_checkpoint(str(tmp_path / "full.ckpt"))
        before = sparse.get_weights()
        with pytest.raises(Exception, match="(?i)checkpoint"):
            sparse.load_checkpoint(str(tmp_path / "full.ckpt"))
        for w, w0 in zip(sparse.get_weights(), before):
            assert np.array_equal(w.view(np.uint32), w0.view(np.uint32))


def test_set_weights_writes_the_frozen_rows_in_the_image():
    """On the host the image is the session's own copy: set_weights writes a k-row layer's
    frozen rows there, and the forward reads them (as the whole copy's arena did)."""
    x, _ = batch()
    with compiled(SCHEME) as sparse, compiled([0, 1, 2, 4]) as full:
        weights = sparse.get_weights()
        weights[4] = weights[4] * np.float32(1.5)
        sparse.set_weights(weights)
        full.set_weights(weights)
        assert np.array_equal(sparse.get_weights()[4], weights[4])
        assert np.array_equal(sparse.predict(x).view(np.uint32), full.predict(x).view(np.uint32))


def test_trained_channels_gradient_equals_torch():
    """SGD at lr 1 over a MEAN loss: the trained channels move by -dL/dW, which PyTorch's
    autograd computes for the same CNN."""
    x, y = batch(1)
    model = cnn()
    weights = model.get_weights()
    with microtrain.TrainSession(model) as session:
        session.compile(optimizer=microtrain.optimizers.SGD(learning_rate=1.0), loss="cce",
                        batch_size=BATCH, trainable=SCHEME)
        session.train_step([x], [y])
        moved = [w0 - w1 for w0, w1 in zip(weights, session.get_weights())]
    params = [torch.tensor(w, requires_grad=True) for w in weights]
    k0, b0, k1, b1, k2, b2, w3, b3 = params
    t = to_nchw(torch.from_numpy(x))
    t = F.relu(F.conv2d(t, k0.permute(0, 3, 1, 2), b0, padding=1))
    t = F.relu(F.conv2d(t, k1.permute(3, 0, 1, 2), b1, padding=1, groups=8))
    t = F.relu(F.conv2d(t, k2.permute(0, 3, 1, 2), b2))
    logits = F.linear(t.mean(dim=(2, 3)), w3, b3)
    loss = -(torch.from_numpy(y) * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
    loss.backward()
    for trains, w0, step, param in zip(TRAINS, weights, moved, params):
        mask = trains(w0)
        np.testing.assert_allclose(step[mask], param.grad.numpy()[mask], rtol=1e-4, atol=1e-6)
        assert not step[~mask].any()


def test_memory_plan_lists_what_each_layer_trains():
    with compiled(SCHEME, "adam") as session:
        rows = session.memory_plan()["layers"]
        assert [(r["layer"], r["trains"]) for r in rows] == [
            (0, "bias"), (1, "4 of 8 channels"), (2, "5 of 12 channels"), (4, "all")]
        assert all(r["bytes"] > 0 for r in rows)
        with compiled({0: "bias", 1: "all", 2: "all", 4: "all"}, "adam") as whole:
            full = whole.memory_plan()
        plan = session.memory_plan()
        assert plan["optimizer_bytes"] < full["optimizer_bytes"]
        # the pointwise Conv2D's 5 trained rows of [12, 1, 1, 8] alone in the arena (16-byte
        # pieces: 160 of 384 bytes); the depthwise's channels interleave: its whole weight
        assert plan["weight_bytes"] == full["weight_bytes"] - 384 + 160
        assert session.trainable_description().startswith("sparse: layer 0 (Conv2D) bias")


@pytest.mark.parametrize("budget", [9000, 12000, 20000])
def test_sparse_update_fits_the_budget_by_the_planner(budget):
    scheme = microtrain.sparse_update(cnn(), budget, batch_size=1, optimizer="adam", loss="cce")
    assert scheme.total_bytes <= budget
    with microtrain.TrainSession(cnn()) as session:
        session.compile(optimizer="adam", loss="cce", batch_size=1, trainable=scheme)
        assert session.memory_plan()["total_bytes"] == scheme.total_bytes
        assert session.plan_memory(optimizer="adam", loss="cce", batch_size=1,
                                   trainable=scheme)["total_bytes"] == scheme.total_bytes
    assert SparseScheme.from_json(str(scheme)) == scheme
    assert json.loads(scheme.to_json())["budget_bytes"] == budget


def test_sparse_update_starts_with_the_last_biases():
    """tiny-training's order: the last layer's bias is the first choice."""
    with microtrain.TrainSession(cnn()) as session:
        smallest = session.plan_memory("sgd", "cce", 1, {4: "bias"})["total_bytes"]
    scheme = microtrain.sparse_update(cnn(), smallest, batch_size=1, loss="cce")
    assert scheme.items() == [(4, "bias")]
    with pytest.raises(ValueError, match="the smallest, layer 4's bias, needs %d bytes"
                       % smallest):
        microtrain.sparse_update(cnn(), smallest - 1, batch_size=1, loss="cce")


@pytest.mark.parametrize("scheme, message", [
    ({9: "bias"}, "the model has 6 layers"),
    ({2: 13}, "layer 2 \\(Conv2D\\) has 12 output channels; 13 is out of range"),
    ({2: 0}, "0 is out of range"),
    ({1: 1.5}, "layer 1 \\(DepthwiseConv2D\\): a fraction of its channels is in \\(0, 1\\]"),
    ({1: 0.0}, "got 0.0"),
    ({3: "bias"}, "layer 3 \\(GlobalAveragePool\\) has no trainable weight"),
    ({4: "some"}, "layer 4 \\(Dense\\): what it trains is 'all', 'bias'"),
])
def test_bad_schemes_name_the_layer(scheme, message):
    with microtrain.TrainSession(cnn()) as session:
        with pytest.raises(ValueError, match=message):
            session.compile(loss="cce", trainable=scheme)


@pytest.mark.parametrize("budget", [0, -5, 1.5, True, "big"])
def test_a_budget_is_a_positive_integer(budget):
    with pytest.raises(ValueError, match="budget_bytes is the arena's bytes at most"):
        microtrain.sparse_update(cnn(), budget)


@pytest.mark.parametrize("text, message", [
    ("{not json", "this is not JSON"),
    ("[1, 2]", "an object with a \"layers\" list"),
    ('{"layers": [[1]]}', "lists \\(layer, what it trains\\) pairs"),
])
def test_garbled_scheme_json_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        SparseScheme.from_json(text)


def test_plain_json_mapping_reads_as_a_scheme():
    scheme = SparseScheme.from_json('{"4": "all", "2": 0.25}')
    assert scheme.items() == [(4, "all"), (2, 0.25)]


# ---------------------------------------------------------------- int8 layers trained in place

def test_sparse_update_trains_the_classifier_whole_first_when_it_fits():
    """tiny-training always updates the classifier: at a budget that holds the last layer
    whole, it is trained whole before any bias deeper down (a new head left at its random
    weights beside trained biases stays at chance)."""
    with microtrain.TrainSession(cnn()) as session:
        whole = session.plan_memory("sgd", "cce", 1, {4: "all"})["total_bytes"]
        biases = session.plan_memory("sgd", "cce", 1, {4: "bias", 2: "bias", 1: "bias",
                                                       0: "bias"})["total_bytes"]
    for budget in (whole, max(whole, biases)):
        scheme = microtrain.sparse_update(cnn(), budget, batch_size=1, loss="cce")
        assert (4, "all") in scheme.items(), scheme.items()
        assert scheme.total_bytes <= budget
