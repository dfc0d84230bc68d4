"""The README's short tables, cut from the full tables of the docs pages.

    python tools/docs/readme_tables.py           print them
    python tools/docs/readme_tables.py --write   replace them in README.md

The benchmarks write their full tables into the docs pages (benchmarks/peers.py --markdown
into docs/performance.md's peers-table block, tools/size_table.py --write into
docs/guides/boards.md's size-table block, benchmarks/mlperf_tiny.py --write into
docs/importers.md's mlperf-table block; docs/memory.md's sparse-table block gathers
benchmarks/sparse_update.py's and benchmarks/sparse_accuracy.py's figures, each with its
command on that page); the README shows a few of their rows and columns,
made here from those blocks, so the two cannot disagree (tests/docs/test_readme_tables.py
holds the README to this script's output).
"""

import argparse
import os
import re
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO_ROOT, "README.md")
PERFORMANCE = os.path.join(REPO_ROOT, "docs", "performance.md")
BOARDS = os.path.join(REPO_ROOT, "docs", "guides", "boards.md")
IMPORTERS = os.path.join(REPO_ROOT, "docs", "importers.md")
MEMORY = os.path.join(REPO_ROOT, "docs", "memory.md")

# (model, optimizer) rows of the peers table the README shows, and its columns
PEER_ROWS = [("tiny-mlp-b1", "sgd"), ("mlp-784-128-10", "adam"), ("cnn-28x28", "sgd"),
             ("depthwise-stack", "adam"), ("digits-cnn", "sgd")]
PEER_COLUMNS = ["model", "batch", "opt.", "microtrain ms", "vs PyTorch", "vs ORT training",
                "vs onert", "microtrain arena bytes"]


def block(text, name, path):
    """The lines between ``<!-- NAME:begin ...-->`` and ``<!-- NAME:end -->`` of ``text``."""
    found = re.search(r"<!-- %s:begin[^>]*-->\n(.*?)<!-- %s:end -->" % (name, name), text, re.S)
    if found is None:
        raise SystemExit("%s has no %s block" % (path, name))
    return found.group(1)


def read_table(lines):
    """(header, rows) of the first Markdown table in ``lines``: rows as {column: cell}."""
    table = [line for line in lines.splitlines() if line.startswith("|")]
    if len(table) < 3:
        raise SystemExit("no Markdown table in the block")
    def cells(line):  # a cell may hold an escaped \| (as in max \|Δ\|)
        return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])]

    header = cells(table[0])
    rows = [dict(zip(header, cells(line))) for line in table[2:]]
    return header, rows


def render(header, rows, numeric_from):
    align = ["---" if k < numeric_from else "---:" for k in range(len(header))]
    lines = ["| %s |" % " | ".join(header), "|%s|" % "|".join(align)]
    lines += ["| %s |" % " | ".join(row) for row in rows]
    return "\n".join(lines)


def _number(cell):
    return int(cell.replace(",", ""))


def peers_summary(performance_text):
    _, rows = read_table(block(performance_text, "peers-table", PERFORMANCE))
    chosen = []
    for model, optimizer in PEER_ROWS:
        match = [r for r in rows if r["model"] == model and r["opt."] == optimizer]
        if len(match) != 1:
            raise SystemExit("docs/performance.md's peers table has no row %s %s" % (model, optimizer))
        chosen.append([match[0][c] for c in PEER_COLUMNS])
    return render(PEER_COLUMNS, chosen, 3)


def size_summary(boards_text):
    """Per board: the core's and the digits firmware's flash (.text + .rodata + .data) and
    RAM (.data + .bss; the stack comes on top), and the MLP-only core's .text."""
    _, rows = read_table(block(boards_text, "size-table", BOARDS))
    header = ["board", "core", "core flash", "firmware flash", "firmware RAM",
              "MLP-only core .text"]
    lines = []
    for r in rows:
        core = sum(_number(r["core .%s" % s]) for s in ("text", "rodata", "data"))
        firmware = sum(_number(r["firmware .%s" % s]) for s in ("text", "rodata", "data"))
        ram = _number(r["firmware .data"]) + _number(r["firmware .bss"])
        lines.append([r["board"], r["core"], "{:,}".format(core), "{:,}".format(firmware),
                      "{:,}".format(ram), "{:,}".format(_number(r["MLP-only core .text"]))])
    return render(header, lines, 2)


def _first_clause(cell):
    """A cell's text up to its first "; " (the rest stays on the docs page)."""
    return cell.split("; ")[0]


def mlperf_summary(importers_text):
    """Per MLPerf Tiny file, every column of the docs page's table, each cut to its verdict
    (the first clause; the arenas to their bytes)."""
    _, rows = read_table(block(importers_text, "mlperf-table", IMPORTERS))
    header = ["file", "kind", "imports", "LiteRT BUILTIN_REF", "head fine-tunes", "arena: head",
              "arena: last block", "export round trip", "mps2-an500 under QEMU"]

    def verdict(cell):  # "yes: dense, loss 32.26 → 26.28" -> "yes"
        return cell.split(":")[0] if cell.startswith("yes:") else cell

    def bytes_only(cell):  # "24,240 (dense)" -> "24,240"
        return cell.split(" (")[0]

    lines = [[r["file"], r["kind"], verdict(r["imports"]), _first_clause(r["LiteRT BUILTIN_REF"]),
              verdict(r["head fine-tunes"]), bytes_only(r["arena: head"]),
              bytes_only(r["arena: last block"]), _first_clause(r["export round trip"]),
              r["mps2-an500 under QEMU"].split(" (arena")[0]] for r in rows]
    return render(header, lines, 9)


SPARSE_COLUMNS = ["model", "scheme", "RAM", "flash", "instructions / step, M7",
                  "instructions / step, M55", "accuracy"]


def sparse_summary(memory_text):
    """The sparse-update table beside tiny-training's figures, its columns cut to the
    README's (the budget and the task stay on the docs page)."""
    _, rows = read_table(block(memory_text, "sparse-table", MEMORY))
    lines = [[r[c] for c in SPARSE_COLUMNS] for r in rows]
    return render(SPARSE_COLUMNS, lines, 2)


def tables():
    """{block name: its README text} from the docs pages as they are."""
    with open(PERFORMANCE, encoding="utf-8") as handle:
        performance = handle.read()
    with open(BOARDS, encoding="utf-8") as handle:
        boards = handle.read()
    with open(IMPORTERS, encoding="utf-8") as handle:
        importers = handle.read()
    with open(MEMORY, encoding="utf-8") as handle:
        memory = handle.read()
    return {"readme-mlperf": mlperf_summary(importers), "readme-peers": peers_summary(performance),
            "readme-size": size_summary(boards), "readme-sparse": sparse_summary(memory)}


def replace(text, name, body):
    pattern = re.compile(r"(<!-- %s:begin[^>]*-->\n).*?(<!-- %s:end -->)" % (name, name), re.S)
    if not pattern.search(text):
        raise SystemExit("README.md has no %s block" % name)
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text, count=1)


def write():
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    for name, body in tables().items():
        text = replace(text, name, body)
    with open(README, "w", encoding="utf-8") as handle:
        handle.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the tables in README.md")
    args = parser.parse_args(argv)
    for name, body in tables().items():
        print("%s:\n%s\n" % (name, body))
    if args.write:
        write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
