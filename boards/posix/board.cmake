# Board "posix": the example firmware as an ordinary program on a hosted system (x86-64 Linux,
# or ARM Linux under qemu-user when cross-compiled with cmake/toolchains/arm-linux-*.cmake).
# It runs the very same app as the Cortex-M boards, so a CRC printed here can be compared with
# the bare-metal ones: one more witness that the core computes the same bits everywhere.
set(MT_BOARD_CORE hosted)
set(MT_BOARD_SOURCES ${CMAKE_CURRENT_LIST_DIR}/board_posix.c)
set(MT_BOARD_DEFINITIONS)
set(MT_BOARD_LINK_OPTIONS)
# Run natively, or through the toolchain's emulator (qemu-arm -L ..., qemu-aarch64 -L ...).
set(MT_BOARD_QEMU_PROGRAM "")
set(MT_BOARD_QEMU_ARGS)
