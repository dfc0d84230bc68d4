"""Sparse update of int8 layers trained in place, from Python (QAS; the float layers' are
tests/test_sparse_update.py's): their first k channels against a whole update's, momentum for
those alone, the rows the arena holds, the picker under a budget and its refusals naming the
layer, and a global mean's input gradient planned as a broadcast.
"""

import os
import sys

import numpy as np
import pytest

import microtrain

def int8_model(master=False):
    """tests/convert/test_int8_backward.py's graph converted with int8_train from its Conv2D:
    layers 1 Conv2D 3x3 (3 channels, W_q [3, 3, 3, 2]), 2 DepthwiseConv2D (W_q [1, 3, 3, 3]),
    5 FullyConnected (W_q [4, 12]), each with its int32 bias."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert"))
    from test_int8_backward import build_graph
    data, _ = build_graph()
    return microtrain.convert(data, train_from=1, int8_train=True, int8_master_weights=master)


INT8_SCHEME = {1: 2, 2: 2, 5: 3}  # the first k output channels of each int8 layer
INT8_ALL = {1: "all", 2: "all", 5: "all"}


def int8_rows(seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-4.0, 4.0, (4, 5, 5, 2)).astype(np.float32),
            rng.uniform(-2.0, 2.0, (4, 4)).astype(np.float32))


def int8_tensors(session):
    """{layer: (weight tensor, weight dims, bias tensor, bias count)} of the three int8 layers"""
    found = {}
    for layer in (1, 2, 5):
        op = session._layer_ops[layer][0]
        weight, bias = session._op_facts[op][3]
        dims = session._op_facts[op][1]
        found[layer] = (weight, dims, bias, dims[-1] if layer == 2 else dims[0])
    return found


def arena_view(session, tensor, kind, dtype, count, which=0):
    """The session's arena bytes of ``tensor``'s buffer of ``kind`` as ``count`` values of
    ``dtype`` (a view: writing it writes the arena); ``which``: the second such buffer (an
    int8 weight's float master copy, right after the weight)."""
    from microtrain.tools import arena
    offset = [b["offset"] for b in arena.plan_buffers(session)
              if b["kind"] == kind and b["tensor"] == tensor][which]
    return session._backend._arena[offset:offset + np.dtype(dtype).itemsize * count].view(dtype)


def weight_of(session, tensor):
    """get_weights()'s array of weight tensor ``tensor`` (whole: the arena's rows, then those
    the session reads from the image)."""
    position = [index for index, _, _ in session._params].index(tensor)
    return session.get_weights()[position]


def frozen_mask(layer, dims, k):
    """Which elements of an int8 weight a scheme training its first k channels leaves frozen:
    rows k.. of a Conv2D's [OC, ...] or FullyConnected's [U, D], channels k.. (last axis) of a
    depthwise [1, KH, KW, C]."""
    index = np.indices(dims)
    return (index[-1] if layer == 2 else index[0]) >= k


@pytest.mark.parametrize("master", [False, True])
@pytest.mark.parametrize("fused", [True, False])
def test_int8_scheme_trains_the_first_channels_as_a_whole_update(fused, master):
    """The first k channels of each int8 layer trained in place equal, bit for bit over three
    steps of SGD with momentum, those of a session training every channel whose frozen ones
    (and their master copies) are put back to the image's values after each step (each
    element's QAS step reads its own gradient, momentum and scale alone; a frozen channel's
    value is what the forward reads in both); frozen channels keep the image's bits; the
    int32 biases (all channels) equal the whole update's."""
    model = int8_model(master)
    optimizer = microtrain.optimizers.SGD(0.05, momentum=0.9)
    with microtrain.TrainSession(model) as sparse, microtrain.TrainSession(model) as full:
        for session, scheme in ((sparse, INT8_SCHEME), (full, INT8_ALL)):
            session.compile(optimizer, "mse", batch_size=4, trainable=scheme,
                            accumulate_gradients=not fused)
        plan = sparse.memory_plan()
        # fused: the Conv2D's and FullyConnected's first rows in tiles (their gradient only),
        # the depthwise's whole small gradient, its first channels updated; accumulated: whole
        # gradients, the trained runs updated (session.c, update_in_tiles and qas_part)
        assert plan["tiled_updates"] == (2 if fused else 0)
        assert [row["trains"] for row in plan["layers"]] == [
            "2 of 3 channels", "2 of 3 channels", "3 of 4 channels"]
        tensors = int8_tensors(sparse)
        image = {}
        for layer, (weight, dims, _, _) in tensors.items():
            count = int(np.prod(dims))
            image[layer] = arena_view(full, weight, "weight", np.int8, count).copy().reshape(dims)
        moved = 0
        for step in range(3):
            x, target = int8_rows(20 + step)
            for session in (sparse, full):
                if fused:
                    session.train_step(x, target)
                else:
                    session.train_step(x, target, update=False)
                    session.optimizer_step()
                    session.lazy_reset_grad()
            for layer, (weight, dims, bias, channels) in tensors.items():
                count, frozen = int(np.prod(dims)), frozen_mask(layer, dims, INT8_SCHEME[layer])
                got = weight_of(sparse, weight)  # the FullyConnected's first rows in the arena
                whole = arena_view(full, weight, "weight", np.int8, count).reshape(dims)
                np.testing.assert_array_equal(got[frozen], image[layer][frozen])
                np.testing.assert_array_equal(got[~frozen], whole[~frozen],
                                              err_msg="layer %d, step %d" % (layer, step))
                np.testing.assert_array_equal(
                    arena_view(sparse, bias, "weight", np.int32, channels),
                    arena_view(full, bias, "weight", np.int32, channels))
                moved += int(np.count_nonzero(got[~frozen] != image[layer][~frozen]))
                whole[frozen] = image[layer][frozen]  # refreeze the whole update's session
                if master:
                    kept = arena_view(sparse, weight, "weight", np.float32, count, 1)
                    np.testing.assert_array_equal(  # W_q is its master copy's rounding
                        got[~frozen], np.rint(kept.reshape(dims)[~frozen]).astype(np.int8))
                    copy = arena_view(full, weight, "weight", np.float32, count, 1).reshape(dims)
                    copy[frozen] = image[layer][frozen].astype(np.float32)
        assert moved > 10  # the steps move the trained channels: the comparison is of updates


def test_int8_scheme_keeps_momentum_for_the_trained_channels_only():
    """The plan's optimizer state of a partly trained int8 weight: its record of scales (one
    a channel, then the input's scale) and momentum for its k trained channels alone."""
    from microtrain.tools import arena
    model = int8_model()
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.05, momentum=0.9), "mse", batch_size=4,
                        trainable=INT8_SCHEME)
        buffers = arena.plan_buffers(session)
        for layer, (weight, dims, _, channels) in int8_tensors(session).items():
            per_channel = int(np.prod(dims)) // channels
            state = [b["bytes"] for b in buffers
                     if b["kind"] == "optimizer" and b["tensor"] == weight]
            want = 4 * (channels + 1) + 4 * per_channel * INT8_SCHEME[layer]
            assert state == [(want + 15) // 16 * 16], (layer, state, want)



@pytest.mark.parametrize("budget", [4000, 8000])
def test_sparse_update_picks_int8_layers_under_the_budget(budget):
    """On a model converted with int8_train, sparse_update picks among the int8 layers trained
    in place (biases from the last back, then the FullyConnected's rows by fraction); compile
    takes the scheme as it is and its plan is the scheme's, within the budget."""
    model = int8_model()
    scheme = microtrain.sparse_update(model, budget, 4, "sgd", "mse")
    assert scheme.layers and all(layer in (1, 2, 5) for layer, _ in scheme.layers)
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "mse", batch_size=4, trainable=scheme)
        plan = session.memory_plan()
        assert plan["total_bytes"] == scheme.total_bytes <= budget
        assert plan["int8_trained_layers"]


