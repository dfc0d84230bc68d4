"""Gratings in blobs: a deterministic synthetic image task for MobileNetV2-w0.35 at 128x128x3
(NumPy only: both the TensorFlow venv that pretrains the backbone,
benchmarks/make_mbv2_trained.py, and benchmarks/sparse_accuracy.py import it, so the source
task and the shifted target task are drawn by this one function).

A class is an oriented grating: orientation theta and frequency f (cycles across the image).
An image of class (theta, f) is

    x = mask * grating + (1 - mask) * background + noise,   clipped to [-1, 1]

* grating = a g with g = cos(2 pi f (u cos theta + v sin theta) + phase), u, v in [0, 1) the
  pixel's coordinates, the phase and the colour a (each channel of magnitude 0.4 to 1 and
  random sign: stripes of a and -a) drawn per image: the class is the pattern's orientation
  and scale, never its colour, so the global average a classifier head sees does not give
  the class away and a backbone has to have learned oriented filters at the right scale;
* mask: the region the grating fills, drawn per image: an ellipse (the source task) or an
  axis-aligned rectangle (the target's domain shift), centre in [0.25, 0.75] of the image,
  half-axes in [0.18, 0.38];
* background: two low-frequency plane waves (at most 2 cycles across the image) of random
  direction, phase and colour;
* noise: independent N(0, sigma^2) per element.

Everything comes from ``np.random.default_rng(seed)``: the same seed gives the same images,
bit for bit, on every machine.
"""

import numpy as np

SIZE = 128


def source_classes():
    """The pretraining task's 12 classes: 4 orientations (0, 45, 90, 135 degrees) x 3
    frequencies (4, 8, 16 cycles)."""
    return [(np.deg2rad(angle), f) for angle in (0, 45, 90, 135) for f in (4, 8, 16)]


def target_classes():
    """The adaptation task's 10 classes, none of them a source class: 5 orientations between
    the source's (22.5 ... 157.5 degrees, 36 degrees apart from 13.5) x 2 frequencies between
    the source's (6 and 11 cycles)."""
    return [(np.deg2rad(angle), f) for angle in (13.5, 49.5, 85.5, 121.5, 157.5)
            for f in (6, 11)]


def images(classes, labels, seed, sigma, shape="ellipse", size=SIZE, present=None):
    """float32 images (len(labels), size, size, 3) in [-1, 1] of ``classes[label]`` for each
    label (the module doc), ``shape`` "ellipse" or "rectangle"; where ``present`` (one bool an
    image) is False, the background and noise alone (the same draws otherwise)."""
    if shape not in ("ellipse", "rectangle"):
        raise ValueError("shape %r: 'ellipse' or 'rectangle'" % (shape,))
    labels = np.asarray(labels)
    n = len(labels)
    rng = np.random.default_rng(seed)
    u = (np.arange(size, dtype=np.float64) / size)[None, None, :, None]  # columns
    v = (np.arange(size, dtype=np.float64) / size)[None, :, None, None]  # rows
    theta = np.array([classes[k][0] for k in labels])[:, None, None, None]
    freq = np.array([classes[k][1] for k in labels], dtype=np.float64)[:, None, None, None]

    def draw(low, high, *extra):
        return rng.uniform(low, high, (n,) + extra)

    phase = draw(0, 2 * np.pi, 1, 1, 1)
    g = np.cos(2 * np.pi * freq * (u * np.cos(theta) + v * np.sin(theta)) + phase)
    # colour a per channel of magnitude 0.4..1 and random sign, b = -a: always visible
    a = np.where(draw(0, 1, 1, 1, 3) < 0.5, -1.0, 1.0) * draw(0.4, 1.0, 1, 1, 3)
    grating = a * g

    background = np.zeros((n, size, size, 3))
    for _ in range(2):
        direction = draw(0, 2 * np.pi, 1, 1, 1)
        cycles = draw(0.3, 2.0, 1, 1, 1)
        wave = np.cos(2 * np.pi * cycles * (u * np.cos(direction) + v * np.sin(direction))
                      + draw(0, 2 * np.pi, 1, 1, 1))
        background += 0.5 * wave * draw(-1, 1, 1, 1, 3)

    cu, cv = draw(0.25, 0.75, 1, 1, 1), draw(0.25, 0.75, 1, 1, 1)
    ru, rv = draw(0.18, 0.38, 1, 1, 1), draw(0.18, 0.38, 1, 1, 1)
    if shape == "ellipse":
        mask = ((u - cu) / ru) ** 2 + ((v - cv) / rv) ** 2 <= 1.0
    else:
        mask = (np.abs(u - cu) <= ru) & (np.abs(v - cv) <= rv)
    if present is not None:
        mask = mask & np.asarray(present, dtype=bool)[:, None, None, None]
    x = np.where(mask, grating, background) + sigma * rng.standard_normal((n, size, size, 3))
    return np.clip(x, -1.0, 1.0).astype(np.float32)


def balanced_labels(classes, per_class, seed):
    """per_class labels of each of ``classes`` classes in a seeded order."""
    labels = np.repeat(np.arange(classes), per_class)
    np.random.default_rng(seed).shuffle(labels)
    return labels
