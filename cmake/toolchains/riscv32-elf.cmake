# Common part of the bare-metal 32-bit RISC-V toolchain files (rv32*.cmake set MT_CPU_FLAGS and
# include this file). Debian's gcc-riscv64-unknown-elf (multilibs rv32imac/ilp32 and
# rv32imafc/ilp32f among others) with picolibc-riscv64-unknown-elf as the C library: see
# tools/setup_riscv.sh.
#
# picolibc's specs, in the C flags (which CMake also passes when it links through the
# compiler; given twice, GCC refuses the specs), give its headers to the compiler and its libc
# and libm to the linker: Debian's riscv64-unknown-elf-gcc has no C library of its own.
# --picolibc-buildtype=release takes picolibc's speed-optimized build (Debian ships it beside
# the size-optimized default): the default's memset and memcpy move a byte per 4-instruction
# loop, which took 30K of the digits step's 237K instructions on rv32imafc (release: 2.9K) and
# 157K of boot, plan and init. A board's link options name its own linker script (-T), which
# keeps picolibc.ld out, and its own startup code (-nostartfiles).
set(MT_GCC_PREFIX riscv64-unknown-elf-)
set(MT_GCC_PROCESSOR riscv32)
set(MT_LIBC_C_FLAGS --specs=picolibc.specs --picolibc-buildtype=release)
include(${CMAKE_CURRENT_LIST_DIR}/bare-metal-gcc.cmake)
