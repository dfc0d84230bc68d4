# Board mps2-an505: QEMU's model of the Arm MPS2 FPGA image AN505 (Cortex-M33 with FPv5-SP; UART0's secure alias).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m33.cmake (preset "mps2-an505").
set(MT_BOARD_CORE cortex-m33)
set(MT_BOARD_UART0_BASE 0x50200000)
include(${MT_BOARDS_DIR}/common/mps2.cmake)
