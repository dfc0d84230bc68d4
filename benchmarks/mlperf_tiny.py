"""MLPerf Tiny's reference models through microtrain: docs/importers.md's table, measured.

    python benchmarks/mlperf_tiny.py [--markdown] [--write] [--inputs 200] [--no-board]
                                     [--board mps2-an500] [--model FILE ...] [--json OUT]

Every reference .tflite of examples/models/mlperf_tiny (SOURCE.md: what mlcommons/tiny
ships, float32, full int8 and dynamic-range), one row each:

imports   ``microtrain.convert(file)``: yes, or the ConversionError's text.
LiteRT    int8 files: every int8 activation the core computes, against LiteRT's reference
          kernels (BUILTIN_REF, every tensor kept: experimental_preserve_all_tensors) on
          ``--inputs`` random inputs over the whole int8 range of the model's input: the
          int8 values that differ, of all; the float part begins at the first operator the
          core has no int8 kernel for (the classifiers' int8 SOFTMAX, which then runs in
          float), and the output's largest difference is to LiteRT's output dequantized.
          Float files: max |Δ| / max |y| of the outputs against BUILTIN_REF's on 8
          standard-normal inputs. Dynamic-range files: against LiteRT's default kernels
          (hybrid: they quantize each activation on the fly), the largest absolute
          difference and whether the top class agrees; and max |Δ| / max |y| against the
          float32 file microtrain exports (the weights dequantized), run by BUILTIN_REF.
head      the model's own last layer with weights trains (an int8 file's own float part; a
          float file from ``train_from`` that layer, the weights before it constants): 3
          steps of SGD (learning rate 0.01) on one batch of 8 random inputs (an int8 file's
          over its int8 range, standard normal else), classifiers towards their own top
          class + 1 (mod the classes, cross-entropy), the autoencoders to reconstruct their
          input (MSE): the loss of the first step and after the last.
arena     ``mt_plan``'s bytes at batch 1 with SGD (the task's loss): the head as above, and
          the last block, ``train_from`` its first layer (MODELS names it), every layer
          with weights from there on trained.
export    the head after 2 steps, exported to .tflite (``export_model_for_inference``) and
          run by BUILTIN_REF: max |Δ| / max |y| against the session's inference; an int8
          file's int8 operators must be the file's, byte for byte.
board     the head fine-tuned on the board under QEMU (``microtrain.tools.firmware``:
          package, build, run; 4 rows, batch 1, one epoch, SGD) against its replay on the
          host: the weight CRC and the RAM the firmware takes (.data + .bss + the stack its
          run measured, arm_cost.measured_ram), where the arena and memory.ld's stack
          allowance fit the board's RAM (both read from its memory.ld).

tests/convert/test_mlperf_table.py holds each column to what the table says, per model;
tests/boards/test_board_mlperf.py runs the board column of the smallest int8 model.
"""

import argparse
import functools
import json
import os
import re
import sys
import tempfile

import numpy as np

import microtrain
from microtrain.convert import ConversionError
from microtrain.convert.tflite_reader import model_kind, parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
CONVERT_TESTS = os.path.join(REPO_ROOT, "tests", "convert")
sys.path.insert(0, CONVERT_TESTS)
import int8_compare  # noqa: E402
import peers  # noqa: E402

sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "docs"))
import readme_tables  # noqa: E402

FIXTURES = os.path.join(REPO_ROOT, "examples", "models", "mlperf_tiny")
IMPORTERS_DOC = os.path.join(REPO_ROOT, "docs", "importers.md")
BEGIN, END = "<!-- mlperf-table:begin -->", "<!-- mlperf-table:end -->"

