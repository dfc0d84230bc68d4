"""The documentation site builds with ``mkdocs build --strict``: every page in the nav exists,
every link and anchor resolves, and the Python and C API references render from the sources
(a docstring that names a parameter the function does not have fails the build)."""

import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install '.[docs]') is not installed")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-8000:]
    for page in ("reference/c_api/index.html", "reference/python/index.html", "guides/host/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    c_api = (tmp_path / "site" / "reference" / "c_api" / "index.html").read_text()
    assert "mt_session_train_step" in c_api and "mt_plan" in c_api
    python_api = (tmp_path / "site" / "reference" / "python" / "index.html").read_text()
    assert "compile" in python_api and "export_model_for_inference" in python_api
