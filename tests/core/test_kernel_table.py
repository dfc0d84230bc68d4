"""The kernel table names a defined kernel in every cell, and it alone chooses a kernel.

micro_core/src/select/kernels.def holds the table: a row a slot, and in each row the suffix of
the kernel every column (target) calls. A build compiles only its own column, so a cell of
another target could name a kernel no file defines without any host build noticing: here every
cell is read as text. And the choice lives there only: the op adapters (ops/*.c) and the
runtime (src/*.c) call the entries mt_kernel_<slot> and neither test a target's macros nor
include a kernel family's headers (ops/<family>/).
"""

import glob
import os
import re

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(REPO_ROOT, "micro_core", "src")
SELECT = os.path.join(SRC, "select")
ROW = re.compile(r"^MT_KERNEL_(?:VOID|INT)\((\w+), (\w+),.*?\(([\w, ]+)\)\)$", re.M | re.S)
COLUMNS = ("avx512", "avx2", "mve", "dsp", "soft_float", "portable")
FAMILIES = ("portable", "dsp", "mve", "x86")


def _read(path):
    with open(path) as handle:
        return handle.read()


def _table():
    """{slot: (base, {column: suffix})} from kernels.def"""
    rows = {}
    for slot, base, cells in ROW.findall(_read(os.path.join(SELECT, "kernels.def"))):
        cells = [c.strip() for c in cells.split(",")]
        assert len(cells) == len(COLUMNS), "%s: %d cells, one for each of %s" % (slot, len(cells), COLUMNS)
        rows[slot] = (base, dict(zip(COLUMNS, cells)))
    return rows


def _defined_kernels():
    """The kernel names the sources define: name( at a line's start after a type, or an x86
    source's MT_X86_NAME(name) in both its builds."""
    names = set()
    for path in glob.glob(os.path.join(SRC, "**", "*.[ch]"), recursive=True):
        text = _read(path)
        names.update(re.findall(r"^(?:MT_AVX512 )?(?:void|int) (mt_\w+)\(", text, re.M))
        for base in re.findall(r"^MT_AVX512 (?:void|int) MT_X86_NAME\((mt_\w+)\)\(", text, re.M):
            names.update({base + "_avx512", base + "_avx2"})
    return names


def test_every_cell_names_a_defined_kernel():
    table, defined = _table(), _defined_kernels()
    assert len(table) >= 25 and '"avx512", "avx2", "mve", "dsp", "soft_float", "portable"' in \
        _read(os.path.join(SELECT, "kernels.h"))  # the column order kernels.h picks by
    for slot, (base, cells) in table.items():
        missing = ["%s: %s_%s" % (column, base, suffix) for column, suffix in cells.items()
                   if "%s_%s" % (base, suffix) not in defined]
        assert not missing, "%s names kernels no source defines: %s" % (slot, missing)


def test_the_adapters_and_the_runtime_choose_no_kernel():
    sources = glob.glob(os.path.join(SRC, "*.c")) + glob.glob(os.path.join(SRC, "ops", "*.c"))
    assert len(sources) > 30
    target_macro = re.compile(r"\bMT_(X86|MVE|DSP)_KERNELS\b|\bMT_KERNEL_TARGET\b|__ARM_FEATURE_MVE|__x86_64__")
    family_include = re.compile(r'#include "ops/(%s)/' % "|".join(FAMILIES))
    for path in sources:
        text = _read(path)
        name = os.path.relpath(path, SRC)
        assert not target_macro.search(text), "%s tests a target: the table chooses (select/)" % name
        assert not family_include.search(text), "%s includes a kernel family's header" % name
