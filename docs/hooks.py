"""mkdocs hooks: pages made from other sources at every build, so they cannot drift.

- ``reference/c_api.md`` from the public C headers (``tools/docs/c_api.py``);
- ``reference/model_format.md`` and ``reference/checkpoint_format.md`` from ``micro_core/docs/``
  (the core's own format specifications stay beside the core);
- ``contributing.md`` from ``CONTRIBUTING.md``.
"""

import importlib.util
import pathlib

from mkdocs.structure.files import File

_ROOT = pathlib.Path(__file__).resolve().parents[1]
_COPIED = {
    "reference/model_format.md": "micro_core/docs/model_format.md",
    "reference/checkpoint_format.md": "micro_core/docs/checkpoint_format.md",
    "contributing.md": "CONTRIBUTING.md",
}


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, _ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files, config):
    c_api = _load("mt_docs_c_api", "tools/docs/c_api.py")
    files.append(File.generated(config, "reference/c_api.md", content=c_api.render()))
    for page, source in _COPIED.items():
        files.append(File.generated(config, page, content=(_ROOT / source).read_text(encoding="utf-8")))
    return files
