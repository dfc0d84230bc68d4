# Board mps2-an385: QEMU's model of the Arm MPS2 FPGA image AN385 (Cortex-M3, no FPU).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m3.cmake (preset "mps2-an385").
set(MT_BOARD_CORE cortex-m3)
set(MT_BOARD_UART0_BASE 0x40004000)
include(${MT_BOARDS_DIR}/common/mps2.cmake)
