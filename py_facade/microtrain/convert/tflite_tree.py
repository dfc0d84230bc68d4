"""A whole ``.tflite`` / ``.circle`` file as a tree of plain Python values, edited and written
back: what an export needs when the file's structure changes (a tensor that gets a buffer of
its own, int8 weights that become float32, an int8 model whose trained head is rewritten).

``read(data)`` returns the root ``Table("Model")``; every table of the schema is a ``Table``
whose ``fields`` map the schema's field names (the generated code's spelling: ``Subgraphs``,
``Tensors``, ``ShapeSignature``, ``BuiltinOptions``) to

* a number (a scalar field, as the generated getter returns it, default included),
* ``bytes`` (a string), a numpy array (a vector of scalars, its dtype the schema's),
* a ``Table`` (a sub-table, or a union's value, whose type is the ``...Type`` field beside
  it), a list of ``Table`` or of ``bytes`` (a vector of tables or strings).

``write(model, identifier)`` serialises such a tree with the flatbuffers ``Builder`` and the
generated code's own ``Start``/``Add``/``End`` functions, so every field of the schema the
``tflite`` package knows is copied, whatever its type; nothing here knows an op or an
options table by name. A file that keeps its buffers past the flatbuffer (TensorFlow's
layout above 2 GB: ``Buffer.offset``) or in ``large_custom_options`` is refused.
"""

import sys

import numpy as np

from .budget import MAX_TABLES
from .graph import ConversionError
from .tflite_schema import schema as _tflite

# A union's enum where it is not named like the field (QuantizationParameters.details,
# DimensionMetadata's sparse index vectors).
_UNION_ENUMS = {"Details": "QuantizationDetails", "ArraySegments": "SparseIndexVector",
                "ArrayIndices": "SparseIndexVector"}
# Buffers' data: the schema's force_align 16 (the generated StartDataVector aligns to 1).
_VECTOR_ALIGNMENT = {("Buffer", "Data"): 16}
_FIELDS = {}
# A tree may read at most this many times the file's bytes (plus 64 KiB): what a file whose
# tables and vectors are each named once reads, with room for shared strings.
READ_FACTOR = 4


class Table:
    """One table of the schema: ``type`` (its name, "Tensor") and ``fields``."""

    __slots__ = ("type", "fields")

    def __init__(self, type_name, fields=None):
        self.type = type_name
        self.fields = dict(fields or {})

    def get(self, name, default=None):
        value = self.fields.get(name)
        return default if value is None else value

    def __getitem__(self, name):
        return self.fields[name]

    def __setitem__(self, name, value):
        self.fields[name] = value

    def __contains__(self, name):
        return name in self.fields

    def copy(self):
        """A copy of this table and every table below it (arrays copied too)."""
        fields = {}
        for name, value in self.fields.items():
            if isinstance(value, Table):
                value = value.copy()
            elif isinstance(value, list):
                value = [v.copy() if isinstance(v, Table) else v for v in value]
            elif isinstance(value, np.ndarray):
                value = value.copy()
            fields[name] = value
        return Table(self.type, fields)

    def __repr__(self):
        return "Table(%s, %s)" % (self.type, sorted(self.fields))


def _module(type_name):
    """The generated module of a schema type (the ``tflite`` package imports every one of them:
    its ``<Type>`` class names it)."""
    schema_class = getattr(_tflite(), type_name, None)
    module = sys.modules.get(getattr(schema_class, "__module__", ""))
    if module is None:
        raise ConversionError("the tflite schema package has no type %r" % type_name)
    return module


def _field_names(type_name):
    """The schema's fields of a table, from the generated ``<Type>Add<Field>`` functions."""
    if type_name not in _FIELDS:
        module = _module(type_name)
        prefix = type_name + "Add"
        _FIELDS[type_name] = sorted(name[len(prefix):] for name in dir(module)
                                    if name.startswith(prefix))
    return _FIELDS[type_name]


def _union_type_name(type_name, field, code):
    enum = getattr(_module(_UNION_ENUMS.get(field, field)), _UNION_ENUMS.get(field, field))
    for name, value in vars(enum).items():
        if value == code and not name.startswith("_"):
            return name
    raise ConversionError("%s.%s holds a union member %d that this schema does not know"
                          % (type_name, field, code))


# ---------------------------------------------------------------------------- reading


