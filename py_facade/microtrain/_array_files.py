"""Arrays from users' files (CPython, numpy): raw little-endian samples, ``.npy`` and ``.npz``.

Every file is opened through ``microtrain._files`` (regular files only: a FIFO, a device or a
directory is refused before a byte is read). Nothing is ever unpickled: an array of Python
objects is refused by name, whatever numpy would advise.

* raw files and ``.npy`` files are memory-mapped from the descriptor that was checked (only
  the rows a batch uses are read); a ``.npy`` header must describe exactly the bytes that
  follow it.
* an ``.npz`` archive's members are checked from their headers before anything is
  decompressed: at most ``MAX_MEMBERS`` members, each a ``.npy`` of numbers whose declared
  size matches the member's, and at most ``MAX_DATA_BYTES`` for all of them together, so a
  zip bomb or a lying header is refused at the cost of reading its headers.

Errors are ``ValueError`` (``OSError`` for the file itself) naming the file and the problem.
"""

import zipfile

import numpy as np

from . import _files

# An .npz data set's arrays together, decompressed: 256 MiB holds MNIST's 70,000 rows as
# float32 (220 MB); the fleet's and firmware's sets hold a few MB (digits: 0.5 MB). Larger
# ones are refused before they are decompressed, so a hostile archive costs at most this
# (a fleet loads its set once per Ray worker). load_npz(limit=...) takes another bound.
MAX_DATA_BYTES = 256 << 20
# Members of an .npz (x, y, x_eval, y_eval and a few more): checked from the archive's end
# record before its directory is read, so millions of tiny members cost nothing either.
MAX_MEMBERS = 256
_NPY_VERSIONS = {(1, 0): np.lib.format.read_array_header_1_0,
                 (2, 0): np.lib.format.read_array_header_2_0}


def _shape_bytes(shape, dtype):
    count = 1
    for dim in shape:
        count *= int(dim)
    return count * dtype.itemsize


def _npy_header(stream, name):
    """(shape, fortran order, dtype) of a .npy stream positioned at its start."""
    try:
        version = np.lib.format.read_magic(stream)
    except ValueError:
        raise ValueError("%s is not a .npy array (no numpy magic)" % name)
    reader = _NPY_VERSIONS.get(version)
    if reader is None:
        raise ValueError("%s: .npy format version %d.%d is not supported (1.0 and 2.0 are)"
                         % ((name,) + tuple(version)))
    try:
        shape, fortran, dtype = reader(stream)
    except (ValueError, SyntaxError, TypeError) as error:
        raise ValueError("%s: its .npy header is not valid (%s)" % (name, error))
    if dtype.hasobject:
        raise ValueError("%s holds Python objects (dtype %s); microtrain reads arrays of "
                         "numbers only and never unpickles data" % (name, dtype))
    if any(int(dim) < 0 for dim in shape):
        raise ValueError("%s: its .npy header has a negative size %r" % (name, shape))
    return tuple(int(dim) for dim in shape), fortran, dtype


def npy_from_bytes(data, what="an array"):
    """The array a ``.npy`` image in memory holds (read-only, no copy): numbers only, and
    its header must describe exactly the bytes that follow it (Flower's Array payloads)."""
    import io
    stream = io.BytesIO(data)
    shape, fortran, dtype = _npy_header(stream, what)
    offset = stream.tell()
    need = _shape_bytes(shape, dtype)
    if len(data) - offset != need:
        raise ValueError("%s: its header describes %s %s (%d bytes) but %d bytes follow it"
                         % (what, dtype, shape, need, len(data) - offset))
    return np.frombuffer(data, dtype=dtype, offset=offset).reshape(
        shape, order="F" if fortran else "C")


