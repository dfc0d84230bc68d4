"""Cost of each int8 layer on the Cortex-M and RISC-V boards, in instructions per MAC.

    python benchmarks/arm_int8_ops.py [--boards mps2-an385,...] [--markdown] [--write]
    python benchmarks/arm_int8_ops.py --mobilenet [--boards mps2-an500,mps3-an547]

The int8 sibling of arm_ops.py, with its plumbing: for each board, boards/app/bench.c's
profile program (the core built with MT_OP_PROFILE, whose step marks each op's forward,
backward and update) on benchmarks/int8_zoo.py's model (int8 layers of MobileNetV2-w0.35
128x128's shapes, frozen, then a float Dense(10) head that trains, SGD, batch 1), run under
QEMU with the insn_count plugin (benchmarks/qemu_plugin), which counts every region's
instructions exactly and, with rhist=, each instruction address's executions per region.
The core is built with -g (the same code: .text is byte for byte the -g-less build's), so
each address maps to its chain of inlined functions (addr2line -i) and each op's count splits
into what it was spent on (CATEGORIES below): the products, the zero point's Σ W, the
requantization, the window copies of a Conv2D (and the channel planes a DSP core's 3x3
depthwise copies its rows into), a depthwise's edge pixels, and the loops and setup around
them.

Work (op_work.py): a weighted op's multiply-accumulates, counted from the reference loops
(taps in the padding are no MACs); Add: its output elements; Mean: its input elements.
Backward (the input gradient dX of an int8 op, which has no backward yet): the region
2 + 3·op, shown where it ran. --mobilenet profiles benchmarks/mbv2_int8.py's model instead
(the head step of the int8 MobileNetV2, its expansions streamed into their depthwise ops)
and sums the layers of each kind. --write writes the table between the markers
<!-- arm-int8-ops:begin --> and <!-- arm-int8-ops:end --> of SUMMARY_PAGE and of DOCS (every
board of BOARDS measured). Needs the ARM and RISC-V toolchains and QEMU (bash
tools/setup_arm.sh, tools/setup_riscv.sh); building the seven boards takes a few minutes.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import arm_cost  # noqa: E402  (the plugin build)
import arm_ops  # noqa: E402  (the profile program)
import int8_published  # noqa: E402
import int8_zoo  # noqa: E402
import op_work  # noqa: E402

from microtrain import ops as _ops  # noqa: E402

BOARDS = ("mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547",
          "rv32imac-qemu", "rv32imafc-qemu")
CORE_NAMES = {"cortex-m3": "M3", "cortex-m4f": "M4F", "cortex-m7": "M7", "cortex-m33": "M33",
              "cortex-m55": "M55", "rv32imac": "rv32imac", "rv32imafc": "rv32imafc"}
SPEC = dict(epochs=1, optimizer="sgd", learning_rate=0.01, loss="categorical_crossentropy",
            batch_size=1)
INT8_OPS = tuple(v for k, v in sorted(vars(_ops).items()) if k.endswith("_S8"))
DEBUG_INFO = {"CMAKE_C_FLAGS_MINSIZEREL": "-Os -DNDEBUG -g"}  # the presets' MinSizeRel, + -g
# the docs' split tables: one board of each kernel family (the M4F and M33 run the M7's
# DSP-extension kernels, rv32imafc rv32imac's portable C: their totals are in the first table)
SPLIT_BOARDS = ("mps2-an385", "mps2-an500", "mps3-an547", "rv32imac-qemu")
FAMILIES = ("The M4F and M33 run the M7's kernels (the DSP extension's SMLAD), rv32imafc runs\n"
            "rv32imac's (portable C, as the M3)")
FAMILIES_NOTE = FAMILIES + ": the first table has their totals, within a few percent of\nthose below."
FAMILIES_NOTE_MOBILENET = FAMILIES + ": `--mobilenet` prints theirs, within a few percent of\nthose below."
BEGIN, END = "<!-- arm-int8-ops:begin -->", "<!-- arm-int8-ops:end -->"
DOCS = os.path.join(REPO_ROOT, "docs", "int8_cost.md")
SUMMARY_PAGE = os.path.join(REPO_ROOT, "docs", "performance.md")  # the short table

# Where an instruction's executions go, decided by the innermost function of its inline chain
# that one of these patterns names (first pattern first); helpers that serve several of them
# (mt_s8_word, SXTB16, a clamp) decide nothing, so the function they are inlined into does.
# An address no pattern claims is the kernel's loops and setup.
CATEGORIES = (
    ("requantization", r"requant|^mt_q_(scale|clamp|fc_|high_mul|doubling|rounding|multiply|"
                       r"output)|^mt_s8_(saturate|scale_lanes)$"),
    ("zero point (Σ W)", r"^mt_s8_(sum|centered)$"),
    ("products", r"^mt_s8_dot|^dw_interior_(pixels|tap)$|^mt_s8_dw3_(run|channel)$"
                 r"|^mt_s8_dwg_(run|pixels)$|^stem_(pair|edge)$|^pw_pixel$|^lanes_of$"),
    ("depthwise edges", r"^dw_(sums|tap|edge_pixel)$"),
    ("window copies", r"^(conv_windows|conv_windows_gathered|copy_run|fill_run|mt_s8_dw3_(slot|copy_run)|memcpy|memset)$"),
)
WINDOWS = "window copies"  # a Conv2D's (im2col), a depthwise's planes; elsewhere a memcpy is setup
SETUP = "loops and setup"
CATEGORY_NAMES = tuple(name for name, _ in CATEGORIES) + (SETUP,)


def category_of(chain, op_type=_ops.CONV2D_S8):
    """The category of an instruction of an ``op_type`` op whose inline chain (innermost
    function first) is ``chain``"""
    for function in chain:
        for name, pattern in CATEGORIES:
            if re.search(pattern, function):
                if name == WINDOWS and op_type != _ops.CONV2D_S8 and function in ("memcpy", "memset"):
                    return SETUP  # memcpy / memset elsewhere: the compiler's struct copies
                return name
    return SETUP


# ------------------------------------------------------------------ measuring


def write_zoo(folder, seed=0):
    """The zoo's model.mtm and one random int8 frame (data.npz) in ``folder``; its layers"""
    image, layers = int8_zoo.zoo(seed)
    return write_model(folder, image, (128, 128, 3), seed), layers


