"""The gateway's side of a board in the fleet: one round over a byte stream to the board.

A gateway SuperNode is a Flower SuperNode whose node config names a board
(``board="tcp:127.0.0.1:5555"``, or a serial device such as ``board="/dev/ttyACM0"`` or a
pty): its ``ClientApp`` (``microtrain.federated.client``) hands each train message's
round to ``board_round``, which speaks ``serial_protocol`` to the board
(``board_agent`` on it) and returns the board's update as the client's reply.

    update, logs, examples = BoardLink("tcp:127.0.0.1:5555", frame_timeout=5,
                                       round_timeout=120).run_round(image, settings,
                                       weights, server_round, partition)

Timeouts: a frame must arrive whole within ``frame_timeout`` seconds of its first byte,
and the whole round (connect, HELLO, SETUP when the board lacks the image, ROUND and its
UPDATE) within ``round_timeout``; a board that stops answering, whose link closes (it
reset) or that cannot be reached raises ``BoardError`` — the client then replies with an
error, which the server drops, and the round goes on without it. A frame the board
rejected (a CRC mismatch on the wire) is sent again, twice at most. Replies carry their
request's sequence number (a random start per connection), so a late reply of an earlier,
abandoned round is skipped, never taken for this round's.
"""

import errno
import os
import random
import select
import socket
import time

import numpy as np

from . import local_round
from . import serial_protocol as proto

NODE_CONFIG_BOARD = "board"                  # the board's address, in a node's config
NODE_CONFIG_FRAME_TIMEOUT = "frame-timeout"  # seconds
NODE_CONFIG_ROUND_TIMEOUT = "board-timeout"  # seconds
DEFAULT_FRAME_TIMEOUT = 5.0
DEFAULT_ROUND_TIMEOUT = 300.0
RESENDS = 2
FAULTS = {"hang": proto.FAULT_HANG, "reset": proto.FAULT_RESET}


class BoardError(RuntimeError):
    """The board gave no update: unreachable, silent past a timeout, its link closed, a
    broken frame, or it answered FAILED (its reason in the message)."""


class BoardTimeout(BoardError):
    """The board did not answer within a timeout."""


