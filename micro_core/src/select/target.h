/*
 * Which column of the kernel table (select/kernels.def) this build compiles: the one place that
 * decides it, from the compiler's own target macros, so that every way the core is built (CMake,
 * MicroPython's make, a project's own build) selects the same kernels for the same -mcpu without
 * being told. -DMT_KERNEL_TARGET=MT_TARGET_<NAME> chooses another column (one the compiler can
 * build).
 *
 *   MT_TARGET_X86_64      x86-64, GCC or clang: the avx512, avx2 or portable column, chosen at
 *                         run time from the CPU's features (select/x86_64.h)
 *   MT_TARGET_MVE         Armv8.1-M with Helium's float lanes (Cortex-M55): the mve column
 *   MT_TARGET_DSP         Cortex-M with an FPv4/FPv5 single-precision FPU: M4F, M7, M33
 *   MT_TARGET_SOFT_FLOAT  a core without an FPU: 32-bit Arm outside Linux (Cortex-M3), RISC-V
 *                         without F (rv32imac): every float operation is a libgcc call, so
 *                         the smaller reference kernels
 *   MT_TARGET_PORTABLE    anything else: ARM Linux, AArch64, RISC-V with F (rv32imafc),
 *                         WebAssembly
 *
 * MT_KERNEL_PICK is the column's picker (select/kernels.h's MT_PICK_*), MT_KERNEL_COLUMN its
 * name. A new target is a column (a cell in every row of kernels.def, its picker and name in
 * select/kernels.h), its MT_TARGET_ value and lines below, and, if it brings kernels of its
 * own, their folder in MT_KERNEL_FAMILIES (micro_core/cmake/microtrain_ops.cmake).
 */
#ifndef MT_SELECT_TARGET_H
#define MT_SELECT_TARGET_H

#define MT_TARGET_PORTABLE 1
#define MT_TARGET_X86_64 2
#define MT_TARGET_MVE 3
#define MT_TARGET_DSP 4
#define MT_TARGET_SOFT_FLOAT 5

#ifndef MT_KERNEL_TARGET
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
#define MT_KERNEL_TARGET MT_TARGET_X86_64
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define MT_KERNEL_TARGET MT_TARGET_MVE
#elif defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && (__ARM_FP & 4) && \
    defined(__thumb2__)
#define MT_KERNEL_TARGET MT_TARGET_DSP
#elif (defined(__arm__) && !defined(__ARM_FP) && !defined(__linux__)) || (defined(__riscv) && !defined(__riscv_flen))
#define MT_KERNEL_TARGET MT_TARGET_SOFT_FLOAT
#else
#define MT_KERNEL_TARGET MT_TARGET_PORTABLE
#endif
#endif

/* The kernel families this target compiles (each family's files are empty elsewhere). */
#define MT_X86_KERNELS (MT_KERNEL_TARGET == MT_TARGET_X86_64)
#define MT_MVE_KERNELS (MT_KERNEL_TARGET == MT_TARGET_MVE)
#define MT_DSP_KERNELS (MT_KERNEL_TARGET == MT_TARGET_DSP)
/* the portable float siblings: every target but the soft-float one, where they would only
 * be larger than the reference (the int8 ones run everywhere) */
#define MT_PORTABLE_F32_KERNELS (MT_KERNEL_TARGET != MT_TARGET_SOFT_FLOAT)

/* 1: compile the reference kernels that a sibling replaces in this target's column (Dense's
 * backward, the convolutions, MaxPool2D, the int8 layers). Host and ARM Linux builds keep them:
 * the tests hold every sibling to them. Bare-metal builds (CMake, system Generic) set 0: a
 * firmware never calls them, and the core's flash stays within budget; the soft-float column
 * is made of them. References that a sibling still calls (Dense's forward for its edges) are
 * always compiled. */
#if MT_KERNEL_TARGET == MT_TARGET_SOFT_FLOAT
#undef MT_REFERENCE_KERNELS
#define MT_REFERENCE_KERNELS 1
#elif !defined(MT_REFERENCE_KERNELS)
#define MT_REFERENCE_KERNELS 1
#endif

#if MT_KERNEL_TARGET == MT_TARGET_X86_64
#include "select/x86_64.h" /* MT_KERNEL_PICK: MT_PICK_X86, the level's column */
#elif MT_KERNEL_TARGET == MT_TARGET_MVE
#define MT_KERNEL_PICK MT_PICK_MVE
#define MT_KERNEL_COLUMN "mve"
#elif MT_KERNEL_TARGET == MT_TARGET_DSP
#define MT_KERNEL_PICK MT_PICK_DSP
#define MT_KERNEL_COLUMN "dsp"
#elif MT_KERNEL_TARGET == MT_TARGET_SOFT_FLOAT
#define MT_KERNEL_PICK MT_PICK_SOFT_FLOAT
#define MT_KERNEL_COLUMN "soft_float"
#elif MT_KERNEL_TARGET == MT_TARGET_PORTABLE
#define MT_KERNEL_PICK MT_PICK_PORTABLE
#define MT_KERNEL_COLUMN "portable"
#else
#error "MT_KERNEL_TARGET names no column of select/target.h"
#endif

#endif /* MT_SELECT_TARGET_H */
