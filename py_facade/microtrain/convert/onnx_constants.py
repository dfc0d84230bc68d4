"""Constant subgraphs of ONNX models, evaluated at import: ``Constant``,
``ConstantOfShape``, ``Shape`` of an activation (with ``graph.BATCH`` standing in for the
batch), ``Gather``, ``Concat``, ``Slice``, arithmetic, ... with numpy for the usual shape
arithmetic and ``onnx.reference`` for the rest. A mixin of ``onnx_reader._Reader``.
"""

import numpy as np

from .graph import BATCH, ConversionError, Value


class ConstantFolding:
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
        """Evaluate a node on constants: numpy for shape arithmetic, onnx.reference else."""
        arrays = [None if v is None else v.const for v in inputs]
        from onnx import helper
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        op = node.op_type
        result = None
        if op == "Constant":
            if "value" in attrs:
                result = self.numpy_helper.to_array(attrs["value"])
            elif "value_float" in attrs:
                result = np.array(attrs["value_float"], np.float32)
            elif "value_floats" in attrs:
                result = np.array(attrs["value_floats"], np.float32)
            elif "value_int" in attrs:
                result = np.array(attrs["value_int"], np.int64)
            elif "value_ints" in attrs:
                result = np.array(attrs["value_ints"], np.int64)
        elif op in ("Identity", "Dropout"):
            return [inputs[0]]
        elif op == "Cast":
            from onnx import helper as h
            result = arrays[0].astype(h.tensor_dtype_to_np_dtype(attrs["to"]))
        elif op == "Gather":
            result = np.take(arrays[0], arrays[1], axis=attrs.get("axis", 0))
        elif op == "Unsqueeze":
            axes = attrs.get("axes") if "axes" in attrs else list(arrays[1])
            result = arrays[0]
            rank = result.ndim + len(axes)
            for axis in sorted(int(a) % rank for a in axes):
                result = np.expand_dims(result, axis)
        elif op == "Squeeze":
            axes = attrs.get("axes") if "axes" in attrs else (
                list(arrays[1]) if len(arrays) > 1 and arrays[1] is not None else None)
            result = np.squeeze(arrays[0], axis=None if axes is None else
                                tuple(int(a) for a in axes))
        elif op == "Concat":
            result = np.concatenate([np.atleast_1d(a) for a in arrays], axis=attrs["axis"])
        elif op in ("Add", "Sub", "Mul", "Div"):
            function = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}.get(op)
            if op == "Div":
                function = np.floor_divide if arrays[0].dtype.kind in "iu" else np.divide
            result = function(arrays[0], arrays[1]).astype(np.result_type(arrays[0],
                                                                          arrays[1]))
        elif op == "Reshape" and all(d != BATCH for d in arrays[1]):
            target = [int(d) for d in arrays[1]]
            target = [arrays[0].shape[i] if d == 0 else d for i, d in enumerate(target)]
            result = arrays[0].reshape(target)
        elif op == "ConstantOfShape":
            value = attrs.get("value")
            fill = self.numpy_helper.to_array(value).ravel() if value is not None else \
                np.zeros(1, np.float32)
            shape = [int(d) for d in arrays[0]]
            if BATCH in shape:
                raise ConversionError("ConstantOfShape of the batch size", op=label)
            result = np.full(shape, fill[0], dtype=fill.dtype)
        if result is None:
            result = self.reference(node, arrays, label)
        result = np.asarray(result)
        value = Value(result.shape, const=result)
        if op == "Constant":
            value.const_key = node.output[0]  # write-back replaces the node's value
        return [value]

    def reference(self, node, arrays, label):
        onnx = self.onnx
        from onnx import helper
        from onnx.reference import ReferenceEvaluator
        names = ["in%d" % i if a is not None else "" for i, a in enumerate(arrays)]
        copy = helper.make_node(node.op_type, names, list(node.output), domain=node.domain)
        copy.attribute.extend(node.attribute)
        graph = helper.make_graph(
            [copy], "fold",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                           a.shape) for n, a in zip(names, arrays) if n],
            [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
             for o in node.output if o])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            return ReferenceEvaluator(model).run(
                None, {n: a for n, a in zip(names, arrays) if n})[0]
        except Exception as error:  # noqa: BLE001 - reported as what it is
            raise ConversionError("could not evaluate this node on constants (%s)" % error,
                                  op=label) from None
