"""Checkpoints, their properties and export for inference (``TrainSession`` methods).

The C core writes and reads the checkpoint (micro_core/src/checkpoint.c, format in
micro_core/docs/checkpoint_format.md) through chunked callbacks, so a device can
stream it to flash; here the callbacks go to a file:

  * ``save_checkpoint`` writes a temporary file in the target's directory, fsyncs it
    and renames it over the target (``os.replace``), then fsyncs the directory. A
    failure at any point (a write error, a full disk, an exception in between)
    removes the temporary file and leaves the previous checkpoint as it was.
  * ``load_checkpoint`` lets the core read the file at the offsets it asks for; the
    core validates everything (CRC, model, optimizer, trained set) before changing
    anything, so a refused checkpoint leaves the session as it was. The core's second
    pass reads in place, so a file failing between the passes could leave a device
    half-loaded; on the host the arena is copied first and put back on any failure,
    so a failed load never changes the session.
  * ``export_model_for_inference`` streams the model image with the trained weights
    baked in (no training state), written atomically the same way.

A Python exception raised inside a callback is kept, the callback returns
MT_ERR_IO so the C side stops, and the exception is raised again afterwards.
"""

import ctypes
import os
import tempfile

from . import properties as _properties
from .backend import _native
from .backend._native import _check

_PROPERTY_KINDS = {
    _properties.KIND_INT: _native.MT_PROPERTY_INT,
    _properties.KIND_FLOAT: _native.MT_PROPERTY_FLOAT,
    _properties.KIND_STRING: _native.MT_PROPERTY_STRING,
}


def _default_mode():
    """0o666 less the process umask (what open() would give a new file)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class _FileWriter:
    """Appends the chunks the core hands over to an open binary file."""

    def __init__(self, handle):
        self.handle = handle
        self.bytes_written = 0

    def write(self, chunk):
        self.handle.write(chunk)
        self.bytes_written += len(chunk)


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # platforms without directory handles (Windows)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, produce):
    """Call ``produce(writer)`` to fill a temporary file beside ``path``, then make it
    ``path`` atomically. On any exception the temporary file is removed and ``path``
    is untouched."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError("%s is a directory" % path)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = _default_mode()
    fd, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                     suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            produce(_FileWriter(handle))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


class _Callback:
    """Wraps a Python function as a C callback that never lets an exception escape."""

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

    def check(self, status, function):
        if self.error is not None:
            raise self.error
        _check(status, function)


def _write_callback(writer):
    def write(user, data, size):
        if size:
            writer.write(memoryview((ctypes.c_char * size).from_address(data)).cast("B"))
        return _native.MT_OK
    return _Callback(_native.mt_write_fn, write)


class CheckpointMixin:
    """save/load_checkpoint, add/get_property and export for ``TrainSession``."""

    # ------------------------------------------------------------ properties

    def add_property(self, name, value):
        """Store an int, float or str under ``name`` in the checkpoints saved from now on."""
        self._require_open()
        self._properties.add(name, value)

    def get_property(self, name, *default):
        """A property added or loaded from a checkpoint; KeyError (or ``default``) if absent."""
        self._require_open()
        return self._properties.get(name, *default)

    def remove_property(self, name):
        self._require_open()
        self._properties.remove(name)

    @property
    def properties(self):
        """A copy of every property, name -> value."""
        self._require_open()
        return self._properties.as_dict()

    def _property_array(self):
        """(ctypes array of mt_property, the bytes objects it points into)."""
        items = self._properties.items()
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

    # ------------------------------------------------------------ checkpoints

    def checkpoint_bytes(self, include_optimizer_state=True):
        """Size in bytes of the checkpoint save_checkpoint() would write now."""
        self._require_compiled("checkpoint_bytes")
        array, count, keep = self._property_array()
        size = ctypes.c_size_t()
        _check(_native.mt_checkpoint_bytes(self._session, int(bool(include_optimizer_state)),
                                           array, count, ctypes.byref(size)),
               "mt_checkpoint_bytes")
        return size.value

    def save_checkpoint(self, path, include_optimizer_state=True):
        """Write trained weights, optimizer state (unless ``include_optimizer_state`` is
        False), step and epoch counters, learning rate and properties to ``path``,
        atomically (see the module doc)."""
        self._require_compiled("save_checkpoint")
        array, count, keep = self._property_array()
        include = int(bool(include_optimizer_state))
        expected = ctypes.c_size_t()
        _check(_native.mt_checkpoint_bytes(self._session, include, array, count,
                                           ctypes.byref(expected)), "mt_checkpoint_bytes")

        def produce(writer):
            callback = _write_callback(writer)
            status = _native.mt_checkpoint_save(self._session, include, array, count,
                                                callback.pointer, None)
            callback.check(status, "mt_checkpoint_save")
            if writer.bytes_written != expected.value:
                raise RuntimeError("the core wrote %d checkpoint bytes but announced %d"
                                   % (writer.bytes_written, expected.value))

        atomic_write(path, produce)
        del keep

    def load_checkpoint(self, path):
        """Restore a checkpoint saved from a session of the same model, optimizer and
        trained set. Refused checkpoints raise MicrotrainError (MT_ERR_BAD_CHECKPOINT:
        corrupt or truncated; MT_ERR_CHECKPOINT_MISMATCH: another model, optimizer or
        trained set) and change nothing. Properties are replaced by the checkpoint's."""
        self._require_compiled("load_checkpoint")
        with open(os.fspath(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size

            def read(user, offset, data, count):
                if count == 0:
                    return _native.MT_OK
                handle.seek(offset)
                target = memoryview((ctypes.c_char * count).from_address(data)).cast("B")
                done = 0
                while done < count:
                    got = handle.readinto(target[done:])
                    if not got:
                        return _native.MT_ERR_IO  # the file shrank under us
                    done += got
                return _native.MT_OK

            loaded = []

            def on_property(user, pointer):
                item = pointer.contents
                name = (item.name or b"").decode("utf-8", "replace")
                if item.type == _native.MT_PROPERTY_INT:
                    value = int(item.int_value)
                elif item.type == _native.MT_PROPERTY_FLOAT:
                    value = float(item.float_value)
                else:
                    value = (item.str_value or b"").decode("utf-8", "replace")
                loaded.append((name, value))
                return _native.MT_OK

            reader = _Callback(_native.mt_read_fn, read)
            listener = _Callback(_native.mt_property_fn, on_property)
            backup = self._arena.copy()  # the whole session state: weights, moments, counters
            try:
                status = _native.mt_checkpoint_load(self._session, size, reader.pointer, None,
                                                    listener.pointer, None)
                if listener.error is not None:
                    raise listener.error
                reader.check(status, "mt_checkpoint_load")
            except BaseException:
                self._arena[...] = backup
                raise
        self._properties.replace_all(loaded)
        self._reset_grad_pending = True  # gradients of the old weights are stale

    # ------------------------------------------------------------ export

    def export_model_for_inference(self, path):
        """Write the model image with the trained weights baked in and no training state
        (atomically); load it with ``TrainSession(path)`` or embed it in firmware."""
        self._require_compiled("export_model_for_inference")

        def produce(writer):
            callback = _write_callback(writer)
            status = _native.mt_session_export_image(self._session, callback.pointer, None)
            callback.check(status, "mt_session_export_image")
            if writer.bytes_written != self._image.size:
                raise RuntimeError("the core exported %d bytes, the image has %d"
                                   % (writer.bytes_written, self._image.size))

        atomic_write(path, produce)
