"""The board's side of the gateway protocol: a loop that answers frames on its UART.

A microcontroller in a fleet runs this file (MicroPython; ``microtrain.federated.
board_emulator`` puts it, ``local_round.py`` and ``serial_protocol.py`` on an emulated
board's ROMFS and starts it): it holds its own training rows (``x.bin``, ``y.bin`` in
``data_dir``: float32 rows, and one-hot float32 rows or int32 labels, as
``microtrain.federated.device`` writes them), keeps the model image the gateway sent once,
and answers each ROUND with the update of ``local_round.train_round`` — the very procedure
the simulated client runs on the host, in a fresh session per round (so no optimizer state
crosses rounds, as on the host), hence the same bits.

    import board_agent
    board_agent.BoardAgent(board_agent.UartLink(), "/data", "mps2-an500").serve()

Between frames the board sleeps (WFI until the next tick) instead of spinning on its UART,
so an idle board costs its emulator almost nothing. It is written in the MicroPython-safe
subset; on CPython (tests) it runs over any link with ``read(n, first)`` and ``write``.
"""

import sys
from array import array

try:  # CPython: microtrain.federated.board_agent
    from . import local_round
    from . import serial_protocol as proto
except (ImportError, NotImplementedError):  # the board: top-level modules of its ROMFS
    import local_round
    import serial_protocol as proto

from microtrain import lite
from microtrain._shapes import element_count as _count

try:  # CPython (tests): its sessions take shaped arrays
    import numpy as _numpy
except ImportError:  # MicroPython: flat arrays of the values
    _numpy = None

SPARSE_LOSSES = ("sparse_categorical_crossentropy", "scce")


def _values(data, typecode):
    """An array of the raw little-endian values in ``data``."""
    values = array(typecode)
    if hasattr(values, "frombytes"):  # CPython
        values.frombytes(bytes(data))
        return values
    return array(typecode, data)      # MicroPython: a bytes initializer is the raw values


def _rows(values, width):
    if width == 0:
        return list(values)
    return [values[i:i + width] for i in range(0, len(values), width)]


def _tensor(values, shape):
    if _numpy is None:
        return values
    return _numpy.asarray(values, dtype=_numpy.float32).reshape(shape)


def _float_bytes(weight):
    if hasattr(weight, "astype"):  # numpy on CPython
        return weight.astype("<f4").tobytes()
    return bytes(array("f", weight))


def _make_idle():
    """Sleep until the next interrupt (the 1 ms tick): WFI on a Cortex-M, else 1 ms."""
    try:
        import micropython

        @micropython.asm_thumb
        def wait_for_interrupt():
            wfi()  # noqa: F821 - an instruction of MicroPython's inline assembler

        return wait_for_interrupt
    except (ImportError, AttributeError, SyntaxError, NotImplementedError):
        import time
        return lambda: time.sleep(0.001)


class UartLink:
    """The board's UART as MicroPython's stdin and stdout, raw bytes: Ctrl-C is data, a
    frame's bytes must come within ``frame_timeout_ms`` of its first."""

    def __init__(self, frame_timeout_ms=5000):
        import micropython
        import select
        import time
        micropython.kbd_intr(-1)  # 0x03 in a payload is data, not a KeyboardInterrupt
        self._time = time
        self._poll = select.poll()
        self._poll.register(sys.stdin, select.POLLIN)
        self._stdin = sys.stdin.buffer
        self._stdout = sys.stdout.buffer
        self._frame_timeout = int(frame_timeout_ms)
        self._frame_start = 0
        self.idle = _make_idle()

    def read(self, n, first):
        out = bytearray()
        time = self._time
        while len(out) < n:
            if self._poll.poll(0):
                out += self._stdin.read(1)
                if first:
                    self._frame_start = time.ticks_ms()
                    first = False
            elif first:
                self.idle()  # asleep until a frame begins
            elif time.ticks_diff(time.ticks_ms(), self._frame_start) > self._frame_timeout:
                raise proto.ProtocolError("a frame stopped for more than %d ms"
                                          % self._frame_timeout)
        return bytes(out)

    def write(self, data):
        self._stdout.write(data)


