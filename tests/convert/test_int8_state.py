"""The state of int8 layers trained in place (``convert(..., train_from=X, int8_train=True)``)
as first-class weights: checkpoints (micro_core/docs/checkpoint_format.md, version 4) save
and restore the int8 weights, int32 biases, their momentum and float master copies bit for
bit, so a resumed run is an uninterrupted one; ``microtrain info``'s summary names the
records trained in place. The C side, with the reader's refusals: tests/core/
test_checkpoint_int8.c. The model is tests/convert/test_int8_backward.py's int8 CNN.
"""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain.session_state import weights_crc32
from microtrain import checkpoint_info

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_int8_backward import build_graph  # noqa: E402
from test_int8_train import arena_tensor, rows, trained_layers  # noqa: E402

pytest.importorskip("tflite")


def model(master):
    data, _ = build_graph()
    return microtrain.convert(data, train_from=1, int8_train=True, int8_master_weights=master)


def state_of(session, model_):
    """Every trained int8 weight, int32 bias, master copy and momentum in the arena, as
    bytes: what a checkpoint must carry for the next steps to be the same."""
    from microtrain.nn import image as _image
    image = _image.read_image(model_._image)
    state = []
    for _, weight, bias in trained_layers(model_):
        for tensor, dtype in ((weight, np.int8), (bias, np.int32)):
            count = int(np.prod(image.tensors[tensor].dims))
            state.append(arena_tensor(session, tensor, "weight", dtype, count).tobytes())
            if dtype == np.int8 and image.tensors[tensor].flags & 16:  # MT_TENSOR_MASTER
                state.append(arena_tensor(session, tensor, "weight", np.float32, count, 1)
                             .tobytes())
    return state


@pytest.mark.parametrize("master", [False, True], ids=["plain", "master"])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_resumed_int8_run_is_the_uninterrupted_one(tmp_path, master, momentum):
    """Three steps, a checkpoint loaded into a fresh session, three more steps on each: the
    trained int8 weights, biases and master copies, the outputs and the checkpoints after
    them are the same bytes; the steps did move the int8 weights."""
    m = model(master)
    path = str(tmp_path / "int8.ck")
    with microtrain.TrainSession(m) as a, microtrain.TrainSession(m) as b:
        for session in (a, b):
            session.compile(microtrain.optimizers.SGD(0.2, momentum=momentum), "mse",
                            batch_size=4)
        start = state_of(a, m)
        for step in range(3):
            a.train_step(*rows(step))
        a.save_checkpoint(path)
        b.load_checkpoint(path)
        assert state_of(b, m) == state_of(a, m) != start
        assert b.get_counters() == a.get_counters()
        for step in range(3, 6):
            a.train_step(*rows(step))
            b.train_step(*rows(step))
        assert state_of(b, m) == state_of(a, m)
        np.testing.assert_array_equal(b.infer(rows(9)[0])[0], a.infer(rows(9)[0])[0])
        a.save_checkpoint(str(tmp_path / "a.ck"))
        b.save_checkpoint(str(tmp_path / "b.ck"))
    with open(str(tmp_path / "a.ck"), "rb") as fa, open(str(tmp_path / "b.ck"), "rb") as fb:
        assert fa.read() == fb.read()


def test_the_summary_names_the_records_trained_in_place(tmp_path):
    """Version 4's records say their dtype and master copy: ``microtrain info`` shows them,
    and the walk of their sizes ends at the trailer (crc_ok)."""
    m = model(True)
    path = str(tmp_path / "int8.ck")
    with microtrain.TrainSession(m) as session:
        session.compile(microtrain.optimizers.SGD(0.2, momentum=0.9), "mse", batch_size=4)
        session.train_step(*rows(0))
        session.save_checkpoint(path)
        weights = [(w, b) for _, w, b in trained_layers(m)]
    with open(path, "rb") as handle:
        data = handle.read()
    summary = checkpoint_info.read_summary(lambda offset, count: data[offset:offset + count],
                                           len(data))
    assert summary["version"] == 4 and summary["crc_ok"] and summary["state_arrays"] == 1
    assert summary["int8_records"] == [pair for w, b in weights
                                       for pair in ((w, "int8 + master"), (b, "int32"))]
    assert [index for index, _ in summary["records"]] == [t for pair in weights for t in pair]
    lines = checkpoint_info.describe(summary)
    assert "trained in place: t%d int8 + master, t%d int32" % weights[0] in lines[-1]


def test_an_int8_checkpoint_into_the_session_without_master_copies_is_refused(tmp_path):
    """A checkpoint with master copies and one without are different runs' states: the
    load is refused and changes nothing."""
    path = str(tmp_path / "master.ck")
    with microtrain.TrainSession(model(True)) as with_master, \
            microtrain.TrainSession(model(False)) as plain:
        for session in (with_master, plain):
            session.compile("sgd", "mse", batch_size=4)
        with_master.train_step(*rows(0))
        with_master.save_checkpoint(path)
        before = plain.infer(rows(9)[0])[0]
        with pytest.raises(microtrain.MicrotrainError, match="MISMATCH|another model"):
            plain.load_checkpoint(path)
        np.testing.assert_array_equal(plain.infer(rows(9)[0])[0], before)


# ---------------------------------------------------------------- weights, set and CRC

