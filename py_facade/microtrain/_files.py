"""Reading users' files, and writing every output atomically (MicroPython-safe).

This module is the one place that opens a user's file, for every surface: sessions (model
images, checkpoints, exports), the importers' export, the ``microtrain`` command and its
subcommands (firmware, micropython, fleet, convert), and ``microtrain._array_files`` (data
sets). docs/hostile_input.md states the policy; tests/test_files.py,
tests/test_hostile_exports.py and tests/test_hostile_cli.py hold it.

Reading (``read_file``, ``open_regular``, ``require_regular``): only regular files are
read, never more than a size limit. The file is opened with ``O_NONBLOCK`` and checked with
``fstat`` on the open descriptor, so a named pipe, a device, a socket or a directory is
refused before a byte is read: a FIFO cannot block the caller and ``/dev/zero`` cannot
exhaust memory. A path that names a symbolic link reads what the link points to.

Writing (``atomic_write``, ``write_bytes``): one policy for every output.

* The bytes go to a temporary file in the target's folder, named
  ``.<name>.<pid>.<random>.mt-tmp``, which is flushed, fsynced and renamed over the target
  (``os.replace``); the folder is fsynced after. On any failure the temporary file is
  removed and the target is untouched.
* Mode: a new file gets ``0o666`` less the process umask (0o644 under the usual 022), what
  ``open()`` would give it; a file that is replaced keeps its mode. The temporary file's own
  mode (mkstemp's 0o600) never leaks.
* Only a regular file is ever replaced: a directory, a FIFO, a device or a socket at the path
  is refused before anything is written.
* A symbolic link is written *through*: its target receives the new contents (created if the
  link dangles) and the link stays a link, pointing where it pointed.
* Temporary files that a killed writer left behind (their pid no longer runs) are removed
  by the next save of the same name.
* Errors name the user's path (a missing folder is "cannot write <path>: no folder
  <folder>", not the temporary file's name).

Under MicroPython there is no fsync, no pid and no ``os.replace``: the file is written
under ``<path>.tmp`` and renamed over the target; a filesystem whose rename refuses an
existing target (FAT) gets the old file removed first, which is not atomic there.
"""

import os

try:
    import stat as _stat
    import tempfile as _tempfile
    _CPYTHON = True
except ImportError:  # MicroPython
    _CPYTHON = False

# st_mode's file type bits (POSIX), for MicroPython whose os has no stat module
_S_IFMT = 0o170000
_S_IFREG = 0o100000
_S_IFDIR = 0o040000
_KINDS = {0o010000: "a named pipe (FIFO)", 0o020000: "a character device",
          0o060000: "a block device", 0o140000: "a socket", _S_IFDIR: "a directory"}

TEMPORARY_SUFFIX = ".mt-tmp"
# Images and checkpoints larger than this are refused on read: the core's own limits
# (MT_MAX_TENSORS tensors of at most MT_MAX_ELEMENTS floats in a u32-sized image) stay below.
MAX_FILE_BYTES = 1 << 32


class NotARegularFileError(OSError):
    """The path names a FIFO, a device, a socket (or, on write, anything but a regular file);
    ``kind`` says which ("a named pipe (FIFO)", ...)."""

    kind = "not a regular file"


def _kind(mode):
    return _KINDS.get(mode & _S_IFMT, "not a regular file")


def _os_error(error, path):
    """``error`` with the path in its message (MicroPython's OSError carries only errno)."""
    if getattr(error, "filename", None):
        return error
    code = error.args[0] if error.args else 0
    try:
        import errno
        name = errno.errorcode.get(code, "errno %d" % code)
    except (ImportError, AttributeError):
        name = "errno %d" % code
    return OSError(code, "cannot open %s (%s)" % (path, name))


def _refuse(path, mode, what):
    if mode & _S_IFMT == _S_IFDIR:
        if _CPYTHON:
            raise IsADirectoryError(21, "Is a directory (%s)" % what, path)
        raise OSError(21, "EISDIR: %s is a directory" % path)
    error = NotARegularFileError(22, "%s is %s, not a regular file (%s)" % (
        path, _kind(mode), what))
    error.kind = _kind(mode)
    raise error


def read_file(path, what="a file", limit=MAX_FILE_BYTES):
    """The bytes of the regular file ``path`` (at most ``limit`` bytes, else ValueError)."""
    handle, size = open_regular(path, what, limit)
    try:
        data = handle.read(size) if size else b""
        extra = handle.read(1)  # it grew after stat, or a /proc-like file reported size 0
        while extra:
            data += extra + handle.read(65536)
            if limit is not None and len(data) > limit:
                raise ValueError("%s: %s holds more than %d bytes" % (path, what, limit))
            extra = handle.read(1)
    finally:
        handle.close()
    return data


def open_regular(path, what="a file", limit=MAX_FILE_BYTES):
    """(binary file object, size) of the regular file ``path``; raises before reading for
    anything else, and ValueError when it is larger than ``limit`` bytes (None: any size)."""
    if _CPYTHON:
        path = os.fspath(path)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        descriptor = os.open(path, flags)  # O_NONBLOCK: opening a FIFO does not wait
        try:
            info = os.fstat(descriptor)
            if not _stat.S_ISREG(info.st_mode):
                _refuse(path, info.st_mode, what)
            size = info.st_size
            handle = os.fdopen(descriptor, "rb")
        except BaseException:
            os.close(descriptor)
            raise
    else:
        try:
            mode = os.stat(path)[0]
        except OSError as error:
            raise _os_error(error, path)
        if mode & _S_IFMT not in (_S_IFREG, 0):  # some VFS report 0 for plain files
            _refuse(path, mode, what)
        try:
            handle = open(path, "rb")
        except OSError as error:
            raise _os_error(error, path)
        size = handle.seek(0, 2)
        handle.seek(0)
    if limit is not None and size > limit:
        handle.close()
        raise ValueError("%s: %s is %d bytes, more than the %d allowed" % (path, what, size,
                                                                          limit))
    return handle, size


