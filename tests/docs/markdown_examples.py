"""Run the code blocks of a Markdown page in order, in a fresh folder, and check the outputs
the page shows (tests/docs/test_examples.py runs every page of the README and docs/).

A page's fenced blocks are read in order. A block is run according to its language, or to a
directive, an HTML comment on the line right before its fence (invisible on the rendered
page):

    ```python                     run with this interpreter, as its own script
    ```sh / ```bash / ```console  run with ``sh -e`` (``microtrain`` on the PATH); a ```console
                                  block's commands are its lines starting with ``$ ``, the other
                                  lines are their expected output
    <!-- example: output -->      this block is the expected standard output of the block run
                                  last (see ``matches``)
    <!-- example: continue -->    this Python block runs as one script with the Python block
                                  before it (a page may split one program between paragraphs)
    <!-- example: file NAME -->    write the block to NAME in the folder (a C file, a
                                  CMakeLists.txt, a Makefile), for a later block to use
    <!-- example: micropython -->  run with MicroPython's unix port built with microtrain
                                  (tools/micropython/build_firmware.sh); skipped, saying why, where
                                  that firmware is not built
    <!-- example: skip REASON -->  not run here; REASON names where it is run instead (the CI
                                  itself, the board tests, ...). Counted and reported.

Any other block (```text, ```c without a directive, a table in a fence) is prose. A page may
also name files from examples/ it needs, anywhere on it (before the block that needs them
reads best): ``<!-- example: uses examples/digits_cnn.py -->`` copies them into the folder
before the first block runs.
"""

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNABLE = {"python", "sh", "bash", "console"}
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
                    re.M | re.S)
_DIRECTIVE = re.compile(r"<!--\s*example:\s*(?P<kind>[a-z-]+)(?:\s+(?P<arg>.*?))?\s*-->\s*$")


@dataclass
class Block:
    page: str
    line: int
    language: str
    code: str
    directive: str = ""
    argument: str = ""

    def where(self):
        return "%s:%d" % (os.path.relpath(self.page, REPO_ROOT), self.line)


@dataclass
class Page:
    path: str
    blocks: list
    uses: list = field(default_factory=list)


