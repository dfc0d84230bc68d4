"""The facade's imports go down only (docs/architecture.md, "Rules that keep it that way").

The import graph of ``py_facade/microtrain`` is read from the sources with ``ast``: every
``import`` and ``from ... import`` wherever it stands (module level, inside a function, a
method, a ``try`` or an ``if``: an import put inside a function to dodge a cycle is still an
arrow), relative or absolute, and ``importlib.import_module`` with a literal name. An arrow
goes to the module imported: ``from . import ops`` is an arrow to ``microtrain.ops``;
``from .backend import crc32`` one to ``microtrain.backend`` (the package's ``__init__``).
A package's ancestors, which Python initializes first whatever is imported, are not arrows.

The rules:

  * no cycle, of modules or of layers;
  * each module imports only modules of its own layer or of the layers below it, in the
    order of ``LAYERS``. The runtime (the MicroPython-safe top-level modules) imports no
    model builder, importer or host tool: a session reads a .tflite/.circle/.onnx file
    through ``_model_source.foreign_reader``, which the package's ``__init__`` (the
    facade, the top layer) plugs in on CPython, so that path is no arrow from the runtime
    to ``convert``. Backends import nothing above ``backend/`` but ``errors``, ``ops``,
    ``properties`` (the checkpoint properties' kinds and limits) and ``_const``
    (MicroPython's ``const``), the bottom layer;
  * the model builder (``nn/``) imports no session, converter or tool: of the runtime only
    the op codes, the seeds, the file rules and the element count (``BUILDER_NEEDS``).
"""

import ast
import os

import pytest

import microtrain

PACKAGE = os.path.dirname(os.path.abspath(microtrain.__file__))

# From the bottom up: a module may import its own layer and the layers before it. A layer is
# the modules named, and the modules inside the packages named; "runtime" is every top-level
# module no other layer names.
LAYERS = (
    ("errors, op codes, property kinds, const", ("microtrain.errors", "microtrain.ops",
                                                 "microtrain.properties", "microtrain._const")),
    ("backend", ("microtrain.backend",)),
    ("runtime", ()),
    ("nn", ("microtrain.nn",)),
    ("convert", ("microtrain.convert",)),
    ("micropython_runner", ("microtrain.micropython_runner",)),
    ("federated", ("microtrain.federated",)),
    ("tools", ("microtrain.tools",)),
    ("package facade", ("microtrain", "microtrain.__main__")),
)
# What nn/ may import beside itself: a built model is bytes, written without a session.
BUILDER_NEEDS = ("microtrain.ops", "microtrain._random", "microtrain._files", "microtrain._shapes")


class ImportGraphError(Exception):
    """An import the checker cannot place: a module that does not exist, or an
    ``import_module`` whose name is not a literal."""


def package_modules(directory, name):
    """{dotted module name: path} of every .py under ``directory`` (a package's
    ``__init__.py`` is the package itself)."""
    modules = {}
    for folder, _, files in os.walk(directory):
        for file_name in files:
            if not file_name.endswith(".py"):
                continue
            relative = os.path.relpath(os.path.join(folder, file_name), directory)[:-3]
            parts = [name] + relative.split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = os.path.join(folder, file_name)
    return modules


def _is_package(path):
    return os.path.basename(path) == "__init__.py"


def _own_package(module, path):
    """The package a relative import in ``module`` starts from (level 1)."""
    return module if _is_package(path) else module.rpartition(".")[0]


def _relative(base_package, level, name):
    parts = base_package.split(".")
    if level - 1 > len(parts) - 1:
        raise ImportGraphError("relative import beyond the top package")
    parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def _check_known(target, modules, where):
    if target not in modules:
        raise ImportGraphError("%s imports %s, which is no module of the package"
                               % (where, target))
    return target