def test_sparse_update_of_int8_layers_refuses_adam():
    with pytest.raises(ValueError, match="int8 weights in place.*SGD"):
        microtrain.sparse_update(int8_model(), 8000, 4, "adam", "mse")


@pytest.mark.parametrize("digits, scheme, message", [
    (False, {5: 5}, "layer 5 \\(t12\\) has 4 output channels; 5 is out of range"),
    (False, {5: 0}, "layer 5 \\(t12\\) has 4 output channels; 0 is out of range"),
    (False, {2: 4}, "layer 2 \\(t7\\) has 3 output channels; 4 is out of range"),
    (False, {1: 0.0}, "layer 1 \\(t4\\): a fraction of its channels is in \\(0, 1\\]"),
    # the digits backbone's pointwise conv_b, whose k rows alone the arena would hold
    (True, {3: 0}, "layer 3 \\(conv_b\\) has 32 output channels; 0 is out of range"),
    (True, {3: 33}, "layer 3 \\(conv_b\\) has 32 output channels; 33 is out of range"),
])
def test_bad_int8_schemes_name_the_layer(digits, scheme, message):
    with microtrain.TrainSession(digits_int8_model() if digits else int8_model()) as session:
        with pytest.raises(ValueError, match=message):
            session.compile("sgd", "mse", batch_size=4, trainable=scheme)


