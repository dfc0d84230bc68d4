"""``const`` for the MicroPython-safe modules' integer constants: MicroPython's own (its
compiler folds ``NAME = const(value)``), or the identity where it is absent (CPython)."""

try:
    from micropython import const
except ImportError:  # CPython
    def const(value):
        return value
