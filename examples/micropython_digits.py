"""Fine-tune the digits MLP from MicroPython through microtrain's pure modules.

The same lines run on a board whose firmware has the core as a native module
`_microtrain`, and on Node over the wasm core (what the tests do):

    node tools/micropython/run.mjs --data digits.mtm=/data/digits.mtm \
        --data digits_x.bin=/data/digits_x.bin --data digits_y.bin=/data/digits_y.bin \
        examples/micropython_digits.py [epochs]

Files: a model image written by microtrain.Sequential(...).save() on the host, and the
rows as raw little-endian float32 (onert_train's raw format): [N, 64] inputs and
[N, 10] one-hot targets. Prints one line per epoch and the weight CRC-32, which equals
the host's zlib.crc32 over TrainSession.get_weights() for the same run.
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


epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
x = read_rows("/data/digits_x.bin", 64)
y = read_rows("/data/digits_y.bin", 10)
with open("/data/digits.mtm", "rb") as handle:
    image = handle.read()

with lite.Session(image) as sess:
    sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                 metrics=["categorical_accuracy"], batch_size=16)
    print("arena bytes", sess.memory_plan()["total_bytes"])
    loader = DataLoader(x, y, batch_size=16, shuffle=True, seed=0)
    history = sess.train(loader, epochs=epochs, verbose=2)
    for loss in history.history["loss"]:
        print("epoch loss %r" % loss)
    print("steps", sess.get_counters()["step"])
    print("weights crc32 0x%08x" % sess.weights_crc32())
