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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The test command's ``-n 2 --dist loadfile``, with the fleet's files one unit: they
    hold tests/machine_wide.py's lock (they check the whole machine for leftover fleet
    processes), so on two workers at once one would only wait for the other."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FleetFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return "tests/federated" if path.startswith("tests/federated/") else path

    return FleetFilesTogether(config, log)