def _import_module_target(call, module, path, modules, top):
    """The module ``importlib.import_module(name[, package])`` imports, or None when
    it is not a call of it."""
    function = call.func
    named = (isinstance(function, ast.Attribute) and function.attr == "import_module") or (
        isinstance(function, ast.Name) and function.id in ("import_module", "__import__"))
    if not named:
        return None
    where = "%s line %d" % (module, call.lineno)
    arguments = list(call.args)
    if not arguments or not isinstance(arguments[0], ast.Constant) or not isinstance(
            arguments[0].value, str) or getattr(function, "id", None) == "__import__":
        raise ImportGraphError("%s: a dynamic import the graph cannot follow" % where)
    name = arguments[0].value
    if not name.startswith("."):
        return _check_known(name, modules, where) if name.split(".")[0] == top else False
    if len(arguments) < 2:
        raise ImportGraphError("%s: a relative import_module without its package" % where)
    anchor = arguments[1]
    if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
        base = anchor.value
    elif isinstance(anchor, ast.Name) and anchor.id in ("__name__", "__package__"):
        base = module if anchor.id == "__name__" else _own_package(module, path)
    else:
        raise ImportGraphError("%s: import_module's package is not a literal" % where)
    level = len(name) - len(name.lstrip("."))
    return _check_known(_relative(base, level, name.lstrip(".")), modules, where)


def import_arrows(modules, top):
    """{module: {imported module: {line, ...}}} over every import of the package ``top``."""
    arrows = {}
    for module, path in sorted(modules.items()):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        targets = arrows.setdefault(module, {})
        for node in ast.walk(tree):
            found = []
            where = "%s line %d" % (module, getattr(node, "lineno", 0))  # for the errors
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == top:
                        found.append(_check_known(alias.name, modules, where))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    source = _relative(_own_package(module, path), node.level, node.module)
                else:
                    source = node.module or ""
                if source.split(".")[0] != top:
                    continue
                _check_known(source, modules, where)
                for alias in node.names:
                    submodule = source + "." + alias.name
                    found.append(submodule if submodule in modules else source)
            elif isinstance(node, ast.Call):
                target = _import_module_target(node, module, path, modules, top)
                if target:
                    found.append(target)
            for target in found:
                if target != module:
                    targets.setdefault(target, set()).add(node.lineno)
    return arrows


