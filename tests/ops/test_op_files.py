"""The ops' tests, one C and one Python file per op source, checked against the op table
(micro_core/include/microtrain_ops.def) and against CONTRIBUTING's "How to add an op":

- every op source has tests/ops/test_<source>.py (its layer or importer against PyTorch or
  LiteRT), and every source of an op that trains (not "inference only") tests/ops/
  test_<source>.c too (forward against a reference, backward against finite differences);
- each op is named in every test file of its source (case and underscores aside: relu6,
  LeakyReLU, AveragePool2D), so an op added to a shared source comes with its cases;
- every tests/ops/test_*.c and test_*.py is named after a source (this file aside);
- every file CONTRIBUTING's recipe names exists, <source> read as each op's source.
"""

import os
import re

TESTS_OPS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(TESTS_OPS))
OP_ROW = re.compile(r"^MT_OP\((\d+), (\w+), (\w+), (\w+)\)(.*)$", re.M)


def op_rows():
    """[(code, name, source, trains)] in the .def's order"""
    with open(os.path.join(ROOT, "micro_core", "include", "microtrain_ops.def")) as f:
        text = f.read()
    return [(int(code), name, source, "inference only" not in comment)
            for code, _, name, source, comment in OP_ROW.findall(text)]


def folded(text):
    return text.lower().replace("_", "")


def test_every_op_source_has_its_test_files():
    missing = []
    for _, _, source, trains in op_rows():
        wanted = ["test_%s.py" % source] + (["test_%s.c" % source] if trains else [])
        missing += [name for name in wanted if not os.path.isfile(os.path.join(TESTS_OPS, name))]
    assert sorted(set(missing)) == [], "tests/ops/ lacks these op test files"


def test_each_op_is_named_in_its_sources_test_files():
    unnamed = []
    for _, name, source, _ in op_rows():
        for ext in ("c", "py"):
            path = os.path.join(TESTS_OPS, "test_%s.%s" % (source, ext))
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    if folded(name) not in folded(f.read()):
                        unnamed.append("%s in test_%s.%s" % (name, source, ext))
    assert unnamed == []


def test_every_op_test_file_is_named_after_a_source():
    sources = {source for _, _, source, _ in op_rows()}
    strays = []
    for entry in sorted(os.listdir(TESTS_OPS)):
        stem, ext = os.path.splitext(entry)
        if entry.startswith("test_") and ext in (".c", ".py") and entry != "test_op_files.py":
            if stem[len("test_"):] not in sources:
                strays.append(entry)
    assert strays == []


def recipe():
    with open(os.path.join(ROOT, "CONTRIBUTING.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("## How to add an op")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_contributing_recipe_names_files_that_exist():
    paths = sorted(set(re.findall(r"`((?:micro_core|py_facade|tests|boards|docs)/[^`\s]+)`",
                                  recipe())))
    assert len(paths) >= 6, paths  # the recipe names its files
    absent = []
    for path in paths:
        sources = sorted({source for _, _, source, _ in op_rows()}) if "<source>" in path \
            else [None]
        for source in sources:
            concrete = path if source is None else path.replace("<source>", source)
            if "<" in concrete or "*" in concrete:
                continue  # a pattern the recipe explains (a kernel family's file)
            trains = any(s == source and t for _, _, s, t in op_rows())
            if concrete.endswith(".c") and concrete.startswith("tests/ops/") and not trains:
                continue  # an inference-only source has no C test of its own
            if not os.path.exists(os.path.join(ROOT, concrete)):
                absent.append(concrete)
    assert absent == []
