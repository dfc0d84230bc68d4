"""Soak: 10^6 training steps on the host with periodic checkpoint save + reload.

    python benchmarks/soak.py [--steps 1000000] [--checkpoint-every 10000]

Trains a tiny MLP (4 -> 8 relu -> 3 softmax, Adam, sparse categorical cross-entropy)
with batches of 1..8 rows (the row count varies step by step), through raw ``_native``
calls in a loop (rows copied into the arena with memmove, the loss written into a
fixed ctypes buffer), so the loop itself allocates nothing. Three runs with the same
seed:

  A  checkpoint save + reload every N steps: into the same session, and every third
     reload into a fresh TrainSession (new arena), checking the reloaded weights;
  B  the same again, independently;
  C  no checkpoint at all.

Checked: (a) the resident set size of run A (/proc/self/statm) after a warm-up of
the first 10% of the steps: start, end, max; growth above --rss-bound-kib fails;
(b) determinism: A, B and C end with the same weight CRC-32 (zlib, over every weight
tensor in get_weights() order) and the same SHA-256 of the float32 loss history; (c)
steps/s of each run. Prints a table; exits 1 on any failure.
"""

import argparse
import ctypes
import hashlib
import os
import sys
import tempfile
import time
import zlib

import numpy as np

import microtrain
from microtrain import layers, optimizers
from microtrain.backend import _native

FEATURES, CLASSES, MAX_ROWS = 4, 3, 8
POOL = 4096           # samples, reused cyclically
CHUNK = 1024          # losses hashed per chunk (a fixed buffer: no growth)


def model_bytes(seed):
    return microtrain.Sequential([layers.Dense(8, activation="relu"), layers.Dense(CLASSES),
                                  layers.Softmax()], input_shape=(FEATURES,), seed=seed).to_bytes()


def open_session(image):
    session = microtrain.TrainSession(image)
    session.compile(optimizers.Adam(0.005), "sparse_categorical_crossentropy",
                    batch_size=MAX_ROWS)
    return session


def weights_crc32(session):
    crc = 0
    for weight in session.get_weights():
        crc = zlib.crc32(np.ascontiguousarray(weight, dtype="<f4").tobytes(), crc)
    return crc


