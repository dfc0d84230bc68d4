"""Every code block of the README and of docs/ runs, in order, in a fresh folder per page, and
every output a page shows is what its block prints (tests/docs/markdown_examples.py says how
blocks are marked). A page that cannot run here marks its blocks with the reason."""

import contextlib
import glob
import os
import stat
import sys

import pytest

import microtrain

from machine_wide import fleet_exclusive, starts_fleets
from markdown_examples import REPO_ROOT, Page, PageRun, matches, read_page, Block

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(microtrain.__file__)))
PAGES = sorted([os.path.join(REPO_ROOT, "README.md")]
               + glob.glob(os.path.join(REPO_ROOT, "docs", "**", "*.md"), recursive=True)
               + [os.path.join(REPO_ROOT, "examples", "cmake_user_project", "README.md")])
MICROPYTHON_UNIX = os.path.join(REPO_ROOT, "build", "micropython", "unix", "micropython")


def environment(tmp_path):
    """This interpreter's microtrain as the `microtrain` command, the source tree for firmware."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "microtrain"
    wrapper.write_text('#!/bin/sh\nexec "%s" -m microtrain "$@"\n' % sys.executable)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    python = bin_dir / "python"  # this interpreter (its venv: a symlink would lose it)
    python.write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    env["MICROTRAIN_SOURCE_DIR"] = REPO_ROOT
    env["MICROTRAIN_REPO"] = REPO_ROOT
    env.pop("MPLBACKEND", None)
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO_ROOT))
def test_page_examples_run(page, tmp_path):
    parsed = read_page(page)
    work = tmp_path / "work"
    work.mkdir()
    micropython = [MICROPYTHON_UNIX] if os.access(MICROPYTHON_UNIX, os.X_OK) else None
    # a page that starts fleets waits for the fleet tests' census
    with fleet_exclusive() if starts_fleets(page) else contextlib.nullcontext():
        report = PageRun(parsed, str(work), environment(tmp_path), micropython).run()
    runnable = [b for b in parsed.blocks if b.language in ("python", "sh", "bash", "console")]
    # every runnable block was run, continued, or skipped with its reason
    accounted = report["ran"] + len(report["skipped"]) + sum(1 for b in runnable if b.directive == "continue")
    assert accounted >= len([b for b in runnable if b.directive not in ("output", "file")]), report
    for where, reason in report["skipped"]:
        print("skipped %s: %s" % (where, reason))


def test_output_check_catches_a_wrong_output(tmp_path):
    """The check can fail: a page whose shown output is not what its block prints."""
    page = Page("synthetic.md", [Block("synthetic.md", 1, "python", "print('crc32 0x1234')\n"),
                                 Block("synthetic.md", 4, "text", "crc32 0x9999\n", "output")])
    with pytest.raises(AssertionError, match="differs"):
        PageRun(page, str(tmp_path), dict(os.environ)).run()
    broken = Page("synthetic.md", [Block("synthetic.md", 1, "python", "import no_such_module\n")])
    with pytest.raises(AssertionError, match="failed"):
        PageRun(broken, str(tmp_path), dict(os.environ)).run()


def test_output_patterns():
    assert matches("a\n...\nz", "a\nb\nc\nz\n")
    assert matches("loss: ...", "loss: 0.123")
    assert not matches("loss: 1...", "loss: 0.123")
    assert matches("a\n...", "a")
    assert not matches("a\nb", "a\nc")
