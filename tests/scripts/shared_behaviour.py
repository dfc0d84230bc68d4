"""The session's behaviour, run unchanged on every backend the machine has.

    python tests/scripts/shared_behaviour.py MODEL.mtm WORKDIR          (CPython: ctypes)
    node tools/micropython/run.mjs ... tests/scripts/shared_behaviour.py MODEL WORKDIR
                                                                       (MicroPython: wasm)

It uses only what MicroPython has (lists and array('f') rows, no numpy), checks each
behaviour with asserts and prints a transcript whose numbers are float32 bit patterns and
CRCs, so tests/test_shared_behaviour.py can require the transcripts of all backends to be
identical line for line. MODEL: a 3-feature, 2-class MLP ending in Softmax.
"""

import struct
import sys
from array import array

import microtrain
from microtrain import optimizers, schedules
from microtrain.data import DataLoader
from microtrain.errors import MicrotrainError
from microtrain.session import Session

MODEL, WORK = sys.argv[1], sys.argv[2]
FEATURES, CLASSES = 3, 2


def bits(value):
    return "%08x" % struct.unpack("<I", struct.pack("<f", value))[0]


def say(*parts):
    print(" ".join(str(p) for p in parts))


def rows(count, seed):
    """``count`` deterministic rows and one-hot targets (a small LCG: no numpy here)."""
    state = seed
    xs, ys = [], []
    for _ in range(count):
        row = array("f")
        for _ in range(FEATURES):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            row.append((state % 2000) / 1000.0 - 1.0)
        xs.append(row)
        label = 1 if row[0] + 0.5 * row[1] > 0 else 0
        ys.append(array("f", [1.0 - label, float(label)]))
    return xs, ys


def expect_error(kind, call, text=""):
    try:
        call()
    except kind as error:
        assert text in str(error), (text, str(error))
        return error
    raise AssertionError("no %s from %r" % (kind.__name__, call))


def compiled(**options):
    session = Session(MODEL)
    session.compile(optimizers.Adam(learning_rate=0.01), "cce",
                    metrics=["categorical_accuracy"], batch_size=8, **options)
    return session


x, y = rows(30, 1)
image = open(MODEL, "rb").read()

# 1. a model before compile: weights from the image, inference without compile
fresh = Session(image)
say("weights before compile", "%08x" % fresh.weights_crc32(), len(fresh.get_weights()))
outputs, = fresh.infer(x)  # 30 rows through an inference-only session of batch 16
assert len(outputs) == 30 and fresh.batch_size == 16
say("infer without compile", bits(outputs[29][1]))
expect_error(RuntimeError, lambda: fresh.train_step(x[:2], y[:2]), "inference only")

# 2. train() with every option the README shows
seen = []
session = compiled()
say("arena", session.memory_plan()["total_bytes"])
session.add_property("dataset", "lcg")
session.add_property("big", 2 ** 40 + 3)
session.add_property("ratio", 0.25)
history = session.train(DataLoader(x, y, batch_size=8, shuffle=True, seed=3), epochs=2,
                        validation_split=0.25, checkpoint_path=WORK + "/run.ck",
                        scheduler=schedules.LinearLRScheduler(2, 20), verbose=0,
                        callbacks=[lambda epoch, logs: seen.append(epoch)])
assert seen == [1, 2]
for name in ("loss", "categorical_accuracy", "val_loss", "val_categorical_accuracy",
             "learning_rate"):
    say(name, " ".join(bits(v) for v in history.history[name]))
counters = session.get_counters()
say("counters", counters["step"], counters["epoch"], "crc %08x" % session.weights_crc32())

# 3. the checkpoint of every epoch resumes exactly, properties included
resumed = compiled()
resumed.load_checkpoint(WORK + "/run.ck")
assert resumed.weights_crc32() == session.weights_crc32()
assert resumed.get_counters() == counters
assert resumed.properties == {"dataset": "lcg", "big": 2 ** 40 + 3, "ratio": 0.25}
straight, again = compiled(), compiled()
straight.register_lr_scheduler(schedules.CosineLRScheduler(1, 12))
again.register_lr_scheduler(schedules.CosineLRScheduler(1, 12))
for step in range(6):
    straight.train_step(x[8 * (step % 3):8 * (step % 3) + 8], y[8 * (step % 3):8 * (step % 3) + 8])
    straight.scheduler_step()
    if step < 3:
        again.train_step(x[8 * step:8 * step + 8], y[8 * step:8 * step + 8])
        again.scheduler_step()
again.save_checkpoint(WORK + "/half.ck")
later = compiled()
later.load_checkpoint(WORK + "/half.ck")
later.register_lr_scheduler(schedules.CosineLRScheduler(1, 12))  # a new one, built alike
for step in range(3, 6):
    later.train_step(x[8 * (step % 3):8 * (step % 3) + 8], y[8 * (step % 3):8 * (step % 3) + 8])
    later.scheduler_step()
assert later.weights_crc32() == straight.weights_crc32()
assert later.get_learning_rate() == straight.get_learning_rate()
say("resume with a schedule", "%08x" % later.weights_crc32(), bits(later.get_learning_rate()))

# 4. gradient accumulation: 2 x 4 rows accumulated = one step of 8
whole, parts = compiled(), compiled(accumulate_gradients=True)
whole.train_step(x[:8], y[:8])
parts.lazy_reset_grad()
parts.train_step(x[:4], y[:4], update=False)
parts.train_step(x[4:8], y[4:8], update=False)
parts.optimizer_step()
assert parts.weights_crc32() == whole.weights_crc32()
say("accumulate", "%08x" % parts.weights_crc32())

# 5. recompile keeps the weights; set_weights round-trips; export reloads
trained = session.weights_crc32()
session.compile(optimizers.SGD(learning_rate=0.1), "cce", batch_size=4)
assert session.weights_crc32() == trained and session.get_counters()["step"] == 0
weights = session.get_weights()
session.train_step(x[:4], y[:4])
session.set_weights(weights)
assert session.weights_crc32() == trained
session.export_model_for_inference(WORK + "/trained.mtm")
exported = Session(WORK + "/trained.mtm")
assert exported.weights_crc32() == trained
say("export", "%08x" % exported.weights_crc32(), bits(exported.predict(x)[7][0]))

# 6. bad input: a clear error, nothing changed
bad = expect_error(MicrotrainError, lambda: session.train_step([[float("nan")] * 3] * 2, y[:2]))
assert bad.status == -7 and session.weights_crc32() == trained
expect_error(ValueError, lambda: session.train_step(x[:2], [[1.0]] * 2), "row 0 has 1 values")
expect_error(ValueError, lambda: session.train_step(x[:5], y[:5]), "more than the batch size")
labels = Session(image)
labels.compile("sgd", "scce", batch_size=4)
expect_error(ValueError, lambda: labels.train_step(x[:2], [2 ** 32 + 1, 0]), "labels must lie")
expect_error(ValueError, lambda: labels.train_step(x[:2], [0.99, 0]), "integer labels")
say("loss of labels", bits(labels.train_step(x[:2], [1, 0])["loss"][0]))
expect_error(OSError, lambda: Session(WORK + "/missing.mtm"), "missing.mtm")
skipping = compiled()
history = skipping.train(DataLoader([[float("nan")] * 3] + x[1:16], y[:16], batch_size=8), epochs=1,
                         verbose=0, on_numeric_error="skip")
say("skip", history.history["numeric_errors"], skipping.numeric_errors())
session.close()
expect_error(RuntimeError, session.get_counters, "closed")
say("done")