# (task, the first layer of its models' last block, its models' files). The last block: the
# autoencoders' last two Dense layers; the DS-CNNs' and MobileNetV1's last depthwise-separable
# block; the ResNets' last residual stack (both branches and the Add).
TASKS = [
    ("anomaly detection", "dense_8", ("ad01_fp32.tflite", "model_ToyCar_quant.tflite", "ad01_int8.tflite",
                                      "model_ToyCar_quant_fullint.tflite")),
    ("keyword spotting", "depthwise_conv2d_3", ("kws_ref_model_float32.tflite", "kws_ref_model.tflite")),
    ("image classification", "conv2d_6", ("pretrainedResnet.tflite", "pretrainedResnet_quant.tflite")),
    ("image classification 2", "conv2d_42", ("pretrainedResnet_large_float.tflite",
                                             "pretrainedResnet_large_int8.tflite")),
    ("visual wake words", "depthwise_conv2d_12", ("vww_96_float.tflite", "vww_96_int8.tflite")),
    ("streaming wake word", "depthwise_conv2d_3", ("str_ww_ref_model.tflite",)),
]
# (file, task, the first layer of its last block), in TASKS' order
MODELS = [(name, task, block) for task, block, names in TASKS for name in names]
NAMES = [name for name, _, _ in MODELS]
WEIGHTED = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")
KIND_LABELS = {"float": "float32", "int8": "int8", "hybrid": "dynamic-range"}
_INT8 = 9  # TFLite's TensorType

FLOAT_INPUTS = 8          # rows of the float files' LiteRT comparison
FLOAT_TOLERANCE = 1e-5    # max |Δ| / max |y| of a float file's outputs and LiteRT's
EXPORT_TOLERANCE = 1e-6   # the same, the exported file's against the session's
TASK_ROWS, TASK_STEPS, EXPORT_STEPS = 8, 3, 2
LEARNING_RATE = 0.01      # SGD, every column that trains
BOARD_ROWS = 4
DEFAULT_BOARD = "mps2-an500"


# ------------------------------------------------------------------ the models


def path_of(name):
    return os.path.join(FIXTURES, name)


@functools.lru_cache(maxsize=None)
def data_of(name):
    with open(path_of(name), "rb") as handle:
        return handle.read()


@functools.lru_cache(maxsize=None)
def kind_of(name):
    """"float", "int8" or "hybrid" (dynamic-range) as the importer reads the file."""
    return model_kind(data_of(name))


@functools.lru_cache(maxsize=None)
def imported(name):
    """The file as ``microtrain.convert`` imports it by default (shared: read it only)."""
    return microtrain.convert(path_of(name))


def operators(name):
    """The file's operators as the import names them."""
    return imported(name).source.operators


def input_shape(name):
    return tuple(imported(name).input_shapes[0])


def head_index(name):
    """The file's last operator with weights: the model's own head."""
    return max(op["index"] for op in operators(name) if op["type"] in WEIGHTED)


def block_start(name):
    return dict((n, block) for n, _, block in MODELS)[name]


def head_model(name):
    """The model as its head trains: an int8 file's own float part begins at its last layer
    with weights; a float file is cut there, the weights before it constants."""
    if kind_of(name) == "int8":
        return microtrain.convert(path_of(name))
    return microtrain.convert(path_of(name), train_from=head_index(name))


def block_model(name):
    return microtrain.convert(path_of(name), train_from=block_start(name))


def is_classifier(name):
    return operators(name)[-1]["type"] == "SOFTMAX"


def loss_of(name):
    return "categorical_crossentropy" if is_classifier(name) else "mse"


def input_quantization(data):
    """(int8 input, scale, zero point) of the int8 tensor the input is or is quantized to
    (a float-input int8 file's leading QUANTIZE), or (False, None, None)."""
    graph = parse(data).Subgraphs(0)
    source = int(graph.InputsAsNumpy()[0])
    tensor, int8_input = graph.Tensors(source), True
    if tensor.Type() != _INT8:  # a float input: the QUANTIZE that reads it
        int8_input = False
        readers = [graph.Operators(k) for k in range(graph.OperatorsLength())
                   if int(graph.Operators(k).InputsAsNumpy()[0]) == source]
        tensor = graph.Tensors(int(readers[0].OutputsAsNumpy()[0])) if readers else None
        if tensor is None or tensor.Type() != _INT8:
            return False, None, None
    quant = tensor.Quantization()
    return int8_input, float(quant.ScaleAsNumpy()[0]), int(quant.ZeroPointAsNumpy()[0])


