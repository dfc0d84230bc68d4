# Board mps2-an500: QEMU's model of the Arm MPS2 FPGA image AN500 (Cortex-M7 with FPv5-D16).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m7.cmake (preset "mps2-an500").
set(MT_BOARD_CORE cortex-m7)
set(MT_BOARD_SOURCES
  ${MT_BOARDS_DIR}/common/cortex-m/startup.c
  ${MT_BOARDS_DIR}/common/cortex-m/semihosting_exit.c
  ${MT_BOARDS_DIR}/common/cmsdk/uart.c)
set(MT_BOARD_DEFINITIONS MT_BOARD_UART0_BASE=0x40004000u)
# memory.ld comes from this folder, the sections from common/cortex-m.
set(MT_BOARD_LINK_OPTIONS
  -nostartfiles --specs=nano.specs
  -L${CMAKE_CURRENT_LIST_DIR} -T${MT_BOARDS_DIR}/common/cortex-m/sections.ld)
# How to run a firmware: qemu-system-arm <MT_BOARD_QEMU_ARGS> -kernel firmware.elf
set(MT_BOARD_QEMU_PROGRAM qemu-system-arm)
set(MT_BOARD_QEMU_ARGS -M mps2-an500 -nographic -monitor none -serial stdio
    -semihosting-config enable=on,target=native)
