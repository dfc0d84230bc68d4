"""Cost of every op of a train step on the Cortex-M and RISC-V boards, in executed instructions.

    python benchmarks/arm_ops.py [--steps 2] [--boards mps2-an386,...] [--markdown]
        [--plot docs/arm_ops_per_mac.png]

The successor of arm_cost.py per op. For each board it builds boards/app/bench.c's profile
program (microtrain_bench_profile: the core compiled with MT_OP_PROFILE, whose step marks
each op's forward, backward and optimizer update) on two models, every op trained, Adam,
batch 16, and runs it under QEMU with the insn_count plugin counting the instructions of
each region exactly (benchmarks/qemu_plugin/insn_count.c). Each figure is per train step
(the region's count over --steps steps).

    digits MLP   64 -> Dense 16 relu -> Dense 10 -> Softmax            (arm_cost.py's model)
    CNN          8x8x1 -> Conv 3x3x8 same relu -> DepthwiseConv 3x3 same relu
                 -> Conv 1x1x16 relu -> MaxPool 2 -> Flatten -> Dense 10 -> Softmax

MACs: the multiply-accumulates the reference kernels perform (taps in the padding are not
MACs): forward; backward = the weight gradient plus, where backward goes on to the op's
input (every weighted op but the first), the input gradient. A backward figure includes
the fused activation's derivative and the bias gradient; the update column is the optimizer
applied to the op's weights after its backward. The boards are those with an FPU (the M4F,
M7, M33, M55 and rv32imafc); --boards takes any. Needs the ARM and RISC-V toolchains and QEMU
(bash tools/setup_arm.sh, tools/setup_riscv.sh) and scikit-learn for the digits.
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np

import microtrain
from microtrain import layers, ops as _ops
from microtrain.nn import image as _image
from microtrain.tools import firmware
from microtrain.tools.firmware_training import FirmwareError, TrainingSpec

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import arm_cost  # noqa: E402  (the plugin build)
import op_work  # noqa: E402

BOARDS = ("mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547", "rv32imafc-qemu")
SPEC = dict(epochs=1, optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy",
            batch_size=16, num_trainable_ops=-1)
NAMES = {_ops.DENSE: "Dense", _ops.CONV2D: "Conv2D", _ops.DEPTHWISE_CONV2D: "DepthwiseConv2D",
         _ops.MAX_POOL2D: "MaxPool2D", _ops.RELU: "ReLU", _ops.SOFTMAX: "Softmax",
         _ops.RESHAPE: "Reshape"}


def models(work):
    """{name: (model path, data path)} of the two models, written under work."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)[:64]
    y = np.eye(10, dtype=np.float32)[digits.target][:64]
    out = {}
    mlp = microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(10),
                                 layers.Softmax()], input_shape=(64,), seed=0)
    cnn = microtrain.Sequential(
        [layers.Conv2D(8, 3, padding="same", activation="relu"),
         layers.DepthwiseConv2D(3, padding="same", activation="relu"),
         layers.Conv2D(16, 1, activation="relu"), layers.MaxPool2D(2), layers.Flatten(),
         layers.Dense(10), layers.Softmax()], input_shape=(8, 8, 1), seed=0)
    for name, model, data in (("digits MLP", mlp, x), ("CNN", cnn, x.reshape(-1, 8, 8, 1))):
        folder = os.path.join(work, name.replace(" ", "-"))
        os.makedirs(folder, exist_ok=True)
        model.save(os.path.join(folder, "model.mtm"))
        np.savez(os.path.join(folder, "data.npz"), x=data, y=y)
        out[name] = folder
    return out


def op_macs(image, batch):
    """[(op index, op type, forward MACs, backward MACs)] for the float weighted ops (the
    terms of the reference loops, op_work.py: taps in the padding are not MACs)."""
    rows, first = [], True
    for index, op in enumerate(image.ops):
        if op.op_type not in (_ops.DENSE, _ops.CONV2D, _ops.DEPTHWISE_CONV2D):
            continue
        _, macs = op_work.op_work(image, op)
        forward = batch * macs
        rows.append((index, op.op_type, forward, forward * (1 if first else 2)))
        first = False
    return rows


