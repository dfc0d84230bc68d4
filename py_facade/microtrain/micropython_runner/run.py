"""Running a script on microtrain's MicroPython firmware: where the firmware is (and building
it), QEMU's command line for the mps2 and RISC-V virt boards, the raw-REPL conversation over
the UART, and
the unix port. The command line is microtrain.tools.micropython; the images it mounts come
from romfs.py, the program it sends from launcher.py.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from .. import _files
from .launcher import BLOCK, MARK, launcher, parse_files, parse_out, write_files
from .romfs import RunnerError, plan_mounts, romfs_images

HERE = os.path.dirname(os.path.abspath(__file__))
ENV_FIRMWARE_DIR = "MICROTRAIN_MICROPYTHON_DIR"
ENV_SOURCE_DIR = "MICROTRAIN_SOURCE_DIR"  # as microtrain firmware uses it

# The boards microtrain's MicroPython firmware runs on (tools/micropython/build_firmware.sh
# builds each; its --list is this list): every Cortex-M board the core runs on (the mps2 and
# mps3 presets of CMakePresets.json: Cortex-M3, M4F, M7, M33, M55), RISC-V virt, and
# MicroPython's unix port. Per board: the QEMU program, machine and options, the firmware
# file, and where the ROMFS images (and the --out RAM disk) go: 16 MiB of RAM the firmware
# does not otherwise use. That is the PSRAM of the mps2 boards (MicroPython's code, data and
# heap live in the 4 MiB SSRAM1: at 0, or at its secure alias 0x10000000 on the AN505), the
# DDR of the AN547 at its secure alias (code in the ITCM, data and heap in 4 MiB of SRAM at
# 0x31000000: tools/micropython/boards/MPS3_AN547), and on RISC-V virt 16 MiB of DRAM at
# 16 MiB (MicroPython's code, data, heap and stack take the first 12.1 MiB:
# tools/micropython/build_firmware.sh). MicroPython's exit is a semihosting call on all of
# them. Its VIRT_RV32 startup clears satp, a register of the supervisor mode that the SiFive
# E31 model lacks: it runs on QEMU's generic rv32 CPU (code for RV32IMAC).
BOARDS = {
    "mps2-an385": {"qemu": "qemu-system-arm", "machine": "mps2-an385", "options": [],
                   "file": "firmware.elf", "data_address": 0x21000000, "data_bytes": 16 << 20},
    "mps2-an386": {"qemu": "qemu-system-arm", "machine": "mps2-an386", "options": [],
                   "file": "firmware.elf", "data_address": 0x21000000, "data_bytes": 16 << 20},
    "mps2-an500": {"qemu": "qemu-system-arm", "machine": "mps2-an500", "options": [],
                   "file": "firmware.elf", "data_address": 0x60000000, "data_bytes": 16 << 20},
    "mps2-an505": {"qemu": "qemu-system-arm", "machine": "mps2-an505", "options": [],
                   "file": "firmware.elf", "data_address": 0x80000000, "data_bytes": 16 << 20},
    "mps3-an547": {"qemu": "qemu-system-arm", "machine": "mps3-an547", "options": [],
                   "file": "firmware.elf", "data_address": 0x70000000, "data_bytes": 16 << 20},
    "rv32imac-qemu": {"qemu": "qemu-system-riscv32", "machine": "virt",
                      "options": ["-bios", "none"], "file": "firmware.elf",
                      "data_address": 0x81000000, "data_bytes": 16 << 20},
    "unix": {"machine": None, "file": "micropython"},
}
EXIT_TIMEOUT = 124

_RAW_REPL = b"\x01"       # Ctrl-A: enter the raw REPL
_RAW_PROMPT = b"raw REPL; CTRL-B to exit\r\n>"
_EXECUTE = b"\x04"        # Ctrl-D: run what was sent
_UNIX_HEAP = "16M"
_RAM_DISK_BYTES = 1 << 20


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
    """Run tools/micropython/build_firmware.sh for ``boards`` (incremental); RunnerError when
    it fails (its own messages, printed above, say why: offline, no toolchain, ...)."""
    source = source_dir()
    if source is None:
        raise RunnerError("building the firmware needs microtrain's source tree (tools/"
                          "micropython/build_firmware.sh); set %s" % ENV_SOURCE_DIR)
    command = ["bash", os.path.join(source, _BUILD_SCRIPT)] + list(boards)
    status = subprocess.run(command).returncode
    if status != 0:
        raise RunnerError("building the MicroPython firmware for %s failed (build_firmware.sh "
                          "exited with status %d; its messages are above). Offline, give "
                          "MicroPython's source as MICROPYTHON_TARBALL=/path/to/"
                          "micropython-1.28.0.tar.gz" % (", ".join(boards), status))


def ensure_firmware(board, firmware=None, build=False):
    """The firmware file of ``board``: ``firmware`` if given, else the default one
    (``firmware_path``), which is built first when missing (or, with ``build``, brought up
    to date) if this is microtrain's source tree; RunnerError when there is none."""
    if board not in BOARDS:
        raise RunnerError("unknown board %r (%s)" % (board, ", ".join(sorted(BOARDS))))
    if firmware:
        if not os.path.exists(firmware):
            raise RunnerError("no firmware %s (tools/micropython/build_firmware.sh %s builds "
                              "microtrain's)" % (firmware, board))
        return firmware
    path = firmware_path(board)
    explicit = os.environ.get(ENV_FIRMWARE_DIR)
    if build or (not os.path.exists(path) and not explicit and source_dir() is not None):
        if not os.path.exists(path):
            sys.stderr.write("microtrain micropython: building the firmware of %s first (once; "
                             "a minute or two)\n" % board)
            sys.stderr.flush()
        build_firmware([board])
    if not os.path.exists(path):
        raise RunnerError("no firmware %s; build it with `bash tools/micropython/"
                          "build_firmware.sh %s` in microtrain's source tree" % (path, board))
    return path


