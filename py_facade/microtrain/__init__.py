"""microtrain: static-memory training of small neural networks, from Python.

The C core (micro_core/) plans one arena, binds a session to it and trains
without allocating; this package builds model images, drives sessions through
ctypes and offers onert's TrainSession API and ONNX Runtime's training controls
(gradient accumulation, schedulers, checkpoints with properties, export).
"""

from . import data, layers, losses, metrics, optimizers, schedules
from ._random import set_seed
from .data import DataLoader
from .errors import MicrotrainError
from .functional import Input
from .model import Model, Sequential
from .schedules import CosineLRScheduler, LinearLRScheduler, StepLRScheduler
from .session import TrainSession
from .training import History

__version__ = "0.1.0"

__all__ = ["TrainSession", "Sequential", "Model", "Input", "DataLoader", "History", "layers",
           "optimizers", "losses", "metrics", "schedules", "data", "LinearLRScheduler",
           "CosineLRScheduler", "StepLRScheduler", "set_seed", "MicrotrainError", "__version__"]