def int8_range_rows(name, n, seed):
    """n inputs whose int8 values (the input's, or its QUANTIZE's) are uniform over
    -128..127: int8 values as float32 for an int8 input, their dequantized floats else."""
    int8_input, scale, zero_point = input_quantization(data_of(name))
    q = np.random.default_rng(seed).integers(-128, 128, (n,) + input_shape(name))
    if int8_input:
        return q.astype(np.float32)
    return int8_compare.dequantized(q, scale, zero_point)


def task_rows(name, n, seed):
    """Random inputs of a file: the int8 range of an int8 file, standard normal else."""
    if kind_of(name) == "int8":
        return int8_range_rows(name, n, seed)
    return np.random.default_rng(seed).standard_normal((n,) + input_shape(name)).astype(
        np.float32)


def task_targets(name, model, x):
    """Classifiers: one-hot of their own top class + 1 (mod the classes), a decision the
    head must change; autoencoders: the input itself, as the values the model reconstructs
    (an int8 input dequantized)."""
    if is_classifier(name):
        with microtrain.TrainSession(model) as session:
            session.compile("sgd", "categorical_crossentropy", batch_size=len(x))
            own = np.argmax(session.infer(x)[0], axis=1)
        classes = model.output_shapes[0][0]
        return np.eye(classes, dtype=np.float32)[(own + 1) % classes]
    int8_input, scale, zero_point = input_quantization(data_of(name))
    return int8_compare.dequantized(x, scale, zero_point) if int8_input else x.copy()


def relative_to_largest(ours, theirs):
    """max |ours - theirs| / max |theirs|: a difference on the outputs' own scale (a
    softmax's, an autoencoder's reconstruction), blind to outputs near zero."""
    theirs = np.asarray(theirs, np.float64).reshape(np.shape(ours))
    return float(np.max(np.abs(np.asarray(ours, np.float64) - theirs)) / np.max(np.abs(theirs)))


def compiled(session, name, batch_size):
    session.compile(microtrain.optimizers.SGD(LEARNING_RATE), loss_of(name),
                    batch_size=batch_size)


def trained_layer_names(session, model):
    """The names of the layers whose weights the compiled session trains."""
    from microtrain.nn import image as _image
    trained = set(session.trained_tensors())
    ops = _image.read_image(model.to_bytes()).ops
    return [layer.name for layer in session.layers
            if any(set(ops[op].inputs) & trained for op in layer)]


# ------------------------------------------------------------------ the columns


def imports(name):
    """{"ok": True, "inputs", "outputs"} or {"ok": False, "error": the ConversionError}."""
    try:
        model = microtrain.convert(path_of(name))
    except ConversionError as error:
        return {"ok": False, "error": str(error)}
    return {"ok": True, "inputs": model.input_shapes, "outputs": model.output_shapes,
            "notes": list(model.source.notes)}


def first_without_int8_kernel(name):
    """The first operator of an int8 file the core has no int8 kernel for, or None."""
    from microtrain.convert import tflite_int8
    from microtrain.convert.tflite_int8_ops import Int8Unsupported
    try:
        tflite_int8.read(data_of(name), float_part=False)
    except Int8Unsupported as error:
        return error.index
    return None


