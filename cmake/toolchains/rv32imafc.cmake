# 32-bit RISC-V with the M, A, F (single-precision FPU) and C extensions, hard-float ABI ilp32f:
# the class of the SiFive E34 and the CH32V307. The layer sums' fused multiply-add is one
# fmadd.s (micro_core/src/mt_fma.h).
# Use: cmake --toolchain cmake/toolchains/rv32imafc.cmake (or the preset rv32imafc-qemu).
set(MT_CPU_FLAGS -march=rv32imafc -mabi=ilp32f)
set(MT_TOOLCHAIN_CORE rv32imafc)  # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/riscv32-elf.cmake)
