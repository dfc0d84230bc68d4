"""pytest setup for the Python tests of microtrain.

The tests exercise the installed package (``pip install .`` or ``pip install -e .``,
which tools/run_tests.sh does), with the native library it bundles, or the one
named by ``MICROTRAIN_LIB``.
"""

import pytest

try:
    import microtrain  # noqa: F401
except ImportError as error:  # pragma: no cover - a set-up error, reported once
    raise pytest.UsageError(
        "microtrain is not installed: run `pip install -e .` (or tools/run_tests.sh) first "
        "(%s)" % error
    )