def litert_difference(name, inputs=200):
    """The LiteRT column (see the module docstring)."""
    kind = kind_of(name)
    if kind == "int8":
        start = first_without_int8_kernel(name)
        options = {} if start is None else {"train_from": start}
        rows = int8_range_rows(name, inputs, seed=0)
        measured = int8_compare.measure(data_of(name), rows, **options)
        report = measured["report"]
        return {"kind": kind, "inputs": inputs, "activations": len(report),
                "values": sum(r[2] for r in report), "differing": sum(r[3] for r in report),
                "differing_ops": [(r[0], r[3]) for r in report if not r[1]],
                "float_from": None if start is None else operators(name)[start]["type"],
                "output_max_abs": float(np.max(np.abs(measured["ours"] -
                                                       measured["theirs"])))}
    rows = task_rows(name, FLOAT_INPUTS, seed=0)
    model = imported(name)
    ours = peers.microtrain_infer(model, rows)
    if kind == "float":
        theirs = peers.run_litert(path_of(name), rows, reference=True)
        return {"kind": kind, "inputs": FLOAT_INPUTS,
                "max_relative": relative_to_largest(ours, theirs)}
    hybrid = peers.run_litert(path_of(name), rows).reshape(ours.shape)
    with tempfile.TemporaryDirectory() as folder:
        dequantized = os.path.join(folder, "dequantized.tflite")
        with microtrain.TrainSession(model) as session:
            compiled(session, name, FLOAT_INPUTS)
            session.export_model_for_inference(dequantized)
        as_float = peers.run_litert(dequantized, rows, reference=True).reshape(ours.shape)
    result = {"kind": kind, "inputs": FLOAT_INPUTS,
              "hybrid_max_abs": float(np.max(np.abs(ours - hybrid))),
              "dequantized_max_relative": relative_to_largest(ours, as_float)}
    if is_classifier(name):
        result["same_top_class"] = int(np.sum(ours.argmax(1) == hybrid.argmax(1)))
    return result


def fine_tune(name, steps=TASK_STEPS):
    """The head column: per-step losses of the head on the synthetic task."""
    model = head_model(name)
    x = task_rows(name, TASK_ROWS, seed=1)
    y = task_targets(name, model, x)
    with microtrain.TrainSession(model) as session:
        compiled(session, name, TASK_ROWS)
        losses = [float(session.train_step(x, y)["loss"][0]) for _ in range(steps)]
        losses.append(float(session.eval_step(x, y)["loss"][0]))
        return {"layers": trained_layer_names(session, model), "losses": losses}


def plan(name, model):
    """{"bytes", "layers", "int8_bytes"} of ``model``'s plan at batch 1 (SGD, the task's
    loss): the arena and the layers it trains."""
    with microtrain.TrainSession(model) as session:
        compiled(session, name, 1)
        memory = session.memory_plan()
        return {"bytes": memory["total_bytes"], "layers": trained_layer_names(session, model),
                "int8_bytes": memory["int8_activation_bytes"]}


def arena(name):
    """The arena columns: {"head": plan, "block": plan} (see plan())."""
    return {"head": plan(name, head_model(name)), "block": plan(name, block_model(name))}


def export_round_trip(name, folder):
    """The export column: the head after EXPORT_STEPS steps, exported, run by BUILTIN_REF."""
    model = head_model(name)
    x = task_rows(name, TASK_ROWS, seed=2)
    y = task_targets(name, model, x)
    path = os.path.join(folder, name)
    with microtrain.TrainSession(model) as session:
        compiled(session, name, TASK_ROWS)
        before = session.infer(x)[0].copy()
        for _ in range(EXPORT_STEPS):
            session.train_step(x, y)
        ours = session.infer(x)[0].copy()
        session.export_model_for_inference(path)
    theirs = peers.run_litert(path, x, reference=True).reshape(ours.shape)
    result = {"trained": not np.array_equal(before, ours),
              "max_relative": relative_to_largest(ours, theirs)}
    if kind_of(name) == "int8":
        result["int8_ops_kept"] = len(model.source.int8["kept_ops"])
        result["int8_ops_equal"] = int8_compare.kept_operators_equal(
            path_of(name), path, model.source.int8["kept_ops"])
    return result


# ------------------------------------------------------------------ the board


def board_memory(board, source_dir=REPO_ROOT):
    """(RAM bytes, stack bytes) of a board, read from boards/<board>/memory.ld."""
    with open(os.path.join(source_dir, "boards", board, "memory.ld")) as handle:
        text = handle.read()

    def size(value, unit):
        return int(value, 0) * {"": 1, "K": 1024, "M": 1024 * 1024}[unit.upper()]

    ram = re.search(r"^\s*RAM\b[^:]*:.*LENGTH\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*([KkMm]?)", text,
                    re.MULTILINE)
    stack = re.search(r"MT_STACK_BYTES\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*([KkMm]?)", text)
    if ram is None or stack is None:
        raise ValueError("boards/%s/memory.ld gives no RAM region or MT_STACK_BYTES" % board)
    return size(*ram.groups()), size(*stack.groups())


