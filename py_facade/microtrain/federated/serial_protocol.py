"""The framed protocol between a gateway SuperNode and its board, over any byte stream.

Both ends use this file: the gateway (``microtrain.federated.gateway``, CPython) and the
board (``board_agent``, MicroPython on the microcontroller), so the frame has one
definition. It is written in the MicroPython-safe subset for that reason.

A frame, little-endian::

    offset  size  field
    0       2     magic b"MT"
    2       1     protocol version (VERSION)
    3       1     type (HELLO ... below)
    4       2     sequence: the request's number; a reply carries its request's
    6       4     n, the payload's length in bytes (at most the receiver's max_payload)
    10      n     payload
    10 + n  4     CRC-32 (IEEE 802.3, zlib's and binascii's) of bytes 0 .. 9 + n

A receiver skips whatever precedes a magic (line noise, the tail of a frame it gave up
on) and refuses a frame whose version, length or CRC is wrong (``ProtocolError``).

The conversation of one round (the gateway asks, the board answers)::

    HELLO                          -> READY   u32 crc32 of the model image it holds (0:
                                              none), u32 its max payload, then its name
                                              (UTF-8)
    SETUP   the .mtm image         -> LOADED  u32 crc32 of the image now held
    ROUND   u32 server round,      -> UPDATE  u32 num-examples, f64 the round's loss,
            u32 partition,                    u32 arena bytes, then the trained tensors
            u32 fault (0; FAULT_*),           (float32, session order, back to back)
            u32 n, n bytes of settings
            words (local_round's),
            then the global trained
            tensors (float32)
    any request                    -> FAILED  UTF-8 text: why it cannot answer (its
                                              step refused by the numeric guard, no
                                              image yet, a frame it rejected, ...)

Timeouts are the gateway's: a frame must arrive whole within the frame timeout of its
first byte, and a round's whole conversation within the round timeout. The board waits
for a frame's first byte as long as it takes (asleep), and gives up a frame whose bytes
stop for longer than the frame timeout (its sender died).
"""

import struct

try:
    from binascii import crc32 as _crc32
except ImportError:  # pragma: no cover - every build microtrain supports has binascii
    from zlib import crc32 as _crc32

MAGIC = b"MT"
VERSION = 1
HEADER_BYTES = 10
CRC_BYTES = 4
MAX_PAYLOAD = 1 << 20  # 1 MiB: a model image or a round's tensors fit with room to spare

# requests (gateway -> board)
HELLO = 0x01
SETUP = 0x02
ROUND = 0x03
# replies (board -> gateway)
READY = 0x81
LOADED = 0x82
UPDATE = 0x83
FAILED = 0xE0

NAMES = {HELLO: "HELLO", SETUP: "SETUP", ROUND: "ROUND", READY: "READY", LOADED: "LOADED",
         UPDATE: "UPDATE", FAILED: "FAILED"}
REPLY_TO = {HELLO: READY, SETUP: LOADED, ROUND: UPDATE}

# ROUND's fault field: a board made to fail, for tests and demonstrations
FAULT_NONE = 0
FAULT_HANG = 1   # the board stops answering (it spins forever, a wedged firmware)
FAULT_RESET = 2  # the board resets mid-round (its emulator ends)

_HEAD = "<BBHI"      # version, type, sequence, length (after the magic)
_ROUND = "<IIII"     # server round, partition, fault, settings bytes
_UPDATE = "<IdI"     # num-examples, loss, arena bytes
_READY = "<II"       # image crc, max payload


class ProtocolError(Exception):
    """A frame that is not one: wrong version, too long, a CRC mismatch."""


def crc32(data, value=0):
    return _crc32(data, value) & 0xFFFFFFFF


def encode(kind, sequence, payload=b""):
    """The bytes of one frame."""
    head = MAGIC + struct.pack(_HEAD, VERSION, kind, sequence & 0xFFFF, len(payload))
    return head + payload + struct.pack("<I", crc32(payload, crc32(head)))


def read_frame(read, max_payload=MAX_PAYLOAD):
    """(type, sequence, payload) of the next frame. ``read(n, first)`` returns exactly n
    bytes or raises: ``first`` is True while waiting for a frame to begin (the bytes
    before a magic are skipped) and False inside a frame (the frame timeout applies)."""
    byte = read(1, True)
    while True:
        if byte == MAGIC[:1]:
            byte = read(1, False)
            if byte == MAGIC[1:]:
                break
        else:
            byte = read(1, True)
    rest = read(HEADER_BYTES - 2, False)
    version, kind, sequence, length = struct.unpack(_HEAD, rest)
    if version != VERSION:
        raise ProtocolError("protocol version %d, this end speaks %d" % (version, VERSION))
    if length > max_payload:
        raise ProtocolError("a payload of %d bytes, more than the %d this end takes"
                            % (length, max_payload))
    payload = read(length, False) if length else b""
    (expected,) = struct.unpack("<I", read(CRC_BYTES, False))
    if crc32(payload, crc32(MAGIC + rest)) != expected:
        raise ProtocolError("CRC mismatch in a %s frame of %d bytes"
                            % (NAMES.get(kind, "type 0x%02x" % kind), length))
    return kind, sequence, payload


# ------------------------------------------------------------------ payloads


def ready_payload(image_crc, max_payload, name):
    return struct.pack(_READY, image_crc, max_payload) + name.encode()


def parse_ready(payload):
    """{"image_crc", "max_payload", "name"} of a READY payload."""
    if len(payload) < 8:
        raise ProtocolError("a READY payload of %d bytes (at least 8)" % len(payload))
    image_crc, max_payload = struct.unpack(_READY, payload[:8])
    return {"image_crc": image_crc, "max_payload": max_payload,
            "name": bytes(payload[8:]).decode()}


def round_payload(server_round, partition, fault, words, tensors):
    """A ROUND payload; ``words``: local_round.settings_to_words(settings); ``tensors``:
    the global trained tensors as float32 little-endian bytes, back to back."""
    text = " ".join(words).encode()
    return struct.pack(_ROUND, server_round, partition, fault, len(text)) + text + tensors


def parse_round(payload):
    """(server round, partition, fault, settings words, tensor bytes) of a ROUND."""
    if len(payload) < 16:
        raise ProtocolError("a ROUND payload of %d bytes (at least 16)" % len(payload))
    server_round, partition, fault, size = struct.unpack(_ROUND, payload[:16])
    if 16 + size > len(payload):
        raise ProtocolError("a ROUND's settings run past its payload")
    words = bytes(payload[16:16 + size]).decode().split()
    return server_round, partition, fault, words, payload[16 + size:]


def update_payload(examples, loss, arena, tensors):
    return struct.pack(_UPDATE, examples, loss, arena) + tensors


def parse_update(payload):
    """(num-examples, loss, arena bytes, tensor bytes) of an UPDATE."""
    if len(payload) < 16:
        raise ProtocolError("an UPDATE payload of %d bytes (at least 16)" % len(payload))
    examples, loss, arena = struct.unpack(_UPDATE, payload[:16])
    return examples, loss, arena, payload[16:]