def symbols(elf, nm):
    output = subprocess.run([nm, "-S", elf], check=True, capture_output=True,
                            text=True).stdout
    table = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 4:
            table[fields[3]] = (int(fields[0], 16), int(fields[1], 16))
    return table


PROFILE_PROGRAM = "microtrain_bench_profile"


def build_profile(board, folder, steps, work, spec=SPEC, cache=None):
    """Package ``folder``'s model.mtm and data.npz for one board and build only its profile
    program (the core with MT_OP_PROFILE; ``cache``: more CMake cache entries). Returns the
    build's board info, its "bench_profile" the program, and the image as packaged."""
    record = firmware.package(os.path.join(folder, "model.mtm"), os.path.join(folder, "data.npz"),
                              TrainingSpec(**spec), os.path.join(work, "package"))
    build_dir = os.path.join(work, "build")
    info = firmware.build(firmware.find_source_dir(REPO_ROOT), board,
                          os.path.join(work, "package", "data"), build_dir, bench_steps=steps,
                          targets=(PROFILE_PROGRAM,), cache=cache)
    info["bench_profile"] = os.path.join(build_dir, "boards", "app", PROFILE_PROGRAM + ".elf")
    with open(record["model"], "rb") as handle:
        return info, _image.read_image(handle.read())


def run_profile(info, steps, plugin, rhist=None, program="bench_profile"):
    """{region: instructions per step} of one run of the profile program (``steps`` train
    steps); with ``rhist`` a path, the plugin also writes its histogram per region there.
    ``program``: another program of the build that marks regions as it does (info[program])."""
    table = symbols(info[program], info["nm"])
    marks, _ = table["mt_fw_profile_marks"]
    mark_fn, mark_size = table["mt_op_profile_mark"]
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "count.txt")
        argument = "%s,out=%s,marks=0x%x,regions=0x400,mark_lo=0x%x,mark_hi=0x%x" % (
            plugin, out, marks, mark_fn & ~1, (mark_fn & ~1) + mark_size)
        if rhist:
            argument += ",rhist=" + rhist
        status, text, errors = firmware.run(info, program, timeout=900,
                                            extra_qemu_args=["-plugin", argument])
        if status != 0:
            raise FirmwareError("%s: %s%s" % (info["board"], text, errors))
        counts = {}
        with open(out) as handle:
            for line in handle:
                fields = line.split()
                if fields[0] == "region":
                    counts[int(fields[1])] = int(fields[2]) / float(steps)
    return counts


def profile(board, folder, steps, plugin, work):
    """{region: instructions per step} of the profile program on one board, the image and
    the board's core."""
    info, image = build_profile(board, folder, steps, work)
    return run_profile(info, steps, plugin), image, info["core"]


def measure(boards, steps, work_dir):
    os.makedirs(work_dir, exist_ok=True)
    plugin = arm_cost.build_plugin(work_dir)
    folders = models(os.path.join(work_dir, "models"))
    rows = []
    for board in boards:
        for name, folder in folders.items():
            counts, image, core = profile(board, folder, steps, plugin,
                                          os.path.join(work_dir, board, os.path.basename(folder)))
            macs = {index: (fwd, bwd) for index, _, fwd, bwd in op_macs(image, SPEC["batch_size"])}
            for index, op in enumerate(image.ops):
                fwd, bwd, upd = (counts.get(1 + 3 * index, 0), counts.get(2 + 3 * index, 0),
                                 counts.get(3 + 3 * index, 0))
                rows.append({"board": board, "core": core, "model": name, "op": index,
                             "type": NAMES.get(op.op_type, str(op.op_type)), "forward": fwd,
                             "backward": bwd, "update": upd,
                             "macs": macs.get(index)})
    return rows


