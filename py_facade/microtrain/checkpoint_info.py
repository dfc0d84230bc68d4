"""What a checkpoint holds, read from its headers (pure Python, MicroPython-safe).

    summary = read_summary(read, size)   # read(offset, count) -> bytes
    describe(summary)                    # lines for ``microtrain info CK``

The core alone validates and loads a checkpoint (``mt_checkpoint_load``); this module only
reads the fields of micro_core/docs/checkpoint_format.md that say what a checkpoint is, so
that a refused load can say which of model, optimizer and trained set differs, ``microtrain
eval`` can compile a session that fits one, and ``microtrain info`` can show one. It reads
the 80-byte header, every record's header (8 bytes; 12 in version 4, which adds the weights'
dtype and whether an int8 weight's float master copy follows; the values are skipped) and the
properties.

The summary: {"version", "bytes", "fingerprint" (the model's structure, a CRC-32),
"optimizer" (a name of ``config.OPTIMIZER_CODES``), "state_arrays" (0: no optimizer state,
1: SGD momentum, 2: Adam m and v), "reference" (FedProx's w_ref stored), "step", "epoch",
"learning_rate", "base_learning_rate", "records" [(tensor index, values)], "int8_records"
[(tensor index, "int8" | "int8 + master" | "int32")] (version 4: an int8 layer trained in
place), "properties"
[(name, value)], "crc_ok" (the trailer matches the bytes)}.
"""

import struct

from .backend import crc32
from .config import OPTIMIZER_CODES

MAGIC = b"MTCK"
HEADER_BYTES = 80
TRAILER_BYTES = 4
RECORD_HEADER_BYTES = 8
TYPED_RECORD_HEADER_BYTES = 12  # version 4
_DTYPE_NAMES = {2: "int32", 3: "int8"}  # mt_dtype; 1, f32, is every record of versions 1-3
PROPERTY_HEADER_BYTES = 8
_CHUNK = 4096


def is_checkpoint(data):
    """True when ``data`` (the first bytes of a file) starts like a checkpoint."""
    return bytes(data[:4]) == MAGIC


def _optimizer_name(code):
    for name, value in OPTIMIZER_CODES.items():
        if value == code:
            return name
    return "optimizer %d" % code


def read_summary(read, size):
    """The summary (see the module doc) of the checkpoint of ``size`` bytes that
    ``read(offset, count)`` returns; ValueError when the bytes are not a checkpoint this
    reader can walk (the core's load says more about a corrupt one)."""
    if size < HEADER_BYTES + TRAILER_BYTES:
        raise ValueError("%d bytes are too few for a checkpoint (at least %d)"
                         % (size, HEADER_BYTES + TRAILER_BYTES))
    header = read(0, HEADER_BYTES)
    if not is_checkpoint(header):
        raise ValueError("not a checkpoint (it does not start with %r)" % MAGIC)
    version, header_bytes, total, fingerprint, records, optimizer, state_arrays, \
        properties = struct.unpack("<HHIIIiII", header[4:32])
    step, epoch = struct.unpack("<qq", header[32:48])
    rate, base_rate = struct.unpack("<ff", header[48:56])
    reference = version >= 3 and struct.unpack("<I", header[72:76])[0] == 1
    if header_bytes != HEADER_BYTES or total != size or version not in (1, 2, 3, 4):
        raise ValueError("the checkpoint header is corrupt (version %d, %d header bytes, "
                         "%d total bytes of %d)" % (version, header_bytes, total, size))
    body = size - TRAILER_BYTES
    summary = {"version": version, "bytes": size, "fingerprint": fingerprint,
               "optimizer": _optimizer_name(optimizer), "state_arrays": state_arrays,
               "reference": reference, "step": step, "epoch": epoch, "learning_rate": rate,
               "base_learning_rate": base_rate if version > 1 else None, "records": [],
               "int8_records": [], "properties": []}
    offset = HEADER_BYTES
    record_header = TYPED_RECORD_HEADER_BYTES if version == 4 else RECORD_HEADER_BYTES
    arrays = state_arrays + (1 if reference else 0)
    for _ in range(records):
        if offset + record_header > body:
            raise ValueError("the checkpoint's records run past its end")
        fields = bytes(read(offset, record_header))
        index, count = struct.unpack("<II", fields[:8])
        dtype, master = (fields[8], fields[9]) if version == 4 else (1, 0)
        summary["records"].append((index, count))
        if dtype in _DTYPE_NAMES:
            summary["int8_records"].append(
                (index, _DTYPE_NAMES[dtype] + (" + master" if master else "")))
        # the weights at their width (int8 padded to 4 bytes), then 4 bytes an element of
        # the master copy, the optimizer state and the reference
        weights = (count + 3) // 4 * 4 if dtype == 3 else 4 * count
        offset += record_header + weights + 4 * count * (arrays + (1 if master else 0))
    for _ in range(properties):
        if offset + PROPERTY_HEADER_BYTES > body:
            raise ValueError("the checkpoint's properties run past its end")
        name_bytes, kind, _, value_bytes = struct.unpack("<HBBI",
                                                         read(offset, PROPERTY_HEADER_BYTES))
        data = read(offset + PROPERTY_HEADER_BYTES, name_bytes + value_bytes)
        name = bytes(data[:name_bytes]).decode("utf-8", "replace")
        value = bytes(data[name_bytes:])
        if kind == 1 and value_bytes == 8:
            value = struct.unpack("<q", value)[0]
        elif kind == 2 and value_bytes == 8:
            value = struct.unpack("<d", value)[0]
        else:
            value = value.decode("utf-8", "replace")
        summary["properties"].append((name, value))
        offset += PROPERTY_HEADER_BYTES + (name_bytes + value_bytes + 3) // 4 * 4
    crc = 0
    for start in range(0, body, _CHUNK):
        crc = crc32(read(start, min(_CHUNK, body - start)), crc)
    summary["crc_ok"] = offset == body and \
        struct.unpack("<I", read(body, TRAILER_BYTES))[0] == crc
    return summary