def require_regular(path, what="a file"):
    """Refuse ``path`` unless it is a regular file, as ``open_regular`` would (for a file
    another program reads: a firmware QEMU loads, an executable)."""
    handle, _ = open_regular(path, what, None)
    handle.close()
    return path


class _Writer:
    """What ``produce`` receives: ``write(chunk)`` appends, ``bytes_written`` counts."""

    def __init__(self, handle):
        self.handle = handle
        self.bytes_written = 0

    def write(self, chunk):
        self.handle.write(chunk)
        self.bytes_written += len(chunk)


def atomic_write(path, produce):
    """Call ``produce(writer)`` to fill a temporary file beside ``path``, then make it
    ``path`` atomically (see the module doc). Returns the bytes written."""
    if not _CPYTHON:
        return _atomic_write_micropython(path, produce)
    if not os.fspath(path):
        raise ValueError("a file name is needed, got an empty path")
    target = _writable_target(os.fspath(path))
    directory, name = os.path.split(target)
    _remove_stale_temporaries(directory, name)
    try:
        mode = os.stat(target).st_mode & 0o777
    except FileNotFoundError:
        mode = _default_mode()
    try:
        descriptor, temporary = _tempfile.mkstemp(prefix="%s%d." % (_temporary_prefix(name),
                                                                    os.getpid()),
                                                  suffix=TEMPORARY_SUFFIX,
                                                  dir=directory or ".")
    except OSError as error:  # mkstemp names its temporary file: name the user's path
        raise _write_error(error, path, directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            writer = _Writer(handle)
            produce(writer)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_directory(directory or ".")
    return writer.bytes_written


def check_writable(path):
    """Refuse now what ``atomic_write(path)`` would refuse later (a target that is not a
    regular file, a folder that does not exist), for a command that writes after long work
    (CPython)."""
    path = os.fspath(path)
    directory = os.path.dirname(_writable_target(path))
    if not os.path.isdir(directory or "."):
        raise _write_error(FileNotFoundError(2, "No such file or directory"), path,
                           directory)
    return path


def write_bytes(path, data):
    """``atomic_write`` of ``data`` (bytes); returns the bytes written."""
    return atomic_write(path, lambda writer: writer.write(data))


def save_figure(figure, path, **options):
    """``atomic_write`` of a matplotlib figure, in the format of ``path``'s extension
    (PNG when it has none); ``options`` go to ``savefig``."""
    import io
    base = os.fspath(path).rsplit("/", 1)[-1]
    kind = base.rsplit(".", 1)[1].lower() if "." in base.lstrip(".") else ""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=kind or "png", **options)
    return write_bytes(path, buffer.getvalue())


def _write_error(error, path, directory):
    """An OSError of the same class and errno whose message and filename are ``path``'s."""
    code = error.errno or 0
    if isinstance(error, FileNotFoundError):
        text = "cannot write %s: no folder %s" % (path, directory or ".")
    elif isinstance(error, NotADirectoryError):
        text = "cannot write %s: %s is not a folder" % (path, directory or ".")
    else:
        text = "cannot write %s: %s" % (path, error.strerror or error)
    result = type(error)(code, text)
    result.filename = os.fspath(path)
    return result


def _writable_target(path):
    """The file a save of ``path`` replaces: ``path``, or what a symbolic link there points
    to; refused when it exists and is not a regular file."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    if not _stat.S_ISREG(mode):
        _refuse(path, mode, "only a regular file is replaced")
    return target


# The target's name as far as it goes into its temporary files' names: the pid, mkstemp's 8
# random characters and the suffix add up to 30 more, which a long (but valid) name would
# push past the 255 bytes of a file name.
_NAME_IN_TEMPORARY = 160


def _temporary_prefix(name):
    return "." + name[:_NAME_IN_TEMPORARY] + "."


def _remove_stale_temporaries(directory, name):
    """Remove ``.<name>.<pid>.*.mt-tmp`` files whose writing process no longer runs."""
    prefix = _temporary_prefix(name)
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(TEMPORARY_SUFFIX)):
            continue
        pid_text = entry[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or _process_runs(int(pid_text)):
            continue
        try:
            os.unlink(os.path.join(directory or ".", entry))
        except OSError:
            pass


def _process_runs(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else
        return True
    return True


def _default_mode():
    """0o666 less the process umask (what open() would give a new file)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_directory(directory):
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # platforms without directory handles (Windows)
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _atomic_write_micropython(path, produce):
    try:
        mode = os.stat(path)[0]
    except OSError:
        mode = None
    if mode is not None and mode & _S_IFMT not in (_S_IFREG, 0):
        _refuse(path, mode, "only a regular file is replaced")
    temporary = path + ".tmp"
    try:
        with open(temporary, "wb") as handle:
            writer = _Writer(handle)
            produce(writer)
        try:
            os.rename(temporary, path)
        except OSError:
            if mode is None:
                raise
            os.remove(path)  # FAT's rename refuses an existing target
            os.rename(temporary, path)
    except BaseException as error:
        try:
            os.remove(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise _os_error(error, path)
        raise
    return writer.bytes_written