def test_int8_weights_are_read_as_int8_and_int32_and_crc_covered():
    """get_weights() lists the int8 weights and int32 biases trained in place at their
    dtype, in tensor-table order, as the arena holds them; weights_crc32() is zlib.crc32 of
    their bytes (the figure the firmware prints: mt_session_weights_crc32), before compile
    the image's, and a step changes both."""
    import zlib
    m = model(False)
    layers = trained_layers(m)
    with microtrain.TrainSession(m) as session:
        before = session.get_weights()
        crc_image = session.weights_crc32()
        session.compile(microtrain.optimizers.SGD(0.2), "mse", batch_size=4)
        assert [w.dtype for w in session.get_weights()] == [np.int8, np.int32] * 3
        assert session.trained_tensors() == [t for _, w, b in layers for t in (w, b)]
        assert session.weights_crc32() == crc_image == \
            zlib.crc32(b"".join(w.tobytes() for w in before))
        session.train_step(*rows(0))
        after = session.get_weights()
        for (op, w, b), weight, bias in zip(layers, after[::2], after[1::2]):
            np.testing.assert_array_equal(
                weight.reshape(-1), arena_tensor(session, w, "weight", np.int8, weight.size))
            np.testing.assert_array_equal(
                bias, arena_tensor(session, b, "weight", np.int32, bias.size))
        assert any(np.any(a != b) for a, b in zip(after, before))
        assert session.weights_crc32() == zlib.crc32(b"".join(w.tobytes() for w in after)) \
            != crc_image
        # the facade's one rule for weight arrays (fleets, firmware replays) gives the same
        assert weights_crc32(after) == session.weights_crc32()
        assert weights_crc32(before) == crc_image


@pytest.mark.parametrize("master", [False, True], ids=["plain", "master"])
def test_int8_weights_written_are_the_ones_trained(master):
    """set_weights() of another session's trained int8 weights: the same outputs and CRC,
    and (a learning rate too small to move a weight) the weights written stay, a master copy
    restarting from them."""
    m = model(master)
    with microtrain.TrainSession(m) as trained, microtrain.TrainSession(m) as fresh:
        trained.compile(microtrain.optimizers.SGD(0.2), "mse", batch_size=4)
        fresh.compile(microtrain.optimizers.SGD(1e-7), "mse", batch_size=4)
        for step in range(3):
            trained.train_step(*rows(step))
        fresh.set_weights(trained.get_weights())
        assert fresh.weights_crc32() == trained.weights_crc32()
        np.testing.assert_array_equal(fresh.infer(rows(9)[0])[0], trained.infer(rows(9)[0])[0])
        fresh.train_step(*rows(5))
        assert fresh.weights_crc32() == trained.weights_crc32()


def test_int8_weights_written_are_checked():
    """A float array, a value outside int8's or int32's range, a wrong shape: ValueError
    saying what is supported, and nothing changes."""
    with microtrain.TrainSession(model(False)) as session:
        session.compile("sgd", "mse", batch_size=4)
        weights = session.get_weights()
        crc = session.weights_crc32()
        cases = [(0, weights[0].astype(np.float32), "give integers.*got dtype float32"),
                 (0, np.full(weights[0].shape, 200), r"must lie in \[-128, 127\]"),
                 (1, np.full(weights[1].shape, 2 ** 31), r"must lie in \[-2147483648, "),
                 (0, weights[0].reshape(-1), "must have shape")]
        for position, value, message in cases:
            with pytest.raises(ValueError, match=message):
                session.set_weights({session.trained_tensors()[position]: value})
        assert session.weights_crc32() == crc
        session.set_weights({session.trained_tensors()[0]: np.full(weights[0].shape, -128)})
        assert np.all(session.get_weights()[0] == -128)


def test_a_float_checkpoint_into_an_int8_session_says_why(tmp_path):
    """The same tensors saved as float records (format version 2, as a float session of
    this architecture writes them) are refused as another run's, the message naming the
    layout: int8 and int32 trained in place against none."""
    import struct
    import zlib
    m = model(False)
    path = str(tmp_path / "int8.ck")
    with microtrain.TrainSession(m) as session:
        session.compile("sgd", "mse", batch_size=4)
        session.save_checkpoint(path)
        with open(path, "rb") as handle:
            typed = handle.read()
        # rewrite as version 2: 8-byte records of f32 weights (no optimizer state here)
        out, offset = bytearray(typed[:80]), 80
        struct.pack_into("<H", out, 4, 2)
        for _ in range(struct.unpack("<I", typed[16:20])[0]):
            index, count, dtype = struct.unpack("<IIB", typed[offset:offset + 9])
            out += struct.pack("<II", index, count)
            width = 1 if dtype == 3 else 4
            values = np.frombuffer(typed[offset + 12:offset + 12 + width * count],
                                   np.int8 if dtype == 3 else "<i4")
            out += values.astype("<f4").tobytes()
            offset += 12 + (count + 3) // 4 * 4 if dtype == 3 else 12 + 4 * count
        struct.pack_into("<I", out, 8, len(out) + 4)
        out += struct.pack("<I", zlib.crc32(bytes(out)) & 0xFFFFFFFF)
        with open(path, "wb") as handle:
            handle.write(bytes(out))
        with pytest.raises(microtrain.MicrotrainError,
                           match="it holds no tensor trained in place; this session trains "
                                 "t2 int8, t3 int32"):
            session.load_checkpoint(path)
