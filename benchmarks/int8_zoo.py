"""The int8 layers of the per-op cost table (benchmarks/arm_int8_ops.py), as one model image.

Each layer has the shape of a MobileNetV2-w0.35 128x128 layer (the int8 backbone of
benchmarks/mbv2_int8.py, tests/convert/fixtures/int8/mbv2_035_128.tflite; MOBILENET names
the Keras layer), with random int8 weights, per-channel weight scales and TFLite's
requantization constants (microtrain.convert.int8_quant: what the importer writes), so the
kernels take the paths they take in that model (ReLU6's range, [-128, 127], is one SSAT).
The ops run in one chain, every one unfused: the planner streams a pointwise expansion into
the depthwise convolution at the next op index that alone reads it (MT_OPF_STREAMS_PREVIOUS),
so here each expansion's output is also read by a second depthwise; the streamed pair is
what MobileNetV2 runs, and benchmarks/arm_int8_ops.py --mobilenet profiles that model too.

    128x128x3 -> Conv 3x3/2 (stem) -> DW 3x3/1 -> Conv 1x1 16->8 -> Conv 1x1 8->48 -> DW 3x3/2
    -> Conv 1x1 48->8 (= r) -> Conv 1x1 8->48 (= e) -> DW 3x3/1 (e) -> Conv 1x1 48->8 -> Add(r, .)
    -> DW 3x3/2 (e) -> Conv 1x1 48->16 ...
    a 4x4x112 side of the chain -> Conv 1x1 112->1280 -> Mean -> FullyConnected 1280->1000
    -> DEQUANTIZE -> Dense(10) -> Softmax, the float head that trains

The FullyConnected is MobileNetV2's ImageNet classifier (include_top=True): 1280 -> 1000.
"""

import numpy as np

from microtrain import ops as _ops
from microtrain.convert import int8_quant as _q
from microtrain.nn import image as _image

import op_work

# ReLU6 outputs: 6 / 255 a step from -128 (the clamp is the whole int8 range); linear
# outputs (projections, Adds): a wider scale around a zero point near the middle
RELU6 = (6.0 / 255.0, -128)
LINEAR = (0.05, 3)
INPUT = (1.0 / 128.0, 0)