def test_a_frozen_int8_layer_takes_no_channels():
    """Converted with int8_train from the depthwise convolution, the Conv2D before it stays a
    frozen int8 layer: a scheme naming it is refused, naming it."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert"))
    from test_int8_backward import build_graph
    data, _ = build_graph()
    model = microtrain.convert(data, train_from=2, int8_train=True)
    with microtrain.TrainSession(model) as session:
        with pytest.raises(ValueError, match="layer 1 \\(t4\\) has no trainable weight"):
            session.compile("sgd", "mse", batch_size=4, trainable={1: 2})
        session.compile("sgd", "mse", batch_size=4, trainable={2: 1})
        assert [row["trains"] for row in session.memory_plan()["layers"]] == [
            "1 of 3 channels", "none"]


DIGITS_INT8 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert", "fixtures", "int8",
                           "digits_backbone_int8.tflite")


@pytest.mark.parametrize("scheme, broadcast", [
    ({3: "bias", 5: "all"}, True),               # conv_b's bias: its mask and db expand it
    ({2: "bias", 3: "bias", 5: "all"}, True),    # ... and its dx, through to dw's bias
    ({3: "all", 5: "all"}, False),               # conv_b's weight trains: its dW reads dy whole
    ({2: "bias", 3: 8, 5: "all"}, False),        # ... its first 8 rows too
])
def test_mean_input_gradient_is_planned_as_a_broadcast(scheme, broadcast):
    """The digits backbone trained in place from its depthwise (layers 2 dw, 3 conv_b: a
    pointwise Conv2D read by the MEAN alone, 5 the new head), batch 16: where conv_b's weight is
    frozen, its output's gradient is the Mean's broadcast, 16 x 32 floats after conv_b's work
    area (4 expanded rows of 32 and 32 sums) instead of 16 x 4 x 4 x 32 (plan_lifetimes.c,
    mt_plan_grad_broadcast); where the weight trains, whole.
    The plan's buffers are the arena's (each inside total_bytes, the total the planner's),
    and a step trains. The bits against the whole buffer's path: tests/ops/test_pooling_s8.c;
    on the boards: tests/boards/test_board_int8.py."""
    pytest.importorskip("tflite")
    from microtrain.nn import image as _image
    from microtrain import ops as _ops
    from microtrain.tools import arena
    model = microtrain.convert(DIGITS_INT8, new_head=5, train_from="dw", int8_train=True)
    ops = _image.read_image(model._image).ops
    mean = next(op for op in ops if op.op_type == _ops.MEAN_S8)
    x = mean.inputs[0]
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "cce", batch_size=16, trainable=scheme)
        plan = session.memory_plan()
        assert plan["total_bytes"] == session.plan_memory("sgd", "cce", 16, scheme)["total_bytes"]
        buffers = arena.plan_buffers(session)
        assert all(b["offset"] + b["bytes"] <= plan["total_bytes"] for b in buffers)
        grads = [b["bytes"] for b in buffers if b["kind"] == "gradient" and b["tensor"] == x]
        assert grads == [(5 * 32 + 16 * 32) * 4 if broadcast else 16 * 4 * 4 * 32 * 4], grads
        rng = np.random.default_rng(0)
        rows = rng.uniform(0.0, 16.0, (16, 8, 8, 1)).astype(np.float32)
        target = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 16)]
        losses = [session.train_step(rows, target)["loss"][0] for _ in range(4)]
        assert np.isfinite(losses).all() and losses[-1] < losses[0], losses


def test_the_broadcast_gradients_are_the_whole_buffers_bits():
    """The same digits model and rows, gradients accumulated (no update, so both forwards stay
    the same) over three batches, the last partial: where conv_b's weight is frozen its output's
    gradient is the Mean's broadcast, where it trains that gradient is whole; the gradients both
    compute, of dw's and conv_b's int32 biases (through conv_b's input gradient, from the
    broadcast) and of the head, are the same bits."""
    pytest.importorskip("tflite")
    model = microtrain.convert(DIGITS_INT8, new_head=5, train_from="dw", int8_train=True)
    rng = np.random.default_rng(4)
    rows = rng.uniform(0.0, 16.0, (40, 8, 8, 1)).astype(np.float32)
    target = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 40)]
    found = []
    for conv_b in ("bias", "all"):
        with microtrain.TrainSession(model) as session:
            session.compile("sgd", "cce", batch_size=16, trainable={2: "bias", 3: conv_b, 5: "all"},
                            accumulate_gradients=True)
            for i in range(0, 40, 16):
                session.train_step(rows[i:i + 16], target[i:i + 16], update=False)
            grads = {}
            for layer, count in ((2, 16), (3, 32), (5, 5)):
                weight, bias = session._op_facts[session._layer_ops[layer][0]][3]
                grads[bias] = arena_view(session, bias, "gradient", np.float32, count).copy()
            grads["head"] = arena_view(session, weight, "gradient", np.float32, 5 * 32).copy()
            found.append(grads)
    broadcast, whole = found
    assert all(np.any(g != 0) for g in broadcast.values())
    for key in whole:
        assert broadcast[key].tobytes() == whole[key].tobytes(), key


@pytest.mark.parametrize("master", [False, True])
def test_int8_rows_in_the_arena_hold_the_trained_channels_alone(master):
    """An int8 FullyConnected trained in place on its first k of U units holds those k rows
    alone in the arena, k·D bytes where the whole weight took U·D (the others are read from the
    image, plan_sparse.c); with a float master copy the weight stays whole. A Conv2D other than
    1 x 1 (layer 1, 3 x 3) and a depthwise keep their whole int8 weight."""
    from microtrain.tools import arena
    with microtrain.TrainSession(int8_model(master)) as session:
        session.compile("sgd", "mse", batch_size=4, trainable=INT8_SCHEME)
        buffers = arena.plan_buffers(session)
        for layer, (weight, dims, _, _) in int8_tensors(session).items():
            held = [b["bytes"] for b in buffers if b["kind"] == "weight" and b["tensor"] == weight]
            rows = INT8_SCHEME[layer] if layer == 5 and not master else dims[0] if layer != 2 else 1
            want = (rows * int(np.prod(dims)) // dims[0] + 15) // 16 * 16
            assert held[0] == want, (layer, held, want)


def digits_int8_model():
    pytest.importorskip("tflite")
    return microtrain.convert(DIGITS_INT8, new_head=5, train_from="dw", int8_train=True)


DIGITS_ROWS = {2: "bias", 3: 8, 5: "all"}   # conv_b (pointwise, 16 -> 32): its first 8 channels
DIGITS_WHOLE = {2: "bias", 3: "all", 5: "all"}


def digits_rows(seed, n=16):
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.0, 16.0, (n, 8, 8, 1)).astype(np.float32),
            np.eye(5, dtype=np.float32)[rng.integers(0, 5, n)])


@pytest.mark.parametrize("fused", [True, False])
def test_int8_pointwise_rows_step_as_the_whole_weight_with_rows_frozen(fused, tmp_path):
    """The digits backbone trained in place from its depthwise, conv_b (a pointwise int8 Conv2D
    16 -> 32) on its first 8 channels: the arena holds those 8 rows alone (128 bytes, the whole
    weight's 512 less (32 - 8)·16), rows 8.. are read from the image. Three steps of SGD with
    momentum, the last batch partial, give the same losses and every weight the same bits as a
    session training conv_b whole whose rows 8.. are put back after each step: the forward
    (the losses), conv_b's mask and weight gradient (its rows), and its input gradient (dw's
    int32 bias, which it reaches only through conv_b's dx). A checkpoint and the exported model
    see whole weights; a checkpoint that moved rows 8.. is refused."""
    from microtrain.tools import arena
    model = digits_int8_model()
    optimizer = microtrain.optimizers.SGD(0.05, momentum=0.9)
    with microtrain.TrainSession(model) as sparse, microtrain.TrainSession(model) as full:
        for session, scheme in ((sparse, DIGITS_ROWS), (full, DIGITS_WHOLE)):
            session.compile(optimizer, "cce", batch_size=16, trainable=scheme,
                            accumulate_gradients=not fused)
        weight = sparse._op_facts[sparse._layer_ops[3][0]][3][0]
        held = {name: [b["bytes"] for b in arena.plan_buffers(s)
                       if b["kind"] == "weight" and b["tensor"] == weight]
                for name, s in (("sparse", sparse), ("full", full))}
        assert held == {"sparse": [8 * 16], "full": [32 * 16]}, held
        assert [row["trains"] for row in sparse.memory_plan()["layers"]][1] == "8 of 32 channels"
        before = sparse.get_weights()
        position = [index for index, _, _ in sparse._params].index(weight)
        for step, n in enumerate((16, 16, 9)):
            x, target = digits_rows(30 + step, n)
            losses = []
            for session in (sparse, full):
                if fused:
                    losses.append(session.train_step(x, target)["loss"][0])
                else:
                    losses.append(session.train_step(x, target, update=False)["loss"][0])
                    session.optimizer_step()
                    session.lazy_reset_grad()
            assert np.float32(losses[0]).tobytes() == np.float32(losses[1]).tobytes(), (step, losses)
            refrozen = full.get_weights()
            refrozen[position][8:] = before[position][8:]
            full.set_weights(refrozen)
            for i, (ws, wf) in enumerate(zip(sparse.get_weights(), full.get_weights())):
                assert ws.tobytes() == wf.tobytes(), (step, i)
        after = sparse.get_weights()
        assert np.array_equal(after[position][8:], before[position][8:])
        assert np.count_nonzero(after[position][:8] != before[position][:8]) > 10
        bias_dw = [index for index, _, _ in sparse._params].index(
            sparse._op_facts[sparse._layer_ops[2][0]][3][1])
        assert np.any(after[bias_dw] != before[bias_dw])  # conv_b's dx reached dw's bias
        assert sparse.weights_crc32() == full.weights_crc32()
        sparse.save_checkpoint(str(tmp_path / "sparse.ckpt"))
        sparse.export_model_for_inference(str(tmp_path / "sparse.mtm"))
        crc = sparse.weights_crc32()
        full.train_step(*digits_rows(40))  # rows 8.. move
        full.save_checkpoint(str(tmp_path / "moved.ckpt"))
    with microtrain.TrainSession(model) as again:
        again.compile(optimizer, "cce", batch_size=16, trainable=DIGITS_ROWS)
        with pytest.raises(Exception, match="(?i)checkpoint"):
            again.load_checkpoint(str(tmp_path / "moved.ckpt"))
        again.load_checkpoint(str(tmp_path / "sparse.ckpt"))
        for w, w1 in zip(again.get_weights(), after):
            assert w.tobytes() == w1.tobytes()
        assert again.weights_crc32() == crc
    with microtrain.TrainSession(str(tmp_path / "sparse.mtm")) as exported:
        for w, w1 in zip(exported.get_weights(), after):
            assert w.tobytes() == w1.tobytes()