class _Walk:
    """What reading one file's tree has cost: tables, strings and vector bytes read. Tables
    and vectors may be shared (an offset is just a number), so a small file could name one
    large vector from every tensor; the walk refuses past ``limit`` bytes read."""

    def __init__(self, data_bytes):
        self.limit = READ_FACTOR * data_bytes + (64 << 10)
        self.read = 0

    def charge(self, count, path):
        self.read += count + 4
        if self.read > self.limit:
            raise ConversionError("the file's tables name the same data over and over (at %s "
                                  "its tree has read %d bytes, more than %d times the file): "
                                  "not a file a converter writes" % (path, self.read,
                                                                     READ_FACTOR))


def _read_field(obj, cls, type_name, field, path, walk):
    """The value of one field (see the module doc), or None when it is absent."""
    import flatbuffers
    if hasattr(cls, field + "AsNumpy"):          # a vector of scalars
        is_none = getattr(obj, field + "IsNone", None)
        array = getattr(obj, field + "AsNumpy")()
        if (is_none is not None and is_none()) or isinstance(array, int):
            return None
        walk.charge(array.nbytes, path)
        return np.array(array)
    if hasattr(cls, field + "Length"):           # a vector of tables or strings
        is_none = getattr(obj, field + "IsNone", None)
        if is_none is not None and is_none():
            return None
        getter = getattr(obj, field)
        length = getattr(obj, field + "Length")()
        if length > MAX_TABLES:
            raise ConversionError("%s holds %d entries; at most %d are read (the core runs "
                                  "256 ops of 256 tensors)" % (path, length, MAX_TABLES))
        items = []
        for j in range(length):
            item = getter(j)
            where = "%s[%d]" % (path, j)
            if isinstance(item, bytes):
                walk.charge(len(item), where)
                items.append(item)
            else:
                items.append(_read_table(item, where, walk))
        return items
    value = getattr(obj, field)()
    if value is None:
        return None
    if isinstance(value, flatbuffers.table.Table):   # a union's value
        member = _union_type_name(type_name, field, getattr(obj, field + "Type")())
        union = getattr(_module(member), member)()
        union.Init(value.Bytes, value.Pos)
        return _read_table(union, "%s(%s)" % (path, member), walk)
    if hasattr(value, "_tab"):
        return _read_table(value, path, walk)
    if isinstance(value, bytes):
        walk.charge(len(value), path)
    return value


def _read_table(obj, path, walk):
    type_name = type(obj).__name__
    cls = type(obj)
    walk.charge(0, path)
    fields = {}
    for field in _field_names(type_name):
        where = "%s.%s" % (path, field)
        try:
            value = _read_field(obj, cls, type_name, field, where, walk)
        except ConversionError:
            raise
        except Exception as error:  # noqa: BLE001 - flatbuffers' bounds errors on bad bytes
            raise ConversionError("the file is truncated or corrupt: %s lies outside it or "
                                  "is malformed (%s: %s)" % (where, type(error).__name__,
                                                             error)) from None
        if value is not None:
            fields[field] = value
    return Table(type_name, fields)


def read(data, writable=True):
    """The root ``Table("Model")`` of a .tflite/.circle file's bytes. Every field of every
    table is read, so a file this returns for has no offset, length or union outside the
    file; a failure names the field (``Model.Subgraphs[0].Tensors[3].Shape``). ``writable``:
    refuse a file ``write`` could not rewrite (buffers past the flatbuffer)."""
    tflite = _tflite()
    if len(data) < 8:
        raise ConversionError("the file is truncated or corrupt: %d bytes hold no "
                              "flatbuffer" % len(data))
    try:
        model = tflite.Model.GetRootAs(bytearray(data), 0)
    except Exception as error:  # noqa: BLE001 - flatbuffers' bounds errors on bad bytes
        raise ConversionError("the file is truncated or corrupt: its root table lies outside "
                              "it (%s: %s)" % (type(error).__name__, error)) from None
    tree = _read_table(model, "Model", _Walk(len(data)))
    for position, buffer in enumerate(tree.get("Buffers", []) if writable else ()):
        if buffer.get("Offset", 0) > 1:
            raise ConversionError("buffer %d lies past the flatbuffer (TensorFlow's layout of "
                                  "files above 2 GB), which export does not rewrite"
                                  % position)
    return tree


# ---------------------------------------------------------------------------- writing


def _write_vector_of_scalars(builder, type_name, field, array):
    module = _module(type_name)
    array = np.ascontiguousarray(array)
    payload = array.astype(array.dtype.newbyteorder("<")).tobytes()
    alignment = _VECTOR_ALIGNMENT.get((type_name, field))
    if alignment is None:
        getattr(module, "%sStart%sVector" % (type_name, field))(builder, array.size)
    else:
        builder.StartVector(array.dtype.itemsize, array.size, alignment)
    builder.head -= len(payload)
    builder.Bytes[builder.head:builder.head + len(payload)] = payload
    return builder.EndVector()


