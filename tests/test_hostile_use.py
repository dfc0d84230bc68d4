"""What a hostile or careless user can no longer do, seen from Python (issue "Hostile use"):
an overflowing update never reaches the weights, a checkpoint with a valid CRC but
impossible contents or of another optimizer is refused and changes nothing."""

import struct
import zlib

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError, layers, optimizers
from microtrain.backend import _native


def model():
    return microtrain.Sequential([layers.Dense(6, activation="tanh"), layers.Dense(3),
                                  layers.Softmax()], input_shape=(4,), seed=2)


def batch(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((8, 4)).astype(np.float32) * 3,
            np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)])


@pytest.mark.parametrize("optimizer", [optimizers.SGD(momentum=0.9), optimizers.Adam(),
                                       optimizers.AdamW()])
@pytest.mark.parametrize("guard", [False, True])
def test_a_huge_but_finite_learning_rate_never_leaves_a_non_finite_weight(optimizer, guard):
    s = microtrain.TrainSession(model())
    s.compile(optimizer, "cce", batch_size=8, guard_gradients=guard)
    s.train_step(*batch(0))
    s.set_learning_rate(3.0e38)
    with pytest.raises(MicrotrainError) as error:
        for seed in range(1, 6):
            before = s.get_weights()  # an accepted step may change them (hugely but finitely)
            s.train_step(*batch(seed))
    assert error.value.status == _native.MT_ERR_NUMERIC and s.numeric_errors() >= 1
    if np.isfinite(error.value.loss):  # the update itself was refused: the error names its op
        assert "op %d (dense)" % error.value.op_index in str(error.value)
    # else an accepted update left huge (finite) weights and the next forward overflowed:
    # the loss is refused before anything changes
    assert all(np.all(np.isfinite(w)) for w in s.get_weights())
    if guard:  # refused whole: nothing changed
        for a, b in zip(before, s.get_weights()):
            np.testing.assert_array_equal(a, b)


def lying(data, edit):
    """``data`` with ``edit(bytearray)`` applied and the trailing CRC made right again."""
    edited = bytearray(data)
    edit(edited)
    struct.pack_into("<I", edited, len(edited) - 4, zlib.crc32(bytes(edited[:-4])))
    return bytes(edited)


def test_checkpoints_with_valid_crcs_but_impossible_contents_are_refused(tmp_path):
    s = microtrain.TrainSession(model())
    s.compile("adam", "cce", batch_size=8)
    for seed in range(3):
        s.train_step(*batch(seed))
    path = tmp_path / "good.ck"
    s.save_checkpoint(str(path))
    good = path.read_bytes()
    header = 80
    count = struct.unpack_from("<I", good, header + 4)[0]
    first_weight = header + 8
    first_m = first_weight + 4 * count          # Adam's first moment of that tensor
    first_v = first_m + 4 * count               # and its second moment
    cases = {
        "NaN weight": lambda b: struct.pack_into("<f", b, first_weight, float("nan")),
        "infinite weight": lambda b: struct.pack_into("<f", b, first_weight, float("inf")),
        "NaN moment": lambda b: struct.pack_into("<f", b, first_m, float("nan")),
        "negative second moment": lambda b: struct.pack_into("<f", b, first_v, -1.0),
        "negative step": lambda b: struct.pack_into("<q", b, 32, -5),
        "NaN learning rate": lambda b: struct.pack_into("<f", b, 48, float("nan")),
    }
    target = microtrain.TrainSession(model())
    target.compile("adam", "cce", batch_size=8)
    target.train_step(*batch(9))
    before, counters = target.get_weights(), target.get_counters()
    for name, edit in cases.items():
        bad = tmp_path / (name.replace(" ", "_") + ".ck")
        bad.write_bytes(lying(good, edit))
        with pytest.raises(MicrotrainError) as error:
            target.load_checkpoint(str(bad))
        assert error.value.status == _native.MT_ERR_BAD_CHECKPOINT, name
        for a, b in zip(before, target.get_weights()):
            np.testing.assert_array_equal(a, b)
        assert target.get_counters() == counters
    target.load_checkpoint(str(path))  # the honest one still loads
    target.train_step(*batch(10))
    assert all(np.all(np.isfinite(w)) for w in target.get_weights())


def test_a_checkpoint_of_another_optimizer_is_refused_even_without_state(tmp_path):
    sgd = microtrain.TrainSession(model())
    sgd.compile(optimizers.SGD(learning_rate=0.5), "cce", batch_size=8)
    sgd.train_step(*batch(0))
    path = tmp_path / "sgd.ck"
    sgd.save_checkpoint(str(path), include_optimizer_state=False)
    adam = microtrain.TrainSession(model())
    adam.compile(optimizers.Adam(learning_rate=0.001), "cce", batch_size=8)
    with pytest.raises(MicrotrainError) as error:
        adam.load_checkpoint(str(path))
    assert error.value.status == _native.MT_ERR_CHECKPOINT_MISMATCH
    assert adam.get_learning_rate() == pytest.approx(0.001)
