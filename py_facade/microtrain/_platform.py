"""What differs between CPython and MicroPython, in one place (MicroPython-safe).

    clock_ms()      a monotonic clock in milliseconds (a float; only differences mean anything)
    SessionLock()   the lock that serialises the calls of one session (reentrant)
    is_integer(v)   an int or a numpy integer, never a bool
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

try:
    from threading import RLock as _RLock
except ImportError:  # MicroPython: _thread where the port has threads, else nothing to guard
    _RLock = None
    try:
        import _thread
    except ImportError:
        _thread = None


class _ReentrantLock:
    """threading.RLock's acquire/release over MicroPython's ``_thread`` lock."""

    def __init__(self):
        self._lock = _thread.allocate_lock()
        self._owner = None
        self._depth = 0

    def acquire(self):
        me = _thread.get_ident()
        if self._owner == me:
            self._depth += 1
            return True
        self._lock.acquire()
        self._owner = me
        self._depth = 1
        return True

    def release(self):
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()


class _NoLock:
    """A port without threads has nothing to serialise."""

    def acquire(self):
        return True

    def release(self):
        pass


class _GuardedLock:
    """A context manager over the acquire/release locks above (MicroPython)."""

    def __init__(self, lock):
        self._lock = lock

    def __enter__(self):
        self._lock.acquire()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self._lock.release()
        return False


def SessionLock():  # noqa: N802 - named as the class it replaces
    """The lock that serialises the calls of one session across threads; reentrant, so that
    a method may call another (``train`` calls ``train_step``) and a callback may use the
    session. On CPython it is a threading.RLock itself (its C context manager costs a step
    the least); elsewhere a wrapper with the same behaviour."""
    if _RLock is not None:
        return _RLock()
    if _thread is not None:
        return _GuardedLock(_ReentrantLock())
    return _GuardedLock(_NoLock())


def is_integer(value):
    """True for an int or a numpy integer scalar, False for bool and everything else."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and getattr(value, "shape", None) == () and dtype.kind in "iu"
