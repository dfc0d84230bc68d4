"""Planted faults in the hand-written assembly must fail the sibling test on the board.

    python tests/boards/mutate_asm.py                 every fault (64, about 8 minutes)
    python tests/boards/mutate_asm.py --only dws-     the faults whose name starts so
    python tests/boards/mutate_asm.py --list          the faults, without running them

The Helium kernels of the Cortex-M55 (micro_core/src/ops/mve/: naked functions over whole rows
and images, FPSCR's flags and NaN tests) and the FPU cores' assembly (ops/dsp/) are held to the
reference's bits by the sibling firmware (boards/app/siblings*.c, tests/boards/
test_board_siblings.py). The faults (asm_faults.txt) are changes a slip could make (a pointer
step, a window's rotation, a dropped edge, a flag test), each a snippet of the source that must
occur exactly once and its replacement: it is applied to a copy of the source tree, the board's
sibling firmware is rebuilt there and run under QEMU, and the fault counts as caught when the
firmware reports a failed check, faults (the startup's fault handler exits with a failing
status) or hangs. A fault that builds and passes is a hole in the sibling cases; one whose
snippet is gone means the kernel changed: update the fault. Before the faults the unmutated
firmware must pass, and again after them (so no fault's objects outlived it).

The copy lives in build/board-tests/mutate/tree, its build folders laid out as the real tree's
(so ccache finds the unchanged objects); each fault is one incremental rebuild of the files
that include the mutated one, a few seconds to a minute. Not in the test command as a whole:
tests/boards/test_mutate_asm.py runs one Helium fault and checks every fault's snippet. Needs
the ARM toolchains and QEMU (bash tools/setup_arm.sh).
"""

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from board_setup import BUILD_ROOT, REPO_ROOT, SPEC, build_lock, load_example_module  # noqa: E402

Fault = collections.namedtuple("Fault", "name board path snippet replacement breaks")


def read_faults(path=os.path.join(HERE, "asm_faults.txt")):
    """The faults of asm_faults.txt (its format: the comment at its top)."""
    faults, head, lines = [], None, {"-": [], "+": []}

    def close():
        if head:
            name, board, rest = head.split(" ", 2)
            where, breaks = rest.split(": ", 1)
            faults.append(Fault(name, board, "micro_core/src/ops/" + where, "\n".join(lines["-"]),
                                "\n".join(lines["+"]), breaks))

    with open(path) as handle:
        for line in handle.read().splitlines():
            if line[:2] in ("- ", "+ "):
                lines[line[0]].append(line[2:])
            elif line and not line.startswith("#"):
                close()
                head, lines = line, {"-": [], "+": []}
    close()
    return faults


FAULTS = read_faults()

TREE = os.path.join(BUILD_ROOT, "mutate", "tree")


