"""``lite.Session``: the name MicroPython scripts use for ``microtrain.session.Session``.

There is one session class, under three names: ``Session`` (every platform),
``TrainSession`` (CPython, with numpy views of the arena) and ``lite.Session``, this
module's, which keeps the short import of the MicroPython examples:

    from microtrain import lite, optimizers
    from microtrain.data import DataLoader

    with lite.Session(open("digits.mtm", "rb").read()) as sess:
        sess.compile(optimizers.Adam(learning_rate=0.002), "categorical_crossentropy",
                     metrics=["categorical_accuracy"], batch_size=16)
        sess.train(DataLoader(x_rows, y_rows, batch_size=16, shuffle=True, seed=0), epochs=2)
        print("weights crc32 0x%08x" % sess.weights_crc32())
"""

from .session import Session

__all__ = ["Session"]
