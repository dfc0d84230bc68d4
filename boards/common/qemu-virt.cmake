# What the RISC-V boards on QEMU's riscv32 virt machine share; a board.cmake sets MT_BOARD_CORE
# and MT_BOARD_QEMU_CPU (the CPU model QEMU emulates: one with exactly the core's extensions,
# so an instruction the core lacks traps) and includes this file.
set(MT_BOARD_SOURCES
  ${MT_BOARDS_DIR}/common/riscv/startup.c
  ${MT_BOARDS_DIR}/common/qemu-virt/uart_16550.c
  ${MT_BOARDS_DIR}/common/qemu-virt/test_exit.c)
# virt's ns16550a (its device tree gives the 3.6864 MHz clock) and its test device
set(MT_BOARD_DEFINITIONS MT_BOARD_UART0_BASE=0x10000000u MT_BOARD_UART0_CLOCK_HZ=3686400u
    MT_BOARD_TEST_BASE=0x100000u)
# memory.ld and the sections come from common/; an installed package has both in one folder.
# picolibc's specs (the toolchain file's) give libc and libm; -nostartfiles leaves its crt0 out.
set(MT_BOARD_LINK_OPTIONS
  -nostartfiles
  -L${MT_BOARDS_DIR}/common/qemu-virt -T${MT_BOARDS_DIR}/common/riscv/sections.ld)
set(MT_BOARD_INSTALL_LINK_OPTIONS
  -nostartfiles
  -L$<INSTALL_PREFIX>/${MT_BOARD_INSTALL_DIR} -T$<INSTALL_PREFIX>/${MT_BOARD_INSTALL_DIR}/sections.ld)
set(MT_BOARD_INSTALL_FILES ${MT_BOARDS_DIR}/common/qemu-virt/memory.ld
    ${MT_BOARDS_DIR}/common/riscv/sections.ld)
# How to run a firmware: qemu-system-riscv32 <MT_BOARD_QEMU_ARGS> -kernel firmware.elf
set(MT_BOARD_QEMU_PROGRAM qemu-system-riscv32)
set(MT_BOARD_QEMU_ARGS -M virt -cpu ${MT_BOARD_QEMU_CPU} -nographic -monitor none -serial stdio
    -bios none)