def rss_bytes():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Run:
    """One soak run; ``run()`` returns its results dict."""

    def __init__(self, image, data, steps, checkpoint_every, directory):
        self.image, self.steps = image, steps
        self.x, self.labels = data
        self.checkpoint_every = checkpoint_every
        self.path = os.path.join(directory, "soak.ck")
        self.losses = (ctypes.c_float * CHUNK)()
        base = ctypes.addressof(self.losses)
        self.loss_refs = [base + 4 * j for j in range(CHUNK)]
        self.reloads = self.fresh = 0
        self.rss = []
        self.bind(open_session(image))

    def bind(self, session):
        self.session = session
        self.handle = session._backend._session   # the raw mt_session * for the hot loop
        self.x_address = session.input_buffer().ctypes.data
        self.y_address = session.target_buffer().ctypes.data

    def reload(self):
        before = weights_crc32(self.session)
        self.session.save_checkpoint(self.path)
        self.reloads += 1
        if self.reloads % 3 == 0:        # into a fresh session with a new arena
            fresh = open_session(self.image)
            fresh.load_checkpoint(self.path)
            self.session.close()
            self.bind(fresh)
            self.fresh += 1
        else:
            self.session.load_checkpoint(self.path)
        if weights_crc32(self.session) != before:
            raise RuntimeError("reloaded weights differ from the saved ones")

    def run(self):
        # the same function as _native.mt_session_train_step, taking plain addresses
        train_step = ctypes.CDLL(_native.library_path()).mt_session_train_step
        train_step.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]
        train_step.restype = ctypes.c_int
        memmove = ctypes.memmove
        x_base, y_base = self.x.ctypes.data, self.labels.ctypes.data
        row_bytes, label_bytes = 4 * FEATURES, 4
        digest = hashlib.sha256()
        warmup = max(1, self.steps // 10)
        sample_every = max(1, self.steps // 200)
        start = time.perf_counter()
        cursor = 0
        for step in range(self.steps):
            rows = 1 + (step * 5 + step // 7) % MAX_ROWS   # 1..8, every count occurs
            if cursor + rows > POOL:
                cursor = 0
            memmove(self.x_address, x_base + cursor * row_bytes, rows * row_bytes)
            memmove(self.y_address, y_base + cursor * label_bytes, rows * label_bytes)
            cursor += rows
            status = train_step(self.handle, rows, self.loss_refs[step % CHUNK])
            if status:
                raise RuntimeError("step %d: %s" % (step, _native.status_text(status)))
            if step % CHUNK == CHUNK - 1:
                digest.update(bytes(self.losses))
            if self.checkpoint_every and step % self.checkpoint_every == self.checkpoint_every - 1:
                self.reload()
            if step >= warmup and step % sample_every == 0:
                self.rss.append(rss_bytes())
        elapsed = time.perf_counter() - start
        digest.update(bytes(self.losses)[:4 * (self.steps % CHUNK)])
        self.rss.append(rss_bytes())
        result = {"steps_per_s": self.steps / elapsed, "seconds": elapsed,
                  "crc32": weights_crc32(self.session), "loss_sha256": digest.hexdigest(),
                  "step_counter": self.session.get_counters()["step"],
                  "reloads": self.reloads, "fresh": self.fresh,
                  "last_loss": float(np.mean(np.ctypeslib.as_array(self.losses))),
                  "rss_start": self.rss[0], "rss_end": self.rss[-1], "rss_max": max(self.rss)}
        self.session.close()
        return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000000)
    parser.add_argument("--checkpoint-every", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rss-bound-kib", type=int, default=1024,
                        help="largest RSS growth after warm-up allowed (KiB)")
    args = parser.parse_args(argv)
    if args.steps < 10 or args.checkpoint_every < 1:
        parser.error("--steps must be >= 10 and --checkpoint-every >= 1")

    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((POOL, FEATURES)).astype(np.float32)
    labels = (np.argmax(x[:, :CLASSES], axis=1)).astype(np.int32)  # learnable
    image = model_bytes(args.seed)
    results = {}
    with tempfile.TemporaryDirectory(prefix="microtrain-soak-") as directory:
        for name, every in (("A", args.checkpoint_every), ("B", args.checkpoint_every),
                            ("C", 0)):
            results[name] = Run(image, (x, labels), args.steps, every, directory).run()

    failures = []
    a = results["A"]
    growth = a["rss_max"] - a["rss_start"]
    if growth > args.rss_bound_kib * 1024:
        failures.append("RSS of run A grew by %d KiB after warm-up (bound %d KiB)"
                        % (growth // 1024, args.rss_bound_kib))
    for name in ("B", "C"):
        for key in ("crc32", "loss_sha256", "step_counter"):
            if results[name][key] != a[key]:
                failures.append("run %s %s differs from run A" % (name, key))
    if not 0.0 < a["last_loss"] < 10.0:  # the losses were written and stay sane
        failures.append("mean loss of the last %d steps is %r" % (CHUNK, a["last_loss"]))
    if a["step_counter"] != args.steps:
        failures.append("step counter %d after %d steps" % (a["step_counter"], args.steps))

    print("microtrain soak: %d steps, batch 1..%d, checkpoint save+reload every %d steps"
          % (args.steps, MAX_ROWS, args.checkpoint_every))
    print("| run | checkpoints | steps/s | seconds | weight CRC-32 | loss history SHA-256 "
          "| last loss | RSS start / end / max (KiB) |")
    print("|---|---|---:|---:|---|---|---:|---|")
    for name, r in results.items():
        reloads = "%d reloads (%d fresh)" % (r["reloads"], r["fresh"]) if r["reloads"] else "none"
        print("| %s | %s | %.0f | %.1f | %08x | %s | %.4f | %d / %d / %d |" % (
            name, reloads, r["steps_per_s"], r["seconds"], r["crc32"], r["loss_sha256"][:16],
            r["last_loss"],
            r["rss_start"] // 1024, r["rss_end"] // 1024, r["rss_max"] // 1024))
    for failure in failures:
        print("FAIL:", failure)
    print("soak %s" % ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
