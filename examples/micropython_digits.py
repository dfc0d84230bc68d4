"""Fine-tune the digits MLP from MicroPython through microtrain's pure modules.

    micropython_digits.py [EPOCHS] [--data DIR] [--resume CHECKPOINT] [--save CHECKPOINT]

The same file runs unchanged on CPython (ctypes backend), on microtrain's MicroPython
firmware (native module `_microtrain`: QEMU Cortex-M boards or the unix port) and on
MicroPython's WebAssembly port over the wasm core:

    microtrain micropython --board mps2-an500 --data digits.mtm=/data/digits.mtm \
        --data digits_x.bin=/data/digits_x.bin --data digits_y.bin=/data/digits_y.bin \
        --out out=/out examples/micropython_digits.py 2 --save /out/digits.mtc
    node tools/micropython/run.mjs --data digits.mtm=/data/digits.mtm ... \
        examples/micropython_digits.py 2
    python examples/micropython_digits.py 2 --data DIR

Files in DIR (default /data): a model image written by microtrain.Sequential(...).save()
on the host, and the rows as raw little-endian float32 (onert_train's raw format):
[N, 64] inputs and [N, 10] one-hot targets. --resume loads a checkpoint before training
(its epoch counter picks the shuffle order), --save writes one after. Prints one line per
epoch, the per-epoch losses and the weight CRC-32, which equal the host's TrainSession
bit for bit for the same image, data, batch order and starting checkpoint.
"""

import sys
from array import array

from microtrain import lite, optimizers
from microtrain.data import DataLoader


def read_rows(path, width):
    """A list of array('f') rows from a raw float32 file."""
    with open(path, "rb") as handle:
        values = array("f", handle.read())
    return [values[start:start + width] for start in range(0, len(values), width)]


def options(argv):
    """(epochs, {option: value}) from EPOCHS and --name VALUE pairs."""
    epochs, named, rest = 2, {"--data": "/data", "--resume": None, "--save": None}, list(argv)
    while rest:
        word = rest.pop(0)
        if word in named and rest:
            named[word] = rest.pop(0)
        else:
            epochs = int(word)
    return epochs, named


epochs, named = options(sys.argv[1:])
folder = named["--data"]
x = read_rows(folder + "/digits_x.bin", 64)
y = read_rows(folder + "/digits_y.bin", 10)
with open(folder + "/digits.mtm", "rb") as handle:
    image = handle.read()

with lite.Session(image) as sess:
    sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                 metrics=["categorical_accuracy"], batch_size=16)
    print("arena bytes", sess.memory_plan()["total_bytes"])
    if named["--resume"]:
        sess.load_checkpoint(named["--resume"])
    loader = DataLoader(x, y, batch_size=16, shuffle=True, seed=0)
    history = sess.train(loader, epochs=epochs, verbose=2)
    for loss in history.history["loss"]:
        print("epoch loss %r" % loss)
    print("steps", sess.get_counters()["step"])
    print("weights crc32 0x%08x" % sess.weights_crc32())
    if named["--save"]:
        sess.save_checkpoint(named["--save"])
        print("checkpoint", named["--save"], sess.checkpoint_bytes(), "bytes")
