"""Hostile cases each in a process of its own, as issue 45's proof asks (tests/test_hostile_*.py,
tests/federated/test_fleet_hostile.py, tests/micropython/test_hostile_buffers.py).

``run_capped(argv)`` runs a command under a 4 GiB address-space limit (RLIMIT_AS) in a new
session, with a timeout after which the whole group is killed and the case fails as a hang;
it returns the exit status, the output, the seconds taken and the peak resident memory of the
process and the children it waited for (``os.wait4``). ``snapshot(folder)`` records what a
folder holds (names, kinds, modes, link targets, contents), so a test can say that a refused
command lost, replaced and left behind nothing.
"""

import dataclasses
import hashlib
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time

ADDRESS_SPACE = 4 << 30
PEAK_LIMIT = 1 << 30
# A refused case answers in well under a second of CPU; the allowance is for a loaded machine
# (the lead's test run shares 2 cores). Past it the case counts as a hang.
TIMEOUT = 60.0


@dataclasses.dataclass(repr=False)
class Outcome:
    status: int
    stdout: str
    stderr: str
    seconds: float
    peak_bytes: int

    def __repr__(self):
        return ("Outcome(status %r, %.1f s, peak %d MiB)\nstdout: %s\nstderr: %s"
                % (self.status, self.seconds, self.peak_bytes >> 20, self.stdout[-2000:],
                   self.stderr[-2000:]))


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def python(*arguments):
    """argv running this interpreter (microtrain as the tests import it)."""
    return [sys.executable] + list(arguments)


def run_capped(argv, timeout=TIMEOUT, env=None, cwd=None, input_text=None):
    """Run ``argv`` capped (see the module doc); an Outcome. A run past ``timeout`` fails."""
    environment = dict(os.environ if env is None else env)
    environment.setdefault("OPENBLAS_NUM_THREADS", "1")  # no 64 MB buffer per core
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        process = subprocess.Popen(argv, stdin=subprocess.PIPE if input_text is not None
                                   else subprocess.DEVNULL, stdout=out, stderr=err,
                                   env=environment, cwd=cwd, preexec_fn=_cap,
                                   start_new_session=True)
        if input_text is not None:
            process.stdin.write(input_text.encode())
            process.stdin.close()
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                os.killpg(process.pid, signal.SIGKILL)
                os.wait4(process.pid, 0)
                out.seek(0)
                err.seek(0)
                raise AssertionError("%s hung: still running after %.0f s\nstdout: %s\n"
                                     "stderr: %s" % (" ".join(argv), timeout,
                                                     out.read()[-2000:], err.read()[-2000:]))
            time.sleep(0.02)
        seconds = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        try:  # a child left behind in the group (none should be) goes too
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        out.seek(0)
        err.seek(0)
        return Outcome(process.returncode, out.read().decode("utf-8", "replace"),
                       err.read().decode("utf-8", "replace"), seconds,
                       usage.ru_maxrss * 1024)


def assert_clean_refusal(outcome, status, *words):
    """A refusal as the proof wants it: exit ``status``, one line on stderr naming
    ``words``, no traceback, under PEAK_LIMIT bytes."""
    assert outcome.status == status, outcome
    lines = outcome.stderr.strip().splitlines()
    assert lines, outcome
    assert "Traceback" not in outcome.stderr, outcome
    for word in words:
        assert word in outcome.stderr, (word, outcome)
    assert outcome.peak_bytes < PEAK_LIMIT, outcome
    return lines


def snapshot(folder):
    """{relative path: (kind, mode, link target or content digest)} of everything in
    ``folder`` (hidden files included)."""
    found = {}
    for directory, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            kind = stat.S_IFMT(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                detail = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    detail = hashlib.sha256(handle.read()).hexdigest()
            else:
                detail = None
            found[os.path.relpath(path, folder)] = (kind, stat.S_IMODE(info.st_mode), detail)
    return found
