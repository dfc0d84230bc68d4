"""The session state machine shared by ``TrainSession`` and ``lite.Session`` (MicroPython-safe).

    open, not compiled --compile()--> compiled --compile()--> compiled (rebound)
          |                               |
          +------------close()------------+--> closed (every call but close() raises)

Steps, buffers, counters and learning rates need a compiled session; ``close()`` is
idempotent; the context manager closes on exit. A class using the mixin keeps
``self._closed`` and ``self._session`` (None until compiled).
"""

try:
    from time import perf_counter as _seconds

    def clock_ms():
        """A monotonic clock in milliseconds (float) for step timings."""
        return _seconds() * 1000.0
except ImportError:  # MicroPython: ticks wrap around, so only differences mean anything
    from time import ticks_us as _ticks_us

    def clock_ms():
        """A monotonic clock in milliseconds (float) for step timings."""
        return _ticks_us() / 1000.0


class LifecycleMixin:
    """_require_open / _require_compiled checks, ``closed`` and the context manager."""

    def _require_open(self):
        if self._closed:
            raise RuntimeError("this %s is closed" % type(self).__name__)

    def _require_compiled(self, what):
        self._require_open()
        if self._session is None:
            raise RuntimeError("call compile() before %s()" % what)

    @property
    def closed(self):
        return self._closed

    def __enter__(self):
        self._require_open()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False
