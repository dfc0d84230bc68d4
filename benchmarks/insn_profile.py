"""Where a Cortex-M or RISC-V train step's instructions go, by function, from QEMU histograms.

    MT_INSN_PROFILE=W python benchmarks/mbv2_int8.py --board mps2-an500   (or arm_cost.py,
                                                                          digits_int8.py)
    python benchmarks/insn_profile.py W [--top 25] [--function NAME]

A benchmark run with MT_INSN_PROFILE set keeps, for each program it counts
(benchmarks/arm_cost.py's count_instructions), the insn_count plugin's histogram: the
executions of every instruction address. Each run of `bench` is paired with the run of
`bench_base` from the same build (the same firmware with 0 steps), each address is mapped to
the function holding it in that program's ELF (the toolchain's nm: arm-none-eabi-nm, or
riscv64-unknown-elf-nm for the RISC-V boards), and the difference of the
two, divided by the steps `bench` printed, is what one train step executes in each function:
exact counts, not samples (functions inlined into another count as that one). --function
prints that function's disassembly with each instruction's executions per step.
"""

import argparse
import bisect
import collections
import glob
import json
import os
import subprocess
import sys


def read_histogram(path):
    """{address: executions} (an address translated twice is summed)"""
    counts = collections.Counter()
    with open(path) as handle:
        for line in handle:
            address, count = line.split()
            counts[int(address, 16)] += int(count)
    return counts


def _tool(run, name):
    """The run's binutils program ``name`` (nm, objdump), as its build recorded it."""
    return run.get(name) or "arm-none-eabi-" + name  # runs recorded before builds named it


def functions_of(elf, nm="arm-none-eabi-nm"):
    """[(start, size, name)] of the ELF's functions, sorted (the Thumb bit cleared)"""
    output = subprocess.run([nm, "-S", elf], check=True, capture_output=True,
                            text=True).stdout
    found = []
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "tTwW":
            found.append((int(fields[0], 16) & ~1, int(fields[1], 16), fields[3]))
    return sorted(found)


def by_function(counts, functions):
    """{function name ("?" outside every function): executions}"""
    starts = [f[0] for f in functions]
    totals = collections.Counter()
    for address, count in counts.items():
        k = bisect.bisect_right(starts, address) - 1
        inside = k >= 0 and address < functions[k][0] + functions[k][1]
        totals[functions[k][2] if inside else "?"] += count
    return totals


def runs(folder):
    """[(bench run, bench_base run)] paired by build folder; a run is its .json plus "hist"."""
    found = collections.defaultdict(dict)
    for meta_path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(meta_path) as handle:
            meta = json.load(handle)
        meta["hist"] = meta_path[:-len(".json")] + ".hist"
        found[meta["build"]][meta["program"]] = meta
    return [(programs["bench"], programs["bench_base"]) for programs in found.values()
            if "bench" in programs and "bench_base" in programs]


def per_step(bench, base):
    """({function: executions per train step}, steps)"""
    steps = bench["steps"]
    if not steps:
        raise SystemExit("%s printed no train steps" % bench["elf"])
    b = by_function(read_histogram(bench["hist"]), functions_of(bench["elf"], _tool(bench, "nm")))
    a = by_function(read_histogram(base["hist"]), functions_of(base["elf"], _tool(base, "nm")))
    return {name: (b[name] - a.get(name, 0)) / steps for name in set(b) | set(a)}, steps


def annotate(bench, base, name, steps):
    """Lines of `name`'s disassembly in bench's ELF, each with its executions per step."""
    def located(elf):
        for start, size, function in functions_of(elf, _tool(bench, "nm")):
            if function == name:
                return start, size
        return None
    found = located(bench["elf"])
    if found is None:
        raise SystemExit("no function %s in %s" % (name, bench["elf"]))
    start, size = found
    b, a = read_histogram(bench["hist"]), read_histogram(base["hist"])
    in_base = located(base["elf"])  # None: linked out of the 0-step program, so it ran 0 times
    if in_base is None:
        a, base_start = collections.Counter(), start
    else:
        base_start = in_base[0]
    listing = subprocess.run([_tool(bench, "objdump"), "-d", "--no-show-raw-insn",
                              "--start-address=0x%x" % start, "--stop-address=0x%x" % (start + size),
                              bench["elf"]], check=True, capture_output=True, text=True).stdout
    lines = []
    for line in listing.splitlines():
        head = line.strip().split(":")[0]
        try:
            address = int(head, 16)
        except ValueError:
            continue
        runs_per_step = (b[address] - a[address - start + base_start]) / steps
        lines.append("%12.0f  %s" % (runs_per_step, line.strip()))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--function", default=None)
    args = parser.parse_args(argv)
    pairs = runs(args.folder)
    if not pairs:
        parser.error("no bench / bench_base pair in %s (run a benchmark with MT_INSN_PROFILE=%s)"
                     % (args.folder, args.folder))
    for bench, base in pairs:
        functions, steps = per_step(bench, base)
        total = sum(functions.values())
        print("%s, %s: %.0f instructions per train step (%d steps; the plugin's count: %.0f)"
              % (bench["board"], bench["build"], total, steps,
                 (bench["instructions"] - base["instructions"]) / steps))
        if args.function:
            print("\n".join(annotate(bench, base, args.function, steps)))
            continue
        for name, count in sorted(functions.items(), key=lambda item: -item[1])[:args.top]:
            print("%14.0f %6.1f %%  %s" % (count, 100.0 * count / total if total else 0.0, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
