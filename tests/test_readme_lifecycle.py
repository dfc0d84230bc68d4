"""The README's fine-tuning section runs as written: its Python blocks in order, then its
shell block, in an empty directory (``microtrain`` resolves to this interpreter's module)."""

import os
import re
import stat
import subprocess
import sys

import pytest

import microtrain

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(microtrain.__file__)))
SECTION = "## Fine-tuning lifecycle"


def section_blocks():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"```(python|sh)\n(.*?)```", text[start:end], re.DOTALL)


def environment(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "microtrain"
    wrapper.write_text('#!/bin/sh\nexec "%s" -m microtrain "$@"\n' % sys.executable)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ)
    env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    return env


def test_readme_fine_tuning_section_runs(tmp_path):
    pytest.importorskip("sklearn")
    blocks = section_blocks()
    assert [kind for kind, _ in blocks] == ["python", "python", "sh"]
    env = environment(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    for index, (kind, code) in enumerate(blocks):
        if kind == "python":
            command = [sys.executable, "-c", code]
        else:
            command = ["sh", "-ec", code]
        result = subprocess.run(command, cwd=str(work), env=env, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, "block %d:\n%s\n%s" % (index, result.stdout,
                                                               result.stderr)
        if index == 0:
            assert len(re.findall(r"^Epoch \d+/10 - time: ", result.stdout, re.MULTILINE)) == 5
            assert "'step': " in result.stdout and "sklearn digits" in result.stdout
        if kind == "sh":
            assert "== training parameter ==" in result.stdout
            assert re.search(r"^Evaluate 1797 samples - loss: \[0\] [\d.]+ - "
                             r"categorical_accuracy: \[0\] 0\.9\d+$", result.stdout,
                             re.MULTILINE), result.stdout
    for name in ("digits.mtm", "digits.ck", "digits_trained.mtm", "personalised.ck",
                 "digits_cli.ck", "digits_cli.mtm", "digits_pred.npy"):
        assert (work / name).is_file(), name


def blocks_of(section, kind="python"):
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index(section)
    end = text.index("\n## ", start + len(section))
    return [code for found, code in re.findall(r"```(\w+)\n(.*?)```", text[start:end],
                                                re.DOTALL) if found == kind]


@pytest.mark.parametrize("section", ["## Python", "## CNNs, partial training"])
def test_readme_python_and_cnn_sections_run(tmp_path, section):
    """The README's other Python blocks run as written too: a section's blocks continue one
    another (the later ones use the earlier ones' imports), so they run as one script."""
    blocks = blocks_of(section)
    assert blocks
    result = subprocess.run([sys.executable, "-c", "\n".join(blocks)], cwd=str(tmp_path),
                            env=environment(tmp_path), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, "%s:\n%s\n%s" % (section, result.stdout, result.stderr)
