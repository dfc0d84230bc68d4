"""docs/memory.md's sparse-update accuracy table is what benchmarks/sparse_accuracy.py
prints from its committed rows (benchmarks/sparse_accuracy.json), so the page and the rows
the plot is drawn from cannot disagree."""

import json
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
import sparse_accuracy  # noqa: E402


def test_the_memory_page_shows_the_committed_rows_table():
    with open(os.path.join(REPO_ROOT, "benchmarks", "sparse_accuracy.json")) as handle:
        rows = json.load(handle)
    with open(os.path.join(REPO_ROOT, "docs", "memory.md"), encoding="utf-8") as handle:
        page = handle.read()
    table = sparse_accuracy.summary(rows)
    assert table.count("\n") > 10  # every case and budget, not an empty table
    assert table in page, ("docs/memory.md's accuracy table is stale: python "
                           "benchmarks/sparse_accuracy.py --from-json benchmarks/"
                           "sparse_accuracy.json")


def test_a_changed_row_changes_the_table():
    with open(os.path.join(REPO_ROOT, "benchmarks", "sparse_accuracy.json")) as handle:
        rows = json.load(handle)
    rows[0]["accuracy"] += 0.3
    with open(os.path.join(REPO_ROOT, "docs", "memory.md"), encoding="utf-8") as handle:
        assert sparse_accuracy.summary(rows) not in handle.read()
