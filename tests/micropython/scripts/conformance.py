"""Every backend method, through the backend and through Session, printed bit for bit.

    conformance.py MODEL.mtm OUTDIR

Runs unchanged on CPython (ctypes backend) and MicroPython (native `_microtrain`): the two
outputs must be the same lines. MODEL is an 8 -> 4 relu -> 3 softmax image; OUTDIR a
writable directory (checkpoints and an exported image go there). Floats print as the hex
of their float32 bits, so equal lines mean equal bits.
"""

import binascii
import sys
from array import array

from microtrain import backend, config, lite, losses, optimizers, schedules
from microtrain.backend import loader
from microtrain.data import DataLoader
from microtrain.errors import MicrotrainError

model, out, deep = sys.argv[1], sys.argv[2], sys.argv[3]


def flat(values, into):
    """Every number of ``values`` (numbers, sequences of them, numpy arrays) into ``into``."""
    if hasattr(values, "reshape"):
        values = values.reshape(-1).tolist()
    if isinstance(values, (int, float)):
        into.append(values)
    else:
        for value in values:
            flat(value, into)
    return into


def bits(values):
    return binascii.hexlify(bytes(array("f", flat(values, [])))).decode()


def text(value):
    """One canonical line: dict keys sorted, floats as float32 bits, sequences as lists."""
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (k, text(value[k])) for k in sorted(value)) + "}"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "f" + bits([value])
    if isinstance(value, (bytes, bytearray)):  # small files: all of it
        return binascii.hexlify(value).decode()
    return "[" + ", ".join(text(v) for v in value) + "]"


def show(name, value):
    print(name, text(value))


def file_crc(path):
    with open(path, "rb") as handle:
        return text(handle.read())


with open(model, "rb") as handle:
    image = handle.read()
rows = [array("f", [((i * 8 + j) % 11) / 10.0 for j in range(8)]) for i in range(6)]
targets = [array("f", [1.0 if k == i % 3 else 0.0 for k in range(3)]) for i in range(6)]
flat_x = array("f")
for row in rows[:4]:
    flat_x.extend(row)
flat_y = array("f")
for row in targets[:4]:
    flat_y.extend(row)

# ---- the backend itself
b = loader.load()
show("describe", b.describe(image))
with open(deep, "rb") as handle:  # 41 tensors and 20 ops: past the native backend's chunks of 16
    show("describe deep", b.describe(handle.read()))
configs = [
    ("adam", config.make_config(optimizers.Adam(learning_rate=0.01), losses.get("cce"), 4)),
    ("sgd last", config.make_config(optimizers.SGD(learning_rate=0.05, momentum=0.9),
                                    losses.get("mse"), 3, num_trainable_ops=2)),
    ("adamw mask", config.make_config(optimizers.AdamW(learning_rate=0.01, weight_decay=0.1),
                                      losses.get("cce"), 4, trainable_op_mask=[1, 0, 0])),
    ("accumulate", config.make_config(optimizers.SGD(learning_rate=0.05), losses.get("cce"),
                                      4, accumulate_gradients=True)),
    ("guard", config.make_config(optimizers.Adam(learning_rate=0.01), losses.get("cce"), 4,
                                 guard_gradients=True)),
    ("bias", config.make_config(optimizers.SGD(learning_rate=0.05), losses.get("cce"), 4,
                                biases_only=1)),
]
for name, cfg in configs:
    plan = b.plan(image, cfg)
    show("plan " + name, dict((field, plan[field]) for field in backend.PLAN_FIELDS))

# An op the core does not know: every backend's error names it the same way.
bad = bytearray(image)
ops_offset = bad[36] | bad[37] << 8 | bad[38] << 16 | bad[39] << 24
bad[ops_offset + 32] = 99  # op 1's type
size = bad[8] | bad[9] << 8 | bad[10] << 16 | bad[11] << 24
crc = backend.crc32(memoryview(bad)[16:size])
for shift in range(4):
    bad[12 + shift] = (crc >> (8 * shift)) & 0xFF
for name, call in (("describe", lambda: b.describe(bytes(bad))),
                   ("plan", lambda: b.plan(bytes(bad), configs[0][1])),
                   ("open", lambda: b.open(b.plan(bytes(bad), configs[0][1])))):
    try:
        call()
        print("bad op", name, "accepted")
    except MicrotrainError as error:
        show("bad op " + name, [error.status, error.function, error.op_index, error.op_type,
                                str(error)])

cfg = configs[1][1]
b.open(b.plan(bytearray(image), cfg))  # a writable image: frozen weights change in it
show("trained", b.trained())
b.write_rows(0, 0, 0, flat_x[:24])
b.write_rows(1, 0, 0, flat_y[:9])
show("backend train", b.train_step(3))
out_loss = array("f", [0.0])
show("backend train into out", [b.train_step(3, out_loss), out_loss[0]])
show("backend eval into out", [b.eval_step(3, out_loss), out_loss[0]])
b.infer(2)
show("backend outputs", bits(b.read_rows(0, 2)))
frozen = b.read_param(0)
frozen[0] = 0.75
b.write_param(0, frozen)
show("backend param 0", bits(b.read_param(0)))
show("backend train", b.train_step(3))
show("backend weights", b.weights())
show("backend crc", b.weights_crc32())
b.set_learning_rate(0.125)
show("backend rates", [b.get_learning_rate(), b.base_learning_rate()])
b.set_epoch(7)
show("backend counters", list(b.counters()))
pieces = []
b.export_image(lambda chunk: pieces.append(bytes(chunk)))
show("backend export", b"".join(pieces))
props = [("name", 3, "conformance"), ("count", 1, -12345678901), ("ratio", 2, 0.1)]
size = b.checkpoint_bytes(True, props)
pieces = []
b.checkpoint_save(True, props, lambda chunk: pieces.append(bytes(chunk)))
saved = b"".join(pieces)
show("backend checkpoint", [size, saved])
show("backend train", b.train_step(3))
loaded = b.checkpoint_load(len(saved), lambda offset, count: saved[offset:offset + count])
show("backend loaded", [list(p) for p in loaded])
show("backend crc after load", b.weights_crc32())