def find_cycle(arrows):
    """One cycle of the graph as [a, b, ..., a], or None."""
    state = {}  # absent: unseen; 1: on the current path; 2: done
    for start in sorted(arrows):
        if start in state:
            continue
        path = [start]
        pending = [iter(sorted(arrows.get(start, ())))]
        state[start] = 1
        while pending:
            following = next(pending[-1], None)
            if following is None:
                state[path.pop()] = 2
                pending.pop()
            elif state.get(following) == 1:
                return path[path.index(following):] + [following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                pending.append(iter(sorted(arrows.get(following, ()))))
    return None


def find_cycles(arrows):
    """Cycles until none is left, each found once the arrows of those before it are
    dropped: every knot of the graph shows in at least one."""
    remaining = dict((node, set(targets)) for node, targets in arrows.items())
    found = []
    cycle = find_cycle(remaining)
    while cycle is not None:
        found.append(cycle)
        for a, b in zip(cycle, cycle[1:]):
            remaining[a].discard(b)
        cycle = find_cycle(remaining)
    return found


def describe_cycle(cycle, arrows, where="line"):
    """"a (line 3) -> b (line 7) -> a": each arrow with the lines of its imports."""
    return " -> ".join("%s (%s %s)" % (a, where, ", ".join(str(n) for n in sorted(arrows[a][b])))
                       for a, b in zip(cycle, cycle[1:])) + " -> " + cycle[-1]


def layer_of(module, modules):
    """The index in LAYERS of ``module``'s layer; KeyError for a subpackage no layer
    names."""
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if module == member or (member != "microtrain" and module.startswith(member + ".")):
                return index
    parts = module.split(".")
    if len(parts) == 2 and not _is_package(modules[module]):
        return [name for name, _ in LAYERS].index("runtime")
    raise KeyError(module)


def layer_violations(arrows, modules):
    names = [name for name, _ in LAYERS]
    violations = []
    for module, targets in sorted(arrows.items()):
        for target, lines in sorted(targets.items()):
            if layer_of(target, modules) > layer_of(module, modules):
                violations.append("%s (%s) imports %s (%s) at line %s" % (
                    module, names[layer_of(module, modules)], target,
                    names[layer_of(target, modules)], ", ".join(str(n) for n in sorted(lines))))
    return violations


MODULES = package_modules(PACKAGE, "microtrain")
ARROWS = import_arrows(MODULES, "microtrain")


def test_every_module_has_a_layer():
    unplaced = []
    for module in MODULES:
        try:
            layer_of(module, MODULES)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, ("modules of no layer: give their package a place in LAYERS and in "
                          "docs/architecture.md's drawing: %s" % unplaced)


def test_the_graph_holds_every_kind_of_import():
    """The reader sees what the rules are about: function-level imports, relative and
    absolute ones, ``import_module`` with a literal name."""
    assert "microtrain.backend" in ARROWS["microtrain.session"]        # from .backend import
    assert "microtrain.federated.fleet" in ARROWS["microtrain.tools.cli"]  # inside main()
    assert "microtrain.convert" in ARROWS["microtrain"]               # import_module(".convert")
    assert "microtrain.ops" in ARROWS["microtrain.nn.layers"]         # from .. import ops
    assert "microtrain.data" in ARROWS["microtrain.federated.local_round"]  # absolute


def test_no_import_cycle():
    cycles = find_cycles(ARROWS)
    assert not cycles, "import cycles:\n  " + "\n  ".join(describe_cycle(c, ARROWS)
                                                          for c in cycles)


def test_no_layer_imports_a_layer_above_it():
    violations = layer_violations(ARROWS, MODULES)
    assert not violations, "imports that go up:\n  " + "\n  ".join(violations)


def test_the_builder_imports_only_op_codes_seeds_and_file_rules():
    outside = ["%s imports %s" % (module, target)
               for module, targets in sorted(ARROWS.items()) if module.startswith("microtrain.nn")
               for target in sorted(targets)
               if not target.startswith("microtrain.nn") and target not in BUILDER_NEEDS]
    assert not outside, outside


def test_no_layer_cycle():
    """With every arrow going down or across a layer, the layers form no cycle; this
    checks it on the graph of packages (nn, convert, ..., the runtime as one node)."""
    def node(module):
        return LAYERS[layer_of(module, MODULES)][0]
    packages = {}
    for module, targets in ARROWS.items():
        for target, lines in targets.items():
            if node(module) != node(target):
                packages.setdefault(node(module), {}).setdefault(node(target), set()).add(
                    "%s line %s" % (module, min(lines)))
    cycles = find_cycles(packages)
    assert not cycles, "cycles of layers:\n  " + "\n  ".join(
        describe_cycle(c, packages, "by") for c in cycles)


def _write_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package_modules(str(root), "pkg")


def test_checker_finds_a_cycle_through_a_function_level_import(tmp_path):
    modules = _write_package(tmp_path / "pkg", {
        "__init__.py": "",
        "nn/__init__.py": "",
        "nn/base.py": "def call():\n    from . import functional\n",
        "nn/functional.py": "from .layers import Dense\n",
        "nn/layers.py": "from pkg.nn import base\n",
    })
    arrows = import_arrows(modules, "pkg")
    cycles = find_cycles(arrows)
    assert [describe_cycle(c, arrows) for c in cycles] == [
        "pkg.nn.base (line 2) -> pkg.nn.functional (line 1) -> pkg.nn.layers (line 1) -> "
        "pkg.nn.base"]
    del arrows["pkg.nn.base"]["pkg.nn.functional"]  # the import inside call() gone
    assert find_cycles(arrows) == []


def test_checker_refuses_what_it_cannot_follow(tmp_path):
    modules = _write_package(tmp_path / "pkg", {
        "__init__.py": "import importlib\nmodule = importlib.import_module(NAME)\n"})
    with pytest.raises(ImportGraphError, match="dynamic import"):
        import_arrows(modules, "pkg")
    modules = _write_package(tmp_path / "pkg", {"__init__.py": "from .missing import thing\n"})
    with pytest.raises(ImportGraphError, match="pkg.missing, which is no module"):
        import_arrows(modules, "pkg")
