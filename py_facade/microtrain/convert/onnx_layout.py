"""How the ONNX importer holds tensors, and the ops that only move elements.

ONNX images are NCHW; the core's spatial ops are NHWC. A model input is held as the user
gives it ([C, H, W] per sample, as ONNX Runtime takes it); the first spatial op that reads
it gets a TRANSPOSE op to [H, W, C] (``spatial``), and a tensor leaving the graph in NCHW
gets one back (``logical``). In between, activations keep the source's *logical* shape
next to the core's (graph.Value): a Conv's [C, H, W] result is held as [H, W, C], a
Flatten of it keeps that order (a Dense reading it permutes its weight columns instead of
moving elements), and an ONNX Transpose between NCHW and NHWC only relabels. A mixin of
``onnx_reader._Reader``.
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from .graph import (BATCH, ConversionError, Value, count, is_identity, nchw_perm,
                    same_or_valid, sample_of_target, window_count)


def flat_pads(pads):
    """((top, bottom), (left, right)) as ONNX writes them: [top, left, bottom, right]."""
    return [p for pair in zip(*pads) for p in pair]


def _sample_of_target(target, logical, label):
    """The sample shape an ONNX Reshape target gives (entry 0 is the batch; 0 copies)."""
    rest = list(target[1:])
    for i, d in enumerate(rest):
        if d == 0:
            if i >= len(logical):
                raise ConversionError("new shape %r copies a dimension the input lacks"
                                      % (target,), op=label)
            rest[i] = logical[i]
    return sample_of_target([target[0]] + rest, logical, label)


class LayoutOps:
    def spatial(self, value, label):
        """``value`` as the core's spatial ops take it: a logical [C, H, W] sample held as
        [H, W, C]. A sample the core holds in the source's order (a model input, a
        Reshape's result) gets a TRANSPOSE op, once however many ops read it."""
        x = self.activation(value, label)
        if x.nchw:
            return x
        if len(x.shape) != 3 or x.perm is not None:
            raise ConversionError("input sample has shape %r; the core's spatial ops take "
                                  "[C, H, W] images (NCHW)" % (x.shape,), op=label)
        if x.nhwc_view is None:
            source = self.builder.reshape_core(x, x.shape, label)
            index, core = self.builder.transpose(source, x.shape, (1, 2, 0), label)
            x.nhwc_view = Value(x.shape, index=index, core_shape=core, perm=nchw_perm(x.shape),
                                producer=len(self.builder.ops) - 1)
        return x.nhwc_view

    def logical(self, value, label):
        """``value`` with the core holding its elements in the source's order (an image
        held as [H, W, C] gets a TRANSPOSE op, a flattened one a TRANSPOSE between two
        RESHAPEs), once however many ops need it."""
        if value.is_const or value.perm is None:
            return value
        if value.logical_view is not None:
            return value.logical_view
        if value.nchw:
            index, core = self.builder.transpose(value.index, value.core_shape, (2, 0, 1), label)
            result = Value(value.shape, index=index, core_shape=core,
                           producer=len(self.builder.ops) - 1)
        elif value.chw is not None:  # a flattened image: the core holds its H, W, C order
            channels, height, width = value.chw
            hwc = self.builder.reshape_core(value, (height, width, channels), label)
            index, core = self.builder.transpose(hwc, (height, width, channels), (2, 0, 1),
                                                 label)
            image = Value(value.chw, index=index, core_shape=core)
            result = Value(value.shape, index=self.builder.reshape_core(
                image, value.core_shape, label), core_shape=value.core_shape)
        else:
            raise ConversionError("the core holds this tensor's elements in an order it "
                                  "cannot restore", op=label)
        value.logical_view = result
        return result

    def in_shape(self, value, label):
        """``value`` in the source's order with the core holding exactly its logical shape
        (a RESHAPE where they differ, such as [C] for a pooled [C, 1, 1])."""
        value = self.logical(value, label)
        if value.core_shape == value.shape:
            return value
        index = self.builder.reshape_core(value, value.shape, label)
        return Value(value.shape, index=index, core_shape=value.shape)

    def padding(self, attrs, x, kernel, label, ceil_mode=False):
        """The core's padding code equal to this node's auto_pad/pads/strides."""
        strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
        if len(strides) != 2 or min(strides) < 1 or max(strides) > 0xFFFF:
            raise ConversionError("strides %r are not two positive integers" % (list(strides),),
                                  op=label, attribute="strides",
                                  supported="[SH, SW] of 1..65535")
        if len(kernel) != 2 or min(kernel) < 1 or max(kernel) > 0xFFFF:
            raise ConversionError("kernel %r is not a 2-D window" % (list(kernel),), op=label,
                                  attribute="kernel_shape", supported="[KH, KW] of 1..65535")
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        sizes = x.shape[1:]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            pads = []
            for size, k, s in zip(sizes, kernel, strides):
                out = -(-size // s)
                total = max((out - 1) * s + k - size, 0)
                before = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
                pads.append((before, total - before))
        elif auto_pad == "VALID":
            pads = [(0, 0), (0, 0)]
        elif auto_pad == "NOTSET":
            flat = [int(p) for p in attrs.get("pads", (0, 0, 0, 0))]
            if len(flat) != 4:
                raise ConversionError("pads %r are not [top, left, bottom, right]" % (flat,),
                                      op=label, attribute="pads",
                                      supported="4 pads of a 2-D window")
            pads = [(flat[0], flat[2]), (flat[1], flat[3])]
        else:
            raise ConversionError("auto_pad %s is not supported" % auto_pad, op=label,
                                  attribute="auto_pad")
        if any(p < 0 for pair in pads for p in pair):
            raise ConversionError("negative pads %r crop the input" % (flat_pads(pads),),
                                  op=label, attribute="pads", supported="pads >= 0")
        for size, k, (before, after) in zip(sizes, kernel, pads):
            if size + before + after < k:
                raise ConversionError("a %d window is larger than the padded input (%d)"
                                      % (k, size + before + after), op=label,
                                      attribute="kernel_shape")
        codes = set(same_or_valid(size, k, s, before, after, ceil_mode)
                    for size, k, s, (before, after) in zip(sizes, kernel, strides, pads))
        code = codes.pop() if len(codes) == 1 else None
        return strides, code, pads

    def explicit_pads(self, x, pads, label):
        """x padded with zeros by a PAD op (``pads`` ((top, bottom), (left, right))): a
        convolution's explicit pads, or the zeros an average with count_include_pad=1
        counts."""
        if not any(p for pair in pads for p in pair):
            return x
        index, core = self.builder.pad(x, tuple(tuple(pair) for pair in pads), label)
        return self.image_value(index, x.shape[0], core[:2])

    def pool_windows(self, x, kernel, strides, pads, ceil_mode, count_pads, label):
        """(x as the pool reads it, the core's padding, (OH, OW)) for a pool with ONNX's
        ``pads`` and ``ceil_mode``: the windows ONNX Runtime places (graph.window_count).
        The padding is SAME or VALID where those place the same windows (the images of
        older releases), else explicit pads with the pads after trimmed to the last window's
        reach (ceil_mode's extra window is padding after). ``count_pads``: an average that
        counts the padded zeros (count_include_pad=1) reads x padded by a PAD op, and only
        ceil_mode's reach past it is left to the pool, which counts nothing there, as ONNX
        Runtime does."""
        sizes = x.shape[1:]
        outs = [window_count(size, k, s, before, after, ceil_mode)
                for size, k, s, (before, after) in zip(sizes, kernel, strides, pads)]
        if count_pads:
            x = self.explicit_pads(x, pads, label)
            sizes, pads = x.shape[1:], [(0, 0), (0, 0)]
        core_pads = tuple((before, max(0, (out - 1) * s + k - size - before))
                          for size, k, s, (before, _), out in zip(sizes, kernel, strides, pads,
                                                                  outs))
        codes = set(same_or_valid(size, k, s, before, after)
                    for size, k, s, (before, after) in zip(sizes, kernel, strides, core_pads))
        if len(codes) == 1 and None not in codes:
            padding = codes.pop()
        else:
            padding = core_pads
            for size, k, s, (before, after), axis in zip(sizes, kernel, strides, core_pads,
                                                         ("rows", "columns")):
                why = _image.padding_only_window(size, k, s, before, after)
                if why is not None:
                    raise ConversionError(
                        "pads %r with strides %r, kernel %r%s on a %dx%d input: along the "
                        "%s %s" % (flat_pads(pads), list(strides), list(kernel),
                                   ", ceil_mode" if ceil_mode else "", x.shape[1], x.shape[2],
                                   axis, why), op=label, attribute="pads",
                        supported="pads that leave an input element in every window")
                if max(before, after) > _image.MAX_POOL_PAD:
                    raise ConversionError(
                        "pads %r: the core's pools take pads of at most %d"
                        % (flat_pads(pads), _image.MAX_POOL_PAD), op=label,
                        attribute="pads", supported="0..%d" % _image.MAX_POOL_PAD)
        if list(self.out_spatial(x, kernel, strides, padding)) != outs:
            raise ConversionError("the core cannot place the %r windows of pads %r%s"
                                  % (outs, flat_pads(pads), ", ceil_mode" if ceil_mode else ""),
                                  op=label, attribute="pads")
        return x, padding, tuple(outs)

    def out_spatial(self, x, kernel, strides, padding):
        """(OH, OW) of a spatial op on x: ``padding`` a core code or explicit pads
        ((top, bottom), (left, right))."""
        per_axis = padding if isinstance(padding, tuple) else (padding, padding)
        return tuple(_image.spatial_output_size(size, k, s, axis_padding)
                     for size, k, s, axis_padding in zip(x.shape[1:], kernel, strides,
                                                         per_axis))

    def image_value(self, index, channels, out_hw):
        shape = (channels,) + tuple(out_hw)
        core = tuple(out_hw) + (channels,)
        return Value(shape, index=index, core_shape=core, perm=nchw_perm(shape),
                     producer=len(self.builder.ops) - 1)

    def op_Identity(self, node, inputs, label):
        return [inputs[0]]

    def op_Dropout(self, node, inputs, label):
        self.attributes(node, label, {"ratio", "seed", "is_test"})
        if len(inputs) > 2 and inputs[2] is not None:
            mode = inputs[2]
            if not mode.is_const or bool(np.asarray(mode.const).ravel()[0]):
                raise ConversionError("training_mode is true or computed", op=label,
                                      attribute="training_mode", supported="inference")
        return [inputs[0]]

    def _reshaped(self, x, sample, label):
        """``x`` as logical sample shape ``sample`` (same elements, logical order)."""
        sample = tuple(int(d) for d in sample)
        if not 1 <= len(sample) <= 4:
            raise ConversionError("the result has %d dimensions besides the batch; the core "
                                  "holds 1 to 4" % len(sample), op=label)
        if sample == x.shape:
            return x
        if len(sample) == 1 and x.perm is not None:
            # a flattened image keeps the core's H, W, C order: a Dense reading it takes
            # its weight columns permuted instead of a TRANSPOSE (see graph.Value)
            index = self.builder.reshape_core(x, sample, label)
            return Value(sample, index=index, core_shape=sample, perm=x.perm,
                         chw=x.shape if x.nchw else x.chw)
        x = self.logical(x, label)
        index = self.builder.reshape_core(x, sample, label)
        return Value(sample, index=index, core_shape=sample)

    def op_Flatten(self, node, inputs, label):
        x = self.activation(inputs[0], label)
        axis = self.attributes(node, label, {"axis"}).get("axis", 1)
        if axis % (len(x.shape) + 1) != 1:
            raise ConversionError("flatten at axis %d mixes the batch with features" % axis,
                                  op=label, attribute="axis", supported="1")
        return [self._reshaped(x, (count(x.shape),), label)]

    def op_Reshape(self, node, inputs, label):
        self.attributes(node, label, {"allowzero"})
        x = self.activation(inputs[0], label)
        if not inputs[1].is_const:
            raise ConversionError("the new shape is computed from run-time data", op=label)
        target = [int(d) for d in np.asarray(inputs[1].const).ravel()]
        return [self._reshaped(x, _sample_of_target(target, x.shape, label), label)]

    def _axes(self, node, inputs, label):
        attrs = self.attributes(node, label, {"axes"})
        if "axes" in attrs:
            return [int(a) for a in attrs["axes"]]
        if len(inputs) > 1 and inputs[1] is not None:
            if not inputs[1].is_const:
                raise ConversionError("the axes are computed at run time", op=label)
            return [int(a) for a in np.asarray(inputs[1].const).ravel()]
        return None

    def op_Squeeze(self, node, inputs, label):
        x = self.activation(inputs[0], label)
        axes = self._axes(node, inputs, label)
        rank = len(x.shape) + 1
        if axes is None:
            axes = [i + 1 for i, d in enumerate(x.shape) if d == 1]
        axes = [a % rank for a in axes]
        if 0 in axes:
            raise ConversionError("squeezing the batch dimension", op=label, attribute="axes")
        sample = tuple(d for i, d in enumerate(x.shape) if i + 1 not in axes)
        return [self._reshaped(x, sample, label)]

    def op_Unsqueeze(self, node, inputs, label):
        x = self.activation(inputs[0], label)
        axes = self._axes(node, inputs, label)
        rank = len(x.shape) + 1 + len(axes)
        shape = [BATCH] + list(x.shape)
        for axis in sorted(a % rank for a in axes):
            if axis == 0:
                raise ConversionError("a new first dimension moves the batch", op=label,
                                      attribute="axes")
            shape.insert(axis, 1)
        return [self._reshaped(x, shape[1:], label)]

    def op_Concat(self, node, inputs, label):
        axis = self.attributes(node, label, {"axis"})["axis"]
        xs = [self.activation(v, label, "operand") for v in inputs]
        if not 2 <= len(xs) <= 4:
            raise ConversionError("%d operands; the core joins 2 to 4" % len(xs), op=label)
        rank = len(xs[0].shape) + 1
        axis %= rank
        if rank == 4 and axis == 1 and all(len(x.shape) == 3 for x in xs):
            xs = [self.spatial(x, label) for x in xs]
            hw = xs[0].shape[1:]
            if any(x.shape[1:] != hw for x in xs):
                raise ConversionError("operands differ in H, W", op=label)
            channels = sum(x.shape[0] for x in xs)
            index = self.builder.op(_ops.CONCATENATION, [x.index for x in xs],
                                    tuple(hw) + (channels,), label)
            return [self.image_value(index, channels, hw)]
        if axis == rank - 1 and all(len(x.shape) == rank - 1 for x in xs):
            xs = [self.in_shape(x, label) for x in xs]
            rest = xs[0].shape[:-1]
            if any(x.shape[:-1] != rest for x in xs):
                raise ConversionError("operands differ outside the joined axis", op=label)
            shape = tuple(rest) + (sum(x.shape[-1] for x in xs),)
            index = self.builder.op(_ops.CONCATENATION, [x.index for x in xs], shape, label)
            return [Value(shape, index=index)]
        raise ConversionError("concatenation along axis %d is not supported" % axis,
                              op=label, attribute="axis", supported="the channels of "
                              "images (1), or the last axis")

    def op_Transpose(self, node, inputs, label):
        """A free relabelling when the core already holds the result's order (NCHW <->
        NHWC of an image the core holds as [H, W, C]), else a TRANSPOSE op."""
        attrs = self.attributes(node, label, {"perm"})
        x = self.activation(inputs[0], label)
        rank = len(x.shape) + 1
        perm = [int(p) for p in attrs.get("perm", range(rank - 1, -1, -1))]
        if sorted(perm) != list(range(rank)) or perm[0] != 0:
            raise ConversionError("perm %r moves the batch dimension" % (perm,), op=label,
                                  attribute="perm", supported="perm[0] = 0: the batch stays "
                                  "first")
        axes = [p - 1 for p in perm[1:]]
        shape = tuple(x.shape[a] for a in axes)
        # result.ravel()[j] = x.ravel()[order[j]]; the core holds result.ravel()[held[i]]
        order = np.arange(count(x.shape)).reshape(x.shape).transpose(axes).ravel()
        held = np.argsort(order)
        if x.perm is not None:
            held = held[x.perm]
        if is_identity(held):
            return [Value(shape, index=x.index, core_shape=x.core_shape, producer=x.producer)]
        if len(shape) == 3 and x.core_shape == (shape[1], shape[2], shape[0]) and \
                np.array_equal(held, nchw_perm(shape)):
            return [Value(shape, index=x.index, core_shape=x.core_shape, perm=held,
                          producer=x.producer)]
        if x.nchw:  # the logical sample is core.transpose(2, 0, 1)
            index, core = self.builder.transpose(x.index, x.core_shape,
                                                 [(2, 0, 1)[a] for a in axes], label)
        else:
            x = self.in_shape(x, label)
            index, core = self.builder.transpose(x.index, x.shape, axes, label)
        return [Value(shape, index=index, core_shape=core, producer=len(self.builder.ops) - 1)]

    def op_Pad(self, node, inputs, label):
        """Zero padding of the H and W of an image: a PAD op."""
        attrs = self.attributes(node, label, {"mode", "pads", "value"})
        mode = attrs.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode != "constant":
            raise ConversionError("mode %s is not supported" % mode, op=label,
                                  attribute="mode", supported="constant (zeros)")
        x = self.activation(inputs[0], label)
        rank = len(x.shape) + 1
        operands = [self.constant_operand(v, label, what) for v, what in
                    zip(inputs[1:4], ("pads", "constant_value", "axes"))]
        pads = attrs.get("pads") if "pads" in attrs else operands[0]
        fill = attrs.get("value", 0.0)
        if len(operands) > 1 and operands[1] is not None:
            fill = float(np.asarray(operands[1]).ravel()[0]) if np.size(operands[1]) else 0.0
        if pads is None:
            raise ConversionError("the pads are missing", op=label)
        pads = [int(p) for p in np.asarray(pads).ravel()]
        axes = list(range(rank)) if len(operands) < 3 or operands[2] is None else \
            [int(a) % rank for a in np.asarray(operands[2]).ravel()]
        if len(pads) != 2 * len(axes):
            raise ConversionError("%d pads for %d axes" % (len(pads), len(axes)), op=label)
        full = [0] * (2 * rank)
        for position, axis in enumerate(axes):
            full[axis], full[axis + rank] = pads[position], pads[position + len(axes)]
        if fill != 0.0:
            raise ConversionError("padding with %g is not supported" % fill, op=label,
                                  attribute="value", supported="zeros")
        if rank != 4 or any(full[a] or full[a + rank] for a in (0, 1)) or min(full) < 0:
            raise ConversionError("pads %r are not supported" % (full,), op=label,
                                  attribute="pads", supported="zeros around H and W of an "
                                  "NCHW image (pads >= 0)")
        x = self.spatial(x, label)
        index, core = self.builder.pad(x, ((full[2], full[6]), (full[3], full[7])), label)
        return [self.image_value(index, x.shape[0], core[:2])]
