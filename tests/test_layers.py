"""The package's layers (docs/architecture.md) hold: imports go down only.

  * the runtime (everything MicroPython gets: the freeze manifest) imports nothing of nn/,
    convert/, tools/ or federated/, not even lazily inside a function;
  * backends import only other backend modules and the leaf modules errors, ops, properties;
  * nn/ (the builder) imports no runtime session, no converter and no tool (only the op
    table, seeds and the file rules).

Imports are read from the source (ast), every import statement anywhere in a module.
"""

import ast
import os

import microtrain

from test_micropython_safe import manifest_files

PACKAGE = os.path.dirname(os.path.abspath(microtrain.__file__))
TOP_LAYERS = ("nn", "convert", "tools", "federated")
LEAVES = ("errors", "ops", "properties")


def imported(relative_path):
    """Absolute dotted names (microtrain.x.y) a module imports, anywhere in its source."""
    with open(os.path.join(PACKAGE, relative_path), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    package = ["microtrain"] + relative_path.split("/")[:-1]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if node.module:  # "from . import x" imports x, not the package itself
                names.append(module)
            names += [module + "." + alias.name for alias in node.names]
    return [n for n in names if n.startswith("microtrain")]


def layer_of(name):
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_runtime_never_imports_a_layer_above_it():
    for path in manifest_files():
        if path == "__init__.py":
            continue  # the package's face: it plugs the CPython layers in (see _model_source)
        for name in imported(path):
            assert layer_of(name) not in TOP_LAYERS, (path, name)


def test_backends_import_only_backends_and_leaves():
    for path in sorted(os.listdir(os.path.join(PACKAGE, "backend"))):
        if not path.endswith(".py"):
            continue
        for name in imported("backend/" + path):
            assert layer_of(name) in ("backend",) + LEAVES, (path, name)


def test_the_builder_imports_no_session_converter_or_tool():
    for path in sorted(os.listdir(os.path.join(PACKAGE, "nn"))):
        if not path.endswith(".py"):
            continue
        for name in imported("nn/" + path):
            assert layer_of(name) in ("nn", "ops", "_random", "_files"), (path, name)