def board_run(name, board, work_dir):
    """The board column: {"fits", "arena", "stack", "ram", and where it fits "crc32",
    "equal", "static" (.data + .bss), "stack_measured", "stack_reserved", "ram_used" (static
    + stack_measured: arm_cost.measured_ram) or "error"}."""
    import arm_cost
    from microtrain.tools import firmware
    from microtrain.tools.firmware_training import FirmwareError, TrainingSpec
    ram, stack = board_memory(board)
    model = head_model(name)
    arena_bytes = plan(name, model)["bytes"]
    result = {"board": board, "arena": arena_bytes, "stack": stack, "ram": ram,
              "fits": arena_bytes + stack <= ram}
    if not result["fits"]:
        return result
    folder = os.path.join(work_dir, name.split(".")[0])
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(folder, "model.mtm")
    model.save(model_path)
    x = task_rows(name, BOARD_ROWS, seed=3)
    data_path = os.path.join(folder, "rows.npz")
    np.savez(data_path, x=x, y=task_targets(name, model, x))
    spec = TrainingSpec(epochs=1, optimizer="sgd", learning_rate=LEARNING_RATE,
                        loss=loss_of(name), batch_size=1)
    try:
        record = firmware.package(model_path, data_path, spec, folder)
        source = firmware.find_source_dir(REPO_ROOT)
        data_dir, build_dir = os.path.join(folder, "data"), os.path.join(work_dir, "build-" + board)
        # the build folder is every model's: each build starts from memory.ld's stack
        info = firmware.build(source, board, data_dir, build_dir, ops=record["ops"],
                              cache={"MT_STACK_BYTES": ""})
        status, text, errors = firmware.run(info, timeout=1200)
        device = firmware.parse_output(text)
        host = record["host_reference"]
        result.update({"crc32": device["crc32"], "host_crc32": host["crc32"],
                       "equal": status == 0 and device == host})
        if status == 0:
            result.update(arm_cost.measured_ram(
                info["firmware"], text, lambda reserved: firmware.build(
                    source, board, data_dir, build_dir, ops=record["ops"],
                    cache={"MT_STACK_BYTES": reserved}, targets=("microtrain_firmware",))))
    except FirmwareError as error:
        result["error"] = str(error)
        return result
    if status != 0:
        result["error"] = "the firmware exited with status %d: %s" % (status, text + errors)
    return result


# ------------------------------------------------------------------ one row, the table


def measure(name, inputs, board, work_dir):
    row = {"file": name, "task": dict((n, t) for n, t, _ in MODELS)[name],
           "kind": kind_of(name), "imports": imports(name)}
    if not row["imports"]["ok"]:
        return row
    row["litert"] = litert_difference(name, inputs)
    row["fine_tune"] = fine_tune(name)
    row["arena"] = arena(name)
    with tempfile.TemporaryDirectory() as folder:
        row["export"] = export_round_trip(name, folder)
    if board:
        row["board"] = board_run(name, board, work_dir)
    return row


def _n(value):
    return "{:,}".format(value)


def litert_cell(litert):
    if litert["kind"] == "int8":
        text = "%s of %s int8 values differ (%d ops, %d inputs)" % (
            _n(litert["differing"]), _n(litert["values"]), litert["activations"],
            litert["inputs"])
        where = "; %s in float" % litert["float_from"] if litert["float_from"] else ""
        return text + "%s; output max \\|Δ\\| %.3g" % (where, litert["output_max_abs"])
    if litert["kind"] == "float":
        return "max rel. %.1e (%d inputs)" % (litert["max_relative"], litert["inputs"])
    text = "hybrid kernels: max \\|Δ\\| %.3g" % litert["hybrid_max_abs"]
    if "same_top_class" in litert:
        text += ", same top class %d/%d" % (litert["same_top_class"], litert["inputs"])
    return text + "; dequantized float32 file: max rel. %.1e" % \
        litert["dequantized_max_relative"]


