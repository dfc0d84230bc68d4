"""Seeds and a small portable random generator (pure Python, MicroPython-safe).

Everything random in the facade goes through this module, so that one call,
``microtrain.set_seed(seed)``, makes a whole script reproducible:

  * weight initialisation of ``Sequential`` models built afterwards without an
    explicit ``seed=`` (each model draws the next derived seed);
  * the order of every shuffling ``DataLoader`` created afterwards without an
    explicit ``seed=``, and the shuffled train/validation split it makes;
  * nothing else: the C core itself has no randomness (no dropout), so steps,
    checkpoints and exports are deterministic anyway.

Derived seeds come from a counter: the n-th model or loader created after
``set_seed(s)`` always gets the same seed, whatever happened before ``set_seed``.

The generator is SplitMix64 (for deriving seeds) feeding PCG32 (for drawing):
pure integer arithmetic, so a shuffle computed on a PC is the same on a board
running MicroPython.
"""

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_PCG_MULTIPLIER = 6364136223846793005

_global_seed = None
_derived_count = 0


def splitmix64(value):
    """One SplitMix64 output for state ``value`` (a 64-bit integer)."""
    z = (value + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def mix(seed, *values):
    """A 63-bit seed derived from ``seed`` and a few non-negative integers (stable)."""
    state = splitmix64(int(seed) & _MASK64)
    for value in values:
        state = splitmix64(state ^ (int(value) & _MASK64))
    return state >> 1


def check_seed(seed):
    """Return ``seed`` as an int in [0, 2^63) or raise ValueError (None passes through)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            as_int = int(seed)
        except (TypeError, ValueError):
            raise ValueError("a seed must be a non-negative integer, got %r" % (seed,))
        if as_int != seed:
            raise ValueError("a seed must be a non-negative integer, got %r" % (seed,))
        seed = as_int
    if seed < 0 or seed >= (1 << 63):
        raise ValueError("a seed must be an integer in [0, 2**63), got %r" % (seed,))
    return seed


def set_seed(seed):
    """Make weight initialisation and shuffling reproducible from now on (see module doc).
    ``None`` returns to fresh entropy."""
    global _global_seed, _derived_count
    _global_seed = check_seed(seed)
    _derived_count = 0


def get_seed():
    """The seed given to the last ``set_seed`` (None if none)."""
    return _global_seed


def _entropy():
    try:
        import os
        data = os.urandom(8)
        value = 0
        for byte in data:
            value = (value << 8) | byte
        return value >> 1
    except (ImportError, AttributeError, NotImplementedError, OSError):
        import time
        # MicroPython boards may have no os.urandom and no time.time (ports/qemu has
        # neither): take the finest clock there is.
        if hasattr(time, "time"):
            return mix(int(time.time() * 1000000), id(object()))
        for name in ("time_ns", "ticks_us", "ticks_ms"):
            clock = getattr(time, name, None)
            if clock is not None:
                return mix(int(clock()), id(object()))
        return mix(0, id(object()))


def derive_seed():
    """The next derived seed after ``set_seed``; fresh entropy if no seed was set."""
    global _derived_count
    if _global_seed is None:
        return _entropy()
    _derived_count += 1
    return mix(_global_seed, _derived_count)


class Random:
    """PCG32 (XSH RR): 64-bit state, 32-bit outputs; deterministic on every Python."""

    def __init__(self, seed, stream=0):
        self._increment = ((int(stream) << 1) | 1) & _MASK64
        self._state = 0
        self.next32()
        self._state = (self._state + (int(seed) & _MASK64)) & _MASK64
        self.next32()

    def next32(self):
        old = self._state
        self._state = (old * _PCG_MULTIPLIER + self._increment) & _MASK64
        shifted = (((old >> 18) ^ old) >> 27) & _MASK32
        rotation = old >> 59
        return ((shifted >> rotation) | (shifted << ((-rotation) & 31))) & _MASK32

    def below(self, bound):
        """A uniform integer in [0, bound), 1 <= bound <= 2^32, without modulo bias."""
        if bound < 1 or bound > (1 << 32):
            raise ValueError("bound must be in [1, 2**32], got %r" % (bound,))
        threshold = ((1 << 32) - bound) % bound
        while True:
            value = self.next32()
            if value >= threshold:
                return value % bound

    def shuffle(self, items):
        """Fisher-Yates shuffle of the list ``items`` in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
        return items


def permutation(count, seed, stream=0):
    """A list holding 0..count-1 shuffled by ``Random(seed, stream)``."""
    return Random(seed, stream).shuffle(list(range(count)))
