"""``load()``: the backend of this host (MicroPython-safe). It imports the implementations,
which import the interface (``microtrain.backend``), so it lives beside them, above both."""


def load():
    """A new backend object: ctypes on CPython, else a firmware's ``_microtrain`` module,
    else the wasm core behind the JS module ``_microtrain_js``."""
    try:
        from . import ctypes_backend as implementation
    except ImportError:
        try:
            import _microtrain as implementation
        except ImportError:
            from . import js_backend as implementation
    return implementation.Backend()