class BoardAgent:
    """Answers the gateway's frames (``serial_protocol``) with rounds of ``local_round``."""

    def __init__(self, link, data_dir="/data", name="board",
                 max_payload=proto.MAX_PAYLOAD):
        self.link = link
        self.data_dir = data_dir
        self.name = name
        self.max_payload = max_payload
        self.image = None
        self.image_crc = 0
        self._rows_key = None
        self._rows_cache = None

    def serve(self, frames=-1):
        """Answer frames forever (or ``frames`` of them)."""
        while frames != 0:
            frames -= 1
            try:
                kind, sequence, payload = proto.read_frame(self.link.read, self.max_payload)
            except proto.ProtocolError as error:
                # sequence 0: "your last frame"; the gateway sends it again
                self.link.write(proto.encode(proto.FAILED, 0,
                                             ("frame rejected: %s" % error).encode()))
                continue
            try:
                reply_kind, reply = self.answer(kind, payload)
            except Exception as error:  # noqa: B902 - every failure is a FAILED reply
                reply_kind = proto.FAILED
                reply = ("%s: %s" % (type(error).__name__, error)).encode()
            self.link.write(proto.encode(reply_kind, sequence, reply))

    def answer(self, kind, payload):
        if kind == proto.HELLO:
            return proto.READY, proto.ready_payload(self.image_crc, self.max_payload,
                                                    self.name)
        if kind == proto.SETUP:
            self.image = bytes(payload)
            self.image_crc = proto.crc32(self.image)
            return proto.LOADED, proto.ready_payload(self.image_crc, self.max_payload,
                                                     self.name)
        if kind == proto.ROUND:
            return proto.UPDATE, self.round(payload)
        return proto.FAILED, ("unknown request type 0x%02x" % kind).encode()

    def rows(self, info, settings):
        """The board's (x, y) rows, shaped for the model's input and loss (read once)."""
        width = _count(info["inputs"][0][1])
        sparse = settings["loss"] in SPARSE_LOSSES
        out = _count(info["outputs"][0][1])
        key = (width, sparse, out)
        if self._rows_key != key:
            with open(self.data_dir + "/x.bin", "rb") as handle:
                x = _rows(_values(handle.read(), "f"), width)
            with open(self.data_dir + "/y.bin", "rb") as handle:
                y = _rows(_values(handle.read(), "i" if sparse else "f"), 0 if sparse else out)
            if len(x) != len(y):
                raise ValueError("the board holds %d input rows and %d targets"
                                 % (len(x), len(y)))
            self._rows_key, self._rows_cache = key, (x, y)
        return self._rows_cache

    def round(self, payload):
        server_round, partition, fault, words, tensors = proto.parse_round(payload)
        if self.image is None:
            raise ValueError("no model image: send SETUP first")
        settings = local_round.settings_from_words(words)
        if fault == proto.FAULT_HANG:
            while True:  # a wedged firmware: it never answers again
                self.link.idle()
        with lite.Session(self.image) as session:
            local_round.compile_session(session, settings)
            info = session.model_description()
            values = _values(tensors, "f")
            shapes = [info["params"][position][1]
                      for position in local_round.trained_positions(session)]
            total = 0
            for shape in shapes:
                total += _count(shape)
            if total != len(values):
                raise ValueError("the ROUND carries %d values, the trained tensors are %d"
                                 % (len(values), total))
            weights, start = [], 0
            for shape in shapes:
                weights.append(_tensor(values[start:start + _count(shape)], shape))
                start += _count(shape)
            x, y = self.rows(info, settings)
            if fault == proto.FAULT_RESET:
                import machine
                machine.reset()  # the board goes down mid-round
            update, logs = local_round.train_round(session, weights, x, y, settings,
                                                   server_round, partition)
            arena = session.memory_plan()["total_bytes"]
        blob = b"".join([_float_bytes(weight) for weight in update])
        return proto.update_payload(len(x), float(logs["loss"]), arena, blob)
