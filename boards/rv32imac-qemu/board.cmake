# Board rv32imac-qemu: QEMU's riscv32 virt machine with a SiFive E31 core (RV32IMAC, no FPU).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/rv32imac.cmake (preset
# "rv32imac-qemu").
set(MT_BOARD_CORE rv32imac)
set(MT_BOARD_QEMU_CPU sifive-e31)
include(${MT_BOARDS_DIR}/common/qemu-virt.cmake)
