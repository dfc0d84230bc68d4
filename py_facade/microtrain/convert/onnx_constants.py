"""Constant subgraphs of ONNX models, evaluated at import: ``Constant``,
``ConstantOfShape``, ``Shape`` of an activation (with ``graph.BATCH`` standing in for the
batch), ``Gather``, ``Concat``, arithmetic, ... with numpy for the usual shape arithmetic,
``onnx_subgraphs`` for Loop and If, and ``onnx.reference`` for the rest
(``onnx_reference``). A mixin of ``onnx_reader._Reader``, which supplies ``budget`` (a
``budget.FoldBudget``: every op is sized before it is evaluated), ``values``, ``opset``
and ``numpy_helper``.
"""

import numpy as np

from . import onnx_reference
from .budget import elements
from .graph import BATCH, CONTRADICTION_ERRORS, ConversionError, Value
from .onnx_subgraphs import SubgraphFolding



def _nbytes(shape, dtype):
    return elements(shape) * np.dtype(dtype).itemsize


class ConstantFolding(SubgraphFolding):
    def fold_shape(self, node, value, label):
        attrs = self.attributes(node, label, {"start", "end"})
        if value.is_const:
            shape = list(value.const.shape)
        else:
            shape = [BATCH] + list(value.shape)
        start, end = attrs.get("start", 0), attrs.get("end", None)
        result = np.array(shape[start:end], np.int64)
        return Value(result.shape, const=result)

    def fold(self, node, inputs, label):
        """Evaluate a node of the graph on constants; its results stay alive, so they count
        against the budget's bytes."""
        if node.op_type in ("Identity", "Dropout"):
            return [inputs[0]]
        arrays = [None if v is None else v.const for v in inputs]
        values = []
        for array in self.evaluate(node, arrays, label, self.graph_constant):
            if array is None:  # an output the node was not asked for
                values.append(None)
                continue
            array = np.asarray(array)
            self.budget.keep(label, array.nbytes)
            values.append(Value(array.shape, const=array))
        if node.op_type == "Constant" and values:
            values[0].const_key = node.output[0]  # write-back replaces the node's value
        return values

    def graph_constant(self, name, label):
        """A constant of the main graph that a subgraph (a Loop's body) reads by name."""
        value = self.values.get(name)
        if value is None:
            raise ConversionError("a subgraph reads %r, which nothing wrote before" % name,
                                  op=label)
        if not value.is_const:
            raise ConversionError("a subgraph reads the activation %r; only subgraphs of "
                                  "constants are evaluated" % name, op=label)
        return value.const

    def evaluate(self, node, arrays, label, scope):
        """The output arrays of ``node`` on constant ``arrays`` (``scope``: where a subgraph
        finds the names it reads from outside). Everything it cannot evaluate, or that the
        budget refuses, is a ConversionError naming the node."""
        try:
            return self._evaluate(node, arrays, label, scope)
        except ConversionError as error:
            if error.op is None:
                raise ConversionError(str(error), op=label) from None
            raise
        except CONTRADICTION_ERRORS as error:
            raise ConversionError("could not evaluate this node on constants (%s: %s)"
                                  % (type(error).__name__, error), op=label) from None

    def _evaluate(self, node, arrays, label, scope):
        from onnx import AttributeProto, helper
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        op = node.op_type
        if op in ("Loop", "If"):
            return self.fold_subgraph(node, arrays, label, scope, attrs)
        if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
            raise ConversionError("%s runs a subgraph; on constants only Loop's and If's are "
                                  "evaluated" % op, op=label, supported="Loop, If")
        if op in ("Identity", "Dropout"):
            return [arrays[0]]
        numpy_op = getattr(self, "_np_" + op, None)
        if numpy_op is not None:
            result = numpy_op(arrays, attrs, label)
            if result is not None:
                return [result]
        return onnx_reference.evaluate(node, arrays, label, self.budget, self.opset)

    # ------------------------------------------------------------ numpy, sized first
    # Each returns the result, or None for a case left to onnx.reference.

    def _np_Constant(self, arrays, attrs, label):
        if "value" in attrs:
            return self.tensor_array(attrs["value"], label)
        if "sparse_value" in attrs:
            raise ConversionError("a sparse_value Constant is not evaluated", op=label,
                                  supported="value, value_float(s), value_int(s)")
        for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                           ("value_int", np.int64), ("value_ints", np.int64)):
            if key in attrs:
                return np.array(attrs[key], dtype)
        return None

    def tensor_array(self, tensor, label, folded=True):
        """numpy array of a TensorProto of the file; external data must have been read in
        already (onnx would read it from the working directory). ``folded``: a Constant's
        value or a subgraph's initializer, sized against the budget first (an initializer
        of the main graph is the file's own bytes)."""
        from onnx import TensorProto
        if tensor.data_location == TensorProto.EXTERNAL:
            raise ConversionError("tensor %r keeps its data in an external file that was "
                                  "not read in" % tensor.name, op=label,
                                  supported="external data of initializers and Constant "
                                  "nodes of the main graph, read from beside the .onnx file")
        from onnx import helper
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        except (KeyError, TypeError, ValueError):
            raise ConversionError("tensor %r has data type %d, which onnx does not know"
                                  % (tensor.name, tensor.data_type), op=label) from None
        count = elements(tensor.dims)
        if folded:
            self.budget.allow(label, count * max(itemsize, 1), count)
        try:
            return self.numpy_helper.to_array(tensor)
        except (ValueError, TypeError, KeyError) as error:
            raise ConversionError("tensor %r: its data does not fill its dims %r of type %d "
                                  "(%s)" % (tensor.name, list(tensor.dims), tensor.data_type,
                                            error), op=label) from None

    def _np_Cast(self, arrays, attrs, label):
        from onnx import helper
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(attrs["to"]))
        if dtype.kind in "OSU":
            return None
        self.budget.allow(label, _nbytes(arrays[0].shape, dtype), arrays[0].size)
        return arrays[0].astype(dtype)

    def _np_Shape(self, arrays, attrs, label):
        shape = list(np.shape(arrays[0]))
        return np.array(shape[attrs.get("start", 0):attrs.get("end", None)], np.int64)

    def _np_Gather(self, arrays, attrs, label):
        data, indices = np.asarray(arrays[0]), np.asarray(arrays[1])
        axis = int(attrs.get("axis", 0))
        if not -data.ndim <= axis < data.ndim:
            raise ConversionError("axis %d of a %d-D tensor" % (axis, data.ndim), op=label,
                                  attribute="axis")
        axis %= data.ndim
        shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
        self.budget.allow(label, _nbytes(shape, data.dtype), elements(shape) + indices.size)
        if indices.size and (indices.min() < -data.shape[axis] or
                             indices.max() >= data.shape[axis]):
            raise ConversionError("an index is outside the %d entries of axis %d"
                                  % (data.shape[axis], axis), op=label)
        return np.take(data, indices, axis=axis)

    def _np_Unsqueeze(self, arrays, attrs, label):
        axes = attrs.get("axes") if "axes" in attrs else list(arrays[1])
        result = arrays[0]
        rank = result.ndim + len(axes)
        for axis in sorted(int(a) % rank for a in axes):
            result = np.expand_dims(result, axis)
        return result

    def _np_Squeeze(self, arrays, attrs, label):
        axes = attrs.get("axes") if "axes" in attrs else (
            list(arrays[1]) if len(arrays) > 1 and arrays[1] is not None else None)
        return np.squeeze(arrays[0], axis=None if axes is None else
                          tuple(int(a) for a in axes))

    def _np_Concat(self, arrays, attrs, label):
        parts = [np.atleast_1d(a) for a in arrays if a is not None]
        total = sum(p.nbytes for p in parts)
        self.budget.allow(label, total, sum(p.size for p in parts))
        return np.concatenate(parts, axis=attrs["axis"])

    def _broadcast(self, arrays, label):
        shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
        dtype = np.result_type(*arrays)
        self.budget.allow(label, _nbytes(shape, dtype),
                          elements(shape) + sum(np.size(a) for a in arrays))
        return dtype

    def _np_Add(self, arrays, attrs, label):
        dtype = self._broadcast(arrays, label)
        return np.add(arrays[0], arrays[1]).astype(dtype)

    def _np_Sub(self, arrays, attrs, label):
        dtype = self._broadcast(arrays, label)
        return np.subtract(arrays[0], arrays[1]).astype(dtype)

    def _np_Mul(self, arrays, attrs, label):
        dtype = self._broadcast(arrays, label)
        return np.multiply(arrays[0], arrays[1]).astype(dtype)

    def _np_Div(self, arrays, attrs, label):
        dtype = self._broadcast(arrays, label)
        a, b = np.asarray(arrays[0]), np.asarray(arrays[1])
        if dtype.kind not in "iu":
            return np.divide(a, b).astype(dtype)
        if np.any(b == 0):
            raise ConversionError("an integer division by zero", op=label)
        quotient = np.floor_divide(a, b)  # ONNX (C) truncates toward zero: floor, then up
        return (quotient + ((a % b != 0) & ((a < 0) != (b < 0)))).astype(dtype)

    def _np_Reshape(self, arrays, attrs, label):
        target = [int(d) for d in np.asarray(arrays[1]).ravel()]
        if BATCH in target:
            return None
        data = arrays[0]
        if attrs.get("allowzero", 0) == 0:
            target = [data.shape[i] if d == 0 and i < data.ndim else d
                      for i, d in enumerate(target)]
        return data.reshape(target)

    def _np_ConstantOfShape(self, arrays, attrs, label):
        value = attrs.get("value")
        fill = self.tensor_array(value, label).ravel() if value is not None else \
            np.zeros(1, np.float32)
        if fill.size != 1:
            raise ConversionError("value holds %d elements" % fill.size, op=label,
                                  attribute="value", supported="one element")
        shape = [int(d) for d in np.asarray(arrays[0]).ravel()]
        if BATCH in shape:
            raise ConversionError("ConstantOfShape of the batch size", op=label)
        self.budget.allow(label, _nbytes(shape, fill.dtype), elements(shape))
        return np.full(shape, fill[0], dtype=fill.dtype)
