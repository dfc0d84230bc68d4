# What the QEMU mps2 boards share; a board.cmake sets MT_BOARD_CORE and MT_BOARD_UART0_BASE
# and includes this file. The QEMU machine is named like the board folder (MT_BOARD).
set(MT_BOARD_SOURCES
  ${MT_BOARDS_DIR}/common/cortex-m/startup.c
  ${MT_BOARDS_DIR}/common/cortex-m/semihosting_exit.c
  ${MT_BOARDS_DIR}/common/cmsdk/uart.c)
set(MT_BOARD_DEFINITIONS MT_BOARD_UART0_BASE=${MT_BOARD_UART0_BASE}u)
# memory.ld comes from the board's folder, the sections from common/cortex-m; an installed
# package has both in one folder.
set(MT_BOARD_LINK_OPTIONS
  -nostartfiles --specs=nano.specs
  -L${MT_BOARD_DIR} -T${MT_BOARDS_DIR}/common/cortex-m/sections.ld)
set(MT_BOARD_INSTALL_LINK_OPTIONS
  -nostartfiles --specs=nano.specs
  -L$<INSTALL_PREFIX>/${MT_BOARD_INSTALL_DIR} -T$<INSTALL_PREFIX>/${MT_BOARD_INSTALL_DIR}/sections.ld)
set(MT_BOARD_INSTALL_FILES ${MT_BOARD_DIR}/memory.ld ${MT_BOARDS_DIR}/common/cortex-m/sections.ld)
# How to run a firmware: qemu-system-arm <MT_BOARD_QEMU_ARGS> -kernel firmware.elf
set(MT_BOARD_QEMU_PROGRAM qemu-system-arm)
set(MT_BOARD_QEMU_ARGS -M ${MT_BOARD} -nographic -monitor none -serial stdio
    -semihosting-config enable=on,target=native)