class Int8Graph:
    """A minimal int8 model builder over nn.image: activations [H, W, C] (or [C]), weights
    and constants made from one seeded generator."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.tensors, self.ops, self.inputs, self.outputs = [], [], [], []
        self.quant = {}  # activation index -> (scale, zero point)
        self.layers = []  # per op: its Layer, or None (the float head)

    def _add(self, spec):
        self.tensors.append(spec)
        return len(self.tensors) - 1

    def _activation(self, shape, quant):
        scale, zero_point = quant
        index = self._add(_image.TensorSpec(shape, dtype=_image.DTYPE_I8,
                                            quant=_image.Quantization([scale], [zero_point])))
        self.quant[index] = quant
        return index

    def _const(self, array, dtype, quant=None):
        return self._add(_image.TensorSpec(array.shape, _image.FLAG_CONST, dtype=dtype,
                                           data=array, quant=quant))

    def _op(self, op_type, inputs, outputs, params, layer):
        self.ops.append(_image.OpSpec(op_type, inputs, outputs, params))
        self.layers.append(layer)

    def input(self, shape, quant=INPUT):
        index = self._activation(shape, quant)
        self.tensors[index].flags |= _image.FLAG_INPUT
        self.inputs.append(index)
        return index

    def _weights(self, shape, channels, axis):
        """int8 weights and their per-channel scales (zero points 0) along ``axis``"""
        w = self.rng.integers(-127, 128, shape).astype(np.int8)
        scales = self.rng.uniform(0.004, 0.03, channels).astype(np.float32)
        return self._const(w, _image.DTYPE_I8, _image.Quantization(
            scales, np.zeros(channels, np.int64), axis)), scales

    def _bias(self, channels, sx, w_scales):
        b = self.rng.integers(-2000, 2000, channels).astype(np.int32)
        return self._const(b, _image.DTYPE_I32, _image.Quantization(
            (np.float32(sx) * w_scales).astype(np.float32), np.zeros(channels, np.int64), 0))

    def conv(self, x, channels, kernel, stride, out_quant, layer, padding=_image.PADDING_SAME):
        """Conv2D, W [OC, K, K, C]"""
        return self._spatial(x, channels, kernel, stride, out_quant, layer, False, padding)

    def depthwise(self, x, kernel, stride, out_quant, layer):
        """DepthwiseConv2D, W [1, K, K, C], depth multiplier 1, SAME padding"""
        return self._spatial(x, None, kernel, stride, out_quant, layer, True, _image.PADDING_SAME)

    def _spatial(self, x, channels, kernel, stride, out_quant, layer, depthwise, padding):
        h, w, c = self.tensors[x].dims
        oc = c if depthwise else channels
        shape = (1, kernel, kernel, c) if depthwise else (oc, kernel, kernel, c)
        weight, scales = self._weights(shape, oc, 3 if depthwise else 0)
        sx, zx = self.quant[x]
        sy, zy = out_quant
        bias = self._bias(oc, sx, scales)
        rq = self._const(_q.conv_requant(sx, scales, sy, oc), _image.DTYPE_I32)
        lo, hi = _q.activation_range(3 if out_quant == RELU6 else 0, sy, zy)
        oh, _ = op_work.spatial_axis(h, kernel, stride, padding)
        ow, _ = op_work.spatial_axis(w, kernel, stride, padding)
        y = self._activation((oh, ow, oc), out_quant)
        params = (_q.packed_conv_params(zx, zy, lo, hi),) + \
            _image.spatial_params(None, (stride, stride), padding)[1:3] + (0,)
        self._op(_ops.DEPTHWISE_CONV2D_S8 if depthwise else _ops.CONV2D_S8,
                 [x, weight, bias, rq], [y], params, layer)
        return y

    def fully_connected(self, x, units, out_quant, layer):
        (features,) = self.tensors[x].dims
        weight, scales = self._weights((units, features), units, 0)
        sx, zx = self.quant[x]
        sy, zy = out_quant
        bias = self._bias(units, sx, scales)
        rq = self._const(_q.dense_scales(sx, scales, sy, units), _image.DTYPE_I32)
        y = self._activation((units,), out_quant)
        self._op(_ops.DENSE_S8, [x, weight, bias, rq], [y],
                 (_q.packed_conv_params(zx, zy, -128, 127),), layer)
        return y

    def add(self, a, b, out_quant, layer):
        (sa, za), (sb, zb), (sy, zy) = self.quant[a], self.quant[b], out_quant
        rq = self._const(_q.add_requant(sa, sb, sy), _image.DTYPE_I32)
        y = self._activation(self.tensors[a].dims, out_quant)
        self._op(_ops.ADD_S8, [a, b, rq], [y],
                 (_q.byte(za) | _q.byte(zb) << 8 | _q.byte(zy) << 16,
                  _q.byte(-128) | _q.byte(127) << 8), layer)
        return y

    def mean(self, x, layer):
        sx, zx = self.quant[x]
        multiplier, shift = _q.mean_requant(sx, sx)
        y = self._activation(self.tensors[x].dims[-1:], (sx, zx))
        self._op(_ops.MEAN_S8, [x], [y], (_q.byte(zx) | _q.byte(zx) << 8, multiplier,
                                          shift & 0xFFFFFFFF), layer)
        return y

    def float_head(self, x, classes):
        """DEQUANTIZE -> Dense(classes) (trainable, Glorot-uniform) -> Softmax, the output"""
        scale, zero_point = self.quant[x]
        features = self.tensors[x].dims[-1]
        f = self._add(_image.TensorSpec((features,)))
        self._op(_ops.DEQUANTIZE, [x], [f], (_image.f32_bits(scale), zero_point & 0xFFFFFFFF),
                 None)
        limit = np.sqrt(6.0 / (features + classes))
        weight = self.rng.uniform(-limit, limit, (classes, features)).astype(np.float32)
        trainable = _image.FLAG_CONST | _image.FLAG_TRAINABLE
        w = self._add(_image.TensorSpec(weight.shape, trainable, data=weight))
        b = self._add(_image.TensorSpec((classes,), trainable, data=np.zeros(classes, np.float32)))
        logits = self._add(_image.TensorSpec((classes,)))
        self._op(_ops.DENSE, [f, w, b], [logits], (), None)
        out = self._add(_image.TensorSpec((classes,), _image.FLAG_OUTPUT))
        self._op(_ops.SOFTMAX, [logits], [out], (), None)
        self.outputs.append(out)
        return out

    def image(self):
        return _image.write_image(self.tensors, self.ops, self.inputs, self.outputs)


class Layer:
    """What one op of the zoo measures: ``kind`` (the table's row name: op and form),
    ``mobilenet`` (the Keras layer of MobileNetV2-w0.35 whose shape it has, None for glue
    that only makes the next layer's input shape), ``readme`` (the kind's one row in the
    README's short table)."""

    def __init__(self, kind, mobilenet, readme=False):
        self.kind, self.mobilenet, self.readme = kind, mobilenet, readme

    def __repr__(self):
        return "Layer(%r, %r)" % (self.kind, self.mobilenet)


STEM = "Conv2D 3x3 stride 2"
POINTWISE_EXPAND = "Conv2D 1x1 expansion"
POINTWISE_PROJECT = "Conv2D 1x1 projection"
POINTWISE_WIDE = "Conv2D 1x1 to 1280"
DEPTHWISE_1 = "DepthwiseConv2D 3x3 stride 1"
DEPTHWISE_2 = "DepthwiseConv2D 3x3 stride 2"
STREAMED = "Conv2D 1x1 expansion + DepthwiseConv2D 3x3 stride 2, streamed"
FULLY_CONNECTED = "FullyConnected"
ADD = "Add"
MEAN = "Mean"
GLUE = "glue"
# the README's rows, in this order
README_KINDS = (STEM, POINTWISE_EXPAND, POINTWISE_PROJECT, DEPTHWISE_1, DEPTHWISE_2,
                FULLY_CONNECTED, ADD, MEAN)


def zoo(seed=0, classes=10):
    """(.mtm bytes, [Layer or None per op]) of the table's layers (the module's chain)."""
    g = Int8Graph(seed)
    x = g.input((128, 128, 3))
    a = g.conv(x, 16, 3, 2, RELU6, Layer(STEM, "Conv1", readme=True))
    b = g.depthwise(a, 3, 1, RELU6, Layer(DEPTHWISE_1, "expanded_conv_depthwise"))
    c = g.conv(b, 8, 1, 1, LINEAR, Layer(POINTWISE_PROJECT, "expanded_conv_project"))
    # block 1 as MobileNetV2 runs it: the expansion streamed into its depthwise
    d = g.conv(c, 48, 1, 1, RELU6, Layer(STREAMED, "block_1_expand"))
    e = g.depthwise(d, 3, 2, RELU6, Layer(STREAMED, "block_1_depthwise"))
    f = g.conv(e, 8, 1, 1, LINEAR, Layer(POINTWISE_PROJECT, "block_1_project"))
    # block 2, its expansion unfused: a second depthwise (block 3's shape) also reads it
    expanded = g.conv(f, 48, 1, 1, RELU6, Layer(POINTWISE_EXPAND, "block_2_expand", True))
    h = g.depthwise(expanded, 3, 1, RELU6, Layer(DEPTHWISE_1, "block_2_depthwise", True))
    i = g.conv(h, 8, 1, 1, LINEAR, Layer(POINTWISE_PROJECT, "block_2_project", True))
    g.add(f, i, LINEAR, Layer(ADD, "block_2_add", True))  # read by nothing: measured alone
    k = g.depthwise(expanded, 3, 2, RELU6, Layer(DEPTHWISE_2, "block_3_depthwise", True))
    m = g.conv(k, 16, 1, 1, LINEAR, Layer(POINTWISE_PROJECT, "block_3_project"))
    # to Conv_1's input, 4x4x112: a strided 1x1 that is no MobileNetV2 layer
    n = g.conv(m, 112, 1, 4, LINEAR, Layer(GLUE, None))
    o = g.conv(n, 1280, 1, 1, RELU6, Layer(POINTWISE_WIDE, "Conv_1"), _image.PADDING_VALID)
    p = g.mean(o, Layer(MEAN, "global_average_pooling2d", True))
    q = g.fully_connected(p, 1000, LINEAR, Layer(FULLY_CONNECTED, "predictions", True))
    g.float_head(q, classes)
    return g.image(), g.layers
