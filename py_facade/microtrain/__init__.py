"""microtrain: static-memory training of small neural networks, from Python.

The C core (micro_core/) plans one arena, binds a session to it and trains
without allocating; this package builds model images, drives sessions through
ctypes and offers onert's TrainSession API and ONNX Runtime's training controls
(gradient accumulation, schedulers, checkpoints with properties, export).

Under MicroPython (no numpy, no ctypes) the package holds the pure modules only:
``microtrain.lite.Session`` trains over a backend (see ``microtrain.backend``).
"""

from . import data, losses, metrics, optimizers, schedules
from ._random import set_seed
from .data import DataLoader
from .errors import MicrotrainError
from .schedules import CosineLRScheduler, LinearLRScheduler, StepLRScheduler
from .training import History

try:
    import ctypes as _ctypes
    import numpy as _numpy
except ImportError:  # MicroPython: no builder, no TrainSession
    _numpy = None
if _numpy is not None:
    from .nn import layers
    from .nn.functional import Input
    from .nn.model import Model, Sequential
    from .session import TrainSession


def __getattr__(name):
    """``microtrain.convert`` (callable) and ``microtrain.from_torch`` load on first use:
    the importers' parsers are optional (``pip install 'microtrain[convert]'``)."""
    if name in ("convert", "from_torch") and _numpy is not None:
        import importlib
        module = importlib.import_module(".convert", __name__)
        return module if name == "convert" else module.from_torch
    raise AttributeError("module 'microtrain' has no attribute %r" % name)


__version__ = "0.1.0"

__all__ = ["TrainSession", "Sequential", "Model", "Input", "DataLoader", "History", "layers",
           "optimizers", "losses", "metrics", "schedules", "data", "LinearLRScheduler",
           "CosineLRScheduler", "StepLRScheduler", "set_seed", "MicrotrainError", "__version__"]
