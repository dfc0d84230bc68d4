"""``microtrain micropython``: run a MicroPython script on microtrain's MicroPython firmware.

    microtrain micropython --board mps2-an500 script.py [--data HOST=GUEST ...] [args ...]
    python -m microtrain.tools.micropython ...           (the same, without the console script)

Boards (the firmware tools/micropython/build_firmware.sh builds into build/micropython/ of
the source tree, found from the current directory or $MICROTRAIN_SOURCE_DIR; or
$MICROTRAIN_MICROPYTHON_DIR/<board>/; or --firmware):

    mps2-an500   Cortex-M7 + FPU under qemu-system-arm   build/micropython/mps2-an500/firmware.elf
    mps2-an385   Cortex-M3 under qemu-system-arm         build/micropython/mps2-an385/firmware.elf
    unix         MicroPython's unix port on the host      build/micropython/unix/micropython

Each has microtrain's pure modules frozen and the native backend ``_microtrain`` built in, so
``import microtrain`` and ``microtrain.backend.load()`` work as on a device.

Files: every ``--data HOST=GUEST`` copies file HOST to the absolute path GUEST, which must
lie in a directory (``/data/digits.mtm``, not ``/digits.mtm``). The files of each top-level
directory become one read-only ROMFS image (MicroPython's ``vfs.VfsRom``, 16-byte aligned
file data, so a file's ``memoryview`` can be read in place) mounted at that directory: on the
boards QEMU loads the images into PSRAM, which the firmware does not otherwise use; on unix
they are read from temporary files.

Files back: ``--out HOSTDIR=/out`` gives the script a writable directory ``/out``; what it
holds when the script ends is copied into HOSTDIR (created if missing). It is a littlefs RAM
disk of 1 MiB: in PSRAM on the boards, its files sent back over the UART; on the heap on
unix, its files then written to HOSTDIR. (Mounting HOSTDIR as ``vfs.VfsPosix(HOSTDIR)``
would be simpler on unix, but MicroPython 1.28's VfsPosix with a root builds both paths of
``rename`` in one buffer, so the atomic writes of ``save_checkpoint`` fail there.) Close what
you write: MicroPython does not flush a file it has not closed.

Running: the script's text goes to the board through MicroPython's raw REPL on the UART,
inside a small launcher that mounts the images, sets ``sys.argv = [script name, args...]``
and runs the script as ``__main__``. Its output is copied to stdout as it arrives; an
uncaught exception's traceback goes to stderr. The exit status is the script's: 0, the code
of ``sys.exit(code)``, or 1 after an uncaught exception; 124 when ``--timeout`` runs out.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ENV_FIRMWARE_DIR = "MICROTRAIN_MICROPYTHON_DIR"
ENV_SOURCE_DIR = "MICROTRAIN_SOURCE_DIR"  # as microtrain firmware uses it

# QEMU machine, firmware file, and where the ROMFS images go (the 16 MiB PSRAM of each board;
# MicroPython's code, data and heap live in its 4 MiB SSRAM1 at 0).
BOARDS = {
    "mps2-an500": {"machine": "mps2-an500", "file": "firmware.elf", "data_address": 0x60000000,
                   "data_bytes": 16 << 20},
    "mps2-an385": {"machine": "mps2-an385", "file": "firmware.elf", "data_address": 0x21000000,
                   "data_bytes": 16 << 20},
    "unix": {"machine": None, "file": "micropython"},
}
EXIT_TIMEOUT = 124

_RAW_REPL = b"\x01"       # Ctrl-A: enter the raw REPL
_RAW_PROMPT = b"raw REPL; CTRL-B to exit\r\n>"
_EXECUTE = b"\x04"        # Ctrl-D: run what was sent
_MARK = "\x1e"            # the launcher's record separator: output | traceback | status
_UNIX_HEAP = "16M"
_RAM_DISK_BYTES = 1 << 20
_BLOCK = 512


class RunnerError(Exception):
    """The script could not be run (no firmware, bad --data, QEMU missing)."""


# ------------------------------------------------------------------ ROMFS images


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
        if not os.path.isfile(host):
            raise RunnerError("--data %s: no such file" % host)
        parts = [p for p in guest.split("/") if p]
        if not guest.startswith("/") or len(parts) < 2 or ".." in parts or "." in parts:
            raise RunnerError("--data %s: the guest path must be absolute and inside a "
                              "directory, e.g. /data/%s" % (item, os.path.basename(host)))
        mounts.setdefault("/" + parts[0], {})["/".join(parts[1:])] = host
    return mounts


def romfs_images(mounts):
    """[(mount point, image bytes)] in mount order."""
    images = []
    for mount in sorted(mounts):
        files = {}
        for path, host in mounts[mount].items():
            with open(host, "rb") as handle:
                files[path] = handle.read()
        images.append((mount, build_romfs(files)))
    return images


# ------------------------------------------------------------------ the launcher


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
""" % (_BLOCK, _BLOCK, _BLOCK, _BLOCK)

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
    ``__main__`` namespace. On a board the launcher then prints, each after _MARK, the
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
    lines.append("sys.stdout.write(%r + _mt_trace + %r)" % (_MARK, _MARK))
    if out is not None:
        lines += _SEND_FILES.splitlines()
        lines.append("_mt_send(%r, '')" % out[0])
    lines += ["sys.stdout.write(%r + str(_mt_status) + '\\n')" % _MARK,
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


def _write_files(directory, files):
    for path, data in files.items():
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        target = os.path.join(directory, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)


def parse_out(item):
    """(host directory, guest directory) of ``--out HOSTDIR=/GUEST``."""
    host, sep, guest = item.partition("=")
    parts = [p for p in guest.split("/") if p]
    if not sep or not host or not guest.startswith("/") or len(parts) != 1:
        raise RunnerError("--out takes HOSTDIR=/GUESTDIR (a top-level guest directory, e.g. "
                          "out=/out), got %r" % item)
    return host, "/" + parts[0]


# ------------------------------------------------------------------ running


_BUILD_SCRIPT = os.path.join("tools", "micropython", "build_firmware.sh")


def source_dir():
    """microtrain's source tree (where tools/micropython/build_firmware.sh is):
    $MICROTRAIN_SOURCE_DIR, else found upwards from the current directory or this file;
    None for an installed package used elsewhere."""
    explicit = os.environ.get(ENV_SOURCE_DIR)
    if explicit:
        return os.path.abspath(explicit)
    for start in (os.getcwd(), HERE):
        path = os.path.abspath(start)
        while True:
            if os.path.exists(os.path.join(path, _BUILD_SCRIPT)):
                return path
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return None


def firmware_path(board, firmware_dir=None):
    """<dir>/<board>/firmware.elf (or micropython): ``firmware_dir``, else
    $MICROTRAIN_MICROPYTHON_DIR, else build/micropython of the source tree."""
    directory = firmware_dir or os.environ.get(ENV_FIRMWARE_DIR)
    if not directory:
        source = source_dir()
        if source is None:
            raise RunnerError("no firmware folder: set %s, pass --firmware, or run inside "
                              "microtrain's source tree" % ENV_FIRMWARE_DIR)
        directory = os.path.join(source, "build", "micropython")
    return os.path.join(directory, board, BOARDS[board]["file"])


def build_firmware(boards):
    """Run tools/micropython/build_firmware.sh for ``boards`` (incremental)."""
    source = source_dir()
    if source is None:
        raise RunnerError("--build needs microtrain's source tree (tools/micropython/"
                          "build_firmware.sh); set %s" % ENV_SOURCE_DIR)
    subprocess.run(["bash", os.path.join(source, _BUILD_SCRIPT)] + list(boards), check=True)


def _qemu_command(board, firmware, images, disk_bytes=0):
    """The QEMU command line, where each image lies, and the RAM disk's address."""
    info = BOARDS[board]
    command = ["qemu-system-arm", "-machine", info["machine"], "-nographic", "-monitor",
               "null", "-semihosting", "-serial", "stdio", "-kernel", firmware]
    address = info["data_address"]
    placed = []
    for path, size in images:
        command += ["-device", "loader,file=%s,addr=0x%x,force-raw=on" % (path, address)]
        placed.append((address, size))
        address += (size + 15) & ~15
    disk = (address + _BLOCK - 1) // _BLOCK * _BLOCK
    if disk + disk_bytes > info["data_address"] + info["data_bytes"]:
        raise RunnerError("the --data files need more than the %d MiB the board has for "
                          "them" % (info["data_bytes"] >> 20))
    return command, placed, disk


class _Reader(threading.Thread):
    """Collects a pipe's bytes; ``wait_for`` blocks until a marker has arrived."""

    def __init__(self, stream, echo=None):
        threading.Thread.__init__(self, daemon=True)
        self.stream = stream
        self.echo = echo
        self.data = bytearray()
        self.condition = threading.Condition()
        self.closed = False

    def run(self):
        while True:
            chunk = self.stream.read1(4096) if hasattr(self.stream, "read1") else \
                self.stream.read(1)
            with self.condition:
                if not chunk:
                    self.closed = True
                    self.condition.notify_all()
                    return
                self.data += chunk
                echo = self.echo  # set under this lock, after copying what came before
                self.condition.notify_all()
            if echo is not None:
                echo(chunk)

    def wait_for(self, marker, start, deadline):
        with self.condition:
            while True:
                index = self.data.find(marker, start)
                if index >= 0:
                    return index
                if self.closed or time.monotonic() > deadline:
                    return -1
                self.condition.wait(min(1.0, max(0.01, deadline - time.monotonic())))


class _ScriptOutput:
    """Splits the launcher's UART text: the script's output until _MARK (to ``out`` as it
    comes, CRLF made LF), then the traceback and the status."""

    def __init__(self, out):
        self.out = out
        self.pending = b""
        self.done = False

    def feed(self, chunk):
        if self.done:
            return
        text = (self.pending + chunk).replace(b"\r\n", b"\n")
        self.pending = b""
        mark = text.find(_MARK.encode())
        if mark >= 0:
            text, self.done = text[:mark], True
        elif text.endswith(b"\r"):
            text, self.pending = text[:-1], b"\r"
        if text:
            self.out(text)


def run_board(board, firmware, script_name, script_text, args, images, timeout, out=None,
              stdout=None, stderr=None, qemu_args=()):
    """Run on a QEMU board; returns the script's exit status. ``out``: None or (host
    directory, guest directory); ``stdout``/``stderr``: callables taking bytes (default:
    this process's); ``qemu_args``: more QEMU options (benchmarks add a -plugin)."""
    stdout = stdout or (lambda b: (sys.stdout.buffer.write(b), sys.stdout.buffer.flush()))
    stderr = stderr or (lambda b: (sys.stderr.buffer.write(b), sys.stderr.buffer.flush()))
    if shutil.which("qemu-system-arm") is None:
        raise RunnerError("qemu-system-arm is not installed (bash tools/setup_arm.sh)")
    with tempfile.TemporaryDirectory(prefix="microtrain-mp-") as scratch:
        files = []
        for index, (mount, image) in enumerate(images):
            path = os.path.join(scratch, "romfs%d.img" % index)
            with open(path, "wb") as handle:
                handle.write(image)
            files.append((path, len(image)))
        command, placed, disk = _qemu_command(board, firmware, files,
                                              _RAM_DISK_BYTES if out else 0)
        command += list(qemu_args)
        sources = [(mount, "uctypes.bytearray_at(0x%x, %d)" % place)
                   for (mount, _), place in zip(images, placed)]
        guest = None if out is None else \
            (out[1], "uctypes.bytearray_at(0x%x, %d)" % (disk, _RAM_DISK_BYTES))
        program = launcher(board, sources, script_name, script_text, args, guest).encode()
        deadline = time.monotonic() + timeout
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        output = _ScriptOutput(stdout)
        reader = _Reader(process.stdout)
        errors = _Reader(process.stderr)
        reader.start()
        errors.start()
        try:
            if reader.wait_for(b">>> ", 0, deadline) < 0:
                raise RunnerError("no MicroPython prompt from %s:\n%s%s" % (
                    board, reader.data.decode("utf-8", "replace"),
                    errors.data.decode("utf-8", "replace")))
            process.stdin.write(_RAW_REPL)
            process.stdin.flush()
            prompt = reader.wait_for(_RAW_PROMPT, 0, deadline)
            if prompt < 0:
                raise RunnerError("the raw REPL did not start on %s" % board)
            start = prompt + len(_RAW_PROMPT)
            process.stdin.write(program + _EXECUTE)
            process.stdin.flush()
            ok = reader.wait_for(b"OK", start, deadline)
            if ok < 0:
                raise RunnerError("the raw REPL did not accept the script:\n%s"
                                  % reader.data[start:].decode("utf-8", "replace"))
            # From here the UART carries the script's output: copy it as it comes.
            with reader.condition:
                reader.echo = output.feed
                already = bytes(reader.data[ok + 2:])
            output.feed(already)
            mark = reader.wait_for(_MARK.encode(), ok + 2, deadline)
            second = reader.wait_for(_MARK.encode(), mark + 1, deadline) if mark >= 0 else -1
            third = reader.wait_for(_MARK.encode(), second + 1, deadline) if second >= 0 \
                else -1
            end = reader.wait_for(b"\n", third + 1, deadline) if third >= 0 else -1
            if end < 0:
                if time.monotonic() > deadline:
                    stderr(b"microtrain micropython: timed out after %d s\n" % timeout)
                    return EXIT_TIMEOUT
                stderr(errors.data)
                stderr(b"microtrain micropython: the board stopped without an exit status "
                       b"(it exited with %s)\n" % str(process.poll()).encode())
                return 1
            trace = bytes(reader.data[mark + 1:second]).replace(b"\r\n", b"\n")
            status = int(bytes(reader.data[third + 1:end]).strip() or b"1")
            if trace:
                stderr(trace)
            if out is not None:
                _write_files(out[0], parse_files(
                    bytes(reader.data[second + 1:third]).decode("ascii", "replace")))
            try:
                process.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            return status
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


def run_unix(firmware, script_name, script_text, args, images, timeout, out=None,
             heap=_UNIX_HEAP):
    """Run on the unix port (output passes straight through); returns its exit status."""
    with tempfile.TemporaryDirectory(prefix="microtrain-mp-") as scratch:
        sources = []
        for index, (mount, image) in enumerate(images):
            path = os.path.join(scratch, "romfs%d.img" % index)
            with open(path, "wb") as handle:
                handle.write(image)
            sources.append((mount, "open(%r, 'rb').read()" % path))
        program = os.path.join(scratch, "launcher.py")
        guest = None if out is None else \
            (out[1], "bytearray(%d)" % _RAM_DISK_BYTES, os.path.abspath(out[0]))
        with open(program, "w") as handle:
            handle.write(launcher("unix", sources, script_name, script_text, args, guest))
        try:
            return subprocess.run([firmware, "-X", "heapsize=" + heap, program],
                                  timeout=timeout, stdin=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired:
            sys.stderr.write("microtrain micropython: timed out after %d s\n" % timeout)
            return EXIT_TIMEOUT


def run(board, script, data=(), args=(), firmware=None, timeout=600, out=None, **options):
    """Run ``script`` (a path) on ``board`` with the ``--data`` files (["HOST=GUEST"]) and
    ``out`` ("HOSTDIR=/GUESTDIR" or None); returns the script's exit status. ``options``
    go to run_board (stdout, stderr, qemu_args) on the QEMU boards."""
    if board not in BOARDS:
        raise RunnerError("unknown board %r (%s)" % (board, ", ".join(sorted(BOARDS))))
    firmware = firmware or firmware_path(board)
    if not os.path.exists(firmware):
        raise RunnerError("no firmware %s; build it with `bash tools/micropython/"
                          "build_firmware.sh %s` (or pass --build)" % (firmware, board))
    with open(script) as handle:
        text = handle.read()
    mounts = plan_mounts(data)
    if out is not None:
        out = parse_out(out)
        if out[1] in mounts:
            raise RunnerError("--out %s is also a --data directory" % out[1])
        os.makedirs(out[0], exist_ok=True)
    images = romfs_images(mounts)
    name = os.path.basename(script)
    if board == "unix":
        return run_unix(firmware, name, text, args, images, timeout, out)
    return run_board(board, firmware, name, text, args, images, timeout, out, **options)


def _parser():
    parser = argparse.ArgumentParser(
        prog="microtrain micropython",
        usage="microtrain micropython --board BOARD [options] script.py [--data HOST=GUEST "
              "...] [--out HOSTDIR=/GUESTDIR] [args ...]",
        description="Run a MicroPython script on microtrain's MicroPython firmware "
                    "(QEMU mps2-an500 / mps2-an385, or the unix port).")
    parser.add_argument("--board", required=True, choices=sorted(BOARDS))
    parser.add_argument("--data", action="append", default=[], metavar="HOST=GUEST",
                        help="put file HOST at GUEST (e.g. /data/x.bin) on the board; "
                             "before or after the script")
    parser.add_argument("--out", metavar="HOSTDIR=/GUESTDIR",
                        help="a writable directory for the script (e.g. out=/out); its files "
                             "are copied to HOSTDIR when the script ends")
    parser.add_argument("--firmware", help="the firmware file (default: build/micropython/"
                                           "<board>/ of the source tree, or $%s/<board>/)"
                                           % ENV_FIRMWARE_DIR)
    parser.add_argument("--build", action="store_true",
                        help="build or update the firmware first (tools/micropython/"
                             "build_firmware.sh)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds (default 600)")
    parser.add_argument("script", help="the script; what follows it, but --data, is its "
                                       "sys.argv[1:]")
    return parser


_TAKES_VALUE = ("--board", "--data", "--out", "--firmware", "--timeout")


def split_command_line(argv):
    """(runner options with the script, the script's arguments): the first word that is
    neither an option nor an option's value is the script; after it, ``--data``/``--out``
    (``X`` or ``=X``) are still the runner's and everything else is the script's."""
    ours, theirs = [], []
    i = 0
    while i < len(argv) and not ours[-1:] == ["<script>"]:
        item = argv[i]
        if item in _TAKES_VALUE and i + 1 < len(argv):
            ours += [item, argv[i + 1]]
            i += 2
        elif item.startswith("-"):
            ours.append(item)
            i += 1
        else:
            ours += [item, "<script>"]
            i += 1
    ours = [item for item in ours if item != "<script>"]
    while i < len(argv):
        if argv[i] in ("--data", "--out") and i + 1 < len(argv):
            ours += [argv[i], argv[i + 1]]
            i += 2
        elif argv[i].startswith(("--data=", "--out=")):
            ours.append(argv[i])
            i += 1
        else:
            theirs.append(argv[i])
            i += 1
    return ours, theirs


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, script_args = split_command_line(argv)
    args = _parser().parse_args(ours)
    try:
        if args.build and not args.firmware:
            build_firmware([args.board])
        return run(args.board, args.script, args.data, script_args, args.firmware,
                   args.timeout, args.out)
    except RunnerError as error:
        sys.stderr.write("microtrain micropython: %s\n" % error)
        return 2


if __name__ == "__main__":
    sys.exit(main())
