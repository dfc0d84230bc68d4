# Board rv32imafc-qemu: QEMU's riscv32 virt machine with a SiFive E34 core (RV32IMAFC: the
# single-precision FPU).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/rv32imafc.cmake (preset
# "rv32imafc-qemu").
set(MT_BOARD_CORE rv32imafc)
set(MT_BOARD_QEMU_CPU sifive-e34)
include(${MT_BOARDS_DIR}/common/qemu-virt.cmake)
