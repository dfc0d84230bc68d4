"""What the importers share: the error they raise, the values they track and the builder
that turns a foreign graph into a ``.mtm`` image op by op.

A ``Value`` is one tensor of the source graph as the converter sees it:

* a constant (``const`` holds its numpy data; it becomes a CONST tensor only when an op
  takes it as a weight), or
* an activation with a core tensor ``index`` whose ``shape`` is the source's logical
  shape of one sample (no batch) and ``core_shape`` the shape the core holds. ``perm``
  says how the two orders relate when they differ (ONNX's NCHW held as NHWC):
  ``core.ravel()[i] == logical.ravel()[perm[i]]``; None means the same order. The
  importer moves elements (a TRANSPOSE op) only where an op needs the other order.

Every weight the builder writes records its ``Origin``: which source tensor it came from
and the steps (transpose, column permutation, scale, reshape) that made the core's array,
so the exporters can write trained weights back into the original file. Folds (a
BatchNorm, a Mul or an Add by a constant merged into the weight before it) are recorded
too: export removes or neutralises them, since their effect now lives in the weights.
"""

import math
import struct

import numpy as np

from .. import ops as _ops
from ..nn import image as _image

# A layer of several source ops is named after the one with weights, else not a reshape.
_RESHAPES = ("RESHAPE", "EXPAND_DIMS", "SQUEEZE")

# Shape arithmetic runs with this stand-in for the batch dimension, so a Reshape can
# tell "the batch" (TensorFlow's Shape -> StridedSlice -> Pack, ONNX's Shape -> Gather ->
# Concat) from a feature dimension. A prime no real model uses as a size.
BATCH = 1000003

# The core's limits (micro_core/include/microtrain.h): MT_MAX_TENSORS, MT_MAX_OPS,
# MT_MAX_DIMS, MT_MAX_ELEMENTS (elements of one sample), MT_QUANT_MAX_CHANNELS.
MAX_TENSORS = 256
MAX_OPS = 256
MAX_DIMS = 4
MAX_ELEMENTS = 1 << 28


class ConversionError(ValueError):
    """A source model the core cannot run as it is: names the op, its index, the
    attribute and what is supported. Nothing is converted approximately."""

    def __init__(self, message, op=None, index=None, attribute=None, supported=None):
        self.op = op
        self.index = index
        self.attribute = attribute
        self.supported = supported
        where = ""
        if op is not None:
            where = "%s %s: " % (op, "" if index is None else "(index %s)" % index)
            where = where.replace(" :", ":")
        text = where + message
        if attribute is not None and attribute not in message:
            text += " [attribute %s]" % attribute
        if supported:
            text += "; supported: %s" % supported
        ValueError.__init__(self, text)


# What Python code raises on data that contradicts itself (a Gather index out of range, a
# weight of the wrong rank, an attribute of the wrong type): where a check does not name
# the part first, the op being converted or evaluated is named around it.
CONTRADICTION_ERRORS = (ValueError, TypeError, IndexError, KeyError, ArithmeticError,
                        AttributeError)


class CorruptModel(ConversionError):
    """A file that contradicts itself or its format (a NaN quantization scale, a zero point
    outside int8): refused whatever the conversion's options, never worked around (an int8
    importer does not move its float part earlier past it)."""


