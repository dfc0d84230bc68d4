"""The x86 kernels are built at -O3 whatever the build type, and fuse only the layer sums.

Their blocks keep 12 to 16 sums in registers through loops over small arrays of vectors that
only -O3 unrolls completely; at -O2 (RelWithDebInfo, the host preset the C tests use) the sums
lived on the stack and MLP 784-128-10's step took 600 to 1000 us where the Release wheel took
240 to 340. So every kernel file includes ops/x86/optimize.h first, which raises it to -O3.
Here: every kernel file does; a kernel file compiled at -O0, -O2 or -Os comes out as
at -O3, where without the header it is many times larger (so the check sees the header's
effect); and fused multiply-adds are only in the layer kernels (Dense, Conv2D, DepthwiseConv2D,
whose sums are fused on every target: micro_core/src/mt_fma.h), never in the exponentials, the
optimizers, the losses or the other kernels, compiled file by file with the core's flags (the
installed library the tests may load is stripped: its functions have no names), where the
exponentials' source compiled with -ffp-contract=fast does hold some.
"""

import glob
import os
import re
import shutil
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(REPO_ROOT, "micro_core", "src")
X86 = os.path.join(SRC, "ops", "x86")
CORE_FLAGS = ["-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-std=c99",
              "-I" + SRC, "-I" + os.path.join(REPO_ROOT, "micro_core", "include")]
FMA = re.compile(r"\bv(fn?madd|fn?msub)\w*\s", re.I)

pytestmark = pytest.mark.skipif(os.uname().machine != "x86_64" or shutil.which("gcc") is None,
                                reason="the x86 kernels build on x86-64 with GCC")


def _first_include(path):
    with open(path) as handle:
        for line in handle:
            if line.startswith("#include"):
                return line.split()[1]
    return None


def test_every_kernel_file_includes_the_optimize_header_first():
    # the x86 family's files: ops/x86/ and the optimizers' x86 kernels beside optimizers.c
    sources = sorted(glob.glob(os.path.join(X86, "*.c")) + glob.glob(os.path.join(SRC, "optimizers", "*_avx*.c")))
    assert len(sources) >= 18
    for path in sources:
        name = os.path.basename(path)
        twin = name.replace("_avx2.c", "_avx512.c")
        if name.endswith("_avx2.c") and os.path.exists(os.path.join(os.path.dirname(path), twin)):
            # the AVX2 build of <name>_avx512.c: the header comes with it
            assert _first_include(path) == '"%s"' % twin, name
        else:
            assert _first_include(path) == '"ops/x86/optimize.h"', name


def _text_bytes(source, level, tmp_path, extra=()):
    obj = tmp_path / ("%s-%s.o" % (os.path.basename(source), level))
    subprocess.run(["gcc", "-c", "-" + level, *extra, *CORE_FLAGS, source, "-o", str(obj)], check=True)
    sizes = subprocess.run(["size", "-A", str(obj)], check=True, capture_output=True, text=True).stdout
    return sum(int(line.split()[1]) for line in sizes.splitlines() if line.startswith(".text"))


def test_a_kernel_file_compiles_at_o3_at_any_level(tmp_path):
    source = os.path.join(X86, "exp_avx2.c")
    o3 = _text_bytes(source, "O3", tmp_path)
    for level in ("O0", "O2", "Os"):
        assert _text_bytes(source, level, tmp_path) <= 1.25 * o3, level
    # without the header (an empty one found first: -I before the core's) -O0 is many times larger
    empty = tmp_path / "no-pragma" / "ops" / "x86"
    empty.mkdir(parents=True)
    (empty / "optimize.h").write_text("")
    assert _text_bytes(source, "O0", tmp_path, ["-I" + str(tmp_path / "no-pragma")]) > 3 * o3


def _fma_count(path):
    text = subprocess.run(["objdump", "-d", str(path)], check=True, capture_output=True, text=True).stdout
    return len(FMA.findall(text))


# the files whose float arithmetic must never be fused (the exponentials, the optimizers and
# their x86 siblings, the losses, the activations, the shared kernels) and the layer kernels,
# which fuse every term of their sums (micro_core/src/mt_fma.h)
NEVER_FUSED = ["ops/x86/exp_avx512.c", "ops/x86/exp_avx2.c", "ops/x86/gradient_avx512.c",
               "ops/x86/gradient_avx2.c", "ops/x86/activations_avx512.c", "optimizers/optimizers_avx512.c",
               "optimizers/optimizers_avx2.c", "ops/x86/pooling_avx512.c", "ops/x86/s8_avx2.c", "mt_math.c",
               "optimizers.c", "losses.c", "ops/activations.c", "ops/shared.c"]
FUSED = ["ops/x86/dense_avx512.c", "ops/x86/dense_avx2.c", "ops/x86/conv2d_avx512.c",
         "ops/x86/depthwise_conv2d_avx512.c"]


def _object(source, tmp_path, flags=CORE_FLAGS):
    obj = tmp_path / (source.replace("/", "_") + ".o")
    subprocess.run(["gcc", "-c", "-O2", *flags, os.path.join(SRC, source), "-o", str(obj)], check=True)
    return obj


def test_only_the_layer_kernels_fuse(tmp_path):
    from microtrain.backend import _native

    assert _fma_count(_native.library_path()) > 0  # the library the tests load fuses its sums
    assert {name: _fma_count(_object(name, tmp_path)) for name in NEVER_FUSED} == \
        {name: 0 for name in NEVER_FUSED}
    for name in FUSED:
        assert _fma_count(_object(name, tmp_path)) > 0, name
    # the check sees what it looks for: contracted, the exponentials' polynomial uses FMA
    flags = [f for f in CORE_FLAGS if f != "-ffp-contract=off"] + ["-ffp-contract=fast"]
    assert _fma_count(_object("ops/x86/exp_avx512.c", tmp_path, flags)) > 0
