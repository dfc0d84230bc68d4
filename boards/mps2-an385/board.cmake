# Board mps2-an385: QEMU's model of the Arm MPS2 FPGA image AN385 (Cortex-M3, no FPU).
# Included by boards/CMakeLists.txt; toolchain cmake/toolchains/cortex-m3.cmake (preset "mps2-an385").
set(MT_BOARD_CORE cortex-m3)
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
set(MT_BOARD_QEMU_ARGS -M mps2-an385 -nographic -monitor none -serial stdio
    -semihosting-config enable=on,target=native)