def qemu_command(board, firmware, images, disk_bytes=0, serial="stdio"):
    """The QEMU command line, where each image lies, and the RAM disk's address.
    ``images``: [(path, size)] loaded back to back into the board's PSRAM; ``serial``:
    QEMU's -serial backend of the UART (stdio, or e.g. tcp:127.0.0.1:PORT,server=on)."""
    info = BOARDS[board]
    command = [info["qemu"], "-machine", info["machine"]] + info["options"] + [
        "-nographic", "-monitor", "null", "-semihosting", "-serial", serial, "-kernel", firmware]
    address = info["data_address"]
    placed = []
    for path, size in images:
        command += ["-device", "loader,file=%s,addr=0x%x,force-raw=on" % (path, address)]
        placed.append((address, size))
        address += (size + 15) & ~15
    disk = (address + BLOCK - 1) // BLOCK * BLOCK
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
    """Splits the launcher's UART text: the script's output until MARK (to ``out`` as it
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
        mark = text.find(MARK.encode())
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
    program = BOARDS[board]["qemu"]
    if shutil.which(program) is None:
        raise RunnerError("%s is not installed (bash tools/%s)" % (
            program, "setup_riscv.sh" if program.endswith("riscv32") else "setup_arm.sh"))
    with tempfile.TemporaryDirectory(prefix="microtrain-mp-") as scratch:
        files = _write_images(scratch, images)
        command, placed, disk = qemu_command(board, firmware, files,
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
            mark = reader.wait_for(MARK.encode(), ok + 2, deadline)
            second = reader.wait_for(MARK.encode(), mark + 1, deadline) if mark >= 0 else -1
            third = reader.wait_for(MARK.encode(), second + 1, deadline) if second >= 0 \
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
                write_files(out[0], parse_files(
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


def _write_images(scratch, images):
    """Each (mount, bytes) image's bytes in a file of the scratch folder: [(path, size)]"""
    files = []
    for index, (_, image) in enumerate(images):
        path = os.path.join(scratch, "romfs%d.img" % index)
        with open(path, "wb") as handle:
            handle.write(image)
        files.append((path, len(image)))
    return files


def run_unix(firmware, script_name, script_text, args, images, timeout, out=None,
             heap=_UNIX_HEAP):
    """Run on the unix port (output passes straight through); returns its exit status."""
    with tempfile.TemporaryDirectory(prefix="microtrain-mp-") as scratch:
        sources = [(mount, "open(%r, 'rb').read()" % path)
                   for (mount, _), (path, _) in zip(images, _write_images(scratch, images))]
        program = os.path.join(scratch, "launcher.py")
        # MicroPython copies the RAM disk into a folder of ours; the host then writes those
        # files into the user's folder as every output is written (microtrain._files)
        copied = os.path.join(scratch, "out")
        guest = None
        if out is not None:
            os.mkdir(copied)
            guest = (out[1], "bytearray(%d)" % _RAM_DISK_BYTES, copied)
        with open(program, "w") as handle:
            handle.write(launcher("unix", sources, script_name, script_text, args, guest))
        try:
            status = subprocess.run([firmware, "-X", "heapsize=" + heap, program],
                                    timeout=timeout, stdin=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired:
            sys.stderr.write("microtrain micropython: timed out after %d s\n" % timeout)
            return EXIT_TIMEOUT
        if out is not None:
            write_files(out[0], _files_below(copied))
        return status


def _files_below(directory):
    """{relative path: bytes} of the regular files below ``directory`` (our own folder)."""
    files = {}
    for folder, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(folder, name)
            files[os.path.relpath(path, directory).replace(os.sep, "/")] = \
                _files.read_file(path, "a file the script wrote")
    return files


# A script is sent as text inside the launcher and compiled on the board (2 MiB of heap).
_SCRIPT_BYTES = 1 << 20


def _read_script(path, what):
    return _files.read_file(path, what, limit=_SCRIPT_BYTES)


def _regular(path, what, reader=_files.require_regular):
    """``reader(path, what)`` (microtrain._files: a regular file only, refused before a
    byte is read), its refusal a RunnerError."""
    try:
        return reader(path, what)
    except _files.NotARegularFileError as error:
        raise RunnerError(error.strerror)
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise RunnerError("%s %s: %s" % (what, path, reason))


def run(board, script, data=(), args=(), firmware=None, timeout=600, out=None, **options):
    """Run ``script`` (a path) on ``board`` with the ``--data`` files (["HOST=GUEST"]) and
    ``out`` ("HOSTDIR=/GUESTDIR" or None); returns the script's exit status. ``options``
    go to run_board (stdout, stderr, qemu_args) on the QEMU boards. A board's missing
    default firmware is built first (``ensure_firmware``)."""
    if board not in BOARDS:
        raise RunnerError("unknown board %r (%s)" % (board, ", ".join(sorted(BOARDS))))
    if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
        raise RunnerError("timeout must be a positive number of seconds, got %r" % (timeout,))
    text = _regular(script, "the script", _read_script)
    try:
        text = text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RunnerError("the script %s is not UTF-8 text (%s)" % (script, error))
    mounts = plan_mounts(data)
    firmware = ensure_firmware(board, firmware)
    _regular(firmware, "the firmware")
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