def fine_tune_cell(tune):
    losses = tune["losses"]
    verdict = "yes" if losses[-1] < losses[0] else "NO"
    return "%s: %s, loss %.4g → %.4g" % (verdict, ", ".join(tune["layers"]), losses[0],
                                         losses[-1])


def arena_cell(part):
    return "%s (%s)" % (_n(part["bytes"]), ", ".join(part["layers"]))


def export_cell(export):
    same = export["max_relative"] <= EXPORT_TOLERANCE and export.get("int8_ops_equal", True)
    verdict = "NO (nothing trained)" if not export["trained"] else "yes" if same else "NO"
    text = "%s: max rel. %.1e" % (verdict, export["max_relative"])
    if "int8_ops_equal" in export:
        text += "; %d int8 ops %s" % (export["int8_ops_kept"],
                                      "as in the file" if export["int8_ops_equal"]
                                      else "CHANGED")
    return text


def board_cell(board):
    if board is None:
        return "not run"
    if not board["fits"]:
        return "does not fit (arena %s + stack %s > RAM %s)" % (
            _n(board["arena"]), _n(board["stack"]), _n(board["ram"]))
    if "error" in board:
        return "not run: %s" % board["error"].splitlines()[0]
    return "%s: CRC 0x%08x (RAM %s)" % ("host = device" if board["equal"] else "DIFFERS",
                                        board["crc32"], _n(board["ram_used"]))


HEADER = ["file", "task", "kind", "imports", "LiteRT BUILTIN_REF", "head fine-tunes",
          "arena: head", "arena: last block", "export round trip"]


def markdown(rows, board):
    header = HEADER + ["%s under QEMU" % board] if board else HEADER
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if not row["imports"]["ok"]:
            cells = [row["imports"]["error"].replace("|", "\\|")] + \
                [""] * (len(header) - 4)
        else:
            cells = ["yes", litert_cell(row["litert"]), fine_tune_cell(row["fine_tune"]),
                     arena_cell(row["arena"]["head"]), arena_cell(row["arena"]["block"]),
                     export_cell(row["export"])]
            if board:
                cells.append(board_cell(row.get("board")))
        lines.append("| " + " | ".join(["`%s`" % row["file"], row["task"],
                                         KIND_LABELS[row["kind"]]] + cells) + " |")
    return "\n".join(lines)


def replace_block(text, table, where):
    """``text`` with the lines between the mlperf-table markers replaced by ``table``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError("%s needs one %s line and one %s line after it" % (where, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + table + "\n" + END + tail


def write_blocks(table, paths=(IMPORTERS_DOC,)):
    """The table into docs/importers.md, then the README's short one cut from it."""
    for path in paths:
        with open(path) as handle:
            text = handle.read()
        updated = replace_block(text, table, path)
        if updated != text:
            with open(path + ".tmp", "w") as handle:
                handle.write(updated)
            os.replace(path + ".tmp", path)
    readme_tables.write()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=NAMES,
                        help="only this file (repeatable); default: all")
    parser.add_argument("--inputs", type=int, default=200,
                        help="random inputs of the int8 files' LiteRT comparison")
    parser.add_argument("--board", default=DEFAULT_BOARD)
    parser.add_argument("--no-board", action="store_true", help="no firmware, no QEMU")
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "mlperf-tiny"))
    parser.add_argument("--markdown", action="store_true", help="print the table")
    parser.add_argument("--write", action="store_true",
                        help="write the table into docs/importers.md (and the README's short "
                             "one, tools/docs/readme_tables.py)")
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args(argv)
    if args.write and (args.model or args.no_board):
        parser.error("--write writes the whole table: leave out --model and --no-board")
    board = None if args.no_board else args.board
    rows = []
    for name in args.model or NAMES:
        row = measure(name, args.inputs, board, args.work_dir)
        rows.append(row)
        print("%s: %s" % (name, json.dumps({k: v for k, v in row.items() if k != "file"},
                                           default=str)), flush=True)
    table = markdown(rows, board)
    if args.markdown:
        print(table)
    if args.write:
        write_blocks(table)
        print("wrote the table into %s and README.md's summary" % IMPORTERS_DOC)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
