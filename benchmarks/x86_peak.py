"""This x86 core's multiply-accumulate peaks beside microtrain's Dense kernels, one core:

    python benchmarks/x86_peak.py [--markdown] [--repeats 2000]

builds benchmarks/x86_peak/peak.c against the Release core of build/peers-lib (building it
when missing) and prints, at the widest vector the CPU has: the peak with a multiply and an add
per term (the reference's arithmetic before the layer sums were fused), the peak with fused
multiply-adds (a BLAS's, ONNX Runtime's, and since then microtrain's layer sums: one
correctly rounded fused multiply-add per term on every target, micro_core/src/mt_fma.h), and MLP 784-128-10's Dense forward and ReLU-sparse weight gradient (batch 32, best of
--repeats, hot caches) in GMAC/s and as a share of the first peak. It explains what
benchmarks/peers.py measures: where FMA doubles a core's peak, a kernel with a multiply and an
add per term has half the ceiling of a peer's GEMM. Not run by the tests (timings are the benchmark's
business).
"""

import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args(argv)
    import peers  # its Release build of the library (build/peers-lib)

    build_dir = os.path.join(REPO, "build", "peers-lib")
    core = os.path.join(build_dir, "micro_core", "libmicrotrain_core.a")
    peers.build_library(build_dir)  # incremental: seconds when built
    exe = os.path.join(build_dir, "x86_peak")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-std=c11", "-I", os.path.join(REPO, "micro_core", "src"),
                    "-I", os.path.join(REPO, "micro_core", "include"),
                    os.path.join(REPO, "benchmarks", "x86_peak", "peak.c"), core, "-lm", "-o", exe], check=True)
    out = subprocess.run([exe, str(args.repeats)], check=True, capture_output=True, text=True).stdout
    r = dict(item.split("=", 1) for item in out.split())
    peak, fma = float(r["muladd_peak"]), float(r["fma_peak"])
    rows = [
        ("multiply + add peak (%s)" % r["isa"], "%.1f" % peak, "100%"),
        ("fused multiply-add peak (%s)" % r["isa"], "%.1f" % fma, "%.0f%%" % (100 * fma / peak)),
        ("Dense forward 32 x 784 x 128 (%s us)" % r["forward_us"], r["forward_gmacs"],
         "%.0f%%" % (100 * float(r["forward_gmacs"]) / peak)),
        ("Dense weight gradient, %.0f%% of dy not zero (%s us)" % (100 * float(r["dw_counted"]), r["dw_us"]),
         r["dw_counted_gmacs"], "%.0f%%" % (100 * float(r["dw_counted_gmacs"]) / peak)),
    ]
    if args.markdown:
        print("| one core | GMAC/s | of the multiply + add peak |")
        print("|---|---:|---:|")
        for row in rows:
            print("| %s | %s | %s |" % row)
    else:
        for row in rows:
            print("%-58s %8s GMAC/s %6s" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