def window_count(size, kernel, stride, pad_before, pad_after, ceil_mode=False):
    """The windows ONNX Runtime (and PyTorch) place along an axis with explicit pads: floor,
    or with ceil_mode ceil, of (before + size + after - kernel) / stride, plus one; ceil_mode's
    extra window is dropped when it would start past the input. 0 when none fits."""
    span = size + pad_before + pad_after - kernel
    if span < 0:
        return 0
    out = -(-span // stride) + 1 if ceil_mode else span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad_before:
        out -= 1  # ONNX/torch: the last window must start inside input or left padding
    return out


def same_or_valid(size, kernel, stride, pad_before, pad_after, ceil_mode=False):
    """The core's padding (PADDING_SAME / PADDING_VALID) that computes exactly what explicit
    padding computes, or None. Both place window ``o`` at ``o * stride - pad_before``, so
    they agree when the pads before and the output sizes agree: padding after the last
    window's reach is never read, and padded elements never count (max pooling, average
    over in-bounds elements, zeros of a convolution)."""
    out = window_count(size, kernel, stride, pad_before, pad_after, ceil_mode)
    if out == 0:
        return None
    same_out = -(-size // stride)
    same_total = max((same_out - 1) * stride + kernel - size, 0)
    if pad_before == same_total // 2 and out == same_out:
        return _image.PADDING_SAME
    if pad_before == 0 and size >= kernel and out == (size - kernel) // stride + 1:
        return _image.PADDING_VALID
    return None


def nchw_perm(shape):
    """perm of a logical [C, H, W] sample held by the core as [H, W, C]."""
    channels, height, width = shape
    return np.arange(channels * height * width).reshape(channels, height, width) \
        .transpose(1, 2, 0).ravel()


def is_identity(perm):
    return perm is None or bool(np.all(perm == np.arange(perm.size)))


def count(shape):
    total = 1
    for dim in shape:
        total *= int(dim)
    return total


def check_shape(shape, label, what):
    """A shape the core holds per sample (1 to 4 dims, each >= 1, at most MAX_ELEMENTS
    elements), or a ConversionError naming ``label``."""
    shape = tuple(int(d) for d in shape)
    if not 1 <= len(shape) <= MAX_DIMS or min(shape) < 1:
        raise ConversionError("%s has shape %r; the core holds 1 to %d dimensions of at "
                              "least 1" % (what, list(shape), MAX_DIMS), op=label)
    if count(shape) > MAX_ELEMENTS:
        raise ConversionError("%s has shape %r: %d elements, more than the core's %d a "
                              "sample (MT_MAX_ELEMENTS)" % (what, list(shape), count(shape),
                                                            MAX_ELEMENTS), op=label)
    return shape


def check_quantization(tensor, label):
    """What the core requires of a quantization record (model_image.c check_quant): scales
    finite and > 0, int8 zero points in -128..127, int32 and per-channel ones 0."""
    quant = tensor.quant
    bad = [float(s) for s in quant.scales if not (math.isfinite(s) and s > 0)]
    if bad:
        raise ConversionError("a tensor's quantization scale is %r" % bad[0], op=label,
                              supported="finite scales > 0")
    low, high = (-128, 127) if tensor.dtype == _image.DTYPE_I8 else (0, 0)
    if quant.channels > 1:
        low, high = 0, 0
    bad = [int(z) for z in quant.zero_points if not low <= int(z) <= high]
    if bad:
        raise ConversionError("a tensor's zero point is %d" % bad[0], op=label,
                              supported="%d..%d for this tensor (%s)" % (
                                  low, high, "int8, per tensor" if high else
                                  "per channel or int32: symmetric"))
    if quant.channels > 0xFFFF:
        raise ConversionError("a tensor has %d quantization channels" % quant.channels,
                              op=label, supported="at most 65535")


def activation_value(value, label, what="input"):
    """``value`` when the core computes it at run time (an op's activation operand), or a
    ConversionError naming ``label``: the core runs no op on a constant."""
    if value is None or value.is_const:
        raise ConversionError("the %s is a constant; the core runs ops on activations"
                              % what, op=label)
    return value


def float32_const(value, label, what):
    """``value`` when it is a float32 constant (what a core weight is made of), or a
    ConversionError naming ``label``."""
    if value is None or not value.is_const:
        raise ConversionError("the %s is computed at run time; the core takes weights "
                              "as constants" % what, op=label)
    if value.const.dtype != np.float32:
        raise ConversionError("the %s has dtype %s" % (what, value.const.dtype), op=label,
                              supported="float32")
    return value


class Value:
    """One source tensor: a constant or an activation (see the module docstring)."""

    def __init__(self, shape, index=None, core_shape=None, perm=None, const=None,
                 producer=None, chw=None):
        self.shape = tuple(int(d) for d in shape)
        self.index = index
        self.core_shape = tuple(core_shape if core_shape is not None else shape)
        self.perm = None if perm is None or is_identity(perm) else np.asarray(perm)
        self.const = const
        self.producer = producer  # core op index, for folds
        self.const_key = None     # source tensor of a constant (weights' origin)
        self.chw = None if self.perm is None else chw  # a flattened image's [C, H, W]
        self.nhwc_view = None     # the same image held as [H, W, C] (a TRANSPOSE made once)
        self.logical_view = None  # the same tensor held in logical order (likewise)

    @property
    def is_const(self):
        return self.const is not None

    @property
    def nchw(self):
        """A logical [C, H, W] sample the core holds as [H, W, C]."""
        return (len(self.shape) == 3 and self.core_shape == (self.shape[1], self.shape[2],
                                                              self.shape[0])
                and (self.perm is None or np.array_equal(self.perm, nchw_perm(self.shape))))

    def __repr__(self):
        if self.is_const:
            return "Value(const %s %r)" % (self.const.dtype, self.const.shape)
        return "Value(#%d %r core %r%s)" % (self.index, self.shape, self.core_shape,
                                            "" if self.perm is None else " permuted")


class Origin:
    """Where a weight came from: ``key`` (the source tensor: a TFLite tensor index or an
    ONNX initializer name; None for a bias the conversion created), the source array's
    shape and dtype, and ``steps`` from it to the core's array."""

    def __init__(self, key, shape, steps=(), node=None, frozen=False):
        self.key = key
        self.node = node  # a created bias: the source op that takes it
        self.op = node    # the source op that reads the weight (Builder.add_weight sets it)
        self.shape = tuple(shape)
        self.steps = list(steps)
        self.frozen = frozen  # a MUL/SUB constant: never trained, nothing to write back

    def to_source(self, core):
        """The source array holding the trained core array ``core``."""
        array = np.asarray(core, dtype=np.float32)
        for step in reversed(self.steps):
            kind = step[0]
            if kind == "transpose":
                array = array.transpose(np.argsort(step[1]))
            elif kind == "columns":
                out = np.empty_like(array)
                out[:, step[1]] = array
                array = out
            elif kind == "scale":
                array = array / np.float32(step[1])
            elif kind == "reshape":
                array = array.reshape(step[1])
        return np.ascontiguousarray(array.reshape(self.shape), dtype=np.float32)

    def __repr__(self):
        return "Origin(%r, %r, %r)" % (self.key, self.shape, [s[0] for s in self.steps])


def apply_steps(array, steps):
    """The core's array from the source array, by ``steps`` (see Origin)."""
    array = np.asarray(array, dtype=np.float32)
    for step in steps:
        kind = step[0]
        if kind == "transpose":
            array = array.transpose(step[1])
        elif kind == "columns":
            array = array[:, step[1]]
        elif kind == "scale":
            array = array * np.float32(step[1])
        elif kind == "reshape":
            array = array.reshape(step[2])
    return np.ascontiguousarray(array, dtype=np.float32)


class Builder:
    """Collects core tensors and ops (with each weight's Origin) and writes the image."""

    def __init__(self, where):
        self.where = where          # "onnx" / "tflite" / "circle": for messages
        self.tensors = []
        self.ops = []
        self.origins = {}           # core tensor index -> Origin (CONST f32 tensors)
        self.folds = []             # [{"op": source op label, "kind", "keys": [...]}]
        self.inputs = []
        self.outputs = []
        self.op_sources = []        # per core op: the source op's label
        self.op_nodes = []          # per core op: the source op's index
        self.source_node = None     # the source op being converted (readers set it)
        self.layer_key = None       # the layer of ops the conversion creates (a new head's)
        self.op_layers = []         # per core op: its layer's key (source op, or layer_key)
        self.layer_info = {}        # layer key -> {"name", "type", "op", "aliases"}
        self.group_layers = False   # readers that name layers: each source op is a layer

    # ------------------------------------------------------------ tensors

    def _add(self, spec):
        if len(self.tensors) >= MAX_TENSORS:
            raise ConversionError("the model needs more than %d tensors; the core holds at "
                                  "most %d" % (MAX_TENSORS, MAX_TENSORS), op=self._label())
        check_shape(spec.dims, self._label(), "a tensor")
        self.tensors.append(spec)
        return len(self.tensors) - 1

    def _label(self):
        return None if self.source_node is None else "%s op %s" % (self.where,
                                                                     self.source_node)

    def add_input(self, shape, core_shape, perm=None, name=None):
        check_shape(core_shape, "input %s" % (len(self.inputs) if name is None else
                                              repr(name)), "a sample")
        index = self._add(_image.TensorSpec(core_shape, flags=_image.FLAG_INPUT))
        self.inputs.append(index)
        return Value(shape, index=index, core_shape=core_shape, perm=perm)

    def add_weight(self, array, origin):
        array = np.ascontiguousarray(array, dtype=np.float32)
        flags = _image.FLAG_CONST | _image.FLAG_TRAINABLE
        index = self._add(_image.TensorSpec(array.shape, flags=flags, data=array))
        if origin.op is None:
            origin.op = self.source_node
        self.origins[index] = origin
        return index

    def add_constant(self, array, origin):
        """A frozen CONST f32 tensor (the constant of a MUL or SUB): never trained."""
        array = np.ascontiguousarray(array, dtype=np.float32)
        index = self._add(_image.TensorSpec(array.shape, flags=_image.FLAG_CONST, data=array))
        origin.frozen = True
        self.origins[index] = origin
        return index

    def weight(self, index):
        return self.tensors[index].data

    def set_weight(self, index, array):
        array = np.ascontiguousarray(array, dtype=np.float32)
        self.tensors[index].data = array
        self.tensors[index].dims = tuple(array.shape)

    def op(self, op_type, inputs, core_shape, label, params=()):
        """Append a core op reading ``inputs`` (core tensor indices, None for an absent
        weight) and writing one new activation of ``core_shape``; returns its index. A
        shape or a param the image format cannot hold is refused here, naming ``label``."""
        if len(self.ops) >= MAX_OPS:
            raise ConversionError("the model needs more than %d ops; the core holds at most "
                                  "%d" % (MAX_OPS, MAX_OPS), op=label)
        check_shape(core_shape, label, "its result")
        for position, param in enumerate(params):
            if not 0 <= int(param) <= 0xFFFFFFFF:
                raise ConversionError("parameter %d of the core op is %d, which 32 bits do "
                                      "not hold (an attribute out of range)"
                                      % (position, int(param)), op=label)
        output = self._add(_image.TensorSpec(core_shape))
        self.ops.append(_image.OpSpec(op_type, inputs, [output], params))
        self.op_sources.append(label)
        self.op_nodes.append(self.source_node)
        self.op_layers.append(self.source_node if self.layer_key is None else self.layer_key)
        return output

    def activation(self, op_type, value, label, params=()):
        """An elementwise op on ``value``: the result keeps shape, layout and perm."""
        index = self.op(op_type, [value.index], value.core_shape, label, params)
        return Value(value.shape, index=index, core_shape=value.core_shape, perm=value.perm,
                     producer=len(self.ops) - 1, chw=value.chw)

    def transpose(self, index, core_shape, perm, label):
        """A TRANSPOSE op of core tensor ``index`` (sample ``core_shape``): axis k of the
        result is axis perm[k]. Returns the new core index and shape."""
        shape = tuple(core_shape[p] for p in perm)
        params = 0
        for k, axis in enumerate(perm):
            params |= int(axis) << (4 * k)
        return self.op(_ops.TRANSPOSE, [index], shape, label, (params,)), shape

    def pad(self, value, pads, label):
        """A PAD op of an NHWC-held ``value`` (core [H, W, C]); ``pads`` = ((top, bottom),
        (left, right)). Returns the padded core index and shape."""
        (top, bottom), (left, right) = pads
        if max(top, bottom, left, right) > 0xFFFF or min(top, bottom, left, right) < 0:
            raise ConversionError("pads %r are out of range 0..65535" % (pads,), op=label)
        height, width, channels = value.core_shape
        shape = (height + top + bottom, width + left + right, channels)
        index = self.op(_ops.PAD, [value.index], shape, label,
                        (top | bottom << 16, left | right << 16))
        return index, shape

    def reshape_core(self, value, core_shape, label):
        """``value`` with the core holding it as ``core_shape`` (a RESHAPE op if needed)."""
        core_shape = tuple(core_shape)
        if value.core_shape == core_shape:
            return value.index
        return self.op(_ops.RESHAPE, [value.index], core_shape, label)

    # ------------------------------------------------------------ folds

    def fold_affine(self, value, scale, shift, label, keys, kind, shift_value=None):
        """``value * scale + shift`` (per channel of the last logical axis, or per feature
        of a flat value) folded into the weights of the Dense or convolution that produced
        ``value``. Returns the folded Value, or None when ``value`` is not such an op's
        sole, unactivated result (the caller then refuses). ``shift_value``: the
        constant Value of an Add that supplies the bias of a Dense without one (MatMul +
        Add): the bias then keeps that constant as its origin and nothing is folded."""
        if value.producer is None:
            return None
        op = self.ops[value.producer]
        if op.outputs[0] != value.index or op.op_type not in (_ops.DENSE, _ops.CONV2D,
                                                              _ops.DEPTHWISE_CONV2D):
            return None
        if op.op_type != _ops.DENSE and op.params[3] != _image.FUSED_NONE:
            return None
        channels = value.core_shape[-1] if op.op_type != _ops.DENSE else value.core_shape[0]
        scale = np.broadcast_to(np.asarray(scale, np.float32).reshape(-1), (channels,)) \
            if np.size(scale) in (1, channels) else None
        shift = np.broadcast_to(np.asarray(shift, np.float32).reshape(-1), (channels,)) \
            if np.size(shift) in (1, channels) else None
        if scale is None or shift is None:
            return None
        weight_index, bias_index = op.inputs[1], op.inputs[2] if len(op.inputs) > 2 else None
        weight = self.weight(weight_index)
        axis = 3 if op.op_type == _ops.DEPTHWISE_CONV2D else 0
        shape = [1] * weight.ndim
        shape[axis] = channels
        self.set_weight(weight_index, weight * scale.reshape(shape))
        if bias_index is None and shift_value is not None and np.all(scale == 1):
            bias_index = self.add_weight(shift, Origin(
                shift_value.const_key, shift_value.const.shape,
                [("reshape", shift_value.const.shape, (channels,))]))
            op.inputs = list(op.inputs[:2]) + [bias_index]
            return value
        if bias_index is None:
            bias = shift.copy()
            bias_index = self.add_weight(bias, Origin(None, (channels,),
                                                      node=self.op_nodes[value.producer]))
            op.inputs = list(op.inputs[:2]) + [bias_index]
        else:
            self.set_weight(bias_index, self.weight(bias_index) * scale + shift)
        self.folds.append({"op": label, "kind": kind, "keys": list(keys),
                           "into": weight_index, "node": self.source_node})
        return value

    # ------------------------------------------------------------ image

    def mark_output(self, value):
        if value.is_const or value.index in self.inputs:
            raise ConversionError("a model output must be computed by an op the core runs "
                                  "(it is a constant or a model input here)")
        index = value.index
        if index in self.outputs:
            # a graph output listed twice (ONNX Runtime and LiteRT give it twice): the
            # image lists each output once, so the second is a RESHAPE copy, same bits
            index = self.op(_ops.RESHAPE, [index], self.tensors[index].dims,
                            "output %d (a copy of output %d)"
                            % (len(self.outputs), self.outputs.index(index)))
        self.tensors[index].flags |= _image.FLAG_OUTPUT
        self.outputs.append(index)

    def image(self):
        if not self.ops:
            raise ConversionError("the model has no op the core would run")
        if len(self.tensors) > 256 or len(self.ops) > 256:
            raise ConversionError("the model needs %d tensors and %d ops; the core holds at "
                                  "most 256 of each" % (len(self.tensors), len(self.ops)))
        if self.group_layers:
            for op, number in zip(self.ops, self.layer_numbers()):
                op.layer = number
        for index, tensor in enumerate(self.tensors):
            if tensor.quant is not None:
                check_quantization(tensor, self._tensor_label(index))
        try:
            return _image.write_image(self.tensors, self.ops, self.inputs, self.outputs)
        except (ValueError, OverflowError, struct.error) as error:  # what the checks missed
            raise ConversionError("the model cannot be written as an image (%s)"
                                  % error) from None

    def _tensor_label(self, index):
        """Which op of the source a core tensor belongs to, for a message."""
        for op, label in zip(self.ops, self.op_sources):
            if index in op.outputs or index in op.inputs:
                return label
        return None

    def _layer_group(self, key):
        """Ops of consecutive source ops with one layer name make one layer (Keras's Conv1D:
        EXPAND_DIMS, CONV_2D and a reshape; a Conv and the PAD before it)."""
        info = self.layer_info.get(key)
        return ("name", info["name"]) if info is not None else ("key", key)

    def layer_numbers(self):
        """Each core op's layer: consecutive ops of one source layer (a Conv and the PAD or
        DEQUANTIZE before it, a Dense and its fused ReLU) make one layer."""
        numbers = []
        groups = [self._layer_group(key) for key in self.op_layers]
        for position, group in enumerate(groups):
            if position and group == groups[position - 1]:
                numbers.append(numbers[-1])
            else:
                numbers.append(numbers[-1] + 1 if numbers else 0)
        return numbers

    def layers(self):
        """Per layer number (see layer_numbers): {"name", "type", "op", "ops", "aliases"}
        from ``layer_info`` ("op": the source op with weights, else the first; "ops": all
        of them; None for ops the conversion made); None when the reader names none."""
        if not self.group_layers:
            return None
        weighted = set()
        for op, key in zip(self.ops, self.op_layers):
            if any(i is not None and self.tensors[i].flags & _image.FLAG_CONST
                   for i in op.inputs[1:]):
                weighted.add(key)
        table = []
        numbers = self.layer_numbers()
        for position, key in enumerate(self.op_layers):
            info = self.layer_info.get(key) or {"name": str(key), "type": None, "aliases": []}
            source = key if isinstance(key, int) else None
            if position and numbers[position] == numbers[position - 1]:
                layer = table[-1]
                if source is not None and source not in layer["ops"]:
                    layer["ops"].append(source)
                    layer["aliases"] += [a for a in info.get("aliases", ())
                                         if a not in layer["aliases"]]
                    if key in weighted and layer["op"] not in weighted or \
                            layer["type"] in _RESHAPES and layer["op"] not in weighted:
                        layer["op"], layer["type"] = source, info["type"]
                continue
            table.append({"name": info["name"], "type": info["type"], "op": source,
                          "ops": [] if source is None else [source],
                          "aliases": list(info.get("aliases", ()))})
        return table

    def param_origins(self):
        """Origins of the CONST f32 tensors in table order (``mt_session_param`` order)."""
        return [self.origins[i] for i, t in enumerate(self.tensors)
                if t.is_const and t.dtype == _image.DTYPE_F32]


def sample_of_target(target, core_shape, label):
    """The sample shape a Reshape target gives (its first entry is the batch)."""
    sample_count = count(core_shape)
    if not target:
        raise ConversionError("new shape is a scalar", op=label)
    first, rest = target[0], list(target[1:])
    if any(d == BATCH or d % BATCH == 0 and d != 0 for d in rest):
        raise ConversionError("new shape %r moves the batch dimension" % target, op=label,
                              supported="the batch first, kept as it is")
    if first == -1 and -1 in rest:
        raise ConversionError("new shape %r has two -1 entries" % target, op=label)
    if -1 in rest:
        known = count([d for d in rest if d != -1])
        if known == 0 or sample_count % known:
            raise ConversionError("new shape %r does not fit %d elements per sample"
                                  % (target, sample_count), op=label)
        rest[rest.index(-1)] = sample_count // known
    if first not in (BATCH, -1, 1, 0) or count(rest) != sample_count:
        raise ConversionError("new shape %r does not keep the batch first with %d elements "
                              "per sample" % (target, sample_count), op=label,
                              supported="the batch first, kept as it is")
    return tuple(rest)
