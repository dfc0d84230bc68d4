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
    """The test command's ``-n 2 --dist loadfile``, with everything that starts fleets one
    unit, given out first: the fleet's files and the documentation pages whose examples
    start fleets hold tests/machine_wide.py's lock (they check the whole machine for
    leftover fleet processes), so on two workers at once one would only wait for the other;
    and as the longest unit (several minutes) it goes first, so that the other worker's
    files fill the same minutes instead of a tail."""
    if config.getvalue("dist") != "loadfile":
        return None
    import os
    import sys
    from xdist.scheduler import LoadFileScheduling
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    from machine_wide import starts_fleets

    pages = "tests/docs/test_examples.py::test_page_examples_run["
    fleet = "starts fleets"

    class FleetsTogetherFirst(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            if path.startswith("tests/federated/"):
                return fleet
            if nodeid.startswith(pages) and nodeid.endswith("]") and \
                    starts_fleets(nodeid[len(pages):-1]):
                return fleet
            return path

        def _assign_work_unit(self, node):
            if fleet in self.workqueue:
                self.workqueue.move_to_end(fleet, last=False)
            super()._assign_work_unit(node)

    return FleetsTogetherFirst(config, log)
