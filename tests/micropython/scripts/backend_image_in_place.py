"""open() reads a 4-aligned read-only image in place and copies an unaligned one once.

    backend_image_in_place.py /data/MODEL.mtm

The ROMFS file's memoryview is the image where it lies (in PSRAM under QEMU, where a real
board keeps ROMFS in flash), so open() with a caller's arena allocates nothing for it; the
same bytes at an odd address are copied. A frozen weight of the in-place image is then
changed by write_param, which moves the session onto a copy (copy on write).
"""

import gc
import sys
from array import array

from microtrain import config, losses, optimizers
from microtrain.backend import loader

handle = open(sys.argv[1], "rb")
flash = memoryview(handle)  # VfsRom: the file's bytes in place
print("image bytes", len(flash))
cfg = config.make_config(optimizers.SGD(learning_rate=0.1), losses.get("cce"), 4,
                         num_trainable_ops=2)
b = loader.load()
arena = bytearray(b.plan(flash, cfg)["total_bytes"] + 15)


def open_cost(image):
    """Bytes of heap that plan() and then open() allocate."""
    b.close()
    gc.collect()
    gc.disable()
    before = gc.mem_free()
    plan = b.plan(image, cfg)
    planned = before - gc.mem_free()
    before = gc.mem_free()
    b.open(plan, arena=arena)
    opened = before - gc.mem_free()
    gc.enable()
    return planned, opened


planned, opened = open_cost(flash)
print("in place: open allocates %d bytes" % opened)
print("in place: plan allocates less than the image: %s" % (planned < len(flash)))
odd = memoryview(bytearray(len(flash) + 1))[1:]
odd[:] = flash
planned, opened = open_cost(odd)
print("unaligned: plan allocates at least the image: %s" % (planned >= len(flash)))
print("unaligned: open allocates %d bytes" % opened)
open_cost(flash)
before = b.weights_crc32()
weight = b.read_param(0)  # the first Dense: frozen, in the image
weight[0] += 1.0
b.write_param(0, weight)
print("frozen weight changed:", b.read_param(0)[0] == weight[0], b.weights_crc32() != before)
print("the file is unchanged:", memoryview(handle)[0:4] == flash[0:4] and
      bytes(flash) == open(sys.argv[1], "rb").read())
x = array("f", [0.5] * 32)
b.write_rows(0, 0, 0, x)
b.write_rows(1, 0, 0, array("f", [1.0, 0.0, 0.0] * 4))
print("trains on the copy: loss %.6f" % b.train_step(4))