def open_raw(path, sample_shape, dtype, what="a data file"):
    """A read-only memory map [N, *sample_shape] of a raw little-endian file of N samples of
    ``dtype`` (onert_train's raw format), N >= 1."""
    if isinstance(sample_shape, int):
        sample_shape = (sample_shape,)
    shape = tuple(int(d) for d in sample_shape)
    if any(d < 1 for d in shape):
        raise ValueError("sample_shape must hold positive sizes, got %r" % (sample_shape,))
    dtype = np.dtype(dtype).newbyteorder("<")
    sample_bytes = _shape_bytes(shape, dtype)
    handle, size = _files.open_regular(path, what, None)
    with handle:
        if size == 0 or size % sample_bytes:
            raise ValueError("%s holds %d bytes, not a positive multiple of one sample (%s %s "
                             "= %d bytes)" % (path, size, shape, dtype.name, sample_bytes))
        return np.memmap(handle, dtype=dtype, mode="r", shape=(size // sample_bytes,) + shape)


def open_npy(path, what="an array file"):
    """A read-only memory map of the ``.npy`` file ``path``."""
    handle, size = _files.open_regular(path, what, None)
    with handle:
        shape, fortran, dtype = _npy_header(handle, path)
        offset = handle.tell()
        need = _shape_bytes(shape, dtype)
        if size - offset != need:
            raise ValueError("%s: its header describes %s %s (%d bytes) but %d bytes follow it"
                             % (path, dtype, shape, need, size - offset))
        if need == 0:
            return np.zeros(shape, dtype)
        return np.memmap(handle, dtype=dtype, mode="r", offset=offset, shape=shape,
                         order="F" if fortran else "C")


def _member_count(handle, path):
    """The number of members the archive's end record announces (before zipfile reads its
    directory); None when the record cannot be found (zipfile then says why)."""
    end_record = getattr(zipfile, "_EndRecData", None)  # CPython's, since 2.6
    if end_record is None:
        return None
    try:
        record = end_record(handle)
    except OSError:
        return None
    return None if not record else record[zipfile._ECD_ENTRIES_TOTAL]


def _read_into(stream, array):
    """Fill ``array``'s bytes from ``stream``; the number of bytes read."""
    view = memoryview(array.reshape(-1, order="A").view(np.uint8)) if array.size else b""
    got = 0
    while got < len(view):
        count = stream.readinto(view[got:])
        if not count:
            break
        got += count
    return got


def load_npz(path, what="a data set", required=(), limit=MAX_DATA_BYTES):
    """{name: array} of the ``.npz`` archive ``path`` (see the module doc); ``required``:
    the names it must hold."""
    handle, _ = _files.open_regular(path, what, None)
    with handle:
        count = _member_count(handle, path)
        if count is not None and count > MAX_MEMBERS:
            raise ValueError("%s: %s has %d members; an .npz data set holds at most %d"
                             % (path, what, count, MAX_MEMBERS))
        handle.seek(0)
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as error:
            raise ValueError("%s is not an .npz archive (%s needs one, written by "
                             "numpy.savez): %s" % (path, what, error))
        with archive:
            return _read_members(archive, path, what, required, limit)


def _read_members(archive, path, what, required, limit):
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise ValueError("%s: %s has %d members; an .npz data set holds at most %d"
                         % (path, what, len(members), MAX_MEMBERS))
    declared = sum(member.file_size for member in members)
    if declared > limit + 4096 * len(members):
        raise ValueError("%s: %s unpacks to %d bytes, more than the %d allowed"
                         % (path, what, declared, limit))
    arrays, total = {}, 0
    for member in members:
        name = member.filename[:-4] if member.filename.endswith(".npy") else member.filename
        where = "%s[%s]" % (path, name)
        try:
            with archive.open(member) as stream:
                shape, fortran, dtype = _npy_header(stream, where)
                need = _shape_bytes(shape, dtype)
                if member.file_size - stream.tell() != need:
                    raise ValueError("%s: its header describes %s %s (%d bytes) but the member "
                                     "holds %d" % (where, dtype, shape, need,
                                                   member.file_size - stream.tell()))
                total += need
                if total > limit:
                    raise ValueError("%s: %s holds more than the %d bytes allowed"
                                     % (path, what, limit))
                array = np.empty(shape, dtype, order="F" if fortran else "C")
                got = _read_into(stream, array)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError,
                OSError) as error:  # zlib.error is not an OSError: see below
            raise ValueError("%s: cannot unpack %s: %s" % (path, name, error))
        except Exception as error:  # noqa: BLE001 - zlib.error, lzma/bz2 errors
            if isinstance(error, ValueError):
                raise
            raise ValueError("%s: cannot unpack %s: %s: %s" % (path, name,
                                                                type(error).__name__, error))
        if got != need:
            raise ValueError("%s: %s is truncated (%d of %d bytes)" % (path, name, got, need))
        arrays[name] = array
    missing = [name for name in required if name not in arrays]
    if missing:
        raise ValueError("%s has no array %s (%s needs %s; it holds %s)"
                         % (path, " or ".join(repr(m) for m in missing), what,
                            ", ".join(required), ", ".join(sorted(arrays)) or "nothing"))
    return arrays