def read_page(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        if directive and directive.group("kind") == "uses":
            directive = None  # the page's files (read below), not a way to run this block
        language = match.group("info").strip().split(" ")[0].lower()
        blocks.append(Block(path, line, language, match.group("body"),
                            directive.group("kind") if directive else "",
                            (directive.group("arg") or "") if directive else ""))
    uses = re.findall(r"<!--\s*example:\s*uses\s+(.+?)\s*-->", text)
    return Page(path, blocks, [u for group in uses for u in group.split()])


def matches(expected, actual):
    """Whether ``actual`` output fits ``expected``: line by line, where a line that is only
    ``...`` stands for any number of lines and ``...`` inside a line for any text. Trailing
    spaces and a final newline do not count."""
    want = [l.rstrip() for l in expected.rstrip("\n").split("\n")]
    have = [l.rstrip() for l in actual.rstrip("\n").split("\n")] if actual.strip() else []

    def line_fits(pattern, line):
        if "..." not in pattern:
            return pattern == line
        parts = [re.escape(p) for p in pattern.split("...")]
        return re.fullmatch(".*".join(parts), line) is not None

    def fit(i, j):
        if i == len(want):
            return j == len(have)
        if want[i] == "...":
            return any(fit(i + 1, k) for k in range(j, len(have) + 1))
        return j < len(have) and line_fits(want[i], have[j]) and fit(i + 1, j + 1)

    return fit(0, 0)


class PageRun:
    """Runs one page's blocks in order in ``folder``; ``run()`` returns a report dict."""

    def __init__(self, page, folder, env, micropython=None, timeout=900):
        self.page, self.folder, self.env = page, folder, env
        self.micropython, self.timeout = micropython, timeout

    def _run(self, command, block, stdin=None):
        result = subprocess.run(command, cwd=self.folder, env=self.env, capture_output=True, text=True,
                                input=stdin, timeout=self.timeout)
        if result.returncode != 0:
            raise AssertionError("%s: the %s block failed (exit %d)\n--- code ---\n%s--- stdout ---\n%s"
                                 "--- stderr ---\n%s" % (block.where(), block.language, result.returncode,
                                                         block.code, result.stdout[-4000:], result.stderr[-4000:]))
        return result.stdout

    def run(self):
        # examples/ as a reader in the repository's top folder sees it (read-only use)
        link = os.path.join(self.folder, "examples")
        if not os.path.exists(link):
            os.symlink(os.path.join(REPO_ROOT, "examples"), link)
        for name in self.page.uses:
            source = os.path.join(REPO_ROOT, name)
            shutil.copy(source, os.path.join(self.folder, os.path.basename(name)))
        report = {"ran": 0, "outputs": 0, "skipped": [], "files": 0}
        last_output = None
        skipped_last = False  # the last runnable block was skipped: so is an output block after it
        pending_python = None  # (block, code) of a Python script not run yet (a continue may follow)
        blocks = self.page.blocks

        def flush():
            nonlocal pending_python, last_output, skipped_last
            if pending_python is not None:
                block, code = pending_python
                pending_python = None
                last_output = self._run([sys.executable, "-c", code], block)
                report["ran"] += 1
                skipped_last = False

        for index, block in enumerate(blocks):
            if block.directive == "continue":
                if pending_python is None:
                    raise AssertionError("%s: 'continue' follows no Python block" % block.where())
                pending_python = (pending_python[0], pending_python[1] + "\n" + block.code)
                continue
            if block.directive != "output":
                flush()
            if block.directive == "skip":
                if not block.argument:
                    raise AssertionError("%s: a skipped block must say why" % block.where())
                report["skipped"].append((block.where(), block.argument))
                last_output, skipped_last = None, True
                continue
            if block.directive == "output":
                flush()
                if last_output is None and skipped_last:
                    report["skipped"].append((block.where(), "its block was not run here"))
                    skipped_last = False
                    continue
                if last_output is None:
                    raise AssertionError("%s: an output block follows no run block" % block.where())
                if not matches(block.code, last_output):
                    raise AssertionError("%s: the output shown differs from what the block before it "
                                         "printed\n--- shown ---\n%s--- printed ---\n%s"
                                         % (block.where(), block.code, last_output))
                report["outputs"] += 1
                last_output = None
                continue
            if block.directive == "file":
                target = os.path.join(self.folder, block.argument)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w", encoding="utf-8") as handle:
                    handle.write(block.code)
                report["files"] += 1
                continue
            if block.directive == "micropython":
                if self.micropython is None:
                    report["skipped"].append((block.where(), "MicroPython's unix port is not built"))
                    last_output, skipped_last = None, True
                    continue
                script = os.path.join(self.folder, "_example_%d.py" % index)
                with open(script, "w", encoding="utf-8") as handle:
                    handle.write(block.code)
                last_output = self._run(self.micropython + [script], block)
                report["ran"] += 1
                skipped_last = False
                continue
            if block.directive:
                raise AssertionError("%s: unknown example directive %r" % (block.where(), block.directive))
            if block.language == "python":
                pending_python = (block, block.code)
            elif block.language in ("sh", "bash"):
                last_output = self._run(["sh", "-ec", block.code], block)
                report["ran"] += 1
                skipped_last = False
            elif block.language == "console":
                commands, expected = [], []
                for line in block.code.split("\n"):
                    if line.startswith("$ "):
                        commands.append(line[2:])
                    elif commands:
                        expected.append(line)
                output = self._run(["sh", "-ec", "\n".join(commands)], block)
                report["ran"] += 1
                shown = "\n".join(expected).strip("\n")
                if shown and not matches(shown, output):
                    raise AssertionError("%s: the output shown differs from what the commands printed\n"
                                         "--- shown ---\n%s\n--- printed ---\n%s" % (block.where(), shown, output))
                if shown:
                    report["outputs"] += 1
                last_output = None
        flush()
        return report