def format_table(rows, markdown):
    header = ("board", "core", "model", "op", "forward instr.", "forward MACs", "fwd instr./MAC",
              "backward instr.", "backward MACs", "bwd instr./MAC", "update instr.")
    lines = []
    for r in rows:
        fm, bm = r["macs"] if r["macs"] else (None, None)
        lines.append([r["board"], r["core"], r["model"], "%d %s" % (r["op"], r["type"]),
                      "%d" % round(r["forward"]), "%d" % fm if fm else "-",
                      "%.2f" % (r["forward"] / fm) if fm else "-",
                      "%d" % round(r["backward"]), "%d" % bm if bm else "-",
                      "%.2f" % (r["backward"] / bm) if bm else "-", "%d" % round(r["update"])])
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|---|---|---|---|" + "---:|" * (len(header) - 4)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *lines)]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(line, widths))
                     for line in [header] + lines)


def summary(rows):
    """Worst instructions per MAC per board and op type (forward and backward)."""
    worst = collections.defaultdict(float)
    for r in rows:
        if r["macs"]:
            fm, bm = r["macs"]
            key = (r["board"], r["type"])
            worst[key] = max(worst[key], r["forward"] / fm, r["backward"] / bm)
    return worst


def plot(rows, path):
    """Instructions per MAC of each weighted op of the CNN, forward and backward, a group of
    bars per op and a bar per board (matplotlib; docs/performance.md shows it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    weighted = [r for r in rows if r["macs"] and r["model"] == "CNN"]
    boards = list(dict.fromkeys(r["board"] for r in weighted))
    ops = list(dict.fromkeys("%d %s" % (r["op"], r["type"]) for r in weighted))
    figure, panels = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    width = 0.8 / max(len(boards), 1)
    for axes, (title, column, index) in zip(panels, (("forward", "forward", 0),
                                                     ("backward", "backward", 1))):
        for k, board in enumerate(boards):
            values = []
            for op in ops:
                found = [r for r in weighted if r["board"] == board
                         and "%d %s" % (r["op"], r["type"]) == op]
                values.append(found[0][column] / found[0]["macs"][index] if found else 0.0)
            core = next(r["core"] for r in weighted if r["board"] == board)
            axes.bar([i + (k - (len(boards) - 1) / 2) * width for i in range(len(ops))],
                     values, width, label="%s (%s)" % (board, core))
        axes.set_xticks(range(len(ops)))
        axes.set_xticklabels(ops, rotation=20, ha="right", fontsize=8)
        axes.set_title(title, fontsize=10)
        axes.grid(axis="y", linewidth=0.3)
    panels[0].set_ylabel("instructions per MAC")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8)
    figure.suptitle("The CNN's weighted ops, every op trained, Adam, batch %d "
                    "(QEMU's instruction counts)" % SPEC["batch_size"], fontsize=10)
    figure.tight_layout(rect=(0, 0.12, 1, 0.94))
    figure.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "arm-ops"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--weighted", action="store_true",
                        help="only the ops with MACs (Dense, Conv2D, DepthwiseConv2D)")
    parser.add_argument("--plot", metavar="PNG",
                        help="draw the CNN's instructions per MAC per op and board into this file")
    args = parser.parse_args(argv)
    if args.plot:
        import matplotlib  # noqa: F401  (fail now, not after measuring: pip install '.[plot]')
    rows = measure([b for b in args.boards.split(",") if b], args.steps, args.work_dir)
    if args.plot:
        plot(rows, args.plot)
    if args.weighted:
        rows = [r for r in rows if r["macs"]]
    print("instructions per train step and per MAC, every op trained, Adam, batch %d"
          % SPEC["batch_size"])
    print(format_table(rows, args.markdown))
    print()
    for (board, kind), value in sorted(summary(rows).items()):
        print("%s %s: at most %.2f instructions per MAC" % (board, kind, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
