"""The buffers a script lends the native backend, changed behind its back (issue 45, 13-14).

    backend_lent_buffers.py MODEL.mtm

A bytearray that grows moves to a new heap block and frees the old one. Each case prints
"case <name>: <status> <function>: <message>" (or "case <name>: no error"), each fact
"fact <name>: <value>"; the script ends with "survived".
"""

import sys
from array import array

import microtrain
from microtrain import config, losses, optimizers
from microtrain.backend import loader

with open(sys.argv[1], "rb") as handle:
    image = handle.read()
# the first Dense frozen: its weights are read from the image at every step
cfg = config.make_config(optimizers.SGD(learning_rate=0.1), losses.get("cce"), 4,
                         num_trainable_ops=2)
total = loader.load().plan(image, cfg)["total_bytes"]
x = array("f", [0.25 * (i % 7) for i in range(32)])
y = array("f", [0.0, 1.0, 0.0] * 4)


def case(name, call):
    try:
        call()
    except microtrain.MicrotrainError as error:
        print("case %s: %d %s: %s" % (name, error.status, error.function, error.message))
        return
    print("case %s: no error" % name)


def fact(name, value):
    print("fact %s: %s" % (name, value))


def opened(source, arena=None):
    b = loader.load()
    b.open(b.plan(source, cfg), arena)
    b.write_rows(0, 0, 0, x)
    b.write_rows(1, 0, 0, y)
    return b


def losses_of(b, steps=3):
    return [b.train_step(4) for _ in range(steps)]


reference = losses_of(opened(image))

# The image: a writable buffer is the plan's own copy from plan() on.
grown = bytearray(image)
b = opened(grown)
grown.extend(bytes(4096))  # moves it, and frees the old block...
clobber = [bytearray(b"\xa5" * len(image)) for _ in range(16)]  # ...which others then reuse
fact("an image bytearray grown after open() trains as before", losses_of(b) == reference)
mutated = bytearray(image)
b = opened(mutated)
for i in range(16, len(mutated)):
    mutated[i] ^= 0x5A
fact("an image bytearray changed after open() trains as before", losses_of(b) == reference)

# The arena: the caller's, checked on every call.
arena = bytearray(total + 15)
b = opened(image, arena)
b.train_step(4)
arena.extend(bytes(1 << 16))
case("a step after the arena grew", lambda: b.train_step(4))
case("the call after that", lambda: b.train_step(4))
arena = bytearray(total + 15)
b = opened(image, arena)
b.infer(4)
arena.extend(bytes(1 << 16))
case("read_rows after the arena grew", lambda: b.read_rows(0, 4))
arena = bytearray(total + 64)
b = opened(image, arena)
arena[len(arena) - 8:] = b""  # shrinks it
case("write_rows after the arena shrank", lambda: b.write_rows(0, 0, 0, x))
arena = bytearray(total + 15)
b = opened(image, arena)
fact("an arena left alone trains as before", losses_of(b) == reference)

# Python code that runs inside a call and grows the arena: the core stops before it touches
# the session again.
def growing(arena_list):
    def grow(*ignored):
        arena_list[0].extend(bytes(1 << 16))
        return b""
    return grow


def generator_that_grows(arena):
    for i in range(16):
        yield 0.5
    arena.extend(bytes(1 << 16))
    for i in range(16):
        yield 0.5


holder = [bytearray(total + 15)]
b = opened(image, holder[0])
case("a checkpoint write that grows the arena",
     lambda: b.checkpoint_save(True, [], growing(holder)))
holder = [bytearray(total + 15)]
b = opened(image, holder[0])
case("an export write that grows the arena", lambda: b.export_image(growing(holder)))
holder = [bytearray(total + 15)]
b = opened(image, holder[0])
size = b.checkpoint_bytes(True, [])
case("a checkpoint read that grows the arena", lambda: b.checkpoint_load(size, growing(holder)))
arena = bytearray(total + 15)
b = opened(image, arena)
case("rows from a generator that grows the arena",
     lambda: b.write_rows(0, 0, 0, generator_that_grows(arena)))

# An arena over the image is refused before open() writes anything.
both = bytearray(len(image) + total + 64)
both[:len(image)] = image
before = bytes(both)
def open_over_the_image():
    b = loader.load()
    b.open(b.plan(memoryview(both)[:len(image)], cfg), memoryview(both)[16:])


case("an arena over the image", open_over_the_image)
fact("image bytes intact after the refused open", bytes(both) == before)
image_view = memoryview(both)[:len(image)]
b = opened(image_view, memoryview(both)[len(image):])
fact("an arena beside the image trains as before", losses_of(b) == reference)

# Values past 32 bits are printed whole, never cut.
b = opened(image)
case("first_row 2**40", lambda: b.write_rows(0, 0, 1 << 40, x))
case("kind 2**40", lambda: b.write_rows(1 << 40, 0, 0, x))
case("position 2**32", lambda: b.write_rows(0, 1 << 32, 0, x))
case("n 2**40", lambda: b.train_step(1 << 40))
case("n 2**64 + 4", lambda: b.train_step((1 << 64) + 4))
case("infer n -2**40", lambda: b.infer(-(1 << 40)))
case("read_rows n 2**40", lambda: b.read_rows(0, 1 << 40))
case("weight 2**32", lambda: b.read_param(1 << 32))
case("epoch 2**70", lambda: b.set_epoch(1 << 70))
case("checkpoint size -1", lambda: b.checkpoint_load(-1, lambda offset, count: b""))
case("n a float", lambda: b.train_step(4.0))
s = loader.load()
s.open(s.plan(image, config.make_config(optimizers.SGD(learning_rate=0.1), losses.get("scce"), 4)))
case("label 2**64 + 1", lambda: s.write_rows(1, 0, 0, [0, (1 << 64) + 1, 0, 0]))
fact("still trains after all that", losses_of(opened(image)) == reference)
print("survived")
