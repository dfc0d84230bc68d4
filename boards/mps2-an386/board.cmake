# Board mps2-an386: QEMU's model of the Arm MPS2 FPGA image AN386 (Cortex-M4 with FPv4-SP).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m4f.cmake (preset "mps2-an386").
set(MT_BOARD_CORE cortex-m4f)
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
set(MT_BOARD_QEMU_ARGS -M mps2-an386 -nographic -monitor none -serial stdio
    -semihosting-config enable=on,target=native)
