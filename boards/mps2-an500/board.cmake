# Board mps2-an500: QEMU's model of the Arm MPS2 FPGA image AN500 (Cortex-M7 with FPv5-D16).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m7.cmake (preset "mps2-an500").
set(MT_BOARD_CORE cortex-m7)
set(MT_BOARD_UART0_BASE 0x40004000)
include(${MT_BOARDS_DIR}/common/mps2.cmake)
