"""An emulated board for a gateway SuperNode: QEMU running microtrain's MicroPython
firmware, its UART on a TCP socket on 127.0.0.1, serving ``board_agent``.

    board = EmulatedBoard("mps2-an500", x, y)   # the board's own rows
    board.start()                               # boots it; board.address: "tcp:127.0.0.1:P"
    ...                                         # a gateway SuperNode's node config:
    ...                                         #   board="tcp:127.0.0.1:P"
    board.stop()

The board is what a microcontroller on a serial line would be: its firmware is the
MicroPython build of ``tools/micropython/build_firmware.sh`` (the facade frozen, the core
as a native module); its "flash" is two ROMFS images QEMU loads into the board's PSRAM:
``/agent`` (``board_agent.py``, ``serial_protocol.py``, ``local_round.py``) and ``/data``
(its training rows). QEMU listens on the UART's socket (``-serial tcp:127.0.0.1:P,
server=on,wait=on``: the board starts when the first connection comes); ``start``
connects, enters MicroPython's raw REPL, mounts the images and starts the agent, checks it
answers a HELLO and disconnects. From then on the board waits for frames (asleep between
them), and each round's gateway connects, speaks ``serial_protocol`` and leaves; the
board keeps the model image across rounds.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

from ..micropython_runner.launcher import launcher
from ..micropython_runner.romfs import RunnerError, build_romfs
from ..micropython_runner.run import BOARDS, firmware_path, qemu_command
from . import serial_protocol as proto
from .device import row_files
from .processes import free_port

_HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_FILES = ("board_agent.py", "serial_protocol.py", "local_round.py")

_RAW_REPL = b"\r\x03\x03\x01"  # Enter, Ctrl-C twice (stop anything running), Ctrl-A
_RAW_PROMPT = b"raw REPL; CTRL-B to exit\r\n>"
_EXECUTE = b"\x04"

_AGENT_MAIN = """\
import sys
sys.path.append("/agent")
import board_agent
board_agent.BoardAgent(board_agent.UartLink(%d), "/data", %r).serve()
"""


class BoardStartError(RuntimeError):
    """The emulated board did not come up (no firmware, QEMU failed, no agent)."""


def agent_image():
    """The /agent ROMFS: the board's side of the protocol and the round it runs."""
    files = {}
    for name in AGENT_FILES:
        with open(os.path.join(_HERE, name), "rb") as handle:
            files[name] = handle.read()
    return build_romfs(files)


def emulated_boards():
    """The boards a gateway's emulated board can be: those of ``micropython_runner.run.
    BOARDS`` that QEMU runs (not the unix port), sorted."""
    return sorted(name for name, info in BOARDS.items() if info["machine"])


class EmulatedBoard:
    """One emulated board holding rows ``x``, ``y`` (see the module doc)."""

    def __init__(self, board, x, y, firmware=None, port=None, frame_timeout=5.0,
                 log_path=None, popen_options=None):
        if board not in emulated_boards():
            raise ValueError("board %r: an emulated gateway board is one of %s"
                             % (board, ", ".join(emulated_boards())))
        self.board = board
        self.firmware = firmware or firmware_path(board)
        self.files = row_files(x, y)
        self.port = port
        self.frame_timeout = float(frame_timeout)
        self.log_path = log_path
        self.popen_options = dict(popen_options or {})
        self.process = None
        self._scratch = None

    @property
    def address(self):
        return "tcp:127.0.0.1:%d" % self.port

    def start(self, timeout=120.0):
        """Start QEMU and the agent; returns the board's address."""
        if not os.path.exists(self.firmware):
            raise BoardStartError("no firmware %s; build it with `bash tools/micropython/"
                                  "build_firmware.sh %s`" % (self.firmware, self.board))
        qemu = BOARDS[self.board]["qemu"]
        if shutil.which(qemu) is None:
            raise BoardStartError("%s is not installed (bash tools/%s)" % (
                qemu, "setup_riscv.sh" if "riscv" in qemu else "setup_arm.sh"))
        deadline = time.monotonic() + timeout
        self._scratch = tempfile.mkdtemp(prefix="microtrain-board-")
        images, paths = [("/agent", agent_image()), ("/data", build_romfs(self.files))], []
        for index, (_, image) in enumerate(images):
            path = os.path.join(self._scratch, "romfs%d.img" % index)
            with open(path, "wb") as handle:
                handle.write(image)
            paths.append((path, len(image)))
        self.port = self.port or free_port()
        try:
            command, placed, _ = qemu_command(
                self.board, self.firmware, paths,
                serial="tcp:127.0.0.1:%d,server=on,wait=on" % self.port)
        except RunnerError as error:
            raise BoardStartError(str(error))
        log = open(self.log_path or os.devnull, "ab")
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, **self.popen_options)
        finally:
            log.close()
        sources = [(mount, "uctypes.bytearray_at(0x%x, %d)" % place)
                   for (mount, _), place in zip(images, placed)]
        program = launcher(self.board, sources, "board_agent_main.py",
                           _AGENT_MAIN % (int(self.frame_timeout * 1000), self.board), ())
        try:
            self._boot(program.encode(), deadline)
        except BaseException:
            self.stop()
            raise
        return self.address

    def _connect(self, deadline):
        while True:
            if self.process.poll() is not None:
                raise BoardStartError("QEMU for %s exited with status %s before its UART "
                                      "accepted a connection" % (self.board,
                                                                 self.process.returncode))
            try:
                return socket.create_connection(("127.0.0.1", self.port), timeout=1.0)
            except OSError:
                if time.monotonic() > deadline:
                    raise BoardStartError("the UART of %s at 127.0.0.1:%d never accepted a "
                                          "connection" % (self.board, self.port))
                time.sleep(0.1)

    def _boot(self, program, deadline):
        uart = self._connect(deadline)
        seen = bytearray()

        def receive(what):
            """More of the UART's bytes into ``seen`` (BoardStartError past the deadline)."""
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BoardStartError("%s: no %s on its UART (it said %r)"
                                          % (self.board, what, bytes(seen[-300:])))
                uart.settimeout(min(1.0, left))
                try:
                    chunk = uart.recv(4096)
                except socket.timeout:
                    continue
                if not chunk:
                    raise BoardStartError("%s closed its UART waiting for %s (it said %r)"
                                          % (self.board, what, bytes(seen[-300:])))
                seen.extend(chunk)
                return

        def expect(marker, what):
            while marker not in seen:
                receive(what)
            del seen[:seen.find(marker) + len(marker)]

        def read(n, first):
            while len(seen) < n:
                receive("READY from the agent")
            data = bytes(seen[:n])
            del seen[:n]
            return data

        try:
            expect(b">>> ", "MicroPython prompt")
            uart.sendall(_RAW_REPL)
            expect(_RAW_PROMPT, "raw REPL")
            uart.sendall(program + _EXECUTE)
            expect(b"OK", "raw REPL acceptance of the agent")
            uart.sendall(proto.encode(proto.HELLO, 1))
            try:
                kind, _, payload = proto.read_frame(read)
            except proto.ProtocolError as error:
                raise BoardStartError("%s: the agent's first frame is broken: %s"
                                      % (self.board, error))
            if kind != proto.READY:
                raise BoardStartError("%s: the agent answered a HELLO with %s: %r"
                                      % (self.board, proto.NAMES.get(kind, hex(kind)),
                                         bytes(payload[:300])))
        finally:
            uart.close()

    def stop(self, grace=2.0):
        """Stop QEMU (the board's power) and remove its files."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
