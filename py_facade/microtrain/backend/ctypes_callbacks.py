"""The ctypes backend's traffic with C callbacks and checkpoint properties: Python
functions the core calls (kept from raising through C) and mt_property arrays both ways."""

import ctypes

from . import _native
from .. import properties as _properties

_PROPERTY_KINDS = {
    _properties.KIND_INT: _native.MT_PROPERTY_INT,
    _properties.KIND_FLOAT: _native.MT_PROPERTY_FLOAT,
    _properties.KIND_STRING: _native.MT_PROPERTY_STRING,
}


class Callback:
    """A Python function as a C callback that never lets an exception escape: the exception
    is kept, the callback returns MT_ERR_IO so the core stops, and ``check`` raises it."""

    def __init__(self, function_type, body):
        self.error = None
        self._body = body
        self.pointer = function_type(self._call)  # referenced while C runs

    def _call(self, *args):
        if self.error is not None:
            return _native.MT_ERR_IO
        try:
            return self._body(*args)
        except BaseException as error:  # noqa: B902 - re-raised after the C call
            self.error = error
            return _native.MT_ERR_IO

    def check(self, status, function, raise_status):
        if self.error is not None:
            raise self.error
        if status != _native.MT_OK:
            raise_status(status, function)


def writer(write):
    def body(user, data, size):
        if size:
            write(memoryview((ctypes.c_char * size).from_address(data)).cast("B"))
        return _native.MT_OK
    return Callback(_native.mt_write_fn, body)


def property_array(items):
    """(ctypes array of mt_property, count, the bytes objects it points into)."""
    array = (_native.mt_property * max(1, len(items)))()
    keep = []
    for slot, (name, kind, value) in zip(array, items):
        encoded_name = _properties.check_name(name)
        keep.append(encoded_name)
        slot.name = encoded_name
        slot.type = _PROPERTY_KINDS[kind]
        if kind == _properties.KIND_INT:
            slot.int_value = value
        elif kind == _properties.KIND_FLOAT:
            slot.float_value = value
        else:
            encoded = value.encode("utf-8")
            keep.append(encoded)
            slot.str_value = encoded
    return array, len(items), keep


def property_item(item):
    """(name, value) of an mt_property the core reports while loading a checkpoint."""
    name = (item.name or b"").decode("utf-8", "replace")
    if item.type == _native.MT_PROPERTY_INT:
        return name, int(item.int_value)
    if item.type == _native.MT_PROPERTY_FLOAT:
        return name, float(item.float_value)
    return name, (item.str_value or b"").decode("utf-8", "replace")
