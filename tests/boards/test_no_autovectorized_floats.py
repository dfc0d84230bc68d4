"""A Release (-O3) core for the Cortex-M55 has no float vector code the compiler wrote itself.

Helium (MVE) flushes subnormal floats to zero and makes every NaN result the default NaN, but
GCC vectorizes float code for it as if it were IEEE arithmetic: at -O3 it turned optimizers.c,
the losses and the elementwise ops into MVE code, and a Release firmware for the M55 would no
longer compute the host's bits, with nothing to tell. The core compiles with
-fno-tree-vectorize on 32-bit ARM (micro_core/CMakeLists.txt). Here every object of such a core
but the hand-written Helium kernels (the *_mve.c files of ops/mve/ and optimizers/, whose own
pragma says no-tree-vectorize: MVE code by design, their scalar fallbacks are checked bit for bit
by test_board_siblings) holds
no MVE float arithmetic, and the check is shown to see what it looks for: optimizers.c at -O3
without the flag does hold some.
"""

import os
import re
import subprocess

from board_setup import BUILD_ROOT, REPO_ROOT

# VADD.F32 Q0, ... and friends: MVE float arithmetic (scalar VFP arithmetic names S registers)
MVE_FLOAT = re.compile(r"\bv(add|sub|mul|div|fma|fms|neg|abs|max|min|maxnm|minnm)\.f32\s+q\d", re.I)


M55_FLAGS = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O3", "-ffp-contract=off", "-fno-fast-math",
             "-fno-math-errno", "-std=c99"]


def _mve_float_count(object_path):
    text = subprocess.run(["arm-none-eabi-objdump", "-d", "-m", "armv8.1-m.main", object_path], check=True,
                          capture_output=True, text=True).stdout
    return len(MVE_FLOAT.findall(text))


def _core_objects():
    """{object path: its MVE float instructions} of a Release (-O3) core for the M55"""
    build = os.path.join(BUILD_ROOT, "no-autovec", "release")
    subprocess.run(["cmake", "--preset", "mps3-an547", "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                    "-DCMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG"], cwd=REPO_ROOT, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", build, "--target", "microtrain_core"], check=True, capture_output=True)
    objects = {}
    for root, _, files in os.walk(os.path.join(build, "micro_core", "CMakeFiles", "microtrain_core.dir")):
        for name in files:
            if name.endswith((".obj", ".o")):
                path = os.path.join(root, name)
                objects[os.path.relpath(path, build)] = _mve_float_count(path)
    return objects


def test_a_release_m55_core_has_no_compiler_vectorized_floats(tmp_path):
    core = _core_objects()
    helium = {name for name in core if re.search(r"_mve\.c\.(obj|o)$", name)}
    portable = {name: n for name, n in core.items() if name not in helium}
    assert len(portable) > 20
    vectorized = {name: n for name, n in portable.items() if n}
    assert vectorized == {}, "MVE float code the compiler vectorized: %s" % vectorized
    assert sum(core[name] for name in helium) > 0  # the hand-written kernels

    # the check sees what it looks for: the same -O3 without the flag vectorizes optimizers.c
    source = os.path.join(REPO_ROOT, "micro_core", "src", "optimizers.c")
    includes = ["-I" + os.path.join(REPO_ROOT, "micro_core", d) for d in ("include", "src")]
    counts = []
    for extra in ([], ["-fno-tree-vectorize"]):
        obj = str(tmp_path / ("optimizers%d.o" % len(extra)))
        subprocess.run(["arm-none-eabi-gcc", *M55_FLAGS, *extra, *includes, "-c", source, "-o", obj], check=True)
        counts.append(_mve_float_count(obj))
    assert counts[0] > 0 and counts[1] == 0, counts
