"""A firmware of one's own integrates the core through CMake with one header: by
add_subdirectory, or from an installed package (find_package(microtrain))."""

import os
import subprocess


from board_setup import BUILD_ROOT, REPO_ROOT

TOOLCHAIN = os.path.join(REPO_ROOT, "cmake", "toolchains", "cortex-m4f.cmake")
PROJECT = os.path.join(REPO_ROOT, "examples", "cmake_user_project")


def _cmake(*args):
    result = subprocess.run(["cmake"] + list(args), capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _build_user_project(build, *options):
    _cmake("-S", PROJECT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=MinSizeRel",
           "--toolchain", TOOLCHAIN, *options)
    _cmake("--build", build)
    assert os.path.isfile(os.path.join(build, "user_firmware.elf"))


def test_user_project_with_add_subdirectory():
    _build_user_project(os.path.join(BUILD_ROOT, "user-subdirectory"),
                        "-DMICROTRAIN_DIR=" + REPO_ROOT)


def test_user_project_with_installed_package():
    core_build = os.path.join(BUILD_ROOT, "core-install-build")
    prefix = os.path.join(BUILD_ROOT, "core-install")
    _cmake("-S", REPO_ROOT, "-B", core_build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=MinSizeRel",
           "--toolchain", TOOLCHAIN, "-DMT_BUILD_TESTS=OFF")
    _cmake("--build", core_build, "--target", "microtrain_core")
    _cmake("--install", core_build, "--prefix", prefix)
    assert os.path.isfile(os.path.join(prefix, "include", "microtrain.h"))
    _build_user_project(os.path.join(BUILD_ROOT, "user-package"), "-DMICROTRAIN_PACKAGE=ON",
                        "-DCMAKE_PREFIX_PATH=" + prefix)
