# Board mps3-an547: QEMU's model of the Arm MPS3 FPGA image AN547 (SSE-300 with a Cortex-M55:
# Helium/MVE and FPv5; UART0's secure alias).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m55.cmake (preset "mps3-an547").
set(MT_BOARD_CORE cortex-m55)
set(MT_BOARD_UART0_BASE 0x59303000)
include(${MT_BOARDS_DIR}/common/mps2.cmake)
