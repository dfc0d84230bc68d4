"""Flash, RAM and train-step cost of microtrain in MicroPython firmware (QEMU boards).

    python benchmarks/micropython_cost.py [--steps 10] [--boards mps2-an500,mps2-an385]
        [--markdown] [--no-c]

Sizes: tools/micropython/build_firmware.sh builds MicroPython v1.28.0 for each board three
ways, `arm-none-eabi-size -A` measures them:
  bare    MicroPython as microtrain's firmware has it (double floats, littlefs), no microtrain
  frozen  + the facade's pure modules frozen (py_facade/manifest.py)
  full    + the native module _microtrain and the C core: the firmware `microtrain micropython`
          runs
Flash is .text (code and read-only data) + .data; static RAM is .data + .bss less the
MicroPython heap (MICROPY_HEAP_SIZE, 2 MiB here, a choice of the build, not a cost of
microtrain); the stack comes on top.

Step cost: the digits example of benchmarks/arm_cost.py (64 -> 16 relu -> 10 softmax, batch
16, Adam, every op trained) trained from MicroPython (benchmarks/micropython_step.py) under
QEMU with the insn_count plugin, which records its count each time machine.idle() runs; the
script calls it around STEPS steps of each kind, so the difference divided by STEPS is the
instructions of one step from MicroPython. The 1 kHz SysTick interrupt of MicroPython's port
lands at points that depend on the host's timing, so counts vary by a few instructions per
million between runs. The C column is arm_cost.py's figure for boards/app/bench.c, measured
here again (--no-c skips it: its builds take a while).

Needs the ARM toolchain and QEMU (bash tools/setup_arm.sh) and scikit-learn.
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import arm_cost  # noqa: E402  (benchmarks/ is not a package)

from microtrain.micropython_runner.run import run as run_script  # noqa: E402

BOARDS = ("mps2-an500", "mps2-an385")
VARIANTS = ("bare", "frozen", "full")
CORES = {"mps2-an500": "cortex-m7", "mps2-an385": "cortex-m3"}
HEAP_BYTES = 2097152
BUILD_SCRIPT = os.path.join(REPO_ROOT, "tools", "micropython", "build_firmware.sh")


def firmware_path(board, variant):
    folder = board if variant == "full" else "%s-%s" % (board, variant)
    return os.path.join(REPO_ROOT, "build", "micropython", folder, "firmware.elf")


def build(boards, variant):
    env = dict(os.environ)
    env.setdefault("MICROPY_HEAP_SIZE", str(HEAP_BYTES))
    subprocess.run(["bash", BUILD_SCRIPT, "--variant", variant] + list(boards), check=True,
                   env=env)


def sections(elf):
    """{section: bytes} (arm-none-eabi-size -A)."""
    text = subprocess.run(["arm-none-eabi-size", "-A", elf], check=True, capture_output=True,
                          text=True).stdout
    found = {}
    for line in text.splitlines():
        match = re.match(r"^(\.\S+)\s+(\d+)\s+(\d+)", line)
        if match:
            found[match.group(1)] = int(match.group(2))
    return found


def sizes(boards):
    rows = []
    for board in boards:
        for variant in VARIANTS:
            found = sections(firmware_path(board, variant))
            text = found.get(".text", 0) + found.get(".ARM.exidx", 0)
            data, bss = found.get(".data", 0), found.get(".bss", 0)
            rows.append({"board": board, "variant": variant, "flash": text + data,
                         "ram": data + bss - HEAP_BYTES})
    return rows


def step_cost(boards, steps, work_dir):
    """{board: (mark cost, [instructions per step of each kind])}."""
    sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
    import firmware_digits
    package = os.path.join(work_dir, "package")
    model_path, data_path = firmware_digits.make_example(package)
    data = np.load(data_path)
    x = os.path.join(work_dir, "x.bin")
    y = os.path.join(work_dir, "y.bin")
    data["x"][:16].astype("<f4").tofile(x)
    data["y"][:16].astype("<f4").tofile(y)
    plugin = arm_cost.build_plugin(work_dir)
    results = {}
    for board in boards:
        elf = firmware_path(board, "full")
        symbols = subprocess.run(["arm-none-eabi-nm", elf], check=True, capture_output=True,
                                 text=True).stdout
        address = re.search(r"^([0-9a-f]+) t machine_idle$", symbols, re.MULTILINE).group(1)
        counts = os.path.join(work_dir, "counts-%s.txt" % board)
        output = []
        status = run_script(board, os.path.join(HERE, "micropython_step.py"),
                            ["%s=/data/model.mtm" % model_path, "%s=/data/x.bin" % x,
                             "%s=/data/y.bin" % y], [str(steps)], firmware=elf,
                            stdout=output.append, stderr=output.append,
                            qemu_args=["-plugin", "%s,out=%s,mark=0x%s"
                                       % (plugin, counts, address)])
        if status != 0:
            raise RuntimeError("%s: the step script failed:\n%s"
                               % (board, b"".join(output).decode("utf-8", "replace")))
        with open(counts) as handle:
            marks = [int(v) for v in re.search(r"^marks(.*)$", handle.read(),
                                               re.MULTILINE).group(1).split()]
        mark = marks[1] - marks[0]
        spans = [marks[3] - marks[2], marks[4] - marks[3], marks[6] - marks[5]]
        results[board] = (mark, [(span - mark) / float(steps) for span in spans])
    return results


def table(header, lines, markdown):
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(out + ["| " + " | ".join(line) + " |" for line in lines])
    widths = [max(len(c) for c in column) for column in zip(header, *lines)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths))
                     for line in [header] + lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build",
                                                           "micropython-cost"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-c", action="store_true", help="skip the C firmware's figure")
    parser.add_argument("--sizes-only", action="store_true", help="skip the step cost")
    args = parser.parse_args(argv)
    boards = [b for b in args.boards.split(",") if b]
    os.makedirs(args.work_dir, exist_ok=True)
    for variant in VARIANTS:
        build(boards, variant)
    rows = sizes(boards)
    bare = {r["board"]: r for r in rows if r["variant"] == "bare"}
    lines = [[r["board"], r["variant"], str(r["flash"]), str(r["ram"]),
              "%+d" % (r["flash"] - bare[r["board"]]["flash"]),
              "%+d" % (r["ram"] - bare[r["board"]]["ram"])] for r in rows]
    print("MicroPython v1.28.0 firmware, bytes (arm-none-eabi-size -A); static RAM leaves out "
          "the %d-byte heap" % HEAP_BYTES)
    print(table(("board", "firmware", "flash", "static RAM", "flash vs bare",
                 "RAM vs bare"), lines, args.markdown))
    print()
    if args.sizes_only:
        return 0

    costs = step_cost(boards, args.steps, args.work_dir)
    c_cost = {}
    if not args.no_c:
        for row in arm_cost.measure(boards, args.steps, os.path.join(args.work_dir, "c")):
            c_cost[row["board"]] = row["per_step"]
    lines = []
    for board in boards:
        _, (backend, rows, session) = costs[board]
        c = c_cost.get(board)
        lines.append([board, CORES[board], "-" if c is None else "%d" % round(c),
                      "%d" % round(backend), "%d" % round(rows), "%d" % round(session),
                      "-" if c is None else "%.2f" % (backend / c)])
    print("instructions per train step, digits MLP 64 -> 16 relu -> 10 softmax, batch 16, "
          "Adam, all ops trained; %d steps measured" % args.steps)
    print(table(("board", "core", "C firmware", "MicroPython backend.train_step",
                 "+ write_rows of the batch", "Session.train_step", "backend / C"), lines,
                args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
