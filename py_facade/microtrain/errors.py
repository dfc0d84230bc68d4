"""Exceptions raised by the microtrain facade.

Every failing C call surfaces as :class:`MicrotrainError`, which keeps the
``mt_status`` code and the C library's own description of it. Mistakes the
facade can detect before calling C (wrong shapes, unknown names) raise the
ordinary ``ValueError`` / ``RuntimeError`` instead.
"""


class MicrotrainError(RuntimeError):
    """A C call returned a negative ``mt_status``.

    Attributes:
        status:   the ``mt_status`` value (negative int, e.g. -7 for MT_ERR_NUMERIC)
        message:  ``mt_status_str(status)`` as text
        function: name of the C function that failed, or None
    """

    def __init__(self, status, message, function=None):
        self.status = status
        self.message = message
        self.function = function
        if function is None:
            text = "%s (status %d)" % (message, status)
        else:
            text = "%s: %s (status %d)" % (function, message, status)
        super().__init__(text)
