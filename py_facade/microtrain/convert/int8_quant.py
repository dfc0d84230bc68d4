"""TFLite's quantization arithmetic done once, at conversion: the (multiplier, shift) pairs
and clamp ranges its kernels' Prepare computes from the float scales, which the core's int8
ops read from the image (micro_core/src/ops/quant.h). Every expression repeats TFLite's
operand types and order (float32 products where TFLite multiplies floats, doubles where it
casts first), so the integers are the ones LiteRT's reference kernels use.
"""

import math

import numpy as np

from .graph import CorruptModel

INT8_MIN, INT8_MAX = -128, 127
ADD_LEFT_SHIFT = 20  # TFLite's left_shift of int8 ADD


def check_parameters(scales, zero_points, tensor_type, what, label=None):
    """Quantization parameters as TFLite and the core require them, or a CorruptModel
    naming ``what``: every scale finite and > 0 (a requantization divides by it); an int8
    tensor's zero points in -128..127, an int32 one's (a bias) 0."""
    scales = np.asarray(scales, np.float64).ravel()
    bad = scales[~(np.isfinite(scales) & (scales > 0))]
    if bad.size:
        raise CorruptModel("%s has quantization scale %g" % (what, float(bad[0])), op=label,
                           supported="finite scales > 0")
    low, high = {9: (INT8_MIN, INT8_MAX), 2: (0, 0)}.get(int(tensor_type), (None, None))
    zero_points = np.asarray(zero_points, np.int64).ravel()
    if low is not None and zero_points.size and (zero_points.min() < low or
                                                 zero_points.max() > high):
        wrong = zero_points[(zero_points < low) | (zero_points > high)][0]
        raise CorruptModel("%s has zero point %d" % (what, int(wrong)), op=label,
                           supported="%d..%d for its type" % (low, high))


def round_half_away(value):
    """std::round: to the nearest integer, ties away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def quantize_multiplier(real):
    """TFLite's QuantizeMultiplier(double): (multiplier in [2^30, 2^31) or 0, shift) with
    real = multiplier * 2^(shift - 31); a shift below -31 flushes to (0, 0)."""
    real = float(real)
    if real == 0.0:
        return 0, 0
    significand, shift = math.frexp(real)
    fixed = int(round_half_away(significand * (1 << 31)))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if fixed > 2 ** 31 - 1 or shift > 30:
        raise ValueError("a requantization multiplier of %r is beyond TFLite's range" % real)
    return fixed, shift


def f32(value):
    return np.float32(value)


def conv_requant(input_scale, weight_scales, output_scale, channels):
    """[channels, 2] int32 of PopulateConvolutionQuantizationParams (Conv2D, DepthwiseConv2D):
    double(sx) * double(sw[c]) / double(sy)."""
    scales = np.asarray(weight_scales, dtype=np.float32).reshape(-1)
    if scales.size == 1:
        scales = np.repeat(scales, channels)
    rows = [quantize_multiplier(float(f32(input_scale)) * float(s) / float(f32(output_scale)))
            for s in scales]
    return np.asarray(rows, dtype=np.int32).reshape(channels, 2)


FC_SCALE_LIMIT = 2.0 ** 20  # DENSE_S8's double scales stay below (micro_core/src/ops/quant.h)


def dense_scales(input_scale, weight_scales, output_scale, units):
    """[units, 2] int32 of DENSE_S8: the binary64 bits (low word, high word) of LiteRT's
    reference FullyConnected's scale double(sx) * double(sw[u]) / double(sy), which it
    multiplies each sum by in double (one weight scale: the same row ``units`` times)."""
    scales = np.asarray(weight_scales, dtype=np.float32).reshape(-1)
    if scales.size == 1:
        scales = np.repeat(scales, units)
    real = np.asarray([float(f32(input_scale)) * float(s) / float(f32(output_scale))
                       for s in scales], dtype="<f8")
    outside = ~((real > 0) & (real < FC_SCALE_LIMIT))
    if outside.any():
        raise ValueError("a rescale sx*sw/sy of %r" % float(real[outside][0]))
    return real.view("<i4").reshape(units, 2).astype(np.int32)


def add_requant(scale_a, scale_b, scale_out):
    """[4, 2] int32 of int8 ADD's Prepare: the inputs' and output's multipliers and
    (left_shift, 0)."""
    twice_max = float(f32(2) * max(f32(scale_a), f32(scale_b)))
    real_a = float(f32(scale_a)) / twice_max
    real_b = float(f32(scale_b)) / twice_max
    real_out = twice_max / float(f32(1 << ADD_LEFT_SHIFT) * f32(scale_out))
    rows = [quantize_multiplier(real_a), quantize_multiplier(real_b),
            quantize_multiplier(real_out), (ADD_LEFT_SHIFT, 0)]
    for multiplier, shift in rows[:3]:
        if shift > 0:
            raise ValueError("an int8 ADD rescale above 1 (TFLite requires < 1)")
    return np.asarray(rows, dtype=np.int32)


def mean_requant(input_scale, output_scale):
    """MEAN's (multiplier, shift) of double(sx) / double(sy); the kernel folds 1/count in."""
    return quantize_multiplier(float(f32(input_scale)) / float(f32(output_scale)))


def activation_range(fused, scale, zero_point):
    """CalculateActivationRangeQuantized: the int8 clamp of a fused NONE / RELU / RELU6
    (TFLite's ActivationFunctionType 0, 1, 3), quantizing 0 and 6 as zp + round(f / scale)
    in float32."""
    def quantize(value):
        return int(zero_point) + int(round_half_away(float(f32(value) / f32(scale))))
    if fused == 0:
        return INT8_MIN, INT8_MAX
    if fused == 1:
        return max(INT8_MIN, quantize(0.0)), INT8_MAX
    if fused == 3:
        return max(INT8_MIN, quantize(0.0)), min(INT8_MAX, quantize(6.0))
    raise ValueError("fused activation %d has no int8 clamp here" % fused)


def byte(value):
    """A signed byte as the low 8 bits of a param."""
    return int(value) & 0xFF


def packed_conv_params(x_zp, y_zp, act_min, act_max):
    """params[0] of CONV2D_S8 / DEPTHWISE_CONV2D_S8 / DENSE_S8."""
    return byte(x_zp) | byte(y_zp) << 8 | byte(act_min) << 16 | byte(act_max) << 24


def dequantize(values, scales, zero_points, axis):
    """scale * (q - zp) in float32 along ``axis`` (weights and biases of the float part)."""
    values = np.asarray(values)
    scales = np.asarray(scales, dtype=np.float32).reshape(-1)
    zero_points = np.asarray(zero_points, dtype=np.int64).reshape(-1)
    if scales.size > 1:
        shape = [1] * values.ndim
        shape[axis] = scales.size
        scales = scales.reshape(shape)
        zero_points = zero_points.reshape(shape)
    return ((values.astype(np.int64) - zero_points).astype(np.float32) * scales).astype(np.float32)
