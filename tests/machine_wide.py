"""The tests that look at the whole machine run one at a time.

The fleet tests check that no Flower, Ray or deployment process is left when they end
(tests/federated: ``ray_processes``, ``marked_processes``), and the documentation's fleet
examples start such processes. The test command runs pytest on two workers (pytest-xdist, a
file each at a time), so two of these files could otherwise overlap and see each other's
processes. ``fleet_exclusive()`` holds one lock file for the duration: the second waits.
"""

import contextlib
import fcntl
import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCKS = os.path.join(REPO_ROOT, "build", "test-locks")
FLEET_WORDS = ("microtrain fleet", "microtrain.federated", "run_fleet")


def starts_fleets(page):
    """Does the documentation page ``page`` (a path, absolute or from the repository's root)
    start fleets in its examples?"""
    with open(os.path.join(REPO_ROOT, page)) as handle:
        text = handle.read()
    return any(word in text for word in FLEET_WORDS)


@contextlib.contextmanager
def fleet_exclusive():
    os.makedirs(LOCKS, exist_ok=True)
    with open(os.path.join(LOCKS, "fleet.lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
