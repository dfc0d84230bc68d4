"""The README's short tables are cut from the docs pages' full ones
(tools/docs/readme_tables.py): they cannot disagree, and the cutting is checked."""

import os
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "docs"))
import readme_tables  # noqa: E402


def test_the_readme_shows_what_the_docs_pages_hold():
    with open(readme_tables.README, encoding="utf-8") as handle:
        readme = handle.read()
    for name, body in readme_tables.tables().items():
        assert readme_tables.block(readme, name, "README.md") == body + "\n", \
            "README.md's %s block is stale: python tools/docs/readme_tables.py --write" % name


def test_a_summary_takes_its_rows_and_columns_and_keeps_escaped_bars():
    page = ("<!-- size-table:begin (x) -->\n| board | core | core .text | core .rodata | core .data "
            "| firmware .text | firmware .rodata | firmware .data | firmware .bss "
            "| MLP-only core .text |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            "| b | m4 | 1,000 | 20 | 3 | 400 | 50 | 6 | 700 | 900 |\n<!-- size-table:end -->\n")
    assert readme_tables.size_summary(page).splitlines()[2] == "| b | m4 | 1,023 | 456 | 706 | 900 |"
    _, rows = readme_tables.read_table("| a | b |\n|---|---|\n| max \\|Δ\\| 1; x | 2 |\n")
    assert rows == [{"a": "max \\|Δ\\| 1; x", "b": "2"}]
    assert readme_tables._first_clause(rows[0]["a"]) == "max \\|Δ\\| 1"
    with pytest.raises(SystemExit, match="no size-table block"):
        readme_tables.size_summary("no table here")
    with pytest.raises(SystemExit, match="no readme-size block"):
        readme_tables.replace("README without markers", "readme-size", "| x |")


def test_the_sparse_summary_keeps_the_readme_s_columns_in_order():
    columns = ["model", "budget", "scheme", "RAM", "flash", "instructions / step, M7",
               "instructions / step, M55", "accuracy", "task"]
    page = ("<!-- sparse-table:begin (x) -->\n| %s |\n|%s|\n| m | 256 KiB | s | 1 | 2 | 3 | 4 "
            "| 50 %% | t |\n<!-- sparse-table:end -->\n" % (" | ".join(columns),
                                                         "|".join(["---"] * len(columns))))
    lines = readme_tables.sparse_summary(page).splitlines()
    assert lines[0] == ("| model | scheme | RAM | flash | instructions / step, M7 | "
                        "instructions / step, M55 | accuracy |")
    assert lines[2] == "| m | s | 1 | 2 | 3 | 4 | 50 % |"
