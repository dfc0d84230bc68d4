"""The op table has one source, micro_core/include/microtrain_ops.def: microtrain.ops (the
Python copy) and the library's mt_op_name/mt_op_built must say exactly what it says."""

import os
import re

from microtrain import ops
from microtrain.backend import _native

DEF_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "micro_core", "include", "microtrain_ops.def")
# the row format CMake parses too (micro_core/cmake/microtrain_ops.cmake)
ROW = re.compile(r"^MT_OP\((\d+), *([A-Z][A-Z0-9_]*), *([a-z][a-z0-9_]*), *([a-z][a-z0-9_]*)\)")


def def_rows():
    """[(code, NAME, name, source)] of every row of the .def, in file order."""
    rows = []
    with open(DEF_PATH, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MT_OP("):
                match = ROW.match(line)
                assert match, "malformed row in microtrain_ops.def: %r" % line
                rows.append((int(match.group(1)), match.group(2), match.group(3),
                             match.group(4)))
    return rows


def test_the_def_is_well_formed():
    rows = def_rows()
    assert rows
    codes = [row[0] for row in rows]
    assert len(set(codes)) == len(codes) and all(1 <= c <= 255 for c in codes)  # a u8 in images
    assert len(set(row[1] for row in rows)) == len(rows)
    assert len(set(row[2] for row in rows)) == len(rows)
    for code, upper, lower, source in rows:
        assert upper.lower() == lower, (upper, lower)
        assert os.path.isfile(os.path.join(os.path.dirname(DEF_PATH), os.pardir, "src", "ops",
                                           source + ".c")), source


def test_ops_py_has_exactly_the_codes_and_names_of_the_def():
    rows = def_rows()
    assert ops.NAMES == {code: lower for code, _, lower, _ in rows}
    assert set(ops.DISPLAY_NAMES) == set(ops.NAMES)
    for code, upper, lower, _ in rows:
        assert getattr(ops, upper) == code, upper
        assert ops.name(code) == lower
    constants = {name for name in dir(ops) if name.isupper() and isinstance(getattr(ops, name), int)}
    assert constants == {upper for _, upper, _, _ in rows}


def test_the_ops_without_backward_are_the_defs():
    """ops.NO_BACKWARD (what the importer refuses a gradient through) is the .def's rows
    marked "inference only"."""
    with open(DEF_PATH, encoding="utf-8") as handle:
        marked = [ROW.match(line).group(2) for line in handle
                  if line.startswith("MT_OP(") and line.rstrip().endswith("inference only */")]
    assert marked and tuple(getattr(ops, upper) for upper in marked) == ops.NO_BACKWARD


def test_mt_op_name_and_mt_op_built_agree_with_the_def():
    rows = def_rows()
    known = {code for code, _, _, _ in rows}
    for code, _, lower, _ in rows:
        assert _native.mt_op_name(code) == lower.encode()
        assert _native.mt_op_built(code) == 1  # the host library is built with every op
    for code in [-1, 0, max(known) + 1, 255, 256, 1 << 30, -(1 << 31)]:
        if code not in known:
            assert _native.mt_op_name(code) is None
            assert _native.mt_op_built(code) == 0
