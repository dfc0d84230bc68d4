"""Run an int8 .tflite through microtrain and through LiteRT's reference kernels and compare
every int8 tensor (tests/convert/test_int8.py and benchmarks/mbv2_int8.py use it).

The image the importer writes keeps every op of the file (``float_part=False``); this helper
adds a DEQUANTIZE and a model output for every int8 activation, so that one run of the core
shows all of them (dequantization is one-to-one: equal floats are equal int8 values). With
``train_from=k`` the ops from the file's operator k on run in float, as the importer's float
part (where the core has no int8 kernel: the int8 SOFTMAX that ends MLPerf Tiny's
classifiers), and the int8 activations before it are compared (``measure``).
"""

import numpy as np

from microtrain import ops as _ops
from microtrain.convert import tflite_int8
from microtrain.nn import image as _image


# extra outputs per image: an image holds at most 256 tensors
CHUNK = 16


def _read(data, options):
    """The importer's Builder: every op as the file has it, or a float part from
    ``train_from`` on."""
    builder, _, _ = tflite_int8.read(data, float_part="train_from" in options, **options)
    return builder


def int8_activations(data, **options):
    """[(core tensor, tflite op, label)] of every int8 activation an op of the file writes."""
    builder = _read(data, options)
    found = []
    for op_index, (op, node) in enumerate(zip(builder.ops, builder.op_nodes)):
        if builder.tensors[op.outputs[0]].dtype == _image.DTYPE_I8 and node is not None:
            found.append((op.outputs[0], node, builder.op_sources[op_index]))
    return found


def image_with_outputs(data, reader_map, **options):
    """The image of an int8 .tflite with the int8 activations of ``reader_map`` also outputs
    (after the model's own outputs)."""
    builder = _read(data, options)
    tensors = list(builder.tensors)
    ops = list(builder.ops)
    outputs = list(builder.outputs)
    layer = len(ops)
    for core, _, _ in reader_map:
        scale, zero_point = tensors[core].quant.scales[0], int(tensors[core].quant.zero_points[0])
        tensors.append(_image.TensorSpec(tensors[core].dims, flags=_image.FLAG_OUTPUT))
        ops.append(_image.OpSpec(_ops.DEQUANTIZE, [core], [len(tensors) - 1],
                                 (_image.f32_bits(scale), zero_point & 0xFFFFFFFF), layer))
        outputs.append(len(tensors) - 1)
    layers = list(range(len(builder.ops))) + [layer] * len(reader_map)
    for op, number in zip(ops, layers):
        op.layer = number
    return _image.write_image(tensors, ops, builder.inputs, outputs)


