"""1000 steps of the native backend leave gc.mem_free() exactly where it was.

    backend_steps_allocate_nothing.py MODEL.mtm

Each step writes a batch of inputs and targets (array('f'), copied into the arena by
write_rows) and calls train_step / accumulate / eval_step with an array('f') that receives
the loss. The collector is off while counting, so any allocation would show. Then the same
steps returning the loss as a float: on a port with boxed floats (every port with double
floats) each returned float is a heap object, which is what the `out` argument avoids.
Prints "steps allocate 0 bytes" and "returned floats allocate N bytes per step".
"""

import gc
import sys
from array import array

from microtrain import config, losses, optimizers
from microtrain.backend import loader

with open(sys.argv[1], "rb") as handle:
    image = handle.read()
b = loader.load()
import _microtrain
print("native backend", isinstance(b, _microtrain.Backend))
cfg = config.make_config(optimizers.Adam(learning_rate=0.01), losses.get("cce"), 4)
plan = b.plan(image, cfg)
arena = bytearray(plan["total_bytes"] + 15)
b.open(plan, arena=arena)
x = array("f", [0.25 * (i % 7) for i in range(4 * 8)])
y = array("f", [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
out = array("f", [0.0])
STEPS = 1000


def measure(step, with_out):
    gc.collect()
    gc.disable()
    before = gc.mem_free()
    i = 0
    while i < STEPS:
        b.write_rows(0, 0, 0, x)
        b.write_rows(1, 0, 0, y)
        if with_out:
            step(4, out)
        else:
            step(4)
        i += 1
    after = gc.mem_free()
    gc.enable()
    return before - after


b.write_rows(0, 0, 0, x)
b.write_rows(1, 0, 0, y)
b.train_step(4, out)  # a first call may bind what MicroPython caches on first use
first = out[0]
print("steps allocate %d bytes" % measure(b.train_step, True))
print("loss after %d steps %.6f (first %.6f)" % (STEPS + 1, out[0], first))
print("eval steps allocate %d bytes" % measure(b.eval_step, True))
returned = measure(b.train_step, False)
print("returned floats allocate %d bytes per step" % (returned // STEPS))
b.close()

cfg = config.make_config(optimizers.SGD(learning_rate=0.01), losses.get("cce"), 4,
                         accumulate_gradients=True)
b.open(b.plan(image, cfg))
b.zero_grad()
print("accumulate steps allocate %d bytes" % measure(b.accumulate, True))
b.optimizer_step()
print("counters", b.counters())
