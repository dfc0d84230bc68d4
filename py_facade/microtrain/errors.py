"""Exceptions raised by the microtrain facade (MicroPython-safe).

Every failing C call surfaces as :class:`MicrotrainError`, which keeps the ``mt_status``
code, the C library's own description of it and, when the failure concerns one op of the
model, that op: ``op 7 (conv2d): tensor shapes do not fit the op [MT_ERR_SHAPE]``. Mistakes
the facade detects before calling C (wrong shapes, unknown names) raise the ordinary
``ValueError`` / ``TypeError`` / ``RuntimeError`` instead.
"""


# The optional parts of the package: pyproject.toml's extras and what each installs
# (tests/test_cli.py checks them against pyproject.toml).
EXTRAS = {"convert": "onnx flatbuffers tflite",
          "federated": "'flwr[simulation]>=1.42,<1.43'",
          "plot": "matplotlib"}


def install_hint(extra):
    """How to add an optional part: microtrain installs from its source tree (it is not on
    PyPI), with the extra, or its packages alone."""
    return ("pip install '.[%s]' in microtrain's source tree, or pip install %s"
            % (extra, EXTRAS[extra]))


class MicrotrainError(RuntimeError):
    """A C call returned a negative ``mt_status``.

    Attributes:
        status:   the ``mt_status`` value (negative int, e.g. -7 for MT_ERR_NUMERIC)
        message:  ``mt_status_str(status)`` as text, with the op when there is one
        function: name of the C function that failed, or None
        op_index: the op the failure concerns, or -1
        op_type:  its ``mt_op_type`` code, or 0
    """

    def __init__(self, status, message, function=None, op_index=-1, op_type=0):
        self.status = status
        self.op_index = op_index
        self.op_type = op_type
        if op_index is not None and op_index >= 0:
            from .ops import name
            message = "op %d (%s): %s" % (op_index, name(op_type), message)
        self.message = message
        self.function = function
        if function is None:
            text = "%s (status %d)" % (message, status)
        else:
            text = "%s: %s (status %d)" % (function, message, status)
        super().__init__(text)
