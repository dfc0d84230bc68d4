"""A firmware of one's own integrates the core with add_subdirectory and one header."""

import os
import subprocess

from board_setup import BUILD_ROOT, REPO_ROOT


def test_user_project_builds_for_cortex_m4f_with_only_microtrain_h():
    build = os.path.join(BUILD_ROOT, "cmake-user-project")
    subprocess.run(["cmake", "-S", os.path.join(REPO_ROOT, "examples", "cmake_user_project"),
                    "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=MinSizeRel",
                    "--toolchain", os.path.join(REPO_ROOT, "cmake", "toolchains", "cortex-m4f.cmake"),
                    "-DMICROTRAIN_DIR=" + REPO_ROOT], check=True, capture_output=True)
    result = subprocess.run(["cmake", "--build", build], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.path.isfile(os.path.join(build, "user_firmware.elf"))
