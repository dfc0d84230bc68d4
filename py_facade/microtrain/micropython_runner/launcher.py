"""The MicroPython program ``microtrain micropython`` sends to a board: the launcher that
mounts the ROMFS images (and the ``--out`` RAM disk), sets ``sys.argv`` and runs the script;
and on the way back, the files of ``--out`` it sends over the UART.

On a board the launcher prints, each after MARK, the script's traceback if any, the files of
``--out`` ("F path" and a hex line each) and the exit status, and ends QEMU; on unix it copies
the files itself, the traceback goes to stderr and the status is the exit status.
"""

import os

from .. import _files
from .romfs import RunnerError

MARK = "\x1e"            # the launcher's record separator: output | traceback | status
BLOCK = 512              # bytes per block of the RAM disk under littlefs


_RAM_DISK = """\
class _MtRamDisk:  # a block device over PSRAM for littlefs
    def __init__(self, memory):
        self.memory = memoryview(memory)
    def readblocks(self, block, buf, offset=0):
        start = block * %d + offset
        buf[:] = self.memory[start:start + len(buf)]
    def writeblocks(self, block, buf, offset=0):
        start = block * %d + (offset or 0)
        self.memory[start:start + len(buf)] = buf
    def ioctl(self, op, arg):
        if op == 4:
            return len(self.memory) // %d
        if op == 5:
            return %d
        if op == 6:
            return 0
""" % (BLOCK, BLOCK, BLOCK, BLOCK)

_COPY_FILES = """\
def _mt_copy(directory, target):
    import os
    for entry in os.ilistdir(directory):
        path, copy = directory + '/' + entry[0], target + '/' + entry[0]
        if entry[1] & 0x4000:
            try:
                os.mkdir(copy)
            except OSError:
                pass
            _mt_copy(path, copy)
            continue
        with open(path, 'rb') as source:
            with open(copy, 'wb') as sink:
                while True:
                    chunk = source.read(4096)
                    if not chunk:
                        break
                    sink.write(chunk)
"""

_SEND_FILES = """\
def _mt_send(directory, prefix):
    import os, binascii
    for entry in os.ilistdir(directory):
        path = directory + '/' + entry[0]
        if entry[1] & 0x4000:
            _mt_send(path, prefix + entry[0] + '/')
            continue
        sys.stdout.write('F ' + prefix + entry[0] + '\\n')
        with open(path, 'rb') as handle:
            while True:
                chunk = handle.read(512)
                if not chunk:
                    break
                sys.stdout.write(binascii.hexlify(chunk))
        sys.stdout.write('\\n')
"""


def launcher(board, mount_sources, script_name, script_text, args, out=None):
    """MicroPython source that mounts the data, sets sys.argv and runs the script.

    ``mount_sources``: [(mount point, Python expression of the image buffer)]. ``out``:
    None, or (guest directory, Python expression of the RAM disk's memory, and on unix the
    host directory). The script runs from its text (a string literal here) in a fresh
    ``__main__`` namespace. On a board the launcher then prints, each after MARK, the
    traceback if any, the files of ``out`` ("F path" and a hex line each) and the exit
    status, and ends QEMU; on unix it copies the files, the traceback goes to stderr and
    the status is the exit status."""
    lines = ["import sys, vfs"]
    if board != "unix":
        lines.append("import uctypes")
    for mount, source in mount_sources:
        lines.append("vfs.mount(vfs.VfsRom(%s), %r)" % (source, mount))
    if out is not None:
        lines += _RAM_DISK.splitlines()
        lines += ["_mt_disk = _MtRamDisk(%s)" % out[1],
                  "vfs.VfsLfs2.mkfs(_mt_disk)",
                  "vfs.mount(vfs.VfsLfs2(_mt_disk), %r)" % out[0]]
    lines += [
        "sys.argv[:] = %r" % ([script_name] + list(args),),
        "def _mt_main():",
        "    import io",
        "    status, trace = 0, ''",
        "    try:",
        "        exec(compile(%r, %r, 'exec'), {'__name__': '__main__'})"
        % (script_text, script_name),
        "    except SystemExit as exit_:",
        "        code = exit_.args[0] if exit_.args else 0",
        "        if code is None:",
        "            code = 0",
        "        if not isinstance(code, int):",
        "            print(code)",
        "            code = 1",
        "        status = code",
        "    except BaseException as error:",
        "        buffer = io.StringIO()",
        "        sys.print_exception(error, buffer)",
        "        status, trace = 1, buffer.getvalue()",
        "    return status, trace",
        "_mt_status, _mt_trace = _mt_main()",
    ]
    if board == "unix":
        if out is not None:
            lines += _COPY_FILES.splitlines()
            lines.append("_mt_copy(%r, %r)" % (out[0], out[2]))
        lines += ["sys.stderr.write(_mt_trace)", "sys.exit(_mt_status)"]
        return "\n".join(lines) + "\n"
    lines.append("sys.stdout.write(%r + _mt_trace + %r)" % (MARK, MARK))
    if out is not None:
        lines += _SEND_FILES.splitlines()
        lines.append("_mt_send(%r, '')" % out[0])
    lines += ["sys.stdout.write(%r + str(_mt_status) + '\\n')" % MARK,
              "import machine", "machine.reset()"]
    return "\n".join(lines) + "\n"


def parse_files(text):
    """{relative path: bytes} from the launcher's files section."""
    files = {}
    lines = text.replace("\r", "").split("\n")
    for index, line in enumerate(lines):
        if line.startswith("F "):
            files[line[2:]] = bytes.fromhex(lines[index + 1]) if index + 1 < len(lines) else b""
    return files


def write_files(directory, files):
    """Write parse_files()'s files below ``directory`` (no path leaves it), each as every
    output is written (microtrain._files: atomically, over a regular file only)."""
    for path, data in files.items():
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        if not parts:
            continue
        target = os.path.join(directory, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _files.write_bytes(target, data)


def parse_out(item):
    """(host directory, guest directory) of ``--out HOSTDIR=/GUEST``."""
    host, sep, guest = item.partition("=")
    parts = [p for p in guest.split("/") if p]
    if not sep or not host or not guest.startswith("/") or len(parts) != 1:
        raise RunnerError("--out takes HOSTDIR=/GUESTDIR (a top-level guest directory, e.g. "
                          "out=/out), got %r" % item)
    return host, "/" + parts[0]