def write_model(folder, image, input_shape, seed=0, classes=10):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.mtm"), "wb") as handle:
        handle.write(image)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1,) + tuple(input_shape)).astype(np.int8)
    np.savez(os.path.join(folder, "data.npz"), x=x, y=np.eye(classes, dtype=np.float32)[:1])
    return folder


def read_region_histogram(path):
    """{region: {address: executions}} from the plugin's rhist= file"""
    regions = collections.defaultdict(collections.Counter)
    current = None
    with open(path) as handle:
        for line in handle:
            fields = line.split()
            if fields[0] == "region":
                current = regions[int(fields[1])]
            else:
                current[int(fields[0], 16)] += int(fields[1])
    return regions


def inline_chains(elf, addresses, addr2line):
    """{address: [function, its caller, ...]}: the inline chain at each address (addr2line -i)"""
    chains, address = {}, None
    addresses = sorted(addresses)
    for start in range(0, len(addresses), 4000):
        output = subprocess.run([addr2line, "-f", "-i", "-a", "-e", elf] +
                                ["0x%x" % a for a in addresses[start:start + 4000]],
                                check=True, capture_output=True, text=True).stdout.splitlines()
        k = 0
        while k < len(output):  # "0x<address>", then a function and a file:line per level
            if output[k].startswith("0x"):
                address = int(output[k], 16)
                chains[address] = []
                k += 1
            else:
                chains[address].append(output[k])
                k += 2
    return chains


