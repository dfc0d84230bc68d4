"""Import a full-integer (int8) ``.tflite`` file: an int8 backbone frozen in the image and a
float part that trains on the device.

TensorFlow's converter with a representative dataset (``Optimize.DEFAULT`` and
``TFLITE_BUILTINS_INT8``) writes int8 activations (per-tensor scale and zero point), int8
weights (per-channel scales, zero point 0) and int32 biases, with QUANTIZE / DEQUANTIZE at
the float boundaries. This reader keeps the int8 ops as the core's int8 inference ops, with
the (multiplier, shift) pairs and clamp ranges TFLite's Prepare computes (int8_quant.py), so
the core computes LiteRT's reference kernels' bits. Where the float, trainable part begins
is the caller's choice:

* ``train_from=None, new_head=None``: the model's own head trains: the ops from the last one
  with weights (the final Dense) on run in float, their weights dequantized
  (``scale · (q - zero_point)``), after a DEQUANTIZE of the int8 activation they read; where
  an earlier op has no int8 kernel in the core (a MEAN over a 1-D signal's time axis), the
  float part begins at that op instead, and the import's notes say so;
* ``train_from="block_15"`` or ``train_from=57``: the float part begins at that operator of
  the file, by index or by layer name (tflite_layers: ``block_15`` is the first layer of
  Keras's block 15), so the last blocks train too;
* ``train_from=X, int8_after=True``: operator X alone runs in float (its weights dequantized,
  trained); the int8 operators after it stay int8 and frozen (a QUANTIZE with the file's
  parameters turns X's output back into the int8 tensor the file has), the gradient passing
  through them to X (the core's int8 backward, the straight-through estimator of fake
  quantization); an operator after X that the core has no int8 op for (the final SOFTMAX)
  runs in float after a DEQUANTIZE;
* ``train_from=X, int8_train=True``: the operators from X on stay int8 and the int8 weights
  and int32 biases of its CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED ones are trainable
  in place (the core's QAS update, ops/qas.c); an operator with no int8 op in the core (the
  final SOFTMAX) runs in float after a DEQUANTIZE;
* ``new_head=n``: the model is cut after its last spatial ([H, W, C]) activation and a new
  head is attached: mean over H and W, DEQUANTIZE (int8 mean first: 1/HW of the floats),
  Dense(n) (Glorot-uniform weights from ``head_seed``, zero bias) and Softmax;
* ``new_head=n, int8_head=True``: the new head is an int8 FULLY_CONNECTED trained in place
  instead (QAS, as ``int8_train``'s): the int8 mean's output feeds it directly, its Glorot
  weight quantized per output channel (one byte a weight in the arena, a quarter of the float
  head's), a zero int32 bias, int8 logits at scale 1/8 then DEQUANTIZE and Softmax;
* ``int8_input=True``: the model input is the int8 tensor the leading QUANTIZE writes (the
  caller quantizes, e.g. camera pixels - 128), so no float copy of the image is held.

The int8 part computes exactly LiteRT's BUILTIN_REF kernels (tests/convert/test_int8.py);
the float part computes what the core's float ops compute from the dequantized weights.
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from . import int8_quant as _q
from . import tflite_layers as _layers
from .graph import ConversionError, CorruptModel, Origin, Value
from .tflite_int8_ops import SUPPORTED_INT8_OPS, Int8Ops, Int8Unsupported
from .tflite_reader import _Reader, _tensor_shape, indices

_FLOAT32, _INT32, _INT64, _INT8 = 0, 2, 4, 9
WEIGHTED_OPS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")
# int8_head: the new head's logits as int8, 1/8 a step: [-16, 15.875] (softmax saturates well
# inside it: e^-16 ~ 1e-7)
HEAD_LOGIT_SCALE = 0.125

class Int8Reader(Int8Ops, _Reader):
    def __init__(self, data, fmt, train_from=None, new_head=None, int8_input=False,
                 head_seed=0, float_part=True, float_model=False, int8_after=False,
                 int8_train=False, int8_head=False):
        _Reader.__init__(self, data, fmt)
        self.int8_head = int8_head  # the new head an int8 FullyConnected trained in place
        self.int8_after = int8_after  # the ops after train_from stay int8 (see the module doc)
        self.int8_train = bool(int8_train)  # ... from train_from on, their weights trained in place
        self.int8_master = int8_train == "master"  # ... with float master copies
        self.trains_in_place = False  # the int8 op being read has trainable weights
        self.trained_in_place = {}  # core index of such a weight -> (file tensor, axes order)
        self.requantized = {}  # core index of a float activation -> its int8 Value
        self.requantized_source = {}  # core index of that int8 Value -> the file's tensor
        self.float_part = float_part
        self.float_model = float_model  # a float (or dynamic-range) file cut or frozen
        self.train_from = train_from
        self.new_head = new_head
        self.int8_input = int8_input
        self.head_seed = head_seed
        self.quant = {}        # core index of an int8 activation -> (scale, zero point)
        self.dequantized = {}  # core index of an int8 activation -> its float Value
        self.kept_ops = []     # operators of the file the int8 part keeps as they are
        self.table = _layers.source_table(self)
        self.builder.group_layers = True
        self.builder.layer_info = {entry["index"]: entry for entry in self.table}
        if float_model:
            self.float_start = 0
            if train_from is not None:
                self.frozen_before = _layers.resolve_start(self.table, train_from)
        else:
            self.float_start = self._float_start()
        if (int8_after or int8_train) and self.op_type_name(self.float_start) not in WEIGHTED_OPS:
            raise ConversionError("%s has no weights, and with int8_after it is the one "
                                  "operator that trains" % _layers.describe(
                                      self.table[self.float_start]), attribute="train_from",
                                  supported="train_from a FULLY_CONNECTED, CONV_2D or "
                                  "DEPTHWISE_CONV_2D with int8_after")
        self.cut_after = self._cut_after() if new_head else None

    # ------------------------------------------------------------ the plan of the import

    def _float_start(self):
        ops = self.graph.OperatorsLength()
        if not self.float_part:
            return ops  # every op as the file has it (inference, and the bit-exactness tests)
        if self.train_from is not None:
            return _layers.resolve_start(self.table, self.train_from)
        if self.new_head:
            return ops  # only the new head is float
        for index in reversed(range(ops)):
            if self.op_type_name(index) in WEIGHTED_OPS:
                return index
        raise ConversionError("the model has no operator with weights to train",
                              supported="a model with a FULLY_CONNECTED, CONV_2D or "
                              "DEPTHWISE_CONV_2D")

    def _cut_after(self):
        """The last op writing a spatial [1, H, W, C] activation: the backbone's end."""
        last = None
        for index in range(self.graph.OperatorsLength()):
            op = self.graph.Operators(index)
            shape = _tensor_shape(self.tensor(indices(op, "Outputs")[0]))
            if len(shape) == 4 and self.op_type_name(index) not in ("SHAPE", "QUANTIZE",
                                                                    "DEQUANTIZE"):
                last = index
        if last is None:
            raise ConversionError("the model has no spatial [H, W, C] activation to attach "
                                  "a new head to", attribute="new_head")
        return last

    # ------------------------------------------------------------ tensors

    def const_array(self, index):
        tensor = self.tensor(index)
        if tensor.Type() == _INT8:
            from .tflite_reader import buffer_span
            start, size = buffer_span(self.model, self.data, tensor.Buffer())
            if start is None:
                return None
            array = np.frombuffer(self.data, dtype=np.int8, count=size, offset=start)
            return array.reshape(_tensor_shape(tensor)).copy()
        return _Reader.const_array(self, index)

    def tensor_quant(self, index, label):
        """(scales float32[], zero points int64[], axis) of a tflite tensor."""
        q = self.tensor(index).Quantization()
        scales = q.ScaleAsNumpy() if q is not None else 0
        if q is None or isinstance(scales, int) or len(scales) == 0:
            raise ConversionError("tensor %r has no quantization parameters"
                                  % self.tensor_name(index), op=label)
        zero_points = q.ZeroPointAsNumpy()
        zero_points = np.zeros(len(scales), np.int64) if isinstance(zero_points, int) or \
            len(zero_points) == 0 else np.asarray(zero_points, np.int64)
        _q.check_parameters(scales, zero_points, self.tensor(index).Type(),
                            "tensor %r" % self.tensor_name(index), label)
        return (np.asarray(scales, np.float32), zero_points, int(q.QuantizedDimension()))

    def activation_quant(self, index, label):
        scales, zero_points, _ = self.tensor_quant(index, label)
        if len(scales) != 1:
            raise ConversionError("activation %r is quantized per channel"
                                  % self.tensor_name(index), op=label,
                                  supported="per-tensor activations")
        return float(scales[0]), int(zero_points[0])

    def int8_output(self, core_index, tflite_index, label):
        """Make core tensor ``core_index`` the int8 image of tflite tensor ``tflite_index``."""
        scale, zero_point = self.activation_quant(tflite_index, label)
        spec = self.builder.tensors[core_index]
        spec.dtype = _image.DTYPE_I8
        spec.quant = _image.Quantization([scale], [zero_point])
        self.quant[core_index] = (scale, zero_point)

    def add_const(self, array, dtype, quant=None, trainable=False):
        """A constant; ``trainable``: an int8 weight or int32 bias trained in place (an int8
        weight with its float master copy where int8_master_weights asks)"""
        flags = _image.FLAG_CONST | (_image.FLAG_TRAINABLE if trainable else 0)
        if trainable and self.int8_master and dtype == _image.DTYPE_I8:
            flags |= _image.FLAG_MASTER
        spec = _image.TensorSpec(np.shape(array), flags=flags, dtype=dtype,
                                 data=np.ascontiguousarray(array), quant=quant)
        return self.builder._add(spec)

    def is_int8(self, value):
        return value is not None and not value.is_const and value.index in self.quant

    def as_float(self, value, label):
        """A float Value for an int8 activation (one DEQUANTIZE per tensor)."""
        if not self.is_int8(value):
            return value
        if value.index not in self.dequantized:
            scale, zero_point = self.quant[value.index]
            index = self.builder.op(_ops.DEQUANTIZE, [value.index], value.core_shape, label,
                                    (_image.f32_bits(scale), zero_point & 0xFFFFFFFF))
            self.dequantized[value.index] = Value(value.shape, index=index,
                                                  core_shape=value.core_shape,
                                                  producer=len(self.builder.ops) - 1)
        return self.dequantized[value.index]

    def as_int8(self, value, tflite_index, label):
        """The int8 Value of float activation ``value`` that the file holds as int8 tensor
        ``tflite_index`` (one QUANTIZE with the file's parameters per activation)."""
        if value is None or value.is_const or self.is_int8(value):
            return value
        if value.index not in self.requantized:
            scale, zero_point = self.activation_quant(tflite_index, label)
            index = self.builder.op(_ops.QUANTIZE, [value.index], value.core_shape, label,
                                    (_image.f32_bits(scale), zero_point & 0xFFFFFFFF))
            self.int8_output(index, tflite_index, label)
            self.requantized[value.index] = Value(value.shape, index=index,
                                                  core_shape=value.core_shape,
                                                  producer=len(self.builder.ops) - 1)
            self.requantized_source[index] = tflite_index  # export writes the file's tensor
        return self.requantized[value.index]

    def runs_int8(self, index, name):
        """Does operator ``index`` (of type ``name``) run as an int8 op?"""
        if index < self.float_start:
            return True
        if self.int8_train:
            return getattr(self, "q_" + name, None) is not None and \
                name not in ("QUANTIZE", "DEQUANTIZE")
        return self.int8_after and index > self.float_start and \
            getattr(self, "q_" + name, None) is not None and name not in ("QUANTIZE", "DEQUANTIZE")

    def float_const(self, tflite_index, value, label):
        """The float weight of an int8 constant, or of an int32 one with quantization
        parameters (a bias): scale · (q - zero point). Other constants (a Reshape's int32
        shape) stay as they are."""
        if value is None or not value.is_const or value.const.dtype == np.float32:
            return value
        tensor = self.tensor(tflite_index)
        quantized = tensor.Quantization() is not None and \
            not isinstance(tensor.Quantization().ScaleAsNumpy(), int)
        if tensor.Type() != _INT8 and not (tensor.Type() == _INT32 and quantized):
            return value
        scales, zero_points, axis = self.tensor_quant(tflite_index, label)
        result = Value(value.const.shape, const=_q.dequantize(value.const, scales, zero_points,
                                                              axis))
        result.const_key = tflite_index
        if tensor.Type() == _INT8:
            self.dequantized_weights.add(tflite_index)
        return result

    # ------------------------------------------------------------ import

    def run(self):
        for t in indices(self.graph, "Inputs"):
            shape = self.input_sample_shape(t, (_FLOAT32, _INT8), "float32 or int8 inputs")
            value = self.builder.add_input(shape, shape, name=self.tensor_name(t))
            if self.tensor(t).Type() == _INT8:
                self.int8_output(value.index, t, "input")
            self.values[t] = value
        last = self.graph.OperatorsLength() - 1 if self.cut_after is None else self.cut_after
        for index in range(last + 1):
            self.convert_operator(index)
        if self.new_head:
            op = self.graph.Operators(self.cut_after)
            self.builder.mark_output(self.attach_head(self.values[indices(op, "Outputs")[0]]))
        else:
            for t in indices(self.graph, "Outputs"):
                value = self.values.get(t)
                if value is None:
                    raise ConversionError("output %r is never written"
                                          % self.tensor_name(t))
                self.builder.mark_output(self.as_float(value, "output"))
        if self.int8_after:
            self.check_gradient_path()
        return self.builder

    def check_gradient_path(self):
        """int8_after: every int8 op a gradient must pass from the trained operator to the
        output has a backward in the core (CONCATENATION_S8 and PAD_S8 have none), else the
        import is refused naming that operator of the file, not left to fail at compile."""
        downstream = set()
        for k, spec in enumerate(self.builder.ops):
            node = self.builder.op_nodes[k]
            reached = node == self.float_start or any(i in downstream for i in spec.inputs)
            if not reached:
                continue
            if spec.op_type in _ops.NO_BACKWARD:
                raise ConversionError(
                    "%s lies between train_from (%s) and the output, and the core's %s passes "
                    "no gradient" % (_layers.describe(self.table[node]),
                                     _layers.describe(self.table[self.float_start]),
                                     _ops.display_name(spec.op_type)),
                    attribute="train_from",
                    supported="int8 ops with a backward after train_from (QUANTIZE, DEQUANTIZE, "
                    "CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, MAX_POOL_2D, "
                    "AVERAGE_POOL_2D, MEAN, RESHAPE); train from after that operator, or "
                    "without int8_after")
            downstream.update(spec.outputs)

    def operator(self, index):
        op, name, label, inputs, outputs, values = self.operator_start(
            index, (_FLOAT32, _INT32, _INT64, _INT8),
            "int8, float32 (int32/int64 shape arithmetic)")
        if all(v is None or v.is_const for v in values) and name != "SHAPE":
            folded = self.fold(name, op, values, label)
            for t, array in zip(outputs, folded):
                self.set_output(t, Value(np.shape(array), const=np.asarray(array)))
            return
        if name in ("SHAPE", "STRIDED_SLICE", "PACK"):
            result = getattr(self, "op_" + name)(op, values, inputs, outputs, label)
        elif not self.runs_int8(index, name):
            result = self.float_op(name, op, values, inputs, outputs, label)
        else:
            handler = getattr(self, "q_" + name, None)
            if index > self.float_start:  # int8_after: the trained op's output, int8 again
                values = [self.as_int8(v, t, label) for v, t in zip(values, inputs)]
            self.trains_in_place = self.int8_train and index >= self.float_start
            try:
                if handler is None:
                    raise ConversionError("op %s is not supported in the int8 part" % name,
                                          op=label, supported=SUPPORTED_INT8_OPS)
                result = handler(op, values, inputs, outputs, label)
            except (Int8Unsupported, CorruptModel):
                raise
            except ConversionError as error:
                raise Int8Unsupported(
                    "%s; the float part may begin at or before it (train_from=%d)"
                    % (error, index), index) from None
            finally:
                self.trains_in_place = False
            self.kept_ops.append(index)
        self.operator_output(outputs[0], result, label)

    def export_details(self):
        """What export needs to write the file back (SourceRecord.int8), and the notes."""
        kept = set(self.kept_ops)
        core_to_source = {}
        for position, t in enumerate(indices(self.graph, "Inputs")):
            core_to_source[self.builder.inputs[position]] = t
        constants = {}
        for index in self.kept_ops:
            op = self.graph.Operators(index)
            for t in indices(op, "Outputs"):
                value = self.values.get(t)
                if value is not None and not value.is_const and value.index in self.quant:
                    core_to_source[value.index] = t
            for t in indices(op, "Inputs"):
                value = self.values.get(int(t))
                if int(t) >= 0 and value is not None and value.is_const and \
                        not self.has_data(int(t)):
                    constants[int(t)] = np.asarray(value.const)
        core_to_source.update(self.requantized_source)  # int8_after: written by a QUANTIZE
        first = "the float part begins at %s" % _layers.describe(
            self.table[self.float_start]) if self.float_start < len(self.table) else \
            "every operator of the file is kept as int8"
        if self.int8_train:
            first = "trained in place from %s" % _layers.describe(self.table[self.float_start])
            frozen = len([index for index in kept if index < self.float_start])
            notes = ["int8 model: %d operators kept as int8 (LiteRT's reference kernels' bits; "
                     "%d frozen); %s" % (len(kept), frozen, first)]
        else:
            notes = ["int8 model: %d operators kept as int8 (frozen, LiteRT's reference "
                     "kernels' bits); %s" % (len(kept), first)]
        if self.int8_after:
            notes.append("the int8 operators after it stay int8 and frozen; the gradient "
                         "passes through them (straight-through estimator)")
        if self.int8_train:
            notes.append("the int8 operators from it on stay int8; their int8 weights and "
                         "int32 biases train in place (SGD with quantization-aware scaling%s)"
                         % ("; float master copies of the weights" if self.int8_master else ""))
        if self.new_head:
            notes.append("a new head (mean, Dense(%d), Softmax) follows %s"
                         % (int(self.new_head), _layers.describe(self.table[self.cut_after])))
        return {"kept_ops": list(self.kept_ops), "core_to_source": core_to_source,
                "constants": constants, "op_nodes": list(self.builder.op_nodes),
                "float_start": self.float_start,
                "requantized": sorted(self.requantized_source),
                "trained_in_place": dict(self.trained_in_place),
                "cut_after": self.cut_after, "notes": notes}

    # ------------------------------------------------------------ the float part

    def float_op(self, name, op, values, inputs, outputs, label):
        """An op of the float part: int8 activations are dequantized, int8 weights and int32
        biases become float weights, and the float reader's handler emits the core op."""
        if name == "QUANTIZE":   # the float part stays float
            return self.as_float(values[0], label)
        if name == "DEQUANTIZE":
            return self.as_float(values[0], label)
        values = [self.as_float(v, label) if v is not None and not v.is_const
                  else self.float_const(t, v, label) for v, t in zip(values, inputs)]
        handler = getattr(self, "op_" + name, None)
        if handler is None:
            from .tflite_reader import SUPPORTED_OPS
            raise ConversionError("op %s is not supported in the float part" % name, op=label,
                                  supported=SUPPORTED_OPS)
        return handler(op, values, inputs, outputs, label)

    def attach_head(self, features):
        """mean over H and W -> DEQUANTIZE -> Dense(new_head) -> Softmax: three layers,
        new_head_pool, new_head and new_head_softmax."""
        label = "new head"
        self.builder.source_node = None
        for key, name, kind in (("new_head_pool", "new_head_pool", "MEAN"),
                                ("new_head", "new_head", "FULLY_CONNECTED"),
                                ("new_head_softmax", "new_head_softmax", "SOFTMAX")):
            self.builder.layer_info[key] = {"name": name, "type": kind, "aliases": []}
        self.builder.layer_key = "new_head_pool"
        if len(features.core_shape) != 3:
            raise ConversionError("the backbone ends with %r, not [H, W, C]"
                                  % (features.core_shape,), attribute="new_head")
        channels = features.core_shape[2]
        if self.is_int8(features):
            scale, zero_point = self.quant[features.index]
            multiplier, shift = _q.mean_requant(scale, scale)
            index = self.builder.op(_ops.MEAN_S8, [features.index], (channels,), label,
                                    (_q.byte(zero_point) | _q.byte(zero_point) << 8,
                                     multiplier, shift & 0xFFFFFFFF))
            self.builder.tensors[index].dtype = _image.DTYPE_I8
            self.builder.tensors[index].quant = _image.Quantization([scale], [zero_point])
            self.quant[index] = (scale, zero_point)
            pooled = Value((channels,), index=index)
            if not self.int8_head:
                pooled = self.as_float(pooled, label)
        elif self.int8_head:
            raise ConversionError("int8_head needs the backbone's int8 features; this "
                                  "model's last [H, W, C] activation is float",
                                  attribute="int8_head")
        else:
            index = self.builder.op(_ops.GLOBAL_AVERAGE_POOL, [features.index], (channels,),
                                    label)
            pooled = Value((channels,), index=index)
        units = int(self.new_head)
        rng = np.random.default_rng(self.head_seed)
        limit = np.sqrt(6.0 / (channels + units))
        weight = rng.uniform(-limit, limit, (units, channels)).astype(np.float32)
        if self.int8_head:
            logits = self.int8_head_op(pooled, weight, label)
        else:
            w = self.builder.add_weight(weight, Origin(None, weight.shape))
            b = self.builder.add_weight(np.zeros(units, np.float32), Origin(None, (units,)))
            self.builder.layer_key = "new_head"
            logits = self.builder.op(_ops.DENSE, [pooled.index, w, b], (units,), label)
        self.builder.layer_key = "new_head_softmax"
        out = self.builder.op(_ops.SOFTMAX, [logits], (units,), label)
        self.builder.layer_key = None
        return Value((units,), index=out)


    def int8_head_op(self, pooled, weight, label):
        """int8_head: the new head as a DENSE_S8 whose int8 weight and int32 bias train in
        place (QAS, ops/qas.c), then a DEQUANTIZE: the Glorot weight quantized per output
        channel (scale max|w[c]| / 127, fixed), a zero bias at scale sx * sw[c], and logits
        at scale HEAD_LOGIT_SCALE, zero point 0 (range [-16, 15.875]). Returns the logits'
        float tensor."""
        units, channels = weight.shape
        sx, zx = self.quant[pooled.index]
        w_scales = (np.max(np.abs(weight), axis=1) / 127.0).astype(np.float32)
        w_scales = np.where(w_scales > 0, w_scales, np.float32(1.0 / 127.0))
        q = np.clip(np.round(weight / w_scales[:, None]), -127, 127).astype(np.int8)
        self.builder.layer_key = "new_head"
        zeros = np.zeros(units, np.int64)
        w = self.add_const(q, _image.DTYPE_I8, _image.Quantization(w_scales, zeros, 0),
                           trainable=True)
        b_scales = (np.float32(sx) * w_scales).astype(np.float32)
        b = self.add_const(np.zeros(units, np.int32), _image.DTYPE_I32,
                           _image.Quantization(b_scales, zeros, 0), trainable=True)
        sy = HEAD_LOGIT_SCALE
        rq = self.add_const(_q.dense_scales(sx, w_scales, sy, units), _image.DTYPE_I32)
        params = (_q.packed_conv_params(zx, 0, -128, 127),)
        index = self.builder.op(_ops.DENSE_S8, [pooled.index, w, b, rq], (units,), label,
                                params)
        spec = self.builder.tensors[index]
        spec.dtype = _image.DTYPE_I8
        spec.quant = _image.Quantization([sy], [0])
        self.quant[index] = (sy, 0)
        return self.as_float(Value((units,), index=index), label).index


