"""The threading contract (session.py): every public call holds the session's lock, so calls
from several threads are serialised whole and never interleave inside the core.

  * several threads training one session give the weights of the same steps run serially;
  * an eval_step or infer running beside train_steps changes no trained weight;
  * close() and compile() from another thread wait for a running call: a stress run with
    closes and recompiles at random moments never crashes (it runs in a subprocess so a
    segmentation fault is an exit status, not a dead test runner) and every failure it
    sees is the documented RuntimeError of a closed or inference-only session.
tools/run_sanitizers.sh runs this file under ASan + UBSan too.
"""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np

import microtrain
from microtrain import layers

FEATURES, CLASSES, BATCH = 12, 4, 8


def model():
    return microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(CLASSES),
                                  layers.Softmax()], input_shape=(FEATURES,), seed=3)


def batch(seed=0, rows=BATCH):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, FEATURES)).astype(np.float32)
    y = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, rows)]
    return x, y


def session():
    s = microtrain.TrainSession(model())
    s.compile("sgd", "cce", batch_size=BATCH)
    return s


def run_threads(count, target):
    errors = []

    def guarded(index):
        try:
            target(index)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_threads_training_one_session_equal_the_same_steps_run_serially():
    x, y = batch()  # one batch: the serial order of the steps does not matter
    shared, serial = session(), session()
    steps = 50
    run_threads(4, lambda _: [shared.train_step(x, y) for _ in range(steps)])
    for _ in range(4 * steps):
        serial.train_step(x, y)
    assert shared.get_counters()["step"] == 4 * steps
    for a, b in zip(shared.get_weights(), serial.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_evaluation_and_inference_beside_training_change_no_weight():
    x, y = batch(1)
    other_x, other_y = batch(2)
    shared, serial = session(), session()
    steps = 200
    stop = threading.Event()

    def work(index):
        if index == 0:
            for _ in range(steps):
                shared.train_step(x, y)
            stop.set()
        else:
            while not stop.is_set():
                shared.eval_step(other_x, other_y)
                shared.infer(other_x)
                shared.get_weights()

    run_threads(3, work)
    for _ in range(steps):
        serial.train_step(x, y)
    for a, b in zip(shared.get_weights(), serial.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_close_and_compile_wait_for_a_running_call():
    """A step blocked inside the core (here: its backend call held on an event) keeps the
    session: close() and compile() from other threads run only after it returns."""
    s = session()
    x, y = batch()
    entered, release = threading.Event(), threading.Event()
    backend = s._backend
    real_step = backend.train_step

    def held_step(n):
        entered.set()
        release.wait(10)
        return real_step(n)

    backend.train_step = held_step
    fast = s._fast  # the lean path for exact float32 arrays calls the C steps itself
    if fast is not None:
        def held(real):
            def held_fast(*arguments):  # (handle, n, loss) or, on rows in place, (handle, n, rows, loss)
                entered.set()
                release.wait(10)
                return real(*arguments)
            return held_fast

        fast.train = tuple(held(real) for real in fast.train)
    results = {}
    trainer = threading.Thread(target=lambda: results.setdefault("loss", s.train_step(x, y)))
    trainer.start()
    assert entered.wait(10)
    def recompile():
        try:
            s.compile("adam", "cce", batch_size=4)
            results["recompile"] = "compiled"
        except RuntimeError as error:  # the closer got the lock first: refused, not corrupt
            results["recompile"] = str(error)

    recompiler = threading.Thread(target=recompile)
    closer = threading.Thread(target=s.close)
    recompiler.start()
    closer.start()
    recompiler.join(0.3)
    closer.join(0.3)
    assert recompiler.is_alive() and closer.is_alive() and not s.closed  # both wait
    release.set()
    for thread in (trainer, recompiler, closer):
        thread.join(10)
    assert np.isfinite(results["loss"]["loss"][0])  # the step finished on its own arena
    assert results["recompile"] in ("compiled", "this TrainSession is closed")
    assert s.closed


STRESS = textwrap.dedent("""
    import random, sys, threading
    import numpy as np
    import microtrain
    from microtrain import layers

    model = microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(4),
                                   layers.Softmax()], input_shape=(12,), seed=3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 12)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
    unexpected, seen = [], {"closed": 0, "ok": 0}
    lock = threading.Lock()

    def worker(s, seed):
        pick = random.Random(seed)
        for _ in range(300):
            try:
                call = pick.randrange(6)
                if call == 0:
                    s.train_step(x, y)
                elif call == 1:
                    s.eval_step(x[:3], y[:3])
                elif call == 2:
                    s.infer(x)
                elif call == 3:
                    s.get_weights()
                elif call == 4 and pick.random() < 0.1:
                    s.compile("adam", "cce", batch_size=pick.choice([8, 16]))
                else:
                    s.save_checkpoint(sys.argv[1] + "/ck%d" % seed)
                with lock:
                    seen["ok"] += 1
            except RuntimeError as error:
                text = str(error)
                if "closed" in text:
                    with lock:
                        seen["closed"] += 1
                    return
                if "call compile() before" not in text:
                    unexpected.append(repr(error))
            except Exception as error:
                unexpected.append(repr(error))

    for round_ in range(8):
        s = microtrain.TrainSession(model)
        s.compile("sgd", "cce", batch_size=8)
        threads = [threading.Thread(target=worker, args=(s, 10 * round_ + k)) for k in range(4)]
        for t in threads:
            t.start()
        threading.Event().wait(random.Random(round_).uniform(0.0, 0.2))
        s.close()
        for t in threads:
            t.join()
    assert not unexpected, unexpected[:5]
    print("stress ok", seen["ok"], "calls,", seen["closed"], "stopped by close")
""")


def test_stress_with_closes_and_recompiles_never_crashes(tmp_path):
    environment = dict(os.environ)
    result = subprocess.run([sys.executable, "-c", STRESS, str(tmp_path)], capture_output=True,
                            text=True, timeout=600, env=environment)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-3000:])
    assert "stress ok" in result.stdout
