"""The ``--data`` files of ``microtrain micropython`` as ROMFS images.

The files of each top-level guest directory become one read-only ROMFS image (MicroPython's
``vfs.VfsRom``, extmod/vfs_rom.c's format) with 16-byte aligned file data, so that a file's
``memoryview`` can be read in place on the board. The runner (run.py) places the
images; the command line is microtrain.tools.micropython.
"""

import os

from .. import _files


class RunnerError(Exception):
    """The script could not be run (no firmware, bad --data, QEMU missing)."""


def _varuint(value, width=None):
    """MicroPython's big-endian base-128 varuint; ``width`` pads it with 0x80 bytes."""
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.insert(0, 0x80 | (value & 0x7F))
        value >>= 7
    if width is not None:
        if len(out) > width:
            raise RunnerError("a ROMFS record of %d bytes is too large" % value)
        out = [0x80] * (width - len(out)) + out
    return bytes(out)


_LEN = 4  # every record length is a 4-byte varuint (up to 256 MiB), so layout is one pass
_ROMFS_KIND = 0x14A6B1
_PADDING, _DATA, _DIRECTORY, _FILE = 1, 2, 4, 5


def _record(kind, payload, kind_width=None, length_width=_LEN):
    return _varuint(kind, kind_width) + _varuint(len(payload), length_width) + payload


def _aligned_data(position, data, alignment):
    """A data record at absolute ``position`` whose payload starts ``alignment``-aligned,
    behind a padding record (or a padded kind byte) as needed."""
    header = 1 + _LEN
    gap = (-(position + header)) % alignment
    if gap == 0:
        return _record(_DATA, data)
    if gap == 1:
        return _record(_DATA, data, kind_width=2)
    return _record(_PADDING, bytes(gap - 2), length_width=1) + _record(_DATA, data)


def _tree_records(tree, position, alignment):
    """The records of a directory's entries (``tree``: name -> bytes or a sub-tree),
    laid out from absolute offset ``position``."""
    out = b""
    for name in sorted(tree):
        encoded = name.encode("utf-8")
        kind = _DIRECTORY if isinstance(tree[name], dict) else _FILE
        start = position + len(out)
        inner = start + 1 + _LEN + len(_varuint(len(encoded))) + len(encoded)
        if kind == _DIRECTORY:
            body = _tree_records(tree[name], inner, alignment)
        else:
            body = _aligned_data(inner, tree[name], alignment)
        out += _record(kind, _varuint(len(encoded)) + encoded + body)
    return out


def build_romfs(files, alignment=16):
    """A ROMFS image (extmod/vfs_rom.c's format) of ``files``: {"a/b.bin": bytes}, paths
    relative to the mount point. File data is ``alignment``-aligned from the image start."""
    tree = {}
    for path, data in files.items():
        parts = [p for p in path.split("/") if p]
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise RunnerError("%s is both a file and a directory" % path)
        if parts[-1] in node:
            raise RunnerError("two --data files for %s" % path)
        node[parts[-1]] = bytes(data)
    header = len(_varuint(_ROMFS_KIND)) + _LEN
    payload = _tree_records(tree, header, alignment)
    if (header + len(payload)) % 2:  # a ROMFS record's size must be even
        payload += _record(_PADDING, b"\x00", length_width=1)
    return _varuint(_ROMFS_KIND) + _varuint(len(payload), _LEN) + payload


def plan_mounts(data):
    """{mount point: {path below it: host path}} from ["HOST=GUEST", ...]."""
    mounts = {}
    for item in data:
        host, sep, guest = item.partition("=")
        if not sep or not host or not guest:
            raise RunnerError("--data takes HOST=GUEST, got %r" % item)
        try:
            _files.require_regular(host, "a --data file")
        except _files.NotARegularFileError as error:
            raise RunnerError("--data %s" % error.strerror)
        except OSError as error:
            raise RunnerError("--data %s: %s" % (host, error.strerror or error))
        parts = [p for p in guest.split("/") if p]
        if not guest.startswith("/") or len(parts) < 2 or ".." in parts or "." in parts:
            raise RunnerError("--data %s: the guest path must be absolute and inside a "
                              "directory, e.g. /data/%s" % (item, os.path.basename(host)))
        mounts.setdefault("/" + parts[0], {})["/".join(parts[1:])] = host
    return mounts


# What --data may bring, all files together: the boards have 16 MiB of PSRAM for them and the
# unix port reads each image into its 16 MiB heap. A larger file is refused before it is read.
DATA_BYTES = 16 << 20


def romfs_images(mounts):
    """[(mount point, image bytes)] in mount order."""
    images = []
    left = DATA_BYTES
    for mount in sorted(mounts):
        files = {}
        for path, host in mounts[mount].items():
            try:
                files[path] = _files.read_file(host, "a --data file", limit=left)
            except ValueError:
                raise RunnerError("--data %s: the --data files hold more than the %d MiB a "
                                  "board has for them" % (host, DATA_BYTES >> 20))
            except OSError as error:
                raise RunnerError("--data %s: %s" % (host, error))
            left -= len(files[path])
        images.append((mount, build_romfs(files)))
    return images
