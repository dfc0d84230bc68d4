"""TFLite ops whose inputs are all constants (TensorFlow's shape arithmetic, a float16
weight's DEQUANTIZE), evaluated at import with numpy. Each result is sized from its
inputs' shapes before it is computed and charged to the import's ``FoldBudget``
(budget.py): a 160 KB file whose constant ADD broadcasts [20000, 1] + [1, 20000] is
refused by name instead of filling 1.6 GB. A mixin of ``tflite_reader._Reader``, which
supplies ``budget``, ``options``, ``output_type``, ``_declared`` and
``dequantized_weight``.
"""

import numpy as np

from .budget import elements
from .graph import ConversionError

FOLDED_OPS = ("SHAPE, STRIDED_SLICE, PACK, CONCATENATION, RESHAPE, SQUEEZE, EXPAND_DIMS, "
              "CAST, GATHER, ADD, SUB, MUL, DEQUANTIZE")


class TfliteFolding:
    def fold(self, name, op, values, label):
        """The output arrays of a constant op; every one is kept until the import ends."""
        arrays = [None if v is None else np.asarray(v.const) for v in values]
        folded = self._fold(name, op, arrays, label)
        for array in folded:
            self.budget.keep(label, np.asarray(array).nbytes)
        return folded

    def _sized(self, label, shape, dtype, read):
        self.budget.allow(label, elements(shape) * np.dtype(dtype).itemsize,
                          elements(shape) + read)

    def _fold(self, name, op, arrays, label):
        read = sum(a.size for a in arrays if a is not None)
        if name == "STRIDED_SLICE":  # a view: at most its input
            o = self.options(op, "StridedSliceOptions")
            if o.EllipsisMask() or o.NewAxisMask():
                raise ConversionError("strided slice with ellipsis/new-axis masks", op=label)
            data, begin, end, strides = arrays
            if not len(begin) == len(end) == len(strides) <= data.ndim:
                raise ConversionError("begin, end and strides of %d, %d and %d entries slice a "
                                      "%d-D tensor" % (len(begin), len(end), len(strides),
                                                       data.ndim), op=label)
            slices = []
            for axis in range(len(begin)):
                b = None if o.BeginMask() >> axis & 1 else int(begin[axis])
                e = None if o.EndMask() >> axis & 1 else int(end[axis])
                s = int(strides[axis])
                if s == 0:
                    raise ConversionError("stride 0 on axis %d" % axis, op=label)
                if o.ShrinkAxisMask() >> axis & 1:
                    slices.append(int(begin[axis]))
                else:
                    slices.append(slice(b, e, s))
            self._sized(label, data.shape, data.dtype, read)
            return [np.array(data[tuple(slices)])]
        if name in ("PACK", "CONCATENATION"):
            axis = self.options(op, "PackOptions" if name == "PACK" else
                                "ConcatenationOptions").Axis()
            self._sized(label, (sum(a.size for a in arrays),), np.result_type(*arrays), read)
            if name == "PACK":
                return [np.stack(arrays, axis=axis)]
            return [np.concatenate(arrays, axis=axis)]
        if name in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):  # views
            return [np.reshape(arrays[0], [int(d) for d in self._declared(op)])]
        if name == "CAST":
            dtype = self.output_type(op)
            self._sized(label, arrays[0].shape, dtype, read)
            return [arrays[0].astype(dtype)]
        if name == "DEQUANTIZE":  # a float16 or int8 weight (widened when it was read
            array = arrays[0]     # by this reader, not by the int8 one's)
            self._sized(label, array.shape, np.float32, read)
            if array.dtype == np.int8:
                array = self.dequantized_weight(self.indices(op, "Inputs")[0], array)
            return [np.asarray(array, np.float32)]
        if name == "GATHER":
            data, indices = arrays
            axis = self.options(op, "GatherOptions").Axis()
            if not -data.ndim <= axis < data.ndim:
                raise ConversionError("axis %d of a %d-D tensor" % (axis, data.ndim),
                                      op=label, attribute="axis")
            axis %= data.ndim
            self._sized(label, data.shape[:axis] + indices.shape + data.shape[axis + 1:],
                        data.dtype, read)
            return [np.take(data, indices, axis=axis)]
        if name in ("ADD", "SUB", "MUL"):
            self._sized(label, np.broadcast_shapes(arrays[0].shape, arrays[1].shape),
                        np.result_type(arrays[0], arrays[1]), read)
            function = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}[name]
            return [function(arrays[0], arrays[1])]
        raise ConversionError("op %s on constants is not folded" % name, op=label,
                              supported=FOLDED_OPS)
