"""The Python facade's bad-input matrix (issue 6), numbers: values that would overflow or wrap
in the C types are refused, not wrapped, on every path; an arena that cannot be allocated
is a MemoryError and a plan past 4 GiB an unsupported one, and the session works on after
either (bad_input_setup.py says what every mistake must do).
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError, layers, optimizers
from microtrain.backend import _native

from bad_input_setup import BATCH, CLASSES, assert_same_weights, data, model, session


# ------------------------------------------------------------------ numbers out of range


def test_numbers_that_overflow_the_c_types_are_refused_not_wrapped():
    s = session()
    for batch_size in (2 ** 31, 2 ** 32 + BATCH, 2 ** 64):
        with pytest.raises(ValueError, match="batch_size must be a positive integer up to 2147483647"):
            microtrain.TrainSession(model()).compile("sgd", "mse", batch_size=batch_size)
    with pytest.raises(MicrotrainError, match="batch_size 100000") as error:
        microtrain.TrainSession(model()).compile("sgd", "mse", batch_size=100000)
    assert error.value.status == _native.MT_ERR_BAD_ARGUMENT
    for epoch in (2 ** 63, 2 ** 70, -1, 1.5, "3", True):
        with pytest.raises(ValueError, match="epoch must be an integer"):
            s.set_epoch(epoch)
    assert s.get_counters()["epoch"] == 0
    for rate in (1e300, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="learning_rate"):
            s.set_learning_rate(rate)
        with pytest.raises(ValueError, match="learning_rate"):
            optimizers.SGD(rate)
    with pytest.raises(ValueError, match="epsilon"):
        optimizers.Adam(epsilon=1e39)
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.AdamW(weight_decay=1e39)


def test_set_weights_refuses_values_that_overflow_float32_and_changes_nothing():
    s = session()
    before = s.get_weights()
    huge = [w.astype(np.float64) for w in before]
    huge[2][0, 0] = 1e300
    with pytest.raises(ValueError, match="weight 2 contains NaN or infinity"):
        s.set_weights(huge)
    for dtype in (object, complex, bool, str):
        with pytest.raises(ValueError, match="cannot be converted to float32"):
            s.set_weights([w.astype(dtype) for w in before])
    with pytest.raises(ValueError, match="must have shape"):
        s.set_weights([w.T for w in before])
    with pytest.raises(ValueError, match="4 weight tensors, got 3"):
        s.set_weights(before[:3])
    assert_same_weights(before, s.get_weights())

# ------------------------------------------------------------------ memory


def test_an_arena_that_cannot_be_allocated_raises_memory_error_not_a_crash():
    """batch 65535 of a 4096-feature input needs a ~1 GiB arena; under an address-space
    limit 256 MiB above what the process uses, compile() must raise MemoryError naming
    the arena, and the session must still compile a small batch afterwards."""
    script = textwrap.dedent("""
        import os, resource
        import numpy as np
        import microtrain
        from microtrain import layers
        s = microtrain.TrainSession(microtrain.Sequential([layers.Dense(1)],
                                                          input_shape=(4096,), seed=0))
        pages = int(open("/proc/self/statm").read().split()[0])
        limit = pages * os.sysconf("SC_PAGE_SIZE") + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        try:
            s.compile("sgd", "mse", batch_size=65535)
            print("compiled")
        except MemoryError as error:
            print("MemoryError:", error)
        s.compile("sgd", "mse", batch_size=4)
        print("loss", s.train_step(np.ones((4, 4096), np.float32), np.ones((4, 1), np.float32))["loss"][0])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("MemoryError: the arena of "), result.stdout
    assert "batch_size 65535" in lines[0] and "smaller batch_size" in lines[0]
    assert lines[1].startswith("loss ")


# ------------------------------------------------------------------ integers that would wrap


def test_integers_beyond_the_c_types_are_refused_on_every_path(tmp_path, capsys):
    """2**32 + 3 must not become 3 anywhere: compile(), the CLI, the pure-Python rows."""
    from microtrain import _feed
    from microtrain.tools import cli
    for value in (2 ** 32 + 3, 2 ** 31, -2):
        for keyword in ("trainable", "num_trainable_ops"):
            with pytest.raises(ValueError):
                microtrain.TrainSession(model()).compile("sgd", "mse", **{keyword: value})
    for batch_size in (2 ** 32 + BATCH, 0, -1, 2.0):
        with pytest.raises(ValueError, match="batch_size"):
            microtrain.Session(model()).compile("sgd", "mse", batch_size=batch_size)
    path = tmp_path / "m.mtm"
    model().save(str(path))
    assert cli.main(["info", str(path), "--num-of-trainable-ops", str(2 ** 32 + 3)]) == 1
    assert "num_trainable_ops" in capsys.readouterr().err
    for labels in ([2 ** 32 + 1, 0], [3.99, 0], [True, 0], [CLASSES, 0]):
        with pytest.raises(ValueError, match="label"):
            _feed.label_rows(labels, CLASSES, BATCH)
    s = session("sparse_categorical_crossentropy")
    x, _, _ = data(2)
    for labels in ([2 ** 32 + 1, 0], [3.99, 0]):
        with pytest.raises(ValueError, match="label"):
            s.train_step(x, labels)
    assert s.get_counters()["step"] == 0


def test_a_plan_beyond_4_gib_is_unsupported_and_says_why():
    """Not "arena too small": the planner lays shared buffers out at 32-bit offsets."""
    # 1x1 convolutions: tiny weights, 1 GiB activations at batch 1024, four of them live
    wide = microtrain.Sequential([layers.Conv2D(64, 1) for _ in range(4)],
                                 input_shape=(64, 64, 64))
    s = microtrain.TrainSession(wide)
    with pytest.raises(MicrotrainError, match="larger than the planner lays out") as error:
        s.compile("sgd", "mse", batch_size=1024)
    assert error.value.status == _native.MT_ERR_UNSUPPORTED
    s.compile("sgd", "mse", batch_size=2)  # the session is still usable
