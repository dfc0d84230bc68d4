"""The README demo runs as a user would run it and reaches 0.95 validation accuracy."""

import os
import re
import subprocess
import sys

import microtrain

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(REPO_ROOT, "examples", "digits_mlp.py")


def test_digits_demo_reaches_required_accuracy():
    environment = dict(os.environ)  # carries MICROTRAIN_LIB when conftest set it
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(microtrain.__file__)))
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_parent, environment.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, DEMO], env=environment, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr

    epochs = re.findall(r"^epoch +(\d+) +train loss ([\d.]+) +val loss [\d.]+ +"
                        r"val accuracy ([\d.]+)$", result.stdout, re.MULTILINE)
    assert [int(e[0]) for e in epochs] == list(range(1, 21))
    assert float(epochs[-1][1]) < float(epochs[0][1])  # the loss went down
    arena = re.search(r"arena: (\d+) bytes", result.stdout)
    assert arena and int(arena.group(1)) > 0
    final = re.search(r"^final validation accuracy: ([\d.]+)$", result.stdout, re.MULTILINE)
    assert final, result.stdout
    assert float(final.group(1)) >= 0.95
    assert float(final.group(1)) == float(epochs[-1][2])