def measure_board(board, folder, steps, plugin, work):
    """One board's profile of the model in ``folder``: (core, image, {op: forward
    instructions per step}, {op: backward ...}, {op: {category: instructions per step}})"""
    info, image = arm_ops.build_profile(board, folder, steps, work, spec=SPEC, cache=DEBUG_INFO)
    rhist = os.path.join(work, "regions.rhist")
    counts = arm_ops.run_profile(info, steps, plugin, rhist=rhist)
    regions = read_region_histogram(rhist)
    forward = {o: counts[1 + 3 * o] for o in range(len(image.ops)) if counts.get(1 + 3 * o)}
    backward = {o: counts[2 + 3 * o] for o in range(len(image.ops)) if counts.get(2 + 3 * o)}
    addresses = set()
    for o in forward:
        addresses.update(regions[1 + 3 * o])
    addr2line = re.sub(r"nm$", "addr2line", info["nm"])
    chains = inline_chains(info["bench_profile"], addresses, addr2line)
    split = {}
    for o in forward:
        spent = collections.Counter()
        for address, executions in regions[1 + 3 * o].items():
            chain = chains.get(address) or ["?"]
            spent[category_of(chain, image.ops[o].op_type)] += executions / float(steps)
        if round(sum(spent.values())) != round(forward[o]):
            raise RuntimeError("%s op %d: the histogram holds %d instructions, the count %d"
                               % (board, o, sum(spent.values()), forward[o]))
        split[o] = spent
    return info["core"], image, forward, backward, split


def zoo_rows(image, layers, forward, backward, split):
    """The table's rows of one board: one per measured layer, in op order; an op that ran
    inside the next one (a streamed expansion: no region of its own) joins that op's row."""
    rows, pending = [], []
    for o, op in enumerate(image.ops):
        layer = layers[o]
        if layer is None or layer.kind == int8_zoo.GLUE:
            continue
        work = op_work.op_work(image, op)
        if o not in forward:  # computed by the next op's forward (the planner's streaming)
            if not streamed_into_next(image, o, forward):
                raise RuntimeError("op %d (%s) ran in no region, and is no expansion the next "
                                   "op streams: an op the planner no longer runs?" % (o, layer))
            pending.append((o, layer, work))
            continue
        names = [p[1].mobilenet for p in pending] + [layer.mobilenet]
        units = {w[0] for _, _, w in pending} | {work[0]}
        assert len(units) == 1
        rows.append({"op": o, "kind": layer.kind, "mobilenet": " + ".join(names),
                     "readme": layer.readme, "shape": shape_of(image, [p[0] for p in pending] + [o]),
                     "unit": work[0], "work": work[1] + sum(w[1] for _, _, w in pending),
                     "forward": forward[o], "backward": backward.get(o),
                     "split": dict(split[o])})
        pending = []
    return rows


def streamed_into_next(image, o, forward):
    """Whether op ``o``, which ran in no region of its own, is a pointwise int8 expansion
    whose output the depthwise at o + 1 reads (and so computed it: MT_OPF_STREAMS_PREVIOUS)"""
    op = image.ops[o]
    nxt = image.ops[o + 1] if o + 1 < len(image.ops) else None
    return (op.op_type == _ops.CONV2D_S8 and image.tensors[op.inputs[1]].dims[1:3] == (1, 1) and
            nxt is not None and nxt.op_type == _ops.DEPTHWISE_CONV2D_S8 and
            nxt.inputs[0] == op.outputs[0] and o + 1 in forward)


def shape_of(image, op_indices):
    """'64x64x8 -> 64x64x48 -> 32x32x48' (input, then each op's output)"""
    dims = lambda t: "x".join(str(d) for d in image.tensors[t].dims)  # noqa: E731
    first = image.ops[op_indices[0]]
    return " -> ".join([dims(first.inputs[0])] + [dims(image.ops[o].outputs[0])
                                                  for o in op_indices])


