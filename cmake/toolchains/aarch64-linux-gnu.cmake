# 64-bit ARM Linux (AArch64), run under qemu-aarch64.
set(MT_LINUX_TRIPLE aarch64-linux-gnu)
set(MT_LINUX_PROCESSOR aarch64)
set(MT_LINUX_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
