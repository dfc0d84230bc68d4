"""Every public name the Python API reference renders has a docstring (the reference is
generated from them: docs/reference/python.md's ``::: name`` entries, mkdocstrings)."""

import importlib
import inspect
import os
import re

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(REPO_ROOT, "docs", "reference", "python.md")


def rendered_names():
    with open(REFERENCE, encoding="utf-8") as handle:
        return re.findall(r"^::: ([\w.]+)\s*$", handle.read(), re.MULTILINE)


def resolve(dotted):
    """The object ``dotted`` names: a module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def public_members(obj):
    """(qualified name, member) of what the reference shows under ``obj``: a module's public
    names defined in it (or listed in ``__all__``), a class's public methods and properties
    defined on it or on the package's classes it derives from."""
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None)
        if names is None:
            names = [n for n, v in vars(obj).items() if not n.startswith("_")
                     and (inspect.isfunction(v) or inspect.isclass(v))
                     and getattr(v, "__module__", None) == obj.__name__]
        for name in names:
            member = getattr(obj, name)
            yield "%s.%s" % (obj.__name__, name), member
            if inspect.isclass(member):
                yield from public_members(member)
    elif inspect.isclass(obj):
        # the class's own members and those of the package's classes it is made of (the
        # session's mixins: the reference renders Session with its inherited members)
        seen = set()
        for owner in obj.__mro__:
            if not owner.__module__.startswith("microtrain"):
                continue
            for name, member in vars(owner).items():
                if name.startswith("_") or name in seen:
                    continue
                seen.add(name)
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member) or isinstance(member, property):
                    yield "%s.%s" % (owner.__qualname__, name), member


def undocumented():
    missing = []
    for dotted in rendered_names():
        obj = resolve(dotted)
        for qualified, member in [(dotted, obj)] + list(public_members(obj)):
            if not callable(member) and not inspect.ismodule(member) \
                    and not isinstance(member, property):
                continue  # constants are described by their module's docstring
            if not (inspect.getdoc(member) or "").strip():
                missing.append(qualified)
    return sorted(set(missing))


def test_the_reference_renders_names_that_exist():
    names = rendered_names()
    assert len(names) >= 10, names
    for dotted in names:
        resolve(dotted)


def test_every_rendered_public_name_has_a_docstring():
    pytest.importorskip("flwr", reason="microtrain.federated's reference needs Flower")
    assert undocumented() == []
