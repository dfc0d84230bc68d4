# Board mps2-an386: QEMU's model of the Arm MPS2 FPGA image AN386 (Cortex-M4 with FPv4-SP).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m4f.cmake (preset "mps2-an386").
set(MT_BOARD_CORE cortex-m4f)
set(MT_BOARD_UART0_BASE 0x40004000)
include(${MT_BOARDS_DIR}/common/mps2.cmake)
