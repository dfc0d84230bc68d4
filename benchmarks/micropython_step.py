"""A train step from MicroPython, three ways, between marks (runs on the board).

    micropython_step.py STEPS        (/data/model.mtm, /data/x.bin, /data/y.bin: one batch)

benchmarks/micropython_cost.py runs this under QEMU with the insn_count plugin watching
machine.idle(): each call records the instruction count, so the differences below are the
exact cost of what lies between them (the first two calls measure a mark's own cost).

  1. backend.train_step(16, out) on rows written once: what boards/app/bench.c does in C;
  2. write_rows of the batch's inputs and targets, then train_step: a loop feeding rows;
  3. Session.train_step(rows, targets): the pure-Python checks and copies of the facade.
"""

import sys
from array import array

import machine

from microtrain import config, lite, losses, optimizers
from microtrain.backend import loader

steps = int(sys.argv[1])
with open("/data/model.mtm", "rb") as handle:
    image = handle.read()
with open("/data/x.bin", "rb") as handle:
    x = array("f", handle.read())
with open("/data/y.bin", "rb") as handle:
    y = array("f", handle.read())
cfg = config.make_config(optimizers.Adam(learning_rate=0.01),
                         losses.get("categorical_crossentropy"), 16)
b = loader.load()
b.open(b.plan(image, cfg))
b.write_rows(0, 0, 0, x)
b.write_rows(1, 0, 0, y)
out = array("f", [0.0])
b.train_step(16, out)  # first calls bind what MicroPython caches
mark = machine.idle
mark()
mark()

mark()
i = 0
while i < steps:
    b.train_step(16, out)
    i += 1
mark()
i = 0
while i < steps:
    b.write_rows(0, 0, 0, x)
    b.write_rows(1, 0, 0, y)
    b.train_step(16, out)
    i += 1
mark()
b.close()

sess = lite.Session(image)
sess.compile(optimizers.Adam(learning_rate=0.01), "categorical_crossentropy", batch_size=16)
rows = [x[64 * r:64 * r + 64] for r in range(16)]
targets = [y[10 * r:10 * r + 10] for r in range(16)]
sess.train_step(rows, targets)
mark()
i = 0
while i < steps:
    sess.train_step(rows, targets)
    i += 1
mark()
print("loss %.6f" % out[0])