def mobilenet_rows(image, forward, backward, split):
    """The int8 MobileNetV2's layers summed by kind (a streamed expansion with the depthwise
    it ran in): [{kind, layers, unit, work, forward, split}]"""
    kinds = collections.OrderedDict()
    pending = []
    for o, op in enumerate(image.ops):
        work = op_work.op_work(image, op)
        if op.op_type not in (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8, _ops.DENSE_S8,
                              _ops.ADD_S8, _ops.MEAN_S8):
            continue
        if o not in forward:
            if not streamed_into_next(image, o, forward):
                raise RuntimeError("op %d ran in no region and is no streamed expansion" % o)
            pending.append(work[1])
            continue
        kind = mobilenet_kind(image, op, bool(pending))
        row = kinds.setdefault(kind, {"kind": kind, "layers": 0, "unit": work[0], "work": 0,
                                      "forward": 0.0, "split": collections.Counter()})
        row["layers"] += 1
        row["work"] += work[1] + sum(pending)
        row["forward"] += forward[o]
        row["split"].update(split[o])
        pending = []
    return list(kinds.values())


def mobilenet_kind(image, op, streamed):
    """The row of the int8 MobileNetV2's table that ``op`` (which ran, and computed the
    expansion before it where ``streamed``) adds to"""
    stride = op.params[1] & 0xFFFF if op.op_type in (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8) \
        else 1
    if op.op_type == _ops.DEPTHWISE_CONV2D_S8:
        kind = "DepthwiseConv2D 3x3 stride %d" % stride
        return "Conv2D 1x1 expansion + %s, streamed" % kind if streamed else kind
    if op.op_type == _ops.CONV2D_S8:
        _, kh, _, c = image.tensors[op.inputs[1]].dims
        if kh > 1:
            return "Conv2D %dx%d stride %d" % (kh, kh, stride)
        oc = image.tensors[op.outputs[0]].dims[-1]
        return int8_zoo.POINTWISE_EXPAND + " (unfused)" if oc > c else int8_zoo.POINTWISE_PROJECT
    return {_ops.DENSE_S8: int8_zoo.FULLY_CONNECTED, _ops.ADD_S8: int8_zoo.ADD,
            _ops.MEAN_S8: int8_zoo.MEAN}[op.op_type]


def measure(boards, steps, work_dir, mobilenet=False):
    """{board: {"core", "rows", "total"}} (total: every int8 op's forward, per step)"""
    os.makedirs(work_dir, exist_ok=True)
    plugin = arm_cost.build_plugin(work_dir)
    if mobilenet:
        import mbv2_int8
        model = mbv2_int8.variants()[0][1]
        folder = write_model(os.path.join(work_dir, "mobilenet"), model.to_bytes(), (128, 128, 3))
    else:
        folder, layers = write_zoo(os.path.join(work_dir, "zoo"))
    results = {}
    for board in boards:
        core, image, forward, backward, split = measure_board(
            board, folder, steps, plugin, os.path.join(work_dir, board + ("-mobilenet" if mobilenet else "")))
        int8_ops = [o for o, op in enumerate(image.ops) if op.op_type in INT8_OPS]
        rows = mobilenet_rows(image, forward, backward, split) if mobilenet else \
            zoo_rows(image, layers, forward, backward, split)
        works = [op_work.op_work(image, image.ops[o]) for o in int8_ops]
        results[board] = {"core": CORE_NAMES.get(core, core), "rows": rows,
                          "total": sum(forward.get(o, 0.0) for o in int8_ops),
                          "macs": sum(w[1] for w in works if w and w[0] == op_work.MAC)}
    return results


# ------------------------------------------------------------------ tables


def _boards(results):
    return [b for b in BOARDS if b in results] + sorted(b for b in results if b not in BOARDS)


