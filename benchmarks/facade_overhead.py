"""What the Python facade adds to a train step: TrainSession.train_step on a trivial model
(Dense 4 -> 2 + Softmax, batch 1, SGD) minus the raw C call on rows already in the arena.

    python benchmarks/facade_overhead.py [--steps 20000] [--repeats 7]

Both loops run in this process, interleaved, --repeats times; the figures are the medians
in microseconds per step. The facade's share is what train_step does besides the C step:
the session lock, the row checks, copying the rows into the arena, the ctypes call and the
result dictionary. Not run by the tests (timings are the benchmark's business).
"""

import argparse
import ctypes
import statistics
import sys
import time

import numpy as np

import microtrain
from microtrain import layers, optimizers
from microtrain.backend import KIND_INPUT, _native


def measure(steps, repeats):
    model = microtrain.Sequential([layers.Dense(2), layers.Softmax()], input_shape=(4,), seed=0)
    session = microtrain.TrainSession(model)
    session.compile(optimizers.SGD(learning_rate=0.01), "categorical_crossentropy", batch_size=1)
    x = np.ones((1, 4), np.float32)
    y = np.array([[1.0, 0.0]], np.float32)
    session.train_step(x, y)  # the targets now sit in the arena; train_step reads x in place,
    session._backend.write_rows(KIND_INPUT, 0, 0, x)  # so the raw loop gets its own copy
    handle, loss = session._backend._session, ctypes.c_float()
    step, ref = _native.mt_session_train_step, ctypes.byref(loss)

    def facade():
        start = time.perf_counter()
        for _ in range(steps):
            session.train_step(x, y)
        return (time.perf_counter() - start) / steps * 1e6

    def raw():
        start = time.perf_counter()
        for _ in range(steps):
            step(handle, 1, ref)
        return (time.perf_counter() - start) / steps * 1e6

    facade_us, raw_us = [], []
    for _ in range(repeats):
        facade_us.append(facade())
        raw_us.append(raw())
    session.close()
    return statistics.median(facade_us), statistics.median(raw_us)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    facade_us, raw_us = measure(args.steps, args.repeats)
    print("train_step through the facade: %.2f us; raw mt_session_train_step through ctypes: "
          "%.2f us; facade overhead: %.2f us per step" % (facade_us, raw_us, facade_us - raw_us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