def litert_tensors(data, rows, tflite_indices):
    """{tflite tensor: [rows, ...]} of LiteRT's BUILTIN_REF kernels, one row per invoke."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    interpreter = Interpreter(model_content=bytes(data),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                              experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    source = interpreter.get_input_details()[0]
    result = {t: [] for t in tflite_indices}
    for row in rows:
        interpreter.set_tensor(source["index"], row[None].astype(source["dtype"]))
        interpreter.invoke()
        for t in tflite_indices:
            result[t].append(interpreter.get_tensor(t)[0].copy())
    return {t: np.array(v) for t, v in result.items()}


def _run_both(data, rows, **options):
    """(graph, the model's output tensor, LiteRT's tensors, the activations' report, the core's
    float output): every int8 activation compared a chunk of them at a time, then the model as
    it is (no extra readers: the planner fuses pointwise expansions into their depthwise
    convolutions)."""
    import microtrain
    from microtrain.convert.tflite_reader import parse
    everything = int8_activations(data, **options)
    graph = parse(data).Subgraphs(0)
    tflite_out = {core: int(graph.Operators(node).OutputsAsNumpy()[0])
                  for core, node, _ in everything}
    model_output = int(graph.OutputsAsNumpy()[0])
    # the model's output may be one of the activations (an int8 output, no DEQUANTIZE): each
    # tensor once, or its rows would be read twice
    reference = litert_tensors(data, rows, sorted(set(tflite_out.values()) | {model_output}))
    report = []
    for start in range(0, len(everything), CHUNK):
        mapping = everything[start:start + CHUNK]
        image = image_with_outputs(data, mapping, **options)
        report += _compare_chunk(image, mapping, rows, reference, tflite_out)
    with microtrain.TrainSession(image_with_outputs(data, [], **options)) as session:
        ours = np.asarray(session.infer([rows])[0], np.float32)
    return graph, model_output, reference, report, ours


def compare(data, rows, **options):
    """(output_equal, [(label, equal, elements, differing)]): the model's float output's bits
    and every int8 activation, microtrain's against LiteRT's reference kernels."""
    graph, model_output, reference, report, ours = _run_both(data, rows, **options)
    theirs = reference[model_output]
    if theirs.dtype == np.int8:  # an int8 output: the importer dequantizes it, one to one
        scale, zero_point = graph.Tensors(model_output).Quantization().ScaleAsNumpy()[0], \
            int(graph.Tensors(model_output).Quantization().ZeroPointAsNumpy()[0])
        ours_q = np.round(ours / np.float32(scale)).astype(np.int64) + zero_point
        return bool(np.array_equal(ours_q.reshape(theirs.shape), theirs)), report
    theirs = theirs.astype(np.float32)
    output_equal = bool(np.array_equal(ours.reshape(theirs.shape).view(np.uint32),
                                       theirs.view(np.uint32)))
    return output_equal, report


def _compare_chunk(image, mapping, rows, reference, tflite_out):
    import microtrain
    parsed = _image.read_image(image)
    first_extra = len(parsed.outputs) - len(mapping)
    with microtrain.TrainSession(image) as session:
        outputs = session.infer([rows])
    report = []
    for k, (core, node, label) in enumerate(mapping):
        quant = parsed.tensors[core].quant
        ours = np.asarray(outputs[first_extra + k]).reshape(len(rows), -1)
        ours_q = np.round(ours / np.float32(quant.scales[0])).astype(np.int64) + \
            int(quant.zero_points[0])
        theirs = reference[tflite_out[core]].reshape(len(rows), -1).astype(np.int64)
        report.append((label, bool(np.array_equal(ours_q, theirs)), int(theirs.size),
                       int(np.count_nonzero(ours_q != theirs))))
    return report


def dequantized(values, scale, zero_point):
    """int8 values as the core's DEQUANTIZE computes them: float32(q - zp) * float32(scale)
    (exact in float32 before the one rounding, as TFLite's double product rounded)."""
    return (values.astype(np.int32) - int(zero_point)).astype(np.float32) * np.float32(scale)


def measure(data, rows, **options):
    """{"report": [(label, equal, elements, differing)] of every int8 activation (as
    compare()), "ours": microtrain's float output, "theirs": LiteRT's (BUILTIN_REF) output
    as floats, an int8 one dequantized as the core would}. ``train_from``: the float part
    begins at that operator (its int8 ops' activations are not compared)."""
    graph, model_output, reference, report, ours = _run_both(data, rows, **options)
    theirs = reference[model_output]
    if theirs.dtype == np.int8:
        quant = graph.Tensors(model_output).Quantization()
        theirs = dequantized(theirs, quant.ScaleAsNumpy()[0], quant.ZeroPointAsNumpy()[0])
    return {"report": report, "ours": ours.reshape(theirs.shape),
            "theirs": theirs.astype(np.float32)}


def kept_operators_equal(source_path, exported_path, kept):
    """The exported file begins with the source's kept int8 operators, each with the same
    builtin, options and tensors (name, type, shape, quantization, data) byte for byte."""
    from microtrain.convert import tflite_tree
    source = tflite_tree.read(open(source_path, "rb").read())
    exported = tflite_tree.read(open(exported_path, "rb").read())

    def described(tree, op):
        graph = tree["Subgraphs"][0]
        code = tree["OperatorCodes"][op.get("OpcodeIndex", 0)]
        tensors = []
        for t in list(op["Inputs"]) + list(op["Outputs"]):
            if t < 0:
                tensors.append(None)
                continue
            tensor = graph["Tensors"][int(t)]
            quant = tensor.get("Quantization")
            data = tree["Buffers"][tensor.get("Buffer", 0)].get("Data")
            tensors.append((tensor.get("Name"), tensor.get("Type"),
                            tensor["Shape"].tolist(),
                            None if quant is None else
                            [np.asarray(quant.get(k, [])).tolist() for k in ("Scale",
                                                                             "ZeroPoint")],
                            None if data is None else data.tobytes()))
        options = op.get("BuiltinOptions")
        return (max(code.get("BuiltinCode", 0), code.get("DeprecatedBuiltinCode", 0)),
                None if options is None else sorted(options.fields.items()), tensors)

    ops = exported["Subgraphs"][0]["Operators"]
    return all(described(source, source["Subgraphs"][0]["Operators"][k]) ==
               described(exported, ops[position]) for position, k in enumerate(kept))