def _per(value, work):
    return "%.2f" % (value / float(work)) if work else "-"


def _unit(row):
    return "MAC" if row["unit"] == op_work.MAC else "element"


def layer_table(results, readme_only=False):
    """(header, lines): a row per zoo layer (readme_only: the README's row of each kind),
    forward instructions per MAC (per element for Add and Mean) on each board's core"""
    boards = _boards(results)
    header = ["layer", "MobileNetV2-w0.35 layer", "shape", "unit"] + \
        [results[b]["core"] for b in boards]
    first = results[boards[0]]["rows"]
    chosen = [r for r in first if r["readme"]] if readme_only else first
    if readme_only:
        order = {kind: k for k, kind in enumerate(int8_zoo.README_KINDS)}
        chosen = sorted(chosen, key=lambda r: order[r["kind"]])
    lines = []
    for row in chosen:
        cells = []
        for b in boards:
            match = [r for r in results[b]["rows"] if r["op"] == row["op"]]
            cells.append(_per(match[0]["forward"], match[0]["work"]) if match else "-")
        lines.append([row["kind"], row["mobilenet"], row["shape"], _unit(row)] + cells)
    return header, lines


def split_table(result, shares=False):
    """(header, lines) of one board: each layer's forward instructions per MAC and what they
    were spent on (CATEGORIES), and the input gradient's where an int8 backward ran; with
    ``shares``, each row's instructions and share of the int8 ops' first"""
    header = ["layer"] + (["instructions", "share"] if shares else []) + ["instr./unit"] + \
        list(CATEGORY_NAMES) + ["dX instr./MAC"]
    lines = []
    for row in result["rows"]:
        name = row.get("mobilenet") or "%d layer%s" % (row["layers"], "s" * (row["layers"] > 1))
        weighted = row["unit"] == op_work.MAC
        cells = [_per(row["split"].get(c, 0.0), row["work"]) if weighted else "-"
                 for c in CATEGORY_NAMES]
        backward = row.get("backward")
        share = ["%d" % round(row["forward"]), "%.1f %%" % (100.0 * row["forward"] / result["total"])] \
            if shares else []
        lines.append(["%s (%s)" % (row["kind"], name)] + share + [_per(row["forward"], row["work"])] +
                     cells + [_per(backward, row["work"]) if backward else "-"])
    return header, lines


def pretty(cell):
    """A cell as Markdown shows it: 3×3, 32×32×8 → 32×32×48"""
    return re.sub(r"(?<=\d)x(?=\d)", "×", str(cell).replace(" -> ", " → "))


def render(header, lines, markdown, numeric_from=1):
    if markdown:
        header = [pretty(c) for c in header]
        lines = [[pretty(c) for c in line] for line in lines]
        align = ["---"] * numeric_from + ["---:"] * (len(header) - numeric_from)
        out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
        return "\n".join(out + ["| " + " | ".join(line) + " |" for line in lines])
    widths = [max(len(str(c)) for c in column) for column in zip(header, *lines)]
    return "\n".join("  ".join(str(c).ljust(w) if k < numeric_from else str(c).rjust(w)
                               for k, (c, w) in enumerate(zip(line, widths)))
                     for line in [header] + lines)


def summary_block(results):
    header, lines = layer_table(results, readme_only=True)
    return "\n".join([
        BEGIN,
        "Forward instructions per MAC (Add: per output element, Mean: per input element) of",
        "each int8 kind at a MobileNetV2-w0.35 128×128 layer's shape, counted by the QEMU plugin",
        "(`python benchmarks/arm_int8_ops.py --write`; every layer, the split of each count and",
        "CMSIS-NN's and TinyEngine's figures beside them: `docs/int8_cost.md`):",
        "",
        render(header, lines, True, numeric_from=4),
        "",
        "The input gradient of these ops (the int8 backward) does not exist yet; the same",
        "command measures it (the `dX` column of `docs/int8_cost.md`) once it does.",
        END])