def _write_table(builder, table):
    module = _module(table.type)
    offsets = {}
    for field, value in table.fields.items():     # children first: flatbuffers' rule
        if isinstance(value, Table):
            offsets[field] = _write_table(builder, value)
        elif isinstance(value, bytes):
            offsets[field] = builder.CreateString(value)
        elif isinstance(value, np.ndarray):
            offsets[field] = _write_vector_of_scalars(builder, table.type, field, value)
        elif isinstance(value, list):
            children = [builder.CreateString(v) if isinstance(v, bytes)
                        else _write_table(builder, v) for v in value]
            getattr(module, "%sStart%sVector" % (table.type, field))(builder, len(children))
            for child in reversed(children):
                builder.PrependUOffsetTRelative(child)
            offsets[field] = builder.EndVector()
    getattr(module, table.type + "Start")(builder)
    for field, value in table.fields.items():
        getattr(module, "%sAdd%s" % (table.type, field))(builder, offsets.get(field, value))
    return getattr(module, table.type + "End")(builder)


def write(model, identifier):
    """The bytes of the file the ``Table("Model")`` tree describes."""
    import flatbuffers
    size = sum(b.get("Data", np.zeros(0)).size for b in model.get("Buffers", []))
    builder = flatbuffers.Builder(size + 65536)
    builder.Finish(_write_table(builder, model), file_identifier=identifier)
    return bytes(builder.Output())


# ---------------------------------------------------------------------------- editing


def tensor_name(tensor):
    return tensor.get("Name", b"").decode("utf-8", "replace")


def add_buffer(model, payload):
    """Append a buffer holding ``payload`` (bytes); returns its index."""
    buffers = model.fields.setdefault("Buffers", [])
    buffers.append(Table("Buffer", {"Data": np.frombuffer(bytes(payload), np.uint8).copy()}))
    return len(buffers) - 1


def prune(model):
    """Drop the tensors no operator, input, output or signature of a subgraph names and the
    buffers no tensor or metadata names (buffer 0 stays: the empty one converters write),
    renumbering what is left."""
    for graph in model.get("Subgraphs", []):
        used = set(int(t) for t in graph.get("Inputs", ())) | \
            set(int(t) for t in graph.get("Outputs", ()))
        for op in graph.get("Operators", []):
            for name in ("Inputs", "Outputs", "Intermediates"):
                used.update(int(t) for t in op.get(name, ()) if t >= 0)
        for signature in model.get("SignatureDefs", []):
            if signature.get("SubgraphIndex", 0) == model["Subgraphs"].index(graph):
                for name in ("Inputs", "Outputs"):
                    used.update(m.get("TensorIndex", 0) for m in signature.get(name, []))
        order = sorted(used)
        new_index = {old: new for new, old in enumerate(order)}
        graph["Tensors"] = [graph["Tensors"][t] for t in order]

        def renumber(values):
            return np.array([new_index[int(t)] if t >= 0 else -1 for t in values], np.int32)

        for name in ("Inputs", "Outputs"):
            if name in graph:
                graph[name] = renumber(graph[name])
        for op in graph.get("Operators", []):
            for name in ("Inputs", "Outputs", "Intermediates"):
                if name in op:
                    op[name] = renumber(op[name])
        for signature in model.get("SignatureDefs", []):
            if signature.get("SubgraphIndex", 0) == model["Subgraphs"].index(graph):
                for name in ("Inputs", "Outputs"):
                    for entry in signature.get(name, []):
                        entry["TensorIndex"] = new_index[entry.get("TensorIndex", 0)]
    buffers = model.get("Buffers", [])
    used = {0}
    for graph in model.get("Subgraphs", []):
        used.update(t.get("Buffer", 0) for t in graph.get("Tensors", []))
    used.update(m.get("Buffer", 0) for m in model.get("Metadata", []))
    used.update(int(b) for b in model.get("MetadataBuffer", ()))
    order = sorted(b for b in used if b < len(buffers))
    new_index = {old: new for new, old in enumerate(order)}
    model["Buffers"] = [buffers[b] for b in order]
    for graph in model.get("Subgraphs", []):
        for tensor in graph.get("Tensors", []):
            tensor["Buffer"] = new_index[tensor.get("Buffer", 0)]
    for metadata in model.get("Metadata", []):
        metadata["Buffer"] = new_index[metadata.get("Buffer", 0)]
    if "MetadataBuffer" in model:
        model["MetadataBuffer"] = np.array([new_index[int(b)] for b in model["MetadataBuffer"]],
                                           np.int32)
