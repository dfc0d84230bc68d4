"""microtrain: static-memory training of small neural networks, from Python.

The C core (micro_core/) plans one arena, binds a session to it and trains without
allocating. ``Session`` (pure Python) drives it through a backend: ctypes on CPython, the
wasm core or the ``_microtrain`` native module under MicroPython. ``TrainSession`` is the
CPython name, with numpy views of the arena. ``microtrain.nn`` builds model images;
``microtrain.tools`` holds the command line, firmware packaging and plots.

Under MicroPython (no numpy, no ctypes) the package holds the pure modules only.
"""

from . import data, losses, metrics, optimizers, schedules
from ._random import set_seed
from .data import DataLoader
from .errors import MicrotrainError
from .schedules import CosineLRScheduler, LinearLRScheduler, StepLRScheduler
from .session import Session
from .sparse_scheme import SparseScheme
from .train_session import TrainSession
from .training import History

try:
    import numpy as _numpy
except ImportError:  # MicroPython: no model builder
    _numpy = None
if _numpy is not None:
    from .nn import layers
    from .nn.functional import Input
    from .nn.model import Model, Sequential
    from .tools.sparse_update import sparse_update

    def _read_foreign(data, path):
        from . import convert  # imported on first use: the parsers are an optional extra
        fmt = convert.detect_format(data, path)
        if fmt is None:
            return None
        model = convert.convert(data, format=fmt, source_path=path)  # ONNX external data
        return model.to_bytes(), model.source

    def _write_foreign(image, weights, format, source):
        from .convert import exporter
        return exporter.export_bytes(image, weights, format, source)

    from . import _model_source
    _model_source.foreign_reader = _read_foreign
    _model_source.foreign_writer = _write_foreign


if _numpy is not None:  # CPython only: MicroPython's import machinery trips on a module
    def __getattr__(name):  # __getattr__ that raises for its submodules (lite, ...)
        """``microtrain.convert`` (callable) and ``microtrain.from_torch`` load on first use:
        the importers' parsers are optional (the ``convert`` extra: ``pip install
        '.[convert]'`` in microtrain's source tree)."""
        if name in ("convert", "from_torch"):
            import importlib
            module = importlib.import_module(".convert", __name__)
            return module if name == "convert" else module.from_torch
        raise AttributeError("module 'microtrain' has no attribute %r" % name)


__version__ = "0.1.0"

__all__ = ["Session", "TrainSession", "Sequential", "Model", "Input", "DataLoader", "History",
           "layers", "optimizers", "losses", "metrics", "schedules", "data",
           "LinearLRScheduler", "CosineLRScheduler", "StepLRScheduler", "set_seed",
           "MicrotrainError", "SparseScheme", "sparse_update", "__version__"]
