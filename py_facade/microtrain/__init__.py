"""microtrain: static-memory training of small neural networks, from Python.

The C core (micro_core/) plans one arena, binds a session to it and trains
without allocating; this package builds model images, drives sessions through
ctypes and offers onert's TrainSession API.
"""

from . import layers, losses, metrics, optimizers
from .errors import MicrotrainError
from .model import Sequential
from .session import TrainSession

__version__ = "0.1.0"

__all__ = ["TrainSession", "Sequential", "layers", "optimizers", "losses", "metrics",
           "MicrotrainError", "__version__"]
