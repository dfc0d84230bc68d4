"""Flash and RAM of the core and of the example firmware on every bare-metal board.

    python tools/size_table.py              print the Markdown table
    python tools/size_table.py --write      also replace it in docs/guides/boards.md
                                            (between the size-table markers)

Builds each bare-metal preset (MinSizeRel, -Os; the Cortex-M and RISC-V boards) on the
digits example of examples/firmware_digits.py (the demo's fine-tuning: last Dense + Softmax
trained, first layer frozen in flash) and reads the toolchain's `size -A` (arm-none-eabi-size,
riscv64-unknown-elf-size):

- the core, libmicrotrain_core.a: the sum over its objects of .text*, .rodata*, .data*
  and .bss* sections, RISC-V's small-data .srodata*, .sdata* and .sbss* and thread-local
  .tdata and .tbss counted with them (every function in its own section; a firmware links
  only the ones it calls);
- the example firmware ELF after --gc-sections: .text (with the vector table), .rodata
  (which holds the model image and the dataset), .data, .bss (the arena; the stack is not
  a section: MT_STACK_BYTES in the board's memory.ld);
- the same core and firmware built with only the kernels the digits MLP uses
  (-DMT_OPS="dense;relu;softmax", MLP_OPS): their .text, the flash an MLP firmware saves.

Needs the ARM and RISC-V toolchains (bash tools/setup_arm.sh, tools/setup_riscv.sh) and
scikit-learn for the digits.
"""

import argparse
import os
import re
import subprocess
import sys

from microtrain.tools import firmware

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "docs"))
import readme_tables  # noqa: E402
DOCS_PAGE = os.path.join(REPO_ROOT, "docs", "guides", "boards.md")  # where --write puts the table
BOARDS = ("mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547",
          "rv32imac-qemu", "rv32imafc-qemu")
SPEC = dict(epochs=3, optimizer="adam", learning_rate=0.01, loss="categorical_crossentropy",
            batch_size=16, num_trainable_ops=2)
BEGIN = "<!-- size-table:begin (tools/size_table.py --write) -->"
END = "<!-- size-table:end -->"
KINDS = ("text", "rodata", "data", "bss")
MLP_OPS = ("dense", "relu", "softmax")  # the ops of the digits MLP (MT_OPS)


def section_sizes(path, size_tool):
    """{"text", "rodata", "data", "bss"} bytes of an ELF or an archive (summed over objects),
    read with the build's ``size_tool``."""
    output = subprocess.run([size_tool, "-A", path], check=True,
                            capture_output=True, text=True).stdout
    sizes = dict.fromkeys(KINDS, 0)
    for line in output.splitlines():
        fields = line.split()
        if len(fields) != 3 or not fields[1].isdigit():
            continue
        name, size = fields[0], int(fields[1])
        if name == ".vectors" or re.match(r"\.text(\.|$)", name):
            sizes["text"] += size
        elif re.match(r"\.s?rodata(\.|$)", name):
            sizes["rodata"] += size
        elif re.match(r"\.[st]?data(\.|$)", name):
            sizes["data"] += size
        elif re.match(r"\.[st]?bss(\.|$)", name):  # not .tbss_space: the room .tbss takes
            sizes["bss"] += size
    return sizes


def measure(work_dir):
    sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
    import firmware_digits

    record, data_dir = firmware_digits.package_example(os.path.join(work_dir, "package"), **SPEC)
    source = firmware.find_source_dir(REPO_ROOT)
    rows = []
    for board in BOARDS:
        info = firmware.build(source, board, data_dir, os.path.join(work_dir, board))
        mlp = firmware.build(source, board, data_dir, os.path.join(work_dir, board + "-mlp"),
                             ops=MLP_OPS)
        rows.append({"board": board, "core": info["core"],
                     "library": section_sizes(info["core_library"], info["size"]),
                     "firmware": section_sizes(info["firmware"], info["size"]),
                     "mlp_library": section_sizes(mlp["core_library"], mlp["size"]),
                     "mlp_firmware": section_sizes(mlp["firmware"], mlp["size"])})
    return record, rows


def format_table(record, rows):
    with open(record["model"], "rb") as handle:
        model_bytes = len(handle.read())
    lines = ["| board | core | core .text | core .rodata | core .data | core .bss | "
             "firmware .text | firmware .rodata | firmware .data | firmware .bss | "
             "MLP-only core .text | MLP-only firmware .text |",
             "|---|---|" + "---:|" * 10]
    for row in rows:
        cells = [row["board"], row["core"]]
        cells += ["%d" % row["library"][k] for k in KINDS]
        cells += ["%d" % row["firmware"][k] for k in KINDS]
        cells += ["%d" % row["mlp_library"]["text"], "%d" % row["mlp_firmware"]["text"]]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(_mlp_note(rows))
    lines.append("")
    lines.append("Bytes, `size -A` (arm-none-eabi-, riscv64-unknown-elf-), MinSizeRel (-Os). "
                 "The firmware's .rodata holds "
                 "the %d-byte model image and the dataset; its .bss is the %d-byte arena "
                 "(mt_plan's figure for batch %d, last Dense + Softmax trained); the stack "
                 "(16 KiB in memory.ld) comes on top. Regenerate with "
                 "`python tools/size_table.py --write`."
                 % (model_bytes, record["plan"]["total_bytes"], record["batch_size"]))
    return "\n".join(lines)


def _span(values):
    low, high = min(values), max(values)
    return "%d" % low if low == high else "%d to %d" % (low, high)


def _mlp_note(rows):
    """What the MLP-only builds save, in words, from the measured rows."""
    def saved(part, kind):
        return [row[part][kind] - row["mlp_" + part][kind] for row in rows]

    same = all(row[part][kind] == row["mlp_" + part][kind]
               for row in rows for part in ("library", "firmware") for kind in ("data", "bss"))
    return ("MLP-only: the same builds with `-DMT_OPS=\"%s\"`, the kernels this model uses. "
            "The firmware's .text is %s bytes smaller (a full core's kernel table keeps every "
            "kernel alive through `--gc-sections`); .rodata is %s bytes smaller in the core and "
            "%s in the firmware, .data and .bss %s."
            % (";".join(MLP_OPS), _span(saved("firmware", "text")),
               _span(saved("library", "rodata")), _span(saved("firmware", "rodata")),
               "are the same" if same else "differ"))


def replace_in_page(path, table):
    with open(path) as handle:
        text = handle.read()
    if BEGIN not in text or END not in text:
        raise SystemExit("%s has no size-table markers (%s ... %s)" % (path, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as handle:
        handle.write(head + BEGIN + "\n" + table + "\n" + END + tail)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="update the table in %s" % os.path.relpath(DOCS_PAGE, REPO_ROOT))
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "size-table"))
    args = parser.parse_args(argv)
    record, rows = measure(args.work_dir)
    table = format_table(record, rows)
    print(table)
    if args.write:
        replace_in_page(DOCS_PAGE, table)
        readme_tables.write()  # the README's short table is cut from the page's
    return 0


if __name__ == "__main__":
    sys.exit(main())