class _Stream:
    """A byte stream to a board, read and written against deadlines: a TCP socket
    (``tcp:HOST:PORT``) or a character device (a serial port, a pty) in raw mode."""

    def __init__(self, address, deadline):
        self.address = address
        self.socket = None
        if address.startswith("tcp:"):
            host, _, port = address[4:].rpartition(":")
            if not host or not port.isdigit():
                raise BoardError("board address %r: use tcp:HOST:PORT or a device path"
                                 % address)
            try:
                self.socket = socket.create_connection(
                    (host, int(port)), timeout=max(0.1, deadline - time.monotonic()))
            except OSError as error:
                raise BoardError("cannot reach the board at %s: %s" % (address, error))
            self.socket.setblocking(False)
            self.fd = self.socket.fileno()
        else:
            try:
                self.fd = os.open(address, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
            except OSError as error:
                raise BoardError("cannot open the board's device %s: %s" % (address, error))
            _raw_mode(self.fd)

    def close(self):
        if self.socket is not None:
            self.socket.close()
        else:
            os.close(self.fd)

    def _wait(self, readable, until, what):
        left = until - time.monotonic()
        if left <= 0:
            raise BoardTimeout(what)
        ready = select.select([self.fd] if readable else [], [] if readable else [self.fd],
                              [], left)
        if not any(ready):
            raise BoardTimeout(what)

    def write(self, data, deadline, what):
        view = memoryview(data)
        while view:
            self._wait(False, deadline, what)
            try:
                sent = self.socket.send(view) if self.socket else os.write(self.fd, view)
            except BlockingIOError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                raise self.closed()
            except OSError as error:
                raise BoardError("the link to the board at %s failed: %s"
                                 % (self.address, error))
            view = view[sent:]

    def read(self, n, until, what):
        out = bytearray()
        while len(out) < n:
            self._wait(True, until, what)
            try:
                chunk = self.socket.recv(n - len(out)) if self.socket \
                    else os.read(self.fd, n - len(out))
            except BlockingIOError:
                continue
            except ConnectionResetError:
                chunk = b""
            except OSError as error:
                if error.errno != errno.EIO:  # EIO: a pty whose other end closed
                    raise BoardError("the link to the board at %s failed: %s"
                                     % (self.address, error))
                chunk = b""
            if not chunk:
                raise self.closed()
            out += chunk
        return bytes(out)

    def closed(self):
        return BoardError("the board's link at %s closed (the board reset or its emulator "
                          "ended)" % self.address)


def _raw_mode(fd):
    import termios
    import tty
    try:
        tty.setraw(fd)
    except termios.error:
        pass  # not a terminal (a FIFO in a test): bytes pass unchanged anyway


class BoardLink:
    """Rounds on one board at ``address`` (see the module doc)."""

    def __init__(self, address, frame_timeout=DEFAULT_FRAME_TIMEOUT,
                 round_timeout=DEFAULT_ROUND_TIMEOUT):
        if not frame_timeout > 0 or not round_timeout > 0:
            raise ValueError("the board's timeouts must be positive, got frame %r, round %r"
                             % (frame_timeout, round_timeout))
        self.address = address
        self.frame_timeout = float(frame_timeout)
        self.round_timeout = float(round_timeout)

    def run_round(self, image, settings, trained_weights, server_round, partition,
                  fault=None):
        """One round on the board: (update: float32 arrays shaped like
        ``trained_weights``, logs {"loss", "arena"}, num-examples)."""
        if fault is not None and fault not in FAULTS:
            raise ValueError("board fault %r: choose %s" % (fault, ", ".join(FAULTS)))
        deadline = time.monotonic() + self.round_timeout
        stream = _Stream(self.address, deadline)
        try:
            self._sequence = random.getrandbits(16)
            ready = proto.parse_ready(self._ask(stream, proto.HELLO, b"", deadline))
            image = bytes(image)
            if ready["image_crc"] != proto.crc32(image):
                if len(image) > ready["max_payload"]:
                    raise BoardError("the model image (%d bytes) exceeds the board's frames "
                                     "(%d bytes)" % (len(image), ready["max_payload"]))
                loaded = proto.parse_ready(self._ask(stream, proto.SETUP, image, deadline))
                if loaded["image_crc"] != proto.crc32(image):
                    raise BoardError("the board holds another image after SETUP")
            tensors = b"".join(np.ascontiguousarray(w, dtype="<f4").tobytes()
                               for w in trained_weights)
            payload = proto.round_payload(int(server_round), int(partition),
                                          FAULTS.get(fault, proto.FAULT_NONE),
                                          local_round.settings_to_words(settings), tensors)
            examples, loss, arena, blob = proto.parse_update(
                self._ask(stream, proto.ROUND, payload, deadline))
        finally:
            stream.close()
        values = np.frombuffer(blob, dtype="<f4")
        update, start = [], 0
        for weight in trained_weights:
            shape = np.shape(weight)
            count = int(np.prod(shape))
            update.append(values[start:start + count].reshape(shape).astype(np.float32))
            start += count
        if start != values.size:
            raise BoardError("the board sent %d values, the update has %d"
                             % (values.size, start))
        return update, {"loss": float(loss), "arena": int(arena)}, int(examples)

    def _ask(self, stream, kind, payload, deadline):
        """Send a request and return its reply's payload (FAILED raises BoardError)."""
        name = proto.NAMES[kind]
        for attempt in range(RESENDS + 1):
            self._sequence = (self._sequence + 1) & 0xFFFF or 1
            sequence = self._sequence
            stream.write(proto.encode(kind, sequence, payload), deadline,
                         "the board at %s took no %s within the round's %g s"
                         % (self.address, name, self.round_timeout))
            while True:
                reply_kind, reply_sequence, reply = proto.read_frame(
                    self._reader(stream, deadline, name), proto.MAX_PAYLOAD)
                if reply_kind == proto.FAILED and reply_sequence == 0:
                    break  # it rejected a frame of ours: send again
                if reply_sequence != sequence:
                    continue  # a late reply to an abandoned request
                if reply_kind == proto.FAILED:
                    raise BoardError("the board failed the %s: %s"
                                     % (name, bytes(reply).decode("utf-8", "replace")))
                if reply_kind != proto.REPLY_TO[kind]:
                    raise BoardError("the board answered a %s with a %s"
                                     % (name, proto.NAMES.get(reply_kind, hex(reply_kind))))
                return reply
        raise BoardError("the board rejected the %s %d times: %s"
                         % (name, RESENDS + 1, bytes(reply).decode("utf-8", "replace")))

    def _reader(self, stream, deadline, name):
        started = [0.0]

        def read(n, first):
            if first:
                data = stream.read(n, deadline, "the board at %s did not answer the %s "
                                   "within the round's %g s"
                                   % (self.address, name, self.round_timeout))
                started[0] = time.monotonic()
                return data
            return stream.read(n, min(deadline, started[0] + self.frame_timeout),
                               "a frame from the board at %s stopped for more than the "
                               "frame timeout (%g s)" % (self.address, self.frame_timeout))
        return read


def board_round(task, address, partition, trained_weights, server_round, settings,
                frame_timeout=DEFAULT_FRAME_TIMEOUT, round_timeout=DEFAULT_ROUND_TIMEOUT):
    """A fleet client's round on its board: (update, logs, num_examples). The task's
    fault for the partition, "hang" or "reset", is sent to the board."""
    fault = task.faults.get(int(partition))
    return BoardLink(address, frame_timeout, round_timeout).run_round(
        task.model, settings, trained_weights, server_round, partition,
        fault if fault in FAULTS else None)


def node_board(node_config):
    """(address, frame timeout, round timeout) of a gateway's node config, or None."""
    address = node_config.get(NODE_CONFIG_BOARD) if node_config else None
    if not address:
        return None
    return (str(address),
            float(node_config.get(NODE_CONFIG_FRAME_TIMEOUT, DEFAULT_FRAME_TIMEOUT)),
            float(node_config.get(NODE_CONFIG_ROUND_TIMEOUT, DEFAULT_ROUND_TIMEOUT)))
