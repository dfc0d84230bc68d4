"""The backend over a JavaScript module ``_microtrain_js`` (MicroPython on Node or a browser).

The JS side (``tools/micropython/microtrain_wasm.mjs``) runs the core compiled to wasm32 and
does the linear-memory work: placing image and arena, writing rows, calling the ``mt_*``
exports. A JS exception does not become a Python exception, so its methods report a failing
core call in ``status`` / ``message`` / ``function`` / ``op_index`` / ``op_type`` instead of
throwing; this module turns those into ``MicrotrainError`` and JS values (proxies) into
Python ones. Checkpoints and export cross as whole byte strings (the JS side has no
callbacks into the core). MicroPython-safe; ``import _microtrain_js`` fails elsewhere, so
``backend.loader.load()`` only reaches this module on such a host.
"""

from array import array

import _microtrain_js

from . import Backend as _Interface, PLAN_FIELDS
from ..errors import MicrotrainError


def _entry(io):
    return {"tensor": int(io["tensor"]), "dims": tuple(io["dims"])}


def _give(loss, out):
    """The loss, or None after storing it in out[0] (see the interface's ``out``)."""
    if out is None:
        return loss
    out[0] = loss
    return None


class Backend(_Interface):
    """One core instance (its own wasm memory) behind the JS module."""

    def __init__(self):
        self._core = _microtrain_js.create()

    def _call(self, name, *args):
        result = getattr(self._core, name)(*args)
        status = int(self._core.status)
        if status:
            error = MicrotrainError(status, str(self._core.message), str(self._core.function),
                                    int(self._core.op_index), int(self._core.op_type))
            error.loss = float(self._core.loss)
            raise error
        return result

    # ------------------------------------------------------------ model

    def describe(self, image):
        info = self._call("describe", image)
        params = []
        for p in info["params"]:
            params.append({"tensor": int(p["tensor"]), "dims": tuple(p["dims"]),
                           "offset": int(p["offset"]), "trainable": bool(p["trainable"])})
        ops = []
        for op in info["ops"]:
            ops.append({"type": int(op["type"]), "layer": int(op["layer"]),
                        "inputs": [int(i) for i in op["inputs"]],
                        "outputs": [int(i) for i in op["outputs"]],
                        "weights": bool(op["weights"])})
        return {"num_ops": int(info["num_ops"]), "num_tensors": int(info["num_tensors"]),
                "inputs": [_entry(io) for io in info["inputs"]],
                "outputs": [_entry(io) for io in info["outputs"]],
                "params": params, "ops": ops}

    def plan(self, image, config):
        plan = self._call("plan", image, config)
        result = {}
        for name in PLAN_FIELDS:
            result[name] = int(plan[name])
        return result

    # ------------------------------------------------------------ session

    def open(self, image, config, arena=None):
        if arena is not None:
            raise ValueError("the wasm backend places the arena in its own linear memory; "
                             "give arena=None")
        self._call("open", image, config)

    def close(self):
        self._core.close()

    def write_rows(self, kind, position, first_row, values):
        self._call("write_rows", kind, position, first_row, values)

    def read_rows(self, output, n):
        return array("f", self._call("read_rows", output, n))

    def train_step(self, n, out=None):
        return _give(float(self._call("train_step", n)), out)

    def accumulate(self, n, out=None):
        return _give(float(self._call("accumulate", n)), out)

    def zero_grad(self):
        self._call("zero_grad")

    def optimizer_step(self):
        self._call("optimizer_step")

    def eval_step(self, n, out=None):
        return _give(float(self._call("eval_step", n)), out)

    def infer(self, n):
        self._call("infer", n)

    # ------------------------------------------------------------ weights and state

    def trained(self):
        return [bool(flag) for flag in self._call("trained")]

    def read_param(self, position):
        return array("f", self._call("read_param", position))

    def write_param(self, position, values):
        self._call("write_param", position, array("f", values))

    def weights(self):
        return bytes(self._call("weights"))

    def weights_crc32(self):
        return int(self._call("weights_crc32")) & 0xFFFFFFFF

    def set_learning_rate(self, rate):
        self._call("set_learning_rate", float(rate))

    def get_learning_rate(self):
        return float(self._call("get_learning_rate"))

    def base_learning_rate(self):
        return float(self._call("base_learning_rate"))

    def set_reference(self):
        self._call("set_reference")

    def counters(self):
        step, epoch = self._call("counters")
        return int(step), int(epoch)

    def set_epoch(self, epoch):
        self._call("set_epoch", int(epoch))

    def numeric_errors(self):
        return int(self._call("numeric_errors"))

    # ------------------------------------------------------------ checkpoints and export

    @staticmethod
    def _js_properties(properties):
        # int values travel as decimal text: a JS number holds only 53 bits
        return [[name, kind, str(value) if kind == 1 else value]
                for name, kind, value in properties]

    def checkpoint_bytes(self, include_optimizer, properties):
        return int(self._call("checkpoint_bytes", bool(include_optimizer),
                              self._js_properties(properties)))

    def checkpoint_save(self, include_optimizer, properties, write):
        write(bytes(self._call("checkpoint_save", bool(include_optimizer),
                               self._js_properties(properties))))

    def checkpoint_load(self, size, read):
        loaded = []
        for name, kind, value in self._call("checkpoint_load", bytes(read(0, size))):
            kind = int(kind)
            loaded.append((str(name), int(value) if kind == 1 else
                           float(value) if kind == 2 else str(value)))
        return loaded

    def export_image(self, write):
        write(bytes(self._call("export_image")))
