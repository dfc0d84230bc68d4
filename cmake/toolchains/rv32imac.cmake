# 32-bit RISC-V with the M, A and C extensions and no FPU (RV32IMAC, soft-float ABI ilp32): the
# class of the SiFive E31, the GD32VF103 and the RP2350's Hazard3 cores. Every float operation
# is a libgcc call; the layer sums' fused multiply-add is the core's integer routine
# (micro_core/src/mt_fma.h).
# Use: cmake --toolchain cmake/toolchains/rv32imac.cmake (or the preset rv32imac-qemu).
set(MT_CPU_FLAGS -march=rv32imac -mabi=ilp32)
set(MT_TOOLCHAIN_CORE rv32imac)   # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/riscv32-elf.cmake)