def tensors_text(pairs):
    """"t3 (512 values), t4 (16)" of [(tensor index, values)]."""
    if not pairs:
        return "none"
    parts = []
    for position, (index, count) in enumerate(pairs):
        parts.append("t%d (%d%s)" % (index, count, " values" if position == 0 else ""))
    return ", ".join(parts)


def _state_text(summary):
    if summary["state_arrays"] == 0:
        return "no optimizer state"
    return {1: "SGD momentum", 2: "Adam m and v"}.get(summary["state_arrays"],
                                                    "%d state arrays" % summary["state_arrays"])


def mismatch(summary, optimizer, trained, state_arrays, in_place=()):
    """Why a checkpoint does not fit a session that has ``optimizer`` (a name), trains
    ``trained`` [(tensor index, values)], of which ``in_place`` [(tensor index, "int8" |
    "int32")] in int8 layers trained in place, and keeps ``state_arrays`` per tensor: the
    differences, as text (the core compares the same fields, and the model fingerprint)."""
    reasons = []
    held = [(index, kind.split(" ")[0]) for index, kind in summary["int8_records"]]
    if summary["optimizer"] != optimizer:
        reasons.append("it was saved with optimizer %s, this session has %s"
                       % (summary["optimizer"], optimizer))
    if [tuple(r) for r in summary["records"]] != [tuple(t) for t in trained]:
        reasons.append("it holds trained tensors %s; this session trains %s"
                       % (tensors_text(summary["records"]), tensors_text(trained)))
    if not reasons and held != [tuple(t) for t in in_place]:
        reasons.append("it holds %s trained in place; this session trains %s in place"
                       % (", ".join("t%d %s" % t for t in held) or "no tensor",
                          ", ".join("t%d %s" % tuple(t) for t in in_place) or "no tensor"))
    if not reasons and summary["state_arrays"] not in (0, state_arrays):
        reasons.append("it stores %s; this %s session keeps %s"
                       % (_state_text(summary), optimizer,
                          "none" if not state_arrays else "%d arrays" % state_arrays))
    if not reasons:
        reasons.append("it was saved from another model architecture (structure "
                       "fingerprint 0x%08x)" % summary["fingerprint"])
    return "; ".join(reasons)


def describe(summary):
    """Lines of text for ``microtrain info CK``."""
    lines = ["checkpoint, format version %d, %d bytes, CRC %s"
             % (summary["version"], summary["bytes"], "valid" if summary["crc_ok"]
                else "WRONG (damaged)"),
             "model structure fingerprint 0x%08x" % summary["fingerprint"],
             "optimizer %s, %s%s" % (summary["optimizer"], _state_text(summary),
                                     ", FedProx reference" if summary["reference"] else ""),
             "step %d, epoch %d, learning rate %.7g%s"
             % (summary["step"], summary["epoch"], summary["learning_rate"],
                "" if summary["base_learning_rate"] is None else
                " (base %.7g)" % summary["base_learning_rate"]),
             "trained tensors: %s" % tensors_text(summary["records"])]
    if summary["int8_records"]:
        lines.append("trained in place: %s" % ", ".join(
            "t%d %s" % pair for pair in summary["int8_records"]))
    for name, value in summary["properties"]:
        lines.append("property %s = %r" % (name, value))
    return lines
