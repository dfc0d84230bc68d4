"""The work of one op of a model image, counted as the reference kernels do it: the unit the
per-op cost tables (benchmarks/arm_ops.py, arm_int8_ops.py) divide instructions by.

Weighted ops (Dense, Conv2D, DepthwiseConv2D and their int8 forms): multiply-accumulates of
one sample's forward, the reference loops' terms; a tap in the padding is no term (the
reference kernels skip it: ops/conv2d.c, ops/conv_s8.c), so a SAME 3x3 convolution of an
8 x 8 image has 8·8·9 - 4·(3·8) + 4 = 484 taps per channel pair, not 576. The input gradient
dX of such an op has the same terms (dX[tap] += W·dY over the same in-bounds taps), the weight
gradient dW too. Element-wise int8 ops: elements, of the output for ADD_S8 (one rescaled sum
each) and of the input for MEAN_S8 (one addition each, then one requantization per channel).
Padding follows TFLite, as micro_core/src/ops/spatial.c's mt_spatial_axis does.
"""

from microtrain import ops as _ops
from microtrain.nn import image as _image

MAC = "MAC"
ELEMENT = "element"
WEIGHTED = (_ops.DENSE, _ops.CONV2D, _ops.DEPTHWISE_CONV2D, _ops.DENSE_S8, _ops.CONV2D_S8,
            _ops.DEPTHWISE_CONV2D_S8)


def spatial_axis(size, kernel, stride, padding):
    """(output size, padding before) along one axis: TFLite's VALID or SAME"""
    if padding == _image.PADDING_VALID:
        return (size - kernel) // stride + 1, 0
    if padding != _image.PADDING_SAME:
        raise ValueError("padding %r is neither VALID nor SAME" % (padding,))
    out = -(-size // stride)
    return out, max((out - 1) * stride + kernel - size, 0) // 2


def valid_taps(size, kernel, stride, padding):
    """For each output position along one axis, how many of its kernel's taps fall inside
    the input (the others are in the padding)"""
    out, pad = spatial_axis(size, kernel, stride, padding)
    return [sum(0 <= o * stride + k - pad < size for k in range(kernel)) for o in range(out)]


def conv_taps(h, w, kh, kw, strides, padding):
    """In-bounds (output position, tap) pairs of one channel pair of a 2-D convolution"""
    rows = valid_taps(h, kh, strides[0], padding)
    cols = valid_taps(w, kw, strides[1], padding)
    return sum(rows) * sum(cols)


def op_work(image, op):
    """(unit, count) of one sample's forward of ``op`` (an OpSpec of ``image``, a read
    image), or None for an op whose work is not counted here (activations, reshapes,
    quantization, the float pools)"""
    dims = lambda index: image.tensors[index].dims  # noqa: E731
    if op.op_type in (_ops.DENSE, _ops.DENSE_S8):
        units, inputs = dims(op.inputs[1])
        return MAC, units * inputs
    if op.op_type in (_ops.CONV2D, _ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D,
                      _ops.DEPTHWISE_CONV2D_S8):
        h, w, c = dims(op.inputs[0])
        _, kh, kw, _ = dims(op.inputs[1])
        strides = (op.params[1] & 0xFFFF, op.params[1] >> 16)
        taps = conv_taps(h, w, kh, kw, strides, op.params[2])
        depthwise = op.op_type in (_ops.DEPTHWISE_CONV2D, _ops.DEPTHWISE_CONV2D_S8)
        return MAC, taps * c * (1 if depthwise else dims(op.outputs[0])[-1])
    if op.op_type == _ops.ADD_S8:
        return ELEMENT, _count(dims(op.outputs[0]))
    if op.op_type == _ops.MEAN_S8:
        return ELEMENT, _count(dims(op.inputs[0]))
    return None


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n