def copy_tree():
    """The tracked files of the source tree, as they are in the working tree, into TREE; the files
    the faults mutate written anew whatever their text (a run cut short may have left objects
    of a mutated one behind)."""
    mutated = {f.path for f in FAULTS}
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, check=True, capture_output=True).stdout
    for name in files.decode().split("\0"):
        source = os.path.join(REPO_ROOT, name)
        if not name or not os.path.isfile(source):
            continue
        target = os.path.join(TREE, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if name in mutated or not os.path.exists(target) or open(source, "rb").read() != open(target, "rb").read():
            shutil.copyfile(source, target)  # a new time: the build must see every change


def package_data():
    """The example firmware's generated data (the board tests' package, made if missing)."""
    data = os.path.join(BUILD_ROOT, "package", "data")
    with build_lock("package"):
        if not os.path.exists(os.path.join(data, "mt_firmware_data.c")):
            load_example_module().package_example(os.path.join(BUILD_ROOT, "package"), **SPEC)
    return data


def build_dir(board):
    """The copy's build folder of a board: laid out as the board tests' (build/board-tests/<board>
    below the tree), so that ccache's relative paths match theirs."""
    return os.path.join(TREE, "build", "board-tests", board)


def configure(board, data):
    folder = build_dir(board)
    if not os.path.exists(os.path.join(folder, "build.ninja")):
        subprocess.run(["cmake", "--preset", board, "-B", folder, "-DMT_FIRMWARE_DATA_DIR=" + data, "-DMT_OPS="],
                       cwd=TREE, check=True, capture_output=True)
    return folder


def run_siblings(board, timeout):
    """Build the copy's sibling firmware and run it: ("passed" | "caught: ..." | "build failed: ...")."""
    from microtrain.tools import firmware

    folder = build_dir(board)
    built = subprocess.run(["cmake", "--build", folder, "--target", "microtrain_siblings"], capture_output=True,
                           text=True)
    if built.returncode != 0:
        return "build failed: " + built.stdout[-2000:]
    import json

    with open(os.path.join(folder, "microtrain_board.json")) as handle:
        info = json.load(handle)
    info["siblings"] = os.path.join(os.path.dirname(info["firmware"]), "microtrain_siblings.elf")
    try:
        status, text, errors = firmware.run(info, "siblings", timeout=timeout)
    except firmware.FirmwareError as error:
        return "caught: %s" % error  # a hang
    failed = [line for line in text.splitlines() if line.startswith("FAILED")]
    if status == 0 and not failed:
        return "passed"
    if failed:  # "FAILED: <kernel>: <case>": the kernels that failed, in their first failure's order
        kernels = list(dict.fromkeys(line.split(":")[1].strip() for line in failed))
        return "caught: %d failed checks in %s" % (len(failed), ", ".join(kernels))
    return "caught: exit status %d (%s)" % (status, (text + errors).strip().splitlines()[-1][:90] if text + errors
                                          else "no output")


def apply(fault):
    """Write the fault into the copy's file (from the real tree's pristine text)."""
    with open(os.path.join(REPO_ROOT, fault.path)) as handle:
        text = handle.read()
    count = text.count(fault.snippet)
    if count != 1:
        raise SystemExit("%s: its snippet occurs %d times in %s (the kernel changed: update the fault)"
                         % (fault.name, count, fault.path))
    with open(os.path.join(TREE, fault.path), "w") as handle:
        handle.write(text.replace(fault.snippet, fault.replacement))


def restore(fault):
    """The pristine file back, with a new time (copy2's old one would leave the mutated objects
    in place: the next fault's build would run this one's too)."""
    shutil.copyfile(os.path.join(REPO_ROOT, fault.path), os.path.join(TREE, fault.path))


def run_faults(faults, timeout=120, report=print):
    """Each fault applied alone and the board's sibling firmware run; [(fault, outcome)]."""
    copy_tree()
    data = package_data()
    results = []
    for board in sorted({f.board for f in faults}):
        configure(board, data)
        baseline = run_siblings(board, timeout)
        if baseline != "passed":
            raise SystemExit("%s: the unmutated sibling firmware does not pass: %s" % (board, baseline))
    for fault in faults:
        start = time.time()
        apply(fault)
        try:
            outcome = run_siblings(fault.board, timeout)
        finally:
            restore(fault)
        results.append((fault, outcome))
        report("%-22s %-11s %5.0f s  %s" % (fault.name, fault.board, time.time() - start, outcome))
    for board in sorted({f.board for f in faults}):  # every fault undone: the firmware passes again
        after = run_siblings(board, timeout)
        if after != "passed":
            raise SystemExit("%s: the sibling firmware with every fault undone does not pass: %s" % (board, after))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the faults whose name starts with this")
    parser.add_argument("--list", action="store_true", help="list the faults and what each breaks")
    parser.add_argument("--timeout", type=int, default=120, help="seconds a sibling firmware may run")
    args = parser.parse_args(argv)
    faults = [f for f in FAULTS if f.name.startswith(args.only)]
    if args.list:
        for f in faults:
            print("%-22s %-11s %s: %s" % (f.name, f.board, f.path, f.breaks))
        return 0
    results = run_faults(faults, args.timeout)
    missed = [f.name for f, outcome in results if not outcome.startswith("caught")]
    print("%d faults, %d caught%s" % (len(results), len(results) - len(missed),
                                      "; NOT caught or not built: " + ", ".join(missed) if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
