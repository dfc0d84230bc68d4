"""Checkpoint properties: named int, float or str values (pure Python, MicroPython-safe).

ONNX Runtime's checkpoint properties, with the limits of the C checkpoint format
(micro_core/docs/checkpoint_format.md, MT_PROPERTY_MAX_NAME/_STRING in
microtrain.h): a name of 1..63 UTF-8 bytes, an int in the int64 range, any float
(stored as f64), a str of at most 255 UTF-8 bytes (a loading device keeps one
name and one string on its stack). Neither names nor strings may contain NUL (the C side passes them as C
strings). ``bool`` is refused rather than stored as an int, so that what is
loaded back has the type that was saved.
"""

KIND_INT = 1
KIND_FLOAT = 2
KIND_STRING = 3

MAX_NAME_BYTES = 63      # MT_PROPERTY_MAX_NAME
MAX_STRING_BYTES = 255   # MT_PROPERTY_MAX_STRING
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def _encode(text, what, limit, allow_empty):
    if not isinstance(text, str):
        raise TypeError("%s must be a str, got %s" % (what, type(text).__name__))
    data = str(text).encode("utf-8")
    if not data and not allow_empty:
        raise ValueError("%s must not be empty" % what)
    if len(data) > limit:
        raise ValueError("%s is %d UTF-8 bytes, at most %d are allowed" % (what, len(data), limit))
    if b"\x00" in data:
        raise ValueError("%s must not contain a NUL character" % what)
    return data


def check_name(name):
    """The UTF-8 bytes of a valid property name, or ValueError/TypeError."""
    return _encode(name, "a property name", MAX_NAME_BYTES, False)


def classify(name, value):
    """(kind, value) of a valid property value: KIND_INT, KIND_FLOAT or KIND_STRING."""
    if isinstance(value, bool):
        raise TypeError("property %r: bool is not a property type; store int(value)" % (name,))
    if isinstance(value, int):
        if value < INT64_MIN or value > INT64_MAX:
            raise ValueError("property %r: int %d does not fit in 64 bits" % (name, value))
        return KIND_INT, int(value)
    if isinstance(value, float):
        return KIND_FLOAT, float(value)
    if isinstance(value, str):
        _encode(value, "property %r" % (name,), MAX_STRING_BYTES, True)
        return KIND_STRING, str(value)
    raise TypeError("property %r: value must be int, float or str, got %s"
                    % (name, type(value).__name__))


class Properties:
    """An ordered name -> value store with the checkpoint format's rules."""

    def __init__(self):
        self._names = []
        self._values = {}

    def add(self, name, value):
        """Add or replace property ``name``."""
        check_name(name)
        kind, value = classify(name, value)
        if name not in self._values:
            self._names.append(name)
        self._values[name] = value

    def get(self, name, *default):
        if name in self._values:
            return self._values[name]
        if default:
            return default[0]
        raise KeyError("no property named %r" % (name,))

    def remove(self, name):
        if name not in self._values:
            raise KeyError("no property named %r" % (name,))
        del self._values[name]
        self._names.remove(name)

    def items(self):
        """(name, kind, value) in insertion order."""
        result = []
        for name in self._names:
            value = self._values[name]
            result.append((name, classify(name, value)[0], value))
        return result

    def as_dict(self):
        result = {}
        for name in self._names:
            result[name] = self._values[name]
        return result

    def replace_all(self, pairs):
        """Replace every property by ``pairs`` [(name, value), ...]."""
        fresh = Properties()
        for name, value in pairs:
            fresh.add(name, value)
        self._names = fresh._names
        self._values = fresh._values

    def __contains__(self, name):
        return name in self._values

    def __len__(self):
        return len(self._names)

    def __repr__(self):
        return "Properties(%r)" % (self.as_dict(),)