show("backend train", b.train_step(3))
reads = {"pass 1 done": False, "pass 2 data": 0}


def failing_read(offset, count):
    """Fails on the second data read after the core has checked the whole file (its
    trailer, the last bytes, is read last): in the pass that applies the checkpoint in
    place, one tensor already overwritten. The backend must put the state back."""
    if offset + count == len(saved):
        reads["pass 1 done"] = True
    elif reads["pass 1 done"] and count > 8:
        reads["pass 2 data"] += 1
        if reads["pass 2 data"] == 2:
            raise OSError(5, "storage gone")
    return saved[offset:offset + count]


before = [b.weights_crc32(), b.get_learning_rate(), list(b.counters())]
try:
    b.checkpoint_load(len(saved), failing_read)
except OSError as error:
    print("failing read raised", error.args[0], "on data read", reads["pass 2 data"])
show("backend state kept by a failed load",
     [before == [b.weights_crc32(), b.get_learning_rate(), list(b.counters())], before])
b.close()
b.close()

# ---- Session over the platform's backend
sess = lite.Session(image)
show("image weights", [bits(w) for w in sess.get_weights()])
sess.compile(optimizers.Adam(learning_rate=0.01), "cce", metrics=["categorical_accuracy"],
             batch_size=4, trainable=[1, 2])
show("trained tensors", sess.trained_tensors())
for step in range(3):
    result = sess.train_step(rows[:4], targets[:4])
    show("train", [result["loss"], result["metrics"]])
result = sess.train_step(rows[4:6], targets[4:6])  # a partial batch
show("partial", [result["loss"], result["metrics"]])
show("eval", sess.eval_step(rows[:3], targets[:3])["loss"])
show("infer", bits(sess.infer(rows[:2])))
show("crc", sess.weights_crc32())
weights = sess.get_weights()
for position, index, delta in ((0, 0, 0.5), (3, 1, -0.25)):  # a frozen weight, a trained one
    weight = weights[position]
    weight = weight.reshape(-1) if hasattr(weight, "reshape") else weight  # numpy: a view
    weight[index] += delta
sess.set_weights(weights)
show("set weights", [bits(w) for w in sess.get_weights()])
show("train after set", sess.train_step(rows[:4], targets[:4])["loss"])
sess.set_learning_rate(0.02)
show("rate", sess.get_learning_rate())
sess.add_property("note", "hi")
sess.add_property("n", 3)
sess.add_property("f", 0.5)
sess.save_checkpoint(out + "/session.mtc")
show("checkpoint", [sess.checkpoint_bytes(), file_crc(out + "/session.mtc")])
sess.export_model_for_inference(out + "/exported.mtm")
show("exported", file_crc(out + "/exported.mtm"))
saved_crc = sess.weights_crc32()
sess.train_step(rows[:4], targets[:4])
sess.load_checkpoint(out + "/session.mtc")
show("loaded", [sess.weights_crc32() == saved_crc, sess.properties, sess.get_counters()])
scheduler = schedules.StepLRScheduler(step_size=3, gamma=0.5)
loader = DataLoader(rows, targets, batch_size=4, shuffle=True, seed=3)
history = sess.train(loader, epochs=3, verbose=0, scheduler=scheduler)
show("history", [history.history["loss"], history.history["categorical_accuracy"]])
show("after train", [sess.weights_crc32(), sess.get_learning_rate(), sess.get_counters()])
nan_rows = [array("f", row) for row in rows[:4]]
nan_rows[1][2] = float("nan")
try:
    sess.train_step(nan_rows, targets[:4])
except MicrotrainError as error:
    print("numeric error", error.status, sess.numeric_errors())
sess.compile(optimizers.SGD(learning_rate=0.1), "cce", batch_size=4,
             accumulate_gradients=True)
sess.train_step(rows[:2], targets[:2], update=False)
sess.train_step(rows[2:4], targets[2:4], update=False)
sess.optimizer_step()
show("accumulated", sess.weights_crc32())
sess.close()

sparse = lite.Session(image)
sparse.compile(optimizers.SGD(learning_rate=0.1), "scce", metrics=["sparse_categorical_accuracy"],
               batch_size=4)
result = sparse.train_step(rows[:4], [0, 1, 2, 1])
show("sparse", [result["loss"], result["metrics"], sparse.weights_crc32()])
sparse.close()

partial = lite.Session(image)  # a sparse update: the hidden Dense's first 2 units, a bias
partial.compile(optimizers.Adam(learning_rate=0.01), "cce", batch_size=4,
                trainable={0: 2, 1: "bias"})
for step in range(3):
    partial.train_step(rows[:4], targets[:4])
plan = partial.memory_plan()
show("sparse update", [partial.weights_crc32(), plan["total_bytes"], plan["optimizer_bytes"],
                       [row["trains"] for row in plan["layers"]]])
partial.close()
print("done")
