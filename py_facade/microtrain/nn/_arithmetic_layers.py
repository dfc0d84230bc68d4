"""Layout and arithmetic layers: ZeroPadding2D (PAD), Permute (TRANSPOSE), Multiply (MUL)
and Subtract (SUB). layers.py re-exports them.

Multiply and Subtract either merge two tensors of one shape (called on a list, like Add)
or, given ``constant=``, apply a per-channel ([C], C the last dimension) or scalar constant
to one tensor. Such a constant is a frozen image tensor (CONST, not TRAINABLE): it is
listed by ``get_weights()`` like every constant but never trained.
"""

import numpy as np

from .. import ops as _ops
from ._base import Layer, _as_float32_array, _emit_chain


def _non_negative(value):
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 0


class ZeroPadding2D(Layer):
    """Zeros around the H and W of an NHWC sample (Keras' ZeroPadding2D, PyTorch's
    ``F.pad(x, (left, right, top, bottom))`` on NCHW).

    Args:
        padding: an int (every side), (rows, columns) (before and after alike), or
                 ((top, bottom), (left, right)); each 0..65535
    """

    def __init__(self, padding=1):
        try:
            if _non_negative(padding):
                pads = ((padding, padding), (padding, padding))
            elif len(padding) == 2 and all(_non_negative(p) for p in padding):
                pads = ((padding[0], padding[0]), (padding[1], padding[1]))
            else:
                pads = tuple((int(a), int(b)) for a, b in padding) \
                    if len(padding) == 2 and all(_non_negative(v) for pair in padding
                                                 for v in pair) and \
                    all(len(pair) == 2 for pair in padding) else None
        except TypeError:
            pads = None
        if pads is None or any(v > 0xFFFF for pair in pads for v in pair):
            raise ValueError("ZeroPadding2D padding must be an int, (rows, columns) or "
                             "((top, bottom), (left, right)) of integers 0..65535, got %r"
                             % (padding,))
        self.padding = tuple((int(a), int(b)) for a, b in pads)

    def output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError("ZeroPadding2D takes [H, W, C] samples, got %r"
                             % (tuple(input_shape),))
        (top, bottom), (left, right) = self.padding
        return (input_shape[0] + top + bottom, input_shape[1] + left + right, input_shape[2])

    def params(self):
        """PAD's params: (top | bottom << 16, left | right << 16)."""
        (top, bottom), (left, right) = self.padding
        return (top | bottom << 16, left | right << 16)

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        builder.add_op(_ops.PAD, [input_tensor], [output], self.params())
        return output

    def __repr__(self):
        return "ZeroPadding2D(%r)" % (self.padding,)


def transpose_params(perm):
    """TRANSPOSE's params[0]: axis k of the output is axis perm[k] of the input (0-based
    sample axes), 4 bits each."""
    value = 0
    for k, axis in enumerate(perm):
        value |= int(axis) << (4 * k)
    return value


class Permute(Layer):
    """The sample's axes reordered (Keras' Permute: ``dims`` are 1-based sample axes, the
    batch stays first): Permute((3, 1, 2)) turns an [H, W, C] sample into [C, H, W]."""

    def __init__(self, dims):
        try:
            dims = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            dims = None
        if not dims or len(dims) > 4 or sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError("Permute dims must order the sample axes 1..n (n <= 4), got %r"
                             % (dims,))
        self.dims = dims

    def output_shape(self, input_shape):
        if len(input_shape) != len(self.dims):
            raise ValueError("Permute%r needs %d-D samples, got %r"
                             % (self.dims, len(self.dims), tuple(input_shape)))
        return tuple(input_shape[d - 1] for d in self.dims)

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        builder.add_op(_ops.TRANSPOSE, [input_tensor], [output],
                       (transpose_params([d - 1 for d in self.dims]),))
        return output

    def __repr__(self):
        return "Permute(%r)" % (self.dims,)


class _Binary(Layer):
    OP_TYPE = None
    MAX_INPUTS = 2

    def __init__(self, constant=None):
        self.constant = None
        if constant is not None:
            array = _as_float32_array(constant, "%s constant" % type(self).__name__)
            if array.ndim > 1:
                raise ValueError("%s constant must be a scalar or 1-D (one value per channel), "
                                 "got shape %r" % (type(self).__name__, array.shape))
            self.constant = array.reshape(-1)
            self.MERGES = False  # one tensor and the constant

    def output_shape(self, input_shape):
        if self.constant is not None:
            channels = input_shape[-1]
            if self.constant.size not in (1, channels):
                raise ValueError("%s constant has %d values; the sample's last dimension is %d"
                                 % (type(self).__name__, self.constant.size, channels))
            return tuple(input_shape)
        shapes = [tuple(s) for s in input_shape]
        if not 2 <= len(shapes) <= self.MAX_INPUTS:
            raise ValueError("%s takes a list of 2%s tensors, got %d" % (
                type(self).__name__, "" if self.MAX_INPUTS == 2 else " or more", len(shapes)))
        if any(s != shapes[0] for s in shapes):
            raise ValueError("%s needs tensors of one shape, got %s"
                             % (type(self).__name__, shapes))
        return shapes[0]

    def emit(self, builder, inputs, shapes, rng):
        shape = self.output_shape(shapes)
        if self.constant is not None:
            constant = builder.add_constant(self.constant)
            output = builder.add_activation(shape)
            builder.add_op(self.OP_TYPE, [inputs, constant], [output])
            return output
        return _emit_chain(builder, self.OP_TYPE, inputs, shape)

    def __repr__(self):
        if self.constant is None:
            return "%s()" % type(self).__name__
        return "%s(constant=%r)" % (type(self).__name__, self.constant.tolist())


class Multiply(_Binary):
    """y = a * b (* ...) of tensors of one shape (called on a list), or y = x * constant
    (``constant=``: one value per channel, or a scalar; frozen)."""
    OP_TYPE = _ops.MUL
    MERGES = True
    MAX_INPUTS = 255


class Subtract(_Binary):
    """y = a - b of two tensors of one shape (called on a list of two), or y = x - constant
    (``constant=``: one value per channel, or a scalar; frozen)."""
    OP_TYPE = _ops.SUB
    MERGES = True


__all__ = ["ZeroPadding2D", "Permute", "Multiply", "Subtract", "transpose_params"]