def docs_block(results):
    header, lines = layer_table(results)
    parts = [BEGIN,
             "Every layer of `benchmarks/int8_zoo.py`, forward instructions per MAC (per element",
             "for Add and Mean), one train step of batch 1 (`python benchmarks/arm_int8_ops.py",
             "--write`):", "", render(header, lines, True, numeric_from=4), ""]
    parts += [FAMILIES_NOTE, ""]
    for board in [b for b in SPLIT_BOARDS if b in results]:
        header, lines = split_table(results[board])
        parts += ["%s (`%s`): forward instructions per MAC by what they were spent on" %
                  (results[board]["core"], board), "", render(header, lines, True), ""]
    parts += [int8_published.markdown(results), END]
    return "\n".join(parts)


def mobilenet_block(results):
    parts = ["<!-- arm-int8-mobilenet:begin -->", FAMILIES_NOTE_MOBILENET, ""]
    for board in [b for b in SPLIT_BOARDS if b in results]:
        r = results[board]
        header, lines = split_table(r, shares=True)
        sentence = ("%s (`%s`): the int8 ops of the MobileNetV2's step, %d instructions for %d "
                    "MACs (%.2f a MAC, Adds and Mean included), their layers summed by kind:"
                    % (r["core"], board, round(r["total"]), r["macs"], r["total"] / r["macs"]))
        parts += textwrap.wrap(sentence, 96, break_on_hyphens=False) + ["", render(header, lines, True), ""]
    parts.append("<!-- arm-int8-mobilenet:end -->")
    return "\n".join(parts)


def replace_block(path, block, begin=BEGIN, end=END):
    """Write ``block`` (its own markers included) over the text between ``begin`` and
    ``end`` of ``path``; an error names the file if it has no such markers."""
    with open(path) as handle:
        text = handle.read()
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise SystemExit("%s has no %s ... %s block" % (path, begin, end))
    with open(path, "w") as handle:
        handle.write(text[:start] + block + text[stop + len(end):])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "arm-int8-ops"))
    parser.add_argument("--mobilenet", action="store_true",
                        help="profile the int8 MobileNetV2 head step (mbv2_int8.py's model)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--write", action="store_true",
                        help="write the tables into %s and %s" % (os.path.relpath(SUMMARY_PAGE, REPO_ROOT),
                                                                os.path.relpath(DOCS, REPO_ROOT)))
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--from-json", help="print (and with --write write) the measurements "
                        "a --json run saved, without building or running anything")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    boards = [b for b in args.boards.split(",") if b]
    if args.from_json:
        with open(args.from_json) as handle:
            results = json.load(handle)
    else:
        results = measure(boards, args.steps, args.work_dir, mobilenet=args.mobilenet)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    if args.mobilenet:
        print(mobilenet_block(results) if args.markdown else "\n\n".join(
            "%s (%s): %d instructions of int8 ops\n%s" % (b, results[b]["core"], results[b]["total"],
                                                         render(*split_table(results[b], True), False))
            for b in _boards(results)))
        if args.write:
            replace_block(DOCS, mobilenet_block(results), "<!-- arm-int8-mobilenet:begin -->",
                          "<!-- arm-int8-mobilenet:end -->")
        return 0
    header, lines = layer_table(results)
    print(render(header, lines, args.markdown, numeric_from=4))
    for board in _boards(results):
        print("\n%s (%s): instructions per unit by what they were spent on" % (board, results[board]["core"]))
        print(render(*split_table(results[board]), markdown=args.markdown))
    if args.write:
        missing = [b for b in BOARDS if b not in results]
        if missing:
            parser.error("--write needs every board of the table (missing: %s)" % ", ".join(missing))
        replace_block(SUMMARY_PAGE, summary_block(results))
        replace_block(DOCS, docs_block(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
