"""The backend over a JavaScript module ``_microtrain_js`` (MicroPython on Node or a browser).

The JS side (``tools/micropython/microtrain_wasm.mjs``) runs the core compiled to
wasm32 and does the linear-memory work: placing image and arena, writing rows,
calling the ``mt_*`` exports. A JS exception does not become a Python exception, so
its methods report a failing core call in ``status`` / ``message`` / ``function``
instead of throwing; this module turns those into ``MicrotrainError`` and JS values
(proxies) into Python ones. MicroPython-safe; ``import _microtrain_js`` fails
elsewhere, so ``backend.load()`` only reaches this module on such a host.
"""

from array import array

import _microtrain_js

from . import Backend as _Interface, PLAN_FIELDS
from ..errors import MicrotrainError


class Backend(_Interface):
    """One core instance (its own wasm memory) behind the JS module."""

    def __init__(self):
        self._core = _microtrain_js.create()

    def _call(self, name, *args):
        result = getattr(self._core, name)(*args)
        status = self._core.status
        if status:
            raise MicrotrainError(int(status), str(self._core.message), str(self._core.function))
        return result

    def describe(self, image):
        info = self._call("describe", image)
        return {"num_ops": int(info["num_ops"]),
                "inputs": [tuple(dims) for dims in info["inputs"]],
                "outputs": [tuple(dims) for dims in info["outputs"]],
                "params": [tuple(dims) for dims in info["params"]]}

    def plan(self, image, config):
        plan = self._call("plan", image, config)
        result = {}
        for name in PLAN_FIELDS:
            result[name] = int(plan[name])
        return result

    def open(self, image, config):
        self._call("open", image, config)

    def write_rows(self, kind, position, first_row, values):
        self._call("write_rows", kind, position, first_row, values)

    def train_step(self, n):
        return float(self._call("train_step", n))

    def eval_step(self, n):
        return float(self._call("eval_step", n))

    def infer(self, n):
        self._call("infer", n)

    def read_rows(self, output, n):
        return array("f", self._call("read_rows", output, n))

    def weights(self):
        return bytes(self._call("weights"))

    def weights_crc32(self):
        return int(self._call("weights_crc32")) & 0xFFFFFFFF

    def set_learning_rate(self, rate):
        self._call("set_learning_rate", float(rate))

    def get_learning_rate(self):
        return float(self._call("get_learning_rate"))

    def counters(self):
        step, epoch = self._call("counters")
        return int(step), int(epoch)

    def set_epoch(self, epoch):
        self._call("set_epoch", int(epoch))

    def optimizer_step(self):
        self._call("optimizer_step")

    def numeric_errors(self):
        return int(self._call("numeric_errors"))

    def close(self):
        self._core.close()