def read(data, fmt="tflite", train_from=None, new_head=None, int8_input=False, head_seed=0,
         float_part=True, details=False, float_model=False, int8_after=False, int8_train=False,
         int8_head=False):
    # int8_train: False, True, or "master" (int8_master_weights: float master copies)
    """(Builder, input names, output names) of an int8 .tflite file (see the module doc).
    ``float_part=False`` keeps every op as the file has it (nothing trains: the model as
    LiteRT runs it). ``details`` adds a dict of what export needs (SourceRecord.int8) and
    the import's notes. ``float_model``: a float (or dynamic-range) file, every op float,
    whose weights before ``train_from`` stay constants and which ``new_head`` cuts as an
    int8 model's."""
    if new_head is not None and (int(new_head) != new_head or int(new_head) < 2):
        raise ConversionError("new_head is a number of classes >= 2, got %r" % (new_head,),
                              attribute="new_head")
    if float_model and int8_input:
        raise ConversionError("int8_input takes the int8 tensor of an int8 model's leading "
                              "QUANTIZE; this model's input is float", attribute="int8_input")
    reader = Int8Reader(data, fmt, train_from, new_head, int8_input, head_seed, float_part,
                        float_model, int8_after, int8_train, int8_head)
    if float_model:
        from .tflite_reader import hybrid_note
        builder = reader.run()
        details_ = reader.export_details()
        details_["notes"] = ["float model: the weights before %s stay constants (never "
                             "trained)" % _layers.describe(reader.table[reader.frozen_before])
                             ] if reader.frozen_before else []
        if new_head:
            details_["notes"].append("a new head (mean, Dense(%d), Softmax) follows %s"
                                     % (int(new_head),
                                        _layers.describe(reader.table[reader.cut_after])))
        if reader.dequantized_weights:
            details_["notes"].insert(0, hybrid_note(len(reader.dequantized_weights)))
        names = [reader.tensor_name(t) for t in indices(reader.graph, "Inputs")]
        outputs = ["new_head"] if new_head else \
            [reader.tensor_name(t) for t in indices(reader.graph, "Outputs")]
        return builder, names, outputs, details_
    moved = None
    try:
        builder = reader.run()
    except Int8Unsupported as error:
        if train_from is not None or not float_part or error.index >= reader.float_start:
            raise
        # the model's own choice of float part: it begins where the int8 part cannot go on
        moved = error
        reader = Int8Reader(data, fmt, error.index, new_head, int8_input, head_seed,
                            float_part, int8_head=int8_head)
        builder = reader.run()
    graph = reader.graph
    input_names = [reader.tensor_name(t) for t in indices(graph, "Inputs")]
    output_names = [reader.tensor_name(t) for t in indices(graph, "Outputs")] \
        if not new_head else ["new_head"]
    if not details:
        return builder, input_names, output_names
    details = reader.export_details()
    if moved is not None:
        details["notes"].append("the float part begins earlier than the model's last layer "
                                "with weights, at %s, which the core's int8 ops cannot run: "
                                "%s" % (_layers.describe(reader.table[moved.index]),
                                        moved.reason))
    return builder, input_names, output_names, details
