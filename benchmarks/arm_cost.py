"""Cost of one train step on ARM and RISC-V, as an exact count of executed instructions.

    python benchmarks/arm_cost.py [--steps 10] [--boards mps2-an385,...] [--markdown]

For each board preset it builds the benchmark firmware of boards/app/bench.c twice on the
digits example of examples/firmware_digits.py (64 -> 16 relu -> 10 softmax, batch 16, Adam,
every op trained): once with 0 train steps and once with --steps. Both run under QEMU with
the insn_count plugin (benchmarks/qemu_plugin/insn_count.c, built here with the host
compiler); the difference divided by the steps is the exact instruction count of one
mt_session_train_step on that core, the same on every run. Instructions per MAC divide it
by the multiply-accumulates a step needs (below), so cores and kernels compare on one scale.

MACs of one step, per Dense op with I inputs and U units, batch B:
forward B·I·U; weight gradient dW += dYᵀ·X, B·I·U if the op is trained; input gradient
dX = dY·W, B·I·U if a trained op comes before it (backward has to reach that op).

QEMU models no cycles: an instruction count is a stable proxy, not a time (and an RV32
instruction does less than a Thumb-2 one: no shifted operands, no load-multiple, no
post-increment). Needs the ARM and RISC-V toolchains and QEMU (bash tools/setup_arm.sh,
tools/setup_riscv.sh) and scikit-learn for the digits.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from microtrain import ops as _ops
from microtrain.nn import image as _image
from microtrain.tools import firmware
from microtrain.tools.firmware_training import FirmwareError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
DEFAULT_BOARDS = ("mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547",
                  "rv32imac-qemu", "rv32imafc-qemu", "arm-linux-gnueabihf", "aarch64-linux-gnu")
SPEC = dict(epochs=1, optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy",
            batch_size=16, num_trainable_ops=-1)


def build_plugin(out_dir):
    """Compile insn_count.so with the host C compiler; return its path."""
    source = os.path.join(HERE, "qemu_plugin", "insn_count.c")
    library = os.path.join(out_dir, "insn_count.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                    library, source], check=True)
    return library


PROFILE_ENV = "MT_INSN_PROFILE"  # a folder: every count also keeps where its instructions went


def count_instructions(board_info, program, plugin):
    """Executed instructions of one run of ``program`` (bench or bench_base).

    With the environment variable MT_INSN_PROFILE naming a folder, the run also writes the
    plugin's histogram there (<board>-<program>-<n>.hist, one line per instruction address)
    with a .json beside it (the ELF, its build folder, the train steps the program printed),
    which ``python benchmarks/insn_profile.py FOLDER`` turns into instructions per step and
    function. The benchmarks that count through here (arm_cost.py, mbv2_int8.py,
    digits_int8.py) profile so."""
    profile_dir = os.environ.get(PROFILE_ENV)
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "count.txt")
        options = plugin + ",out=" + out
        if profile_dir:
            os.makedirs(profile_dir, exist_ok=True)
            stem = _profile_stem(profile_dir, board_info["board"], program)
            options += ",hist=" + stem + ".hist"
        status, text, errors = firmware.run(board_info, program, extra_qemu_args=["-plugin", options])
        if status != 0:
            raise FirmwareError("%s of %s exited with %d:\n%s%s"
                                % (program, board_info["board"], status, text, errors))
        with open(out) as handle:
            word, value = handle.read().split()
    assert word == "insns"
    if profile_dir:
        steps = re.search(r"^bench: (\d+) train steps", text, re.MULTILINE)
        with open(stem + ".json", "w") as handle:
            json.dump({"board": board_info["board"], "program": program, "elf": board_info[program],
                       "build": os.path.dirname(board_info[program]), "instructions": int(value),
                       "steps": int(steps.group(1)) if steps else None,
                       "nm": board_info.get("nm"), "objdump": board_info.get("objdump")}, handle)
    return int(value)


def _profile_stem(folder, board, program):
    """<folder>/<board>-<program>-<n> for the first n not taken yet"""
    n = 0
    while os.path.exists(os.path.join(folder, "%s-%s-%d.json" % (board, program, n))):
        n += 1
    return os.path.join(folder, "%s-%s-%d" % (board, program, n))


def section_sizes(elf):
    """{section: bytes} of an ELF, as arm-none-eabi-size -A prints them."""
    out = subprocess.run(["arm-none-eabi-size", "-A", elf], capture_output=True, text=True,
                         check=True).stdout
    return dict((parts[0], int(parts[1])) for parts in (line.split() for line in out.splitlines())
                if len(parts) >= 2 and parts[1].isdigit())


def flash_and_ram(elf):
    """(flash bytes: text + data load, static RAM bytes: data + bss, {section: bytes})."""
    sizes = section_sizes(elf)
    flash = sum(v for k, v in sizes.items() if k in (".vectors", ".text", ".rodata", ".data",
                                                      ".ARM.exidx", ".init_array"))
    return flash, sizes.get(".data", 0) + sizes.get(".bss", 0), sizes


def stack_reservation(used):
    """The stack a build reserves for a measured high-water mark: rounded up to 256 bytes,
    plus 1 KiB (what an interrupt's frame or a path the run did not take may add)."""
    return (used + 255) // 256 * 256 + 1024


def measured_ram(elf, output, relink):
    """The RAM a firmware takes: {"static": .data + .bss (the arena among them),
    "stack_measured": the high-water mark of the stack its startup painted, as its run
    printed it in ``output`` (boards/common/stack_paint.h), "stack_reserved": that rounded up
    with a margin (stack_reservation), "ram_used": static + stack_measured}.
    ``relink(reserved)`` builds the firmware again reserving only that stack (CMake's
    MT_STACK_BYTES), which must still link: the figure is one a board can be built with.
    A firmware that printed no high-water mark is an error, not a guess."""
    measured = firmware.stack_used(output)
    if measured is None:
        raise FirmwareError("the firmware printed no stack high-water mark (%s)" % elf)
    static = flash_and_ram(elf)[1]
    reserved = stack_reservation(measured)
    relink(reserved)
    return {"static": static, "stack_measured": measured, "stack_reserved": reserved,
            "ram_used": static + measured}


def macs_per_step(model_bytes, batch_size, first_trained_op):
    """Multiply-accumulates of one full-batch train step (see the module docstring)."""
    image = _image.read_image(model_bytes)
    macs = 0
    for index, op in enumerate(image.ops):
        if op.op_type != _ops.DENSE:
            continue
        units, inputs = image.tensors[op.inputs[1]].dims
        dense = batch_size * inputs * units
        macs += dense                      # forward
        if index >= first_trained_op:
            macs += dense                  # dW
        if index > first_trained_op:
            macs += dense                  # dX
    return macs


def measure(boards, steps, work_dir):
    sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
    import firmware_digits

    record, data_dir = firmware_digits.package_example(os.path.join(work_dir, "package"), **SPEC)
    with open(record["model"], "rb") as handle:
        model_bytes = handle.read()
    macs = macs_per_step(model_bytes, SPEC["batch_size"], record["plan"]["first_trained_op"])
    plugin = build_plugin(work_dir)
    source = firmware.find_source_dir(REPO_ROOT)
    rows = []
    for board in boards:
        info = firmware.build(source, board, data_dir, os.path.join(work_dir, board),
                              bench_steps=steps)
        base = count_instructions(info, "bench_base", plugin)
        total = count_instructions(info, "bench", plugin)
        per_step = (total - base) / float(steps)
        rows.append({"board": board, "core": info["core"], "per_step": per_step,
                     "setup": base, "macs": macs, "per_mac": per_step / macs})
    return rows


def _core_name(row):
    if row["core"] != "hosted":
        return row["core"]
    return {"arm-linux-gnueabihf": "ARMv7-A (Linux)",
            "aarch64-linux-gnu": "AArch64 (Linux)"}.get(row["board"], row["board"])


def format_table(rows, markdown):
    header = ("board", "core", "instructions / train step", "MACs / step", "instructions / MAC",
              "boot + plan + init")
    lines = [[r["board"], _core_name(r), "%d" % round(r["per_step"]), "%d" % r["macs"],
              "%.1f" % r["per_mac"], "%d" % r["setup"]] for r in rows]
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *lines)]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(line, widths))
                     for line in [header] + lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="train steps measured per board")
    parser.add_argument("--boards", default=",".join(DEFAULT_BOARDS))
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "arm-cost"))
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    rows = measure([b for b in args.boards.split(",") if b], args.steps, args.work_dir)
    print("digits MLP 64 -> 16 relu -> 10 softmax, batch %d, Adam, all ops trained; "
          "%d steps measured per board" % (SPEC["batch_size"], args.steps))
    print(format_table(rows, args.markdown))
    return 0


if __name__ == "__main__":
    np.seterr(all="raise")
    sys.exit(main())
