"""Bad input through the native backend raises MicrotrainError; the interpreter goes on.

    backend_bad_input.py MODEL.mtm SPARSE_MODEL.mtm

Each case prints "case <name>: <status> <function>: <message>", then a normal step runs
and the script ends with "survived".
"""

import sys
from array import array

import microtrain
from microtrain import config, losses, optimizers
from microtrain.backend import loader

with open(sys.argv[1], "rb") as handle:
    image = handle.read()
cfg = config.make_config(optimizers.Adam(learning_rate=0.01), losses.get("cce"), 4)
plan = loader.load().plan(image, cfg)
total = plan["total_bytes"]


def case(name, call):
    try:
        call()
    except microtrain.MicrotrainError as error:
        print("case %s: %d %s: %s" % (name, error.status, error.function, error.message))
        return error
    print("case %s: no error" % name)


def opened(arena=None):
    b = loader.load()
    b.open(b.plan(image, cfg), arena)
    return b


b = loader.load()
case("step before open", lambda: b.train_step(4))
case("corrupt image", lambda: b.describe(image[:-1] + bytes([image[-1] ^ 0xFF])))
case("unknown config field", lambda: b.plan(image, dict(cfg, learning_rat=0.1)))
case("arena too small", lambda: opened(bytearray(100)))
aligned = bytearray(total + 32)
case("misaligned arena of exactly the plan", lambda: opened(memoryview(aligned)[1:1 + total]))
case("read-only arena", lambda: opened(bytes(total + 15)))
ok = opened(bytearray(total + 15))
print("arena of plan + 15 bytes opens")

b = opened()
x = array("f", [0.5] * 32)
y = array("f", [0.0, 1.0, 0.0] * 4)
case("too many input values", lambda: b.write_rows(0, 0, 0, array("f", [0.5] * 36)))
case("partial row", lambda: b.write_rows(0, 0, 0, array("f", [0.5] * 7)))
case("rows past the batch", lambda: b.write_rows(0, 0, 3, x))
case("no such input", lambda: b.write_rows(0, 1, 0, x))
case("weight of the wrong size", lambda: b.write_param(0, array("f", [0.0] * 3)))
b.write_rows(0, 0, 0, x)
b.write_rows(1, 0, 0, y)
case("n above the batch size", lambda: b.train_step(5))
case("n zero", lambda: b.train_step(0))
case("loss into a list", lambda: b.train_step(4, [0.0]))
nan = array("f", [0.5] * 32)
nan[5] = float("nan")
b.write_rows(0, 0, 0, nan)
error = case("NaN input", lambda: b.train_step(4))
print("NaN loss carried:", error.loss != error.loss)
print("numeric errors", b.numeric_errors())
b.write_rows(0, 0, 0, x)
print("still trains: loss %.6f" % b.train_step(4))

with open(sys.argv[2], "rb") as handle:
    sparse_image = handle.read()
scfg = config.make_config(optimizers.SGD(learning_rate=0.01), losses.get("scce"), 4)
s = loader.load()
s.open(s.plan(sparse_image, scfg))
s.write_rows(0, 0, 0, x)
s.write_rows(1, 0, 0, array("i", [0, 1, 7, 2]))
case("label out of range", lambda: s.train_step(4))
case("float label", lambda: s.write_rows(1, 0, 0, array("f", [0.0, 1.0, 2.0, 1.0])))
s.write_rows(1, 0, 0, array("i", [0, 1, 2, 1]))
print("labels fixed: loss %.6f" % s.train_step(4))

# The same through Session: its own checks speak first, the core's errors pass through.
from microtrain import lite
sess = lite.Session(image)
sess.compile("sgd", "cce", batch_size=4)
rows = [array("f", [0.5] * 8) for _ in range(4)]
targets = [array("f", [0.0, 1.0, 0.0]) for _ in range(4)]
rows[2][3] = float("nan")
case("Session NaN", lambda: sess.train_step(rows, targets))
rows[2][3] = 0.5
print("Session still trains: loss %.6f" % sess.train_step(rows, targets)["loss"][0])
try:
    sess.train_step([array("f", [0.5] * 7)], targets[:1])
except ValueError as error:
    print("Session short row: ValueError:", error)
sess.close()
print("survived")
