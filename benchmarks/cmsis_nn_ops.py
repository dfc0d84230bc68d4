"""CMSIS-NN's int8 kernels on the per-op table's layers, counted by the same QEMU plugin.

    python benchmarks/cmsis_nn_ops.py --cmsis-nn DIR [--boards mps2-an386,...] [--readme]

The published figures beside microtrain's table (int8_published.py) are cycles on silicon,
which an instruction count cannot be set against without an IPC no source gives. This runs
CMSIS-NN itself (a checkout at DIR: github.com/ARM-software/CMSIS-NN, its commit printed) on
the layers of benchmarks/int8_zoo.py, one call each through CMSIS-NN's wrappers as TF-Lite
Micro makes them (arm_convolve_wrapper_s8, arm_depthwise_conv_wrapper_s8,
arm_fully_connected_s8, arm_elementwise_add_s8, and arm_avgpool_s8 for the Mean, which
CMSIS-NN does not have), in benchmarks/cmsis_nn/cmsis_nn_layers.c on each Cortex-M board (the
same -mcpu, CMSIS-NN at -O2), each call a region the insn_count plugin counts exactly: the
instructions per MAC of both libraries in one unit. What a layer needs before it runs
(buffers, on Helium the FullyConnected's weight sums: TF-Lite Micro's Prepare) is outside the
count. CMSIS-NN runs each expansion and its depthwise apart (it has no streaming); block 1's
pair is their sum. Its FullyConnected requantizes per tensor with gemmlowp's rounding, where
LiteRT's reference (and microtrain) scales per channel in double. --readme writes the table
between <!-- cmsis-nn-ops:begin --> and <!-- cmsis-nn-ops:end --> of docs/int8_cost.md, beside
microtrain's counts from arm_int8_ops.py's --json file (--ours).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import arm_cost  # noqa: E402
import arm_int8_ops  # noqa: E402
import arm_ops  # noqa: E402
import int8_zoo  # noqa: E402
import op_work  # noqa: E402

from microtrain import ops as _ops  # noqa: E402
from microtrain._shapes import element_count as _count  # noqa: E402
from microtrain.nn import image as _image  # noqa: E402
from microtrain.tools import firmware  # noqa: E402
from microtrain.tools.firmware_training import TrainingSpec  # noqa: E402

BOARDS = ("mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547")
PROGRAM = "microtrain_cmsis_nn"
KINDS = {_ops.CONV2D_S8: "CONV", _ops.DEPTHWISE_CONV2D_S8: "DEPTHWISE",
         _ops.DENSE_S8: "FULLY_CONNECTED", _ops.ADD_S8: "ADD", _ops.MEAN_S8: "AVERAGE_POOL"}
BEGIN, END = "<!-- cmsis-nn-ops:begin -->", "<!-- cmsis-nn-ops:end -->"


def layer_rows(image, layers):
    """[(zoo op, C initializer of its cmsis_nn_layer)] for every measured zoo layer"""
    rows = []
    for o, (op, layer) in enumerate(zip(image.ops, layers)):
        if layer is None or layer.kind == int8_zoo.GLUE:
            continue
        x, y = image.tensors[op.inputs[0]], image.tensors[op.outputs[0]]
        zx, zy = int(x.quant.zero_points[0]), int(y.quant.zero_points[0])
        h, w, c = x.dims if len(x.dims) == 3 else (1, 1, x.dims[0])
        oh, ow, oc = y.dims if len(y.dims) == 3 else (1, 1, y.dims[0])
        k, stride, pad_h, pad_w = 1, 1, 0, 0
        if op.op_type in (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8):
            k = image.tensors[op.inputs[1]].dims[1]
            stride = op.params[1] & 0xFFFF
            _, pad_h = op_work.spatial_axis(h, k, stride, op.params[2])
            _, pad_w = op_work.spatial_axis(w, k, stride, op.params[2])
        elif op.op_type == _ops.MEAN_S8:
            k = h  # one window over the whole [H, W]
        fields = (KINDS[op.op_type], 1 + 3 * o, h, w, c, oc, k, stride, pad_h, pad_w, oh, ow, zx, zy)
        rows.append((o, "{%s}" % ", ".join(str(f) for f in fields)))
    return rows


def arena_bytes(image, layers):
    """The most one layer of cmsis_nn_layers.c takes from its arena (input, output, weights
    in RAM, constants, scratch: a generous bound for the scratch of 8 KB plus its im2col)"""
    most = 0
    for op, layer in zip(image.ops, layers):
        if layer is None or layer.kind == int8_zoo.GLUE:
            continue
        n = sum(_count(image.tensors[t].dims) for t in (op.inputs[0], op.outputs[0]))
        oc = image.tensors[op.outputs[0]].dims[-1]
        weights = _count(image.tensors[op.inputs[1]].dims) if op.op_type in (
            _ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8) else 0
        second = _count(image.tensors[op.inputs[0]].dims) if op.op_type == _ops.ADD_S8 else 0
        most = max(most, n + weights + second + 12 * oc + 8192 + 64 * 16)
    return (most + 15) // 16 * 16 + 4096


def header(image, layers):
    fc = [op for op in image.ops if op.op_type == _ops.DENSE_S8]
    flash = _count(image.tensors[fc[0].inputs[1]].dims) if fc else 16
    rows = layer_rows(image, layers)
    return "\n".join([
        "/* written by benchmarks/cmsis_nn_ops.py from benchmarks/int8_zoo.py: one cmsis_nn_layer",
        " * (kind, region, h, w, c, oc, k, stride, pad_h, pad_w, oh, ow, x_zp, y_zp) a zoo op */",
        "#define CMSIS_NN_ARENA_BYTES %du" % arena_bytes(image, layers),
        "#define CMSIS_NN_FLASH_WEIGHT_BYTES %du" % flash,
        "#define CMSIS_NN_LAYERS { \\"] +
        ["    %s, /* op %d */ \\" % (text, o) for o, text in rows] + ["}", ""])


def measure(boards, cmsis_nn_dir, work_dir):
    """{board: {"core", "regions": {op: instructions}}} and the zoo image and layers"""
    os.makedirs(work_dir, exist_ok=True)
    plugin = arm_cost.build_plugin(work_dir)
    folder, layers = arm_int8_ops.write_zoo(os.path.join(work_dir, "zoo"))
    record = firmware.package(os.path.join(folder, "model.mtm"), os.path.join(folder, "data.npz"),
                              TrainingSpec(**arm_int8_ops.SPEC), os.path.join(work_dir, "package"))
    with open(record["model"], "rb") as handle:
        image = _image.read_image(handle.read())
    path = os.path.join(work_dir, "cmsis_nn_layers.h")
    with open(path, "w") as handle:
        handle.write(header(image, layers))
    results = {}
    for board in boards:
        build_dir = os.path.join(work_dir, board)
        info = firmware.build(firmware.find_source_dir(REPO_ROOT), board,
                              os.path.join(work_dir, "package", "data"), build_dir,
                              targets=(PROGRAM,), cache={"MT_CMSIS_NN_DIR": os.path.abspath(cmsis_nn_dir),
                                                         "MT_CMSIS_NN_LAYERS": os.path.abspath(path)})
        info[PROGRAM] = os.path.join(build_dir, "boards", "app", PROGRAM + ".elf")
        counts = arm_ops.run_profile(info, 1, plugin, program=PROGRAM)
        results[board] = {"core": arm_int8_ops.CORE_NAMES.get(info["core"], info["core"]),
                          "regions": {o: counts.get(1 + 3 * o, 0.0) for o, _ in layer_rows(image, layers)}}
    return results, image, layers


def commit_of(cmsis_nn_dir):
    try:
        return subprocess.run(["git", "-C", cmsis_nn_dir, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def table(results, image, layers, ours=None):
    """(header, lines): per zoo row, CMSIS-NN's instructions per MAC (per element) on each
    core, and microtrain's from ``ours`` (arm_int8_ops's results) after a slash"""
    boards = [b for b in BOARDS if b in results]
    head = ["layer", "MobileNetV2-w0.35 layer", "unit"] + [results[b]["core"] for b in boards]
    lines, pending = [], []
    for o, (op, layer) in enumerate(zip(image.ops, layers)):
        if layer is None or layer.kind == int8_zoo.GLUE:
            continue
        pending.append(o)
        if layer.kind == int8_zoo.STREAMED and image.ops[o + 1:o + 2] and layers[o + 1].kind == layer.kind:
            continue  # the pair is one row, as in arm_int8_ops's table
        unit, work = op_work.MAC, 0
        for p in pending:
            unit, n = op_work.op_work(image, image.ops[p])
            work += n
        cells = []
        for b in boards:
            theirs = sum(results[b]["regions"][p] for p in pending) / float(work)
            mine = [r for r in (ours or {}).get(b, {}).get("rows", []) if r["op"] == o]
            cells.append("%.2f" % theirs + (" / %.2f" % (mine[0]["forward"] / mine[0]["work"])
                                             if mine else ""))
        names = " + ".join(layers[p].mobilenet for p in pending)
        lines.append([layer.kind, names, "MAC" if unit == op_work.MAC else "element"] + cells)
        pending = []
    return head, lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmsis-nn", required=True, help="a CMSIS-NN checkout")
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "cmsis-nn-ops"))
    parser.add_argument("--ours", default=os.path.join(REPO_ROOT, "build", "arm-int8-ops", "zoo.json"),
                        help="arm_int8_ops.py --json's file, for microtrain's figures beside")
    parser.add_argument("--readme", action="store_true",
                        help="write the table into %s" % os.path.relpath(arm_int8_ops.DOCS, REPO_ROOT))
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.cmsis_nn, "Include", "arm_nnfunctions.h")):
        parser.error("%s is no CMSIS-NN checkout (no Include/arm_nnfunctions.h): clone "
                     "github.com/ARM-software/CMSIS-NN and pass its folder" % args.cmsis_nn)
    results, image, layers = measure([b for b in args.boards.split(",") if b], args.cmsis_nn,
                                     args.work_dir)
    ours = None
    if os.path.isfile(args.ours):
        with open(args.ours) as handle:
            ours = json.load(handle)
    head, lines = table(results, image, layers, ours)
    commit = commit_of(args.cmsis_nn)
    print("CMSIS-NN %s, instructions per MAC (per element for Add and Mean)%s"
          % (commit, "; microtrain's after the slash" if ours else ""))
    print(arm_int8_ops.render(head, lines, False, numeric_from=3))
    if args.readme:
        block = "\n".join([
            BEGIN,
            "CMSIS-NN (commit %s, `python benchmarks/cmsis_nn_ops.py --cmsis-nn DIR --readme`) on"
            % commit,
            "the same layers and cores, forward instructions per MAC (per element for Add and",
            "Mean) counted by the same plugin; microtrain's after the slash:", "",
            arm_int8_ops.render(head, lines, True, numeric_from=3), END])
        arm_int8_ops.replace_block(arm_int8_ops.DOCS, block, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
