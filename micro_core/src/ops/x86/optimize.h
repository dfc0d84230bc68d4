/*
 * Included first by every kernel file of ops/x86/: they raise themselves to -O3 whatever the
 * build type, as the Helium files of ops/mve/ raise themselves to -O2. Their blocks keep 12 to
 * 16 sums in registers through loops over small arrays of vectors, and only -O3 unrolls those
 * loops completely; at -O2 (RelWithDebInfo: the host preset, which the C tests use), -Os or
 * -O0 the sums live on the stack, and MLP 784-128-10's step took 600 to 1000 us where -O3
 * (the wheel's Release build) takes 240 to 340. The bits are the same at every level: the core
 * compiles with -ffp-contract=off and without -ffast-math, so no level reorders, fuses or
 * drops a float operation (the only fused multiply-adds are the explicit ones of the layer
 * sums, mt_fma.h; tests/core checks the results against the reference at whatever level it
 * was built). Under AddressSanitizer they keep the
 * build's level: GCC takes up to two minutes a file to instrument the unrolled blocks (Dense's AVX2
 * build: 112 s at -O3), and tools/run_sanitizers.sh looks for memory errors, not speed.
 */
#ifndef MT_OPS_X86_OPTIMIZE_H
#define MT_OPS_X86_OPTIMIZE_H
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(MT_NO_X86_KERNELS) && \
    !defined(__SANITIZE_ADDRESS__)
#pragma GCC optimize("O3")
#endif
#endif
